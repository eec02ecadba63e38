"""Traces of the real-* scenarios recorded on real RocketMQ 5.3.3, 5.5.0 and 5.5.1, each checked
under its release's profile: 5.3.3 under rocketmq-5.3.3, 5.5.0 and 5.5.1 under rocketmq-5.5.1.
A 5.5.1 run is the 5.5.1 broker side (broker, store, common, remoting) with the 5.5.0 push
consumer and namesrv (the registry here does not serve 5.5.1's client jars; 5.5.0 stood in for
5.5.1 before). What each run showed, read in the release's source, is in docs/notes/real-5x.md.
The traces are gzip-compressed JSON Lines (`check` reads them as they are)."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from rocketspec.rocketmq import pop
from rocketspec.rocketmq.profiles import get_profile
from rocketspec.spec.replay import check_events, check_trace

HERE = Path(__file__).parent / "fixtures" / "real" / "5x"
PROFILE_OF = {"5.3.3": "rocketmq-5.3.3", "5.5.0": "rocketmq-5.5.1", "5.5.1": "rocketmq-5.5.1"}
RELEASES = ("5.5.1", "5.5.0", "5.3.3")
FIXTURE_4_9_8 = Path(__file__).parent / "fixtures" / "real"
POP = Path(__file__).parent / "fixtures" / "real" / "pop"

# Every real-* scenario on each release: the errors `check` must report under the release's
# profile (none: holds), and how the run ended. Each verdict is read in docs/notes/real-5x.md.
HOLDS_QUIESCENT = {r: (set(), "quiescent") for r in RELEASES}
VERDICTS = {
    "real-attach": HOLDS_QUIESCENT,
    # 5.5.x: the %RETRY% route waits for the 30 s name-server poll (#9780, the 5.5.0 client), past the drain
    "real-basic": {"5.5.1": (set(), "duration"), "5.5.0": (set(), "duration"), "5.3.3": (set(), "quiescent")},
    "real-broadcast": HOLDS_QUIESCENT,
    "real-expiry": HOLDS_QUIESCENT,
    # 5.5.0, 5.3.3: the broker lists the resumed client twice (findConsumerIdList), and AVG leaves a
    # queue unowned: RocketMQ's allocation is not a partition of that view. 5.5.1: not this time (a race)
    "real-freeze": {"5.5.1": (set(), "quiescent"), "5.5.0": ({"INV-OWNER-1"}, "quiescent"),
                    "5.3.3": ({"INV-OWNER-1"}, "quiescent")},
    "real-kill": HOLDS_QUIESCENT,
    "real-orderly-dlq": HOLDS_QUIESCENT,
    # 5.5.0, 5.3.3: SIGSTOP landed inside two listener calls, which outlived the lease margin.
    # 5.5.1: it landed before c1's first rebalance (no call open): holds
    "real-orderly-pause": {"5.5.1": (set(), "quiescent"), "5.5.0": ({"INV-ORDER-1"}, "quiescent"),
                           "5.3.3": ({"INV-ORDER-1"}, "quiescent")},
    "real-orderly-suspend": HOLDS_QUIESCENT,
    "real-orderly-takeover": HOLDS_QUIESCENT,
    "real-rebalance": HOLDS_QUIESCENT,
    "real-reset": HOLDS_QUIESCENT,
    "real-retry-dlq": {"5.5.1": (set(), "duration"), "5.5.0": (set(), "duration"), "5.3.3": (set(), "quiescent")},
    "real-sql": HOLDS_QUIESCENT,
    "real-tags": HOLDS_QUIESCENT,
}


def _path(name: str, release: str) -> Path:
    return HERE / f"{name}-{release}.jsonl.gz"


def _events(name: str, release: str) -> list[dict]:
    with gzip.open(_path(name, release), "rt") as fh:
        return [json.loads(line) for line in fh]


def _invs(res) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in res.findings.errors:
        out.setdefault(f.inv, []).append(f.message)
    return out


@pytest.mark.parametrize("release", RELEASES)
def test_a_persist_of_an_offset_illegal_answer_proves_its_update(release):
    """real-reset. A 5.x reset is server-side: the broker answers the queue's next pull
    OFFSET_ILLEGAL with the reset offset as nextBeginOffset, and the client's task (the same in
    4.9.8, 10 s later there) runs updateAndFreezeOffset(mq, next) and then persist(mq) on one
    thread. The recorder polls the offset store every 20 ms; the update and the persist came
    3 ms apart, so the persist of 0 is the first sight of the store's new value, below the
    10 the poll had seen. It proves the correction's update (was INV-OFFSET-1 twice)."""
    ev = _events("real-reset", release)
    illegal = [e for e in ev if e["kind"] == "pull_answered" and e["status"] == "OFFSET_ILLEGAL"]
    assert illegal, "the run shows the server-side reset's OFFSET_ILLEGAL answers"
    for a in illegal:
        # RocketMQ's fact: the client's next persist of that queue carries the answer's next offset
        nxt = next(e for e in ev if e["seq"] > a["seq"] and e["kind"] == "offset_persisted"
                   and e["queue"] == a["queue"] and e["client"] == a["client"])
        assert nxt["offset"] == a["next_offset"]
    res = check_trace(str(_path("real-reset", release)), PROFILE_OF[release])
    assert _invs(res) == {}, _invs(res)
    assert res.ended == "quiescent"


