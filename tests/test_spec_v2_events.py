"""Schema v2 events in the spec: a failed or rejected pull ends (PullCallback.onException), two
pulls really in flight stay INV-PULL-1 (#2449); schema versions 1 and 2 are read, others refused."""
import json

import pytest

import handtraces
from handtraces import TRACES
from rocketspec.spec.replay import check_trace
from rocketspec.traces.io import TraceInputError
from rocketspec.traces.schema import validate_event

Q = dict(group="G", topic="T", broker="broker-a", queue=0)


def load(name):
    return handtraces.load(TRACES / name)


def check(evs):
    return handtraces.check(evs, "rocketmq-5.3.3")


def prefix():
    """valid_concurrent.jsonl up to and including pq_created (seq 9)."""
    return load("valid_concurrent.jsonl")[:10]


def failed(pid, reason="rejected", **kw):
    return {"seq": 0, "ts": 5, "kind": "pull_failed", "client": "c1", **Q, "pull_id": pid, "reason": reason, **kw}


def issued(pid, off=0, ts=5):
    return {"seq": 0, "ts": ts, "kind": "pull_issued", "client": "c1", **Q, "offset": off, "pull_id": pid,
            "max_nums": 32}


@pytest.mark.parametrize("reason,extra", [("rejected", {"response_code": 26, "remark": "subscription not latest"}),
                                          ("exception", {})])
def test_a_failed_pull_ends_and_the_next_pull_asks_the_same_offset(reason, extra):
    evs = prefix() + [issued(1), failed(1, reason, **extra), issued(2, ts=1005)]
    rep = check(evs)
    assert rep.ok, [f.message for f in rep.findings.errors]


def test_two_pulls_in_flight_stay_an_error():
    evs = prefix() + [issued(1), issued(2)]
    assert [f.inv for f in check(evs).findings.errors] == ["INV-PULL-1"]


def test_a_failure_of_another_pull_does_not_end_the_one_in_flight():
    evs = prefix() + [issued(1), failed(7), issued(2)]
    assert [f.inv for f in check(evs).findings.errors] == ["INV-PULL-1"]


def test_the_pull_after_a_failure_may_not_move_the_offset():
    evs = prefix() + [issued(1), failed(1), issued(2, off=1)]
    assert [f.inv for f in check(evs).findings.errors] == ["INV-PULL-1"]


def test_obs_is_an_envelope_field_of_every_kind():
    ev = dict(failed(1), obs="sampled")
    assert validate_event(ev) is None
    assert "obs" in validate_event(dict(ev, obs="guessed"))


@pytest.mark.parametrize("version", [1, 2])
def test_supported_versions_are_read(tmp_path, version):
    evs = load("valid_concurrent.jsonl")
    evs[0]["schema_version"] = version
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps(e) + "\n" for e in evs))
    assert check_trace(p).ok


@pytest.mark.parametrize("version", [0, 3, 99])
def test_other_versions_are_refused_naming_the_supported_ones(tmp_path, version):
    evs = load("valid_concurrent.jsonl")
    evs[0]["schema_version"] = version
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps(e) + "\n" for e in evs))
    with pytest.raises(TraceInputError, match=r"t.jsonl:1: .*schema_version %d.*versions 1, 2" % version):
        check_trace(p)


def test_an_orderly_duplicate_counts_once():
    """c2 takes the queue over and consumes offsets 0 and 1 again: two duplicates, counted when
    the listener gets them, not again at the commit."""
    evs = load("valid_orderly.jsonl")[:-1]
    ts = evs[-1]["ts"]
    q2 = dict(client="c2", **Q)

    def e(kind, **f):
        return {"seq": 0, "ts": ts, "kind": kind, **f}
    evs += [e("allocation_computed", client="c2", group="G", topic="T", strategy="AVG", mqs=[["T", "broker-a", 0]],
              cids=["c2"], allocated=[["T", "broker-a", 0]], view="v2"),
            e("offset_read", **q2, offset=-1, source="store"),
            e("pq_created", **q2, offset=0, from_where="CONSUME_FROM_FIRST_OFFSET", locked=True),
            e("pull_issued", **q2, offset=0, pull_id=9, max_nums=32),
            e("pull_answered", **q2, pull_id=9, offset=0, get_status="FOUND", status="FOUND", next_offset=2,
              min_offset=0, max_offset=2, offsets=[0, 1], msg_ids=["m0", "m1"]),
            e("messages_taken", **q2, offsets=[0, 1]),
            e("consume_started", **q2, consume_id=1, offsets=[0, 1], msg_ids=["m0", "m1"], reconsume_list=[0, 0]),
            e("consume_finished", **q2, consume_id=1, status="SUCCESS", dropped=False),
            e("pq_committed", **q2, offset=2, offsets=[0, 1]),
            e("trace_ended", reason="duration")]
    rep = check(evs)
    assert rep.ok, [f.message for f in rep.findings.errors]
    assert rep.findings.counts["ANOM-DUP-1"] == 2
    assert [w.inv for w in rep.findings.warnings].count("ANOM-DUP-1") == 2     # with examples
