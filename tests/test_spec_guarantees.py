"""Guarantee losses fail the check even when an environment assumption broke (issue 13):
a message skipped outside the skips by design is INV-LOSS-1; a group's first start at LAST is
by design."""

import handtraces
from handtraces import TRACES

Q = dict(group="G", topic="T", broker="broker-a", queue=0)
SUB = {"T": {"type": "TAG", "expr": "*"}, "%RETRY%G": {"type": "TAG", "expr": "*"}}


def load(name):
    return handtraces.load(TRACES / name)


def check(evs):
    return handtraces.check(evs, "rocketmq-5.3.3")


def e(kind, ts=100, **f):
    return {"seq": 0, "ts": ts, "kind": kind, **f}


def take_over(cid, start):
    """cid (CONSUME_FROM_LAST_OFFSET) gets the queue, finds no committed offset, starts at `start`."""
    return [e("client_started", client=cid, group="G", consume_mode="CONCURRENTLY", message_model="CLUSTERING",
              subscriptions=SUB, config={"consume_from_where": "CONSUME_FROM_LAST_OFFSET"}),
            e("allocation_computed", client=cid, group="G", topic="T", strategy="AVG", mqs=[["T", "broker-a", 0]],
              cids=[cid], allocated=[["T", "broker-a", 0]], view="v-" + cid),
            e("offset_read", client=cid, **Q, offset=-1, source="store"),
            e("pq_created", client=cid, **Q, offset=start, from_where="CONSUME_FROM_LAST_OFFSET")]


def test_a_crash_before_the_first_persist_loses_messages():
    # c1 pulled offsets 0 and 1, consumed nothing, and crashed before any persist
    evs = load("valid_concurrent.jsonl")[:12] + [e("client_crashed", client="c1", group="G")] + take_over("c2", 2)
    rep = check(evs)
    assert [f.inv for f in rep.findings.errors] == ["INV-LOSS-1"]
    msg = rep.findings.errors[0].message
    assert "2 messages" in msg and "[0, 1]" in msg and "c1 (crashed)" in msg
    assert rep.to_dict()["violations"][0]["guarantee"].startswith("at-least-once")


def test_a_group_s_first_start_at_last_is_by_design():
    # two messages were stored before the group ever consumed the queue: LAST skips them
    evs = load("valid_concurrent.jsonl")[:4] + load("valid_concurrent.jsonl")[5:7] + take_over("c2", 2)
    rep = check(evs)
    assert rep.ok, [f.message for f in rep.findings.errors]


def test_an_operator_reset_is_by_design():
    evs = load("valid_concurrent.jsonl")[:12] + [
        e("offset_committed", broker="broker-a", group="G", topic="T", queue=0, offset=2, source="reset")]
    rep = check(evs)
    assert rep.ok and rep.findings.counts.get("ANOM-RESET-SKIP") == 1