def test_a_persist_below_the_polled_store_that_no_answer_carries_is_still_reported():
    """The rule excuses only the OFFSET_ILLEGAL answer's nextBeginOffset: the same run with the
    first persist after the answer carrying another value below the polled 10 is INV-OFFSET-1."""
    ev = _events("real-reset", "5.5.0")
    a = next(e for e in ev if e["kind"] == "pull_answered" and e["status"] == "OFFSET_ILLEGAL")
    p = next(e for e in ev if e["seq"] > a["seq"] and e["kind"] == "offset_persisted" and e["queue"] == a["queue"])
    p["offset"] = 3
    res = check_events(((i + 1, e) for i, e in enumerate(ev)), get_profile(PROFILE_OF["5.5.0"]))
    assert any("persist sends 3, below the store's value 10" in m for m in _invs(res).get("INV-OFFSET-1", [])), \
        _invs(res)


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("name", sorted(VERDICTS))
def test_every_real_scenario_is_judged_under_its_release_profile(name, release):
    errors, ended = VERDICTS[name][release]
    res = check_trace(str(_path(name, release)), PROFILE_OF[release])
    assert set(_invs(res)) == errors, _invs(res)
    assert res.ended == ended


def _first_pull_delays(ev) -> list[int]:
    """ms from the rebalance that gave a client a queue to that client's first pull of it."""
    owned, since, out = {}, {}, []
    for e in ev:
        if e["kind"] == "allocation_computed":
            new = {tuple(q) for q in e["allocated"]}
            old = owned.get((e["client"], e["topic"]), set())
            for q in new - old:
                since[(e["client"],) + q] = e["ts"]
            owned[(e["client"], e["topic"])] = new
        elif e["kind"] == "pull_issued":
            t = since.pop((e["client"], e["topic"], e["broker"], e["queue"]), None)
            if t is not None:
                out.append(e["ts"] - t)
    return out


def test_the_first_pull_of_a_new_queue_waits_500_ms_on_5x_only():
    """dispatch_pull_delay_ms: RebalanceImpl.updateProcessQueueTableInRebalance ends with
    dispatchPullRequest(list, 500) on 5.3.3 and 5.5.0 (the 5.5.1 runs' client); 4.9.8 dispatches
    at once (measured: 4.9.8 6-194 ms, the offset read; 5.x 502-572 ms)."""
    for release in RELEASES:
        d = _first_pull_delays(_events("real-basic", release)) + _first_pull_delays(_events("real-attach", release))
        assert d and min(d) >= 500 and max(d) < 700, (release, d)
    with open(FIXTURE_4_9_8 / "real-basic.jsonl") as fh:
        d = _first_pull_delays([json.loads(line) for line in fh])
    assert d and max(d) < 500, d


