"""Every committed real trace (tests/fixtures/real, recorded on real RocketMQ 4.9.8) gets its
expected verdict from the checker: a clean run holds; a run that really broke a guarantee fails
with that guarantee and names its cause. No Java needed: a regression of the recorder (a fixture
recorded again) or of the spec shows up here."""
from __future__ import annotations

from pathlib import Path

import pytest

from rocketspec.spec.replay import check_trace

FIXTURES = Path(__file__).parent / "fixtures" / "real"

# The guarantees a real run lost (invariant ids of its errors); a scenario not named here is clean.
BROKE = {
    # SIGSTOP of c1 for 10 s, past its 3 s lease and the 6 s broker lock; c2 took queues 2 and 3
    # over. On SIGCONT c1's ProcessQueues were still flagged locked and its queued pulls went out
    # carrying its stale offsets (13, 16): the broker's committed offsets fell back below what c2
    # had consumed and committed.
    "real-orderly-pause": {"INV-ORDER-3"},
    # checkReconsumeTimes sends each Poison message to %RETRY% through the client's producer;
    # 4.9.8's send path puts DELAY back after handleRetryAndDLQ cleared it, so each DLQ copy lands
    # a delay level late (H-RETRY-3 at the history level)
    "real-orderly-dlq": {"INV-DLQ-1"},
}

def fixtures():
    return sorted(FIXTURES.glob("real-*.jsonl"))


def test_the_expectations_name_committed_fixtures():
    names = {p.stem for p in fixtures()}
    assert set(BROKE) <= names


@pytest.mark.parametrize("path", fixtures(), ids=lambda p: p.stem)
def test_real_fixture_gets_its_verdict(path):
    rep = check_trace(path)
    errors = rep.findings.errors
    want = BROKE.get(path.stem, set())
    assert {f.inv for f in errors} == want, [(f.inv, f.seq, f.message) for f in errors[:5]]
    assert rep.ok == (not want)


def test_a_pause_past_the_lease_names_the_pause_and_its_limits():
    rep = check_trace(FIXTURES / "real-orderly-pause.jsonl")
    (f, *_) = [f for f in rep.findings.errors if f.inv == "INV-ORDER-3"]
    # the cause: which client, the pause's duration against the lease and the broker lock
    assert "127.0.0.1@c1" in f.message and "pause" in f.message
    assert "10000 ms" in f.message and "client lease 3000 ms" in f.message and "broker lock 6000 ms" in f.message


def test_a_remote_read_may_be_answered_before_a_commit_the_trace_shows_first():
    """real-rebalance seq 971-973: c2's persist of 13 (its ProcessQueue of queue 5 removed by the
    rebalance) is committed while c3's QUERY_CONSUMER_OFFSET, issued after c3's allocation, is on
    its way; the broker had answered 12. Any later value, or one from before the allocation, is
    not an answer."""
    import handtraces

    evs = handtraces.load(FIXTURES / "real-rebalance.jsonl")
    i = next(i for i, e in enumerate(evs) if e["seq"] == 973)
    assert evs[i]["kind"] == "offset_read" and evs[i]["offset"] == 12
    assert handtraces.check(evs[:i + 1], "rocketmq-4.9.8", renumber=False).ok
    for bad in (11, 14):
        evs2 = [dict(e) for e in evs[:i + 1]]
        evs2[-1]["offset"] = bad
        rep = handtraces.check(evs2, "rocketmq-4.9.8", renumber=False)
        assert [(f.inv, f.seq) for f in rep.findings.errors] == [("INV-START-1", 973)], bad
    # without c3's allocation between the commits, the read is judged against the table alone
    evs3 = [dict(e) for e in evs[:i + 1] if not (e["kind"] == "allocation_computed" and e["seq"] == 970)]
    evs3 = [e for e in evs3 if not (e["kind"] == "allocation_computed" and e.get("client") == "127.0.0.1@c3"
                                     and e["seq"] > 900)]
    assert any(f.inv == "INV-START-1" for f in handtraces.check(evs3, "rocketmq-4.9.8", renumber=False)
               .findings.errors)


def test_the_orderly_dlq_copies_of_4_9_8_are_late_for_the_send_path_s_reason_and_nothing_else():
    """real-orderly-dlq: each of the 6 Poison messages is consumed 3 times in place, sent back through
    the client's producer and linked to its DLQ copy (no INV-OFFSET-3, INV-LIVE-1, GUARD: the
    recorder sees the send and names the copy by its first copy's offset id). The one finding is
    the late dead letter, named for 4.9.x's send path, not #2724."""
    rep = check_trace(FIXTURES / "real-orderly-dlq.jsonl")
    assert {k for k, n in rep.findings.counts.items() if not k.startswith("ANOM-")} == {"INV-DLQ-1"}
    dlq = [f for f in rep.findings.errors if f.inv == "INV-DLQ-1"]
    assert rep.findings.counts["INV-DLQ-1"] == 6
    assert all("send path puts the producer send's DELAY back" in f.message for f in dlq)
