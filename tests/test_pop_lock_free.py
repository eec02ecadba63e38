"""A held orderly pop wakes when its queue's block ends (QueueLevelConsumerOrderInfoLockManager,
enableNotifyAfterPopOrderLockRelease, on in every 5.x release): the broker arms the queue's
lock-free time on a 100 ms wheel timer after each orderly pop, ack and change, and the group's
held pops run again when it fires. The fact is real 5.5.0's run of pop-fifo-attempts
(tests/fixtures/real/pop/pop-fifo-attempts-5.5.0.jsonl.gz): each receive of the blocked queue
came within one tick of the last receive's deadline, while the client's receives in between
answered empty."""
from __future__ import annotations

import gzip
import json
import tomllib
from pathlib import Path

from hypothesis import given, strategies as st

from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import load_scenario, validate
from rocketspec.rocketmq.pop import ORDER_LOCK_FREE_TICK_MS, order_lock_free_time, wheel_fire_time

SCENARIOS = Path(__file__).parent.parent / "reference" / "scenarios"
REAL = Path(__file__).parent / "fixtures" / "real" / "pop" / "pop-fifo-attempts-5.5.0.jsonl.gz"
# the recorder stamps a receive when the client has it, a few ms after the broker's pop time
SLACK_MS = 5


def _lateness(events) -> list[int]:
    """How long after the last receive's deadline each receive of the poison message came (by
    the broker's pop times in the handles)."""
    pops = [(e["pop_time"], e["invisible_time"]) for e in events
            if e["kind"] == "message_popped" and e["offset"] == 0 and not e["topic"].startswith("%")]
    return [b[0] - (a[0] + a[1]) for a, b in zip(pops, pops[1:])]


def test_real_5_5_0_receives_a_blocked_queue_within_a_tick_of_its_deadline():
    with gzip.open(REAL, "rt") as f:
        late = _lateness([json.loads(line) for line in f])
    assert len(late) == 3
    assert all(0 <= t <= ORDER_LOCK_FREE_TICK_MS + SLACK_MS for t in late), late


def test_the_reference_receives_a_blocked_queue_within_a_tick_of_its_deadline():
    late = _lateness(run_to_list(load_scenario("pop-fifo-attempts"), 1, "rocketmq-5.5.1"))
    assert len(late) == 3
    assert all(0 < t <= ORDER_LOCK_FREE_TICK_MS + SLACK_MS for t in late), late


def test_a_restarted_broker_arms_the_blocked_queue_again():
    """The order info is reloaded with the broker (recover): a queue still blocked after the
    restart is armed again, so a receive held after the restart still comes at the block's end.
    (f1's held receive dies with the broker and waits out its request timeout; f2, started after
    the restart, is the one held.)"""
    with open(SCENARIOS / "pop-fifo-attempts.toml", "rb") as f:
        raw = tomllib.load(f)
    raw.pop("expect")
    raw["steps"] += [{"at_ms": 12000, "action": "restart_broker", "broker": "broker-a", "downtime_ms": 500},
                     {"at_ms": 13000, "action": "start", "client": "f2", "group": "GID_fifo_attempts"}]
    sc = validate(raw)
    events = run_to_list(sc, 1, "rocketmq-5.5.1")
    assert any(e["kind"] == "broker_restarted" for e in events)
    late = _lateness(events)
    assert late and all(0 < t <= ORDER_LOCK_FREE_TICK_MS + SLACK_MS for t in late), late


@given(st.integers(0, 10_000), st.integers(0, 100_000))
def test_the_wheel_runs_a_task_at_the_end_of_its_tick(started, after):
    due = started + after
    fire = wheel_fire_time(started, due)
    assert due < fire <= due + ORDER_LOCK_FREE_TICK_MS
    assert (fire - started) % ORDER_LOCK_FREE_TICK_MS == 0


_offsets = st.lists(st.integers(0, 20), min_size=1, max_size=6, unique=True).map(sorted)


@given(_offsets, st.data(), st.integers(0, 1000), st.integers(1, 20_000), st.integers(0, 40_000))
def test_the_lock_is_free_at_the_first_unacked_offsets_deadline_still_ahead(offsets, data, pop_time, invisible, now):
    acked = set(data.draw(st.lists(st.sampled_from(offsets), unique=True)))
    changed = data.draw(st.dictionaries(st.sampled_from(offsets), st.integers(0, 50_000)))
    t = order_lock_free_time(offsets, acked, pop_time, invisible, changed, now)
    ahead = [changed.get(o, pop_time + invisible) for o in offsets
             if o not in acked and now < changed.get(o, pop_time + invisible)]
    assert t == (ahead[0] if ahead else now)
    assert order_lock_free_time([], set(), pop_time, invisible, {}, now) is None