def test_a_consumer_started_before_its_retry_topic_takes_the_retry_queue_only_at_its_name_server_poll():
    """#9780 (5.5.0): rebalanceByTopic stops on a missing route before findConsumerIdList, the
    call that refreshed it on 5.3.3. c1 started before %RETRY%GID_real_basic existed: on 5.3.3 it
    allocates the retry queue 3.1 s after its start and the run is quiescent; on 5.5.0 it never
    computes a %RETRY% allocation in the run's 29 s (pollNameServerInterval is 30 s), and the
    sent-back messages are not consumed again before the end. The same on 5.5.1 (its runs take
    the 5.5.0 client): 12 messages sent back, none consumed again in the 29 s after c1's start."""
    def retry_allocations(ev, client):
        return [e for e in ev if e["kind"] == "allocation_computed" and e["client"] == client
                and e["topic"].startswith("%RETRY%")]
    for release in ("5.5.0", "5.5.1"):
        ev = _events("real-basic", release)
        assert not retry_allocations(ev, "127.0.0.1@c1"), release
        assert [e for e in ev if e["kind"] == "message_sent_back"], release
        assert not [e for e in ev if e["kind"] == "consume_started" and e["topic"].startswith("%RETRY%")], release
    ev = _events("real-basic", "5.3.3")
    start = next(e["ts"] for e in ev if e["kind"] == "client_started" and e["client"] == "127.0.0.1@c1")
    first = retry_allocations(ev, "127.0.0.1@c1")[0]
    assert first["allocated"] and first["ts"] - start < 5000


@pytest.mark.parametrize("release", ["5.5.0", "5.3.3"])
def test_after_a_frozen_client_resumes_the_broker_lists_it_twice(release):
    """real-freeze: the broker's idle handler closed the frozen c2's channel (unregistered); after
    SIGCONT, findConsumerIdList answered [c1, c2, c2]. AllocateMessageQueueAveragely gives c2 the
    share of its first index only, so queue 3 of 4 has no owner in that view (INV-OWNER-1, what
    RocketMQ's own allocation did). The 4.9.8 recording of the scenario has no such view."""
    ev = _events("real-freeze", release)
    dup = [e for e in ev if e["kind"] == "allocation_computed" and len(set(e["cids"])) != len(e["cids"])]
    assert dup and all(e["cids"] == ["127.0.0.1@c1", "127.0.0.1@c2", "127.0.0.1@c2"] for e in dup)
    owned = set()
    for e in dup:
        if e["topic"] == "Jobs":
            owned |= {q[2] for q in e["allocated"]}
    assert owned == {0, 1, 2}
    res = check_trace(str(_path("real-freeze", release)), PROFILE_OF[release])
    assert all("have no owner" in m for m in _invs(res)["INV-OWNER-1"])
    with open(FIXTURE_4_9_8 / "real-freeze.jsonl") as fh:
        assert not [e for e in map(json.loads, fh) if e["kind"] == "allocation_computed" and
                    len(set(e["cids"])) != len(e["cids"])]


@pytest.mark.parametrize("release", RELEASES)
def test_5x_forces_the_unlock_of_a_dropped_orderly_queue_while_its_call_runs(release):
    """#7644 on real 5.x (real-long-call-handover.toml beside the traces: 12 s calls, unlock delay
    5 s, c2 joins at 5 s). RebalancePushImpl.tryRemoveOrderMessageQueue cannot take the consume
    lock while c1's call runs, but the ProcessQueue is dropped and lockAll no longer renews it,
    so once the unlock delay has passed since its last lock c1 removes it and unlocks the queue
    on the broker: c2 locks it and consumes offset 0 while c1's call on it is still open. On 5.5.1
    (the 5.5.0 client): dropped at 5.1 s, unlocked at 11.2 s, c2 consumed offset 0 at 12.9 s, c1's
    call ran from 3.2 s to 15.2 s."""
    ev = _events("real-long-call-handover", release)
    c1 = "127.0.0.1@c1"
    call = next(e for e in ev if e["kind"] == "consume_started" and e["client"] == c1 and e["queue"] == 1)
    done = next(e for e in ev if e["kind"] == "consume_finished" and e["client"] == c1 and e["queue"] == 1)
    unlock = next(e for e in ev if e["kind"] == "lock_released" and e["client"] == c1 and e["queue"] == 1)
    assert call["ts"] < unlock["ts"] < done["ts"]
    res = check_trace(str(_path("real-long-call-handover", release)), PROFILE_OF[release])
    errs = _invs(res)
    assert set(errs) == {"INV-ORDER-1"} and "#7644" in errs["INV-ORDER-1"][0]


