"""Checking cost does not depend on offset values: traces whose offsets start at 10^12, with
gaps of 10^9 or minOffsets near 2^62, check like small ones (not timed: a walk over a gap would
not finish). Progress's range counts agree with a brute-force count for all small inputs."""
import json
from pathlib import Path

from hypothesis import given, strategies as s

from bench.offset_scale import events
from rocketspec.rocketmq.profiles import get_profile
from rocketspec.spec.replay import check_events
from rocketspec.spec.state import Progress

TRACES = Path(__file__).parent / "traces"
Q = dict(group="G", topic="T", broker="broker-a", queue=0)


def check(evs, profile="rocketmq-4.9.8"):
    return check_events(enumerate(evs, 1), get_profile(profile))


def test_huge_offsets_with_gaps_check_like_offset_zero():
    small = check(events(0, 0, runs=3, per_run=40, queues=2))
    huge = check(events(10 ** 12, 10 ** 9, runs=3, per_run=40, queues=2))
    assert small.ok and huge.ok, [f.message for f in huge.findings.errors]
    assert small.events == huge.events and small.ended == huge.ended == "quiescent"
    assert huge.live_keys == small.live_keys


def test_a_loss_across_a_huge_gap_is_reported_with_its_first_offsets():
    evs = list(events(10 ** 12, 10 ** 9, runs=2, per_run=10, queues=1))
    # drop the second run's consumption of offset first+3: quiescence must name it, not walk the gap
    first = 10 ** 12 + 10 + 10 ** 9
    evs = [e for e in evs if not (e["kind"] == "consume_started" and e["offsets"] == [first + 3])]
    rep = check(evs)
    assert {f.inv for f in rep.findings.errors} >= {"INV-LIVE-1"}


def _concurrent(n=12):
    return [json.loads(x) for x in (TRACES / "valid_concurrent.jsonl").read_text().splitlines()][:n]


def test_a_min_offset_near_2_to_the_62_is_refused_not_walked():
    evs = _concurrent()
    evs[11] = dict(evs[11], min_offset=2 ** 62)
    rep = check(evs, "rocketmq-5.3.3")
    assert [f.inv for f in rep.findings.errors] == ["INV-PULL-2"]
    assert "minOffset 4611686018427387904 above maxOffset" in rep.findings.errors[0].message


def test_a_message_stored_at_10_to_the_12_is_a_guard_and_the_end_names_the_hole():
    evs = _concurrent(12)
    evs.append({"seq": 12, "ts": 1, "kind": "message_stored", "topic": "T", "broker": "broker-a", "queue": 0,
                "offset": 10 ** 12, "msg_id": "mx", "origin_msg_id": "mx", "source": "producer"})
    evs.append({"seq": 13, "ts": 1, "kind": "trace_ended", "reason": "quiescent"})
    rep = check(evs, "rocketmq-5.3.3")
    assert [f.inv for f in rep.findings.errors][:1] == ["GUARD"]
    assert any(f.inv == "INV-LIVE-1" and "[0, 1, 2, 3, 4, 5, 6, 7]" in f.message for f in rep.findings.errors)


@given(s.sets(s.integers(0, 60), max_size=30), s.integers(0, 70), s.integers(0, 70), s.integers(0, 10))
def test_progress_range_counts_match_brute_force(handled, lo, hi, wm):
    p = Progress(wm)
    for o in sorted(handled):
        p.handle(o)
    brute = [o for o in range(lo, hi) if not p.handled(o)]
    assert p.unhandled_count(lo, hi) == len(brute)
    assert p.unhandled_first(lo, hi) == brute[:8]
    top = (lo + hi) // 2
    unhandled_below_top = [o for o in range(p.wm, top) if not p.handled(o)]
    above = {o for o in handled if o >= top}
    assert p.skip_to(top) == len(unhandled_below_top)
    assert all(p.handled(o) for o in range(0, top)) and all(p.handled(o) for o in above)
