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


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_supported_versions_are_read(tmp_path, version):
    evs = load("valid_concurrent.jsonl")
    evs[0]["schema_version"] = version
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps(e) + "\n" for e in evs))
    assert check_trace(p).ok


@pytest.mark.parametrize("version", [0, 6, 99])
def test_other_versions_are_refused_naming_the_supported_ones(tmp_path, version):
    evs = load("valid_concurrent.jsonl")
    evs[0]["schema_version"] = version
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps(e) + "\n" for e in evs))
    with pytest.raises(TraceInputError, match=r"t.jsonl:1: .*schema_version %d.*versions 1, 2, 3, 4, 5" % version):
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


# ---------------------------------------------------------------------------- offset_erased{store: broker}
# ConsumerOffsetManager.commitOffset (4.9.8) does get(topic@group) and, finding no map, puts a new
# one: two first commits of one topic@group at once each put a map, and the second replaces the
# first with its entries (docs/recorder.md). The recorder reports each lost entry as
# offset_erased{store: broker}: the queue has no committed offset until its next commit.

def consumed():
    """valid_concurrent.jsonl without its end: c1 consumed offsets 0 and 1, the broker holds 2."""
    return load("valid_concurrent.jsonl")[:-1]


def erased(ts=5002):
    return {"seq": 0, "ts": ts, "kind": "offset_erased", **Q, "store": "broker"}


def committed(off, previous, ts=5003, client="c1"):
    return {"seq": 0, "ts": ts, "kind": "offset_committed", **Q, "offset": off, "previous": previous,
            "client": client, "source": "persist"}


def persisted(off, ts=5003, client="c1"):
    return {"seq": 0, "ts": ts, "kind": "offset_persisted", "client": client, **Q, "offset": off, "lost": False}


def test_an_erased_broker_entry_is_gone_for_the_next_commit():
    rep = check(consumed() + [erased(), persisted(2), committed(2, None)])
    assert rep.ok, [f.message for f in rep.findings.errors]
    # without the erase the table still holds 2: 'previous null' is a guard violation
    rep = check(consumed() + [persisted(2), committed(2, None)])
    assert [f.inv for f in rep.findings.errors] == ["GUARD"]


def reader(off, ts=6000):
    """c2 joins (CONSUME_FROM_LAST_OFFSET), gets the queue and reads the broker's offset."""
    return [
        {"seq": 0, "ts": ts, "kind": "client_stopped", "client": "c1", "group": "G"},
        {"seq": 0, "ts": ts, "kind": "client_started", "client": "c2", "group": "G", "consume_mode": "CONCURRENTLY",
         "message_model": "CLUSTERING", "subscriptions": {"T": {"type": "TAG", "expr": "*"}},
         "config": {"consume_from_where": "CONSUME_FROM_LAST_OFFSET"}},
        {"seq": 0, "ts": ts, "kind": "allocation_computed", "client": "c2", "group": "G", "topic": "T",
         "strategy": "AVG", "mqs": [["T", "broker-a", 0]], "cids": ["c2"], "allocated": [["T", "broker-a", 0]],
         "view": "v2"},
        {"seq": 0, "ts": ts, "kind": "offset_read", "client": "c2", **Q, "offset": off, "source": "store"},
    ]


def test_a_read_after_the_erase_finds_no_offset():
    assert check(consumed() + [erased()] + reader(-1)).ok
    rep = check(consumed() + reader(-1))
    assert [f.inv for f in rep.findings.errors] == ["INV-START-1"]
    rep = check(consumed() + [erased()] + reader(2))
    assert [f.inv for f in rep.findings.errors] == ["INV-START-1"]


def stored(off, ts=5500):
    return {"seq": 0, "ts": ts, "kind": "message_stored", "topic": "T", "broker": "broker-a", "queue": 0,
            "offset": off, "msg_id": f"m{off}", "origin_msg_id": f"m{off}", "source": "producer", "tags": "A",
            "tags_code": 65, "reconsume_times": 0}


def test_messages_skipped_after_the_erase_are_a_loss_naming_the_lost_entry():
    # m2, m3 stored and not consumed; the entry (2) is lost; c2 reads -1 and starts at the end (4)
    evs = consumed() + [stored(2), stored(3), erased()] + reader(-1) + [
        {"seq": 0, "ts": 6000, "kind": "pq_created", "client": "c2", **Q, "offset": 4,
         "from_where": "CONSUME_FROM_LAST_OFFSET"}]
    errs = check(evs).findings.errors
    assert [f.inv for f in errs] == ["INV-LOSS-1"]
    assert "lost the queue's committed offset 2" in errs[0].message and "offset_erased" in errs[0].message


# ---------------------------------------------------------------------------- remote store reads
# RemoteBrokerOffsetStore.readOffset(READ_FROM_STORE) is a QUERY_CONSUMER_OFFSET round trip: the
# broker may answer with a value another client's commit replaces before the answer arrives.

def joined(ts=6000):
    """c2 joins and is given the queue; c1 still holds it (its ProcessQueue is live)."""
    return [ev for ev in reader(0, ts) if ev["kind"] in ("client_started", "allocation_computed")]


def read(off, ts=6100, client="c2"):
    return {"seq": 0, "ts": ts, "kind": "offset_read", "client": client, **Q, "offset": off, "source": "store"}


def reset(off, ts):
    """The operator moves the group's offset (resetOffsetByTimestamp): a commit no client sent."""
    return {"seq": 0, "ts": ts, "kind": "offset_committed", **Q, "offset": off, "source": "reset"}


def test_a_read_may_return_a_value_replaced_since_the_allocation_and_no_older_one():
    from rocketspec.spec.state import HELD_MAX

    values = list(range(3, 3 + HELD_MAX + 4))
    last = values[-1]
    base = consumed() + [stored(o) for o in range(2, last + 1)] + joined()
    commits = [reset(off, 6001 + i) for i, off in enumerate(values)]
    for ok in (last, last - 1, last - HELD_MAX):
        rep = check(base + commits + [read(ok)])
        assert rep.ok, (ok, [f.message for f in rep.findings.errors])
    # older than the newest HELD_MAX replaced values, or never held: refused
    for bad in (last - HELD_MAX - 1, last + 1):
        assert [f.inv for f in check(base + commits + [read(bad)]).findings.errors] == ["INV-START-1"], bad
    # a value replaced before the allocation is no answer: the read is issued after it
    rep = check(consumed() + [stored(2), reset(3, 5900)] + joined() + [read(2)])
    assert [f.inv for f in rep.findings.errors] == ["INV-START-1"]
    rep = check(consumed() + [stored(2)] + joined() + [reset(3, 6050), read(2)])
    assert rep.ok, [f.message for f in rep.findings.errors]