def test_4_9_8_keeps_a_dropped_orderly_queue_until_its_call_ends():
    """The same scenario on real 4.9.8: removeUnnecessaryMessageQueue refuses while the call holds
    the consume lock; the queue goes after the call, and the broker lock after the unlock delay."""
    ev = _events("real-long-call-handover", "4.9.8")
    c1 = "127.0.0.1@c1"
    done = next(e for e in ev if e["kind"] == "consume_finished" and e["client"] == c1 and e["queue"] == 1)
    unlock = next(e for e in ev if e["kind"] == "lock_released" and e["client"] == c1 and e["queue"] == 1)
    assert unlock["ts"] > done["ts"]
    res = check_trace(str(_path("real-long-call-handover", "4.9.8")), "rocketmq-4.9.8")
    assert _invs(res) == {}


@pytest.mark.parametrize("release,reset_to", [("5.5.0", 5), ("5.5.1", 3)])
def test_a_server_side_reset_answers_the_next_pull_with_the_reset_offset(release, reset_to):
    """real-reset-mid on 5.5.0 and 5.5.1: the reset by timestamp (500 ms into the run: offset
    5 of 10 per queue on 5.5.0, 3 on 5.5.1) is written by the broker (assignResetOffset); the held
    pull at offset 10 is answered OFFSET_ILLEGAL with that offset as nextBeginOffset
    (GetMessageStatus.OFFSET_RESET), not what getMessage's bounds would give (0 for a request at
    the queue's end with nothing matched). The spec took the bounds' value (INV-PULL-2 twice);
    under the 5.x profiles (server_side_reset) the answer holds, under 4.9.8's it is still
    reported: a 4.9.8 broker never answers so."""
    ev = _events("real-reset-mid", release)
    resets = {e["queue"]: e["offset"] for e in ev if e["kind"] == "offset_committed" and e.get("source") == "reset"}
    illegal = [e for e in ev if e["kind"] == "pull_answered" and e["status"] == "OFFSET_ILLEGAL"]
    assert illegal and all(a["next_offset"] == resets[a["queue"]] == reset_to and a["offset"] == a["max_offset"]
                           for a in illegal)
    res = check_trace(str(_path("real-reset-mid", release)), "rocketmq-5.5.1")
    assert _invs(res) == {}
    assert set(_invs(check_trace(str(_path("real-reset-mid", release)), "rocketmq-4.9.8"))) == {"INV-PULL-2"}


@pytest.mark.parametrize("name", sorted(VERDICTS) + ["pop-basic"])
def test_a_5_5_1_run_is_the_5_5_1_broker_with_the_5_5_0_client(name):
    """The 5.5.1 pin (third_party/rocketmq/5.5.1): the broker that wrote each 5.5.1 fixture
    reports MQVersion 5.5.1, and the trace names rocketmq-5.5.1."""
    ev = _events(name, "5.5.1") if name != "pop-basic" else _pop_events("5.5.1")
    assert ev[0]["profile"] == "rocketmq-5.5.1"
    assert [e["config"]["version"] for e in ev if e["kind"] == "broker_started"] == ["5.5.1"]


def test_on_5_5_1_the_frozen_client_came_back_listed_once():
    """real-freeze on 5.5.1: the idle handler closed c2's channel while it was frozen
    (consumer_unregistered, channel_closed) and c2 registered again after SIGCONT, but no view
    listed it twice: the late heartbeat on the closing channel (the race of docs/notes/real-5x.md,
    every release) did not happen this time, and the run holds."""
    ev = _events("real-freeze", "5.5.1")
    gone = [e for e in ev if e["kind"] == "consumer_unregistered" and e["client"] == "127.0.0.1@c2"]
    assert [e["reason"] for e in gone] == ["channel_closed"]
    resumed = next(e["seq"] for e in ev if e["kind"] == "client_resumed")
    assert [e for e in ev if e["kind"] == "consumer_registered" and e["client"] == "127.0.0.1@c2" and e["seq"] > resumed]
    assert not [e for e in ev if e["kind"] == "allocation_computed" and len(set(e["cids"])) != len(e["cids"])]


def test_on_5_5_1_the_pause_came_before_the_paused_client_had_a_queue():
    """real-orderly-pause on 5.5.1 holds where 5.5.0 and 5.3.3 failed INV-ORDER-1: c1's start()
    took 2.3 s on the loaded machine, and SIGSTOP (at 2.3 s after its start) landed before c1's
    first rebalance: no lock, no ProcessQueue, no listener call of c1 before the pause, so nothing
    of c1 outlived its lease. c2 took its half meanwhile; c1 consumed only after SIGCONT."""
    ev = _events("real-orderly-pause", "5.5.1")
    pause = next(e["seq"] for e in ev if e["kind"] == "client_paused")
    resumed = next(e["seq"] for e in ev if e["kind"] == "client_resumed")
    c1 = [e for e in ev if e.get("client") == "127.0.0.1@c1" and e["seq"] < resumed
          and e["kind"] in ("lock_acquired", "pq_created", "consume_started")]
    assert not c1, c1
    assert [e for e in ev if e["kind"] == "consume_started" and e["client"] == "127.0.0.1@c2" and pause < e["seq"] < resumed]
    assert [e for e in ev if e["kind"] == "consume_started" and e["client"] == "127.0.0.1@c1" and e["seq"] > resumed]


def _pop_events(release: str) -> list[dict]:
    with gzip.open(POP / f"pop-basic-{release}.jsonl.gz", "rt") as fh:
        return [json.loads(line) for line in fh]


def test_pop_basic_on_5_5_1_holds_and_revives_each_changed_message():
    """pop-basic on the 5.5.1 broker (its file-based POP path, PopReviveService and
    PopBufferMergeService, is the same source as 5.5.0's): every produced message is popped and
    acked once; a failed call changes the invisible time to popDelayLevel[0] under a new handle,
    and revive puts the copy into %RETRY%GID_pop_TopicPop no earlier than the new deadline +
    ackTimeInterval + 1 s; check holds, quiescent."""
    res = check_trace(str(POP / "pop-basic-5.5.1.jsonl.gz"), "rocketmq-5.5.1")
    assert _invs(res) == {} and res.ended == "quiescent", _invs(res)
    ev = _pop_events("5.5.1")
    kind = lambda k: [e for e in ev if e["kind"] == k]                      # noqa: E731
    copy = lambda e: (e["group"], e["topic"], e["queue"], e["offset"])      # noqa: E731
    stored = {(e["topic"], e["queue"], e["offset"]) for e in kind("message_stored") if e.get("source") == "producer"}
    assert len(stored) == 100
    acked = [e for e in kind("message_acked") if e["result"] == "acked"]
    assert len(acked) == len({copy(e) for e in acked})
    assert {(e["topic"], e["queue"], e["offset"]) for e in kind("message_popped")} >= stored
    changes = [e for e in kind("invisible_time_changed") if e["result"] == "changed"]
    revived = {copy(e): e for e in kind("message_revived") if e["outcome"] == "retry"}
    popped = {copy(e): e for e in kind("message_popped")}
    assert changes
    for c in changes:
        assert c["invisible_time"] == pop.pop_delay_ms(0, popped[copy(c)]["reconsume_times"])
        r = revived[copy(c)]
        assert r["pop_time"] == c["new_pop_time"]
        assert r["ts"] >= pop.earliest_revive(c["new_pop_time"], c["invisible_time"])
        assert r["target_topic"] == pop.revive_target(c["topic"], c["group"])


@pytest.mark.parametrize("release", RELEASES)
def test_a_paused_client_expires_after_the_channel_timeout(release):
    """real-expiry: c2 is stopped (SIGSTOP) and sends no heartbeat; ConsumerManager's scan
    (every 10 s) removes it once channelExpiredTimeout (120 s) has passed since its last one:
    125.9 s after the pause on 5.5.0, 127.6 s on 5.3.3, 126.2 s on 5.5.1. 5.5.1's V1 heartbeat
    builds one ClientChannelInfo per group instead of one per heartbeat; c2 has one group, so its
    expiry is the same."""
    ev = _events("real-expiry", release)
    paused = next(e for e in ev if e["kind"] == "client_paused")
    gone = [e for e in ev if e["kind"] == "consumer_unregistered"]
    assert [(e["client"], e["reason"]) for e in gone] == [(paused["client"], "channel_expired")]
    assert 120_000 <= gone[0]["ts"] - paused["ts"] < 140_000


@pytest.mark.parametrize("release", RELEASES)
def test_each_orderly_dead_letter_is_stored_before_the_commit_past_it(release):
    """real-orderly-dlq: the 6 poison messages' producer send-backs into %DLQ% each come before
    any commit past their offset (the client commits past it only once the send's answer came;
    5.x answers the send from the asynchronous put's callback, the same code on 5.5.1)."""
    from test_real_5x import producer_send_backs_precede_commits_past_them
    assert producer_send_backs_precede_commits_past_them(_events("real-orderly-dlq", release)) == 6
