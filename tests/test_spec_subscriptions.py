"""One group, two subscriptions ('TagA || TagB' and '*'): the broker filters every pull of the
group with one subscription per topic (the last heartbeat's, ConsumerGroupInfo.updateSubscription
keeps the newest subVersion) and the client re-checks tags with its own
(PullAPIWrapper.processPullResult). What one drops and another member subscribes is lost, and
the finding says so (INV-SUB-1), instead of blaming the client's re-check (INV-FILTER-1)."""
import pytest

from rocketspec.rocketmq.filter import tags_code
from rocketspec.rocketmq.profiles import get_profile
from rocketspec.spec.replay import check_events

Q = dict(group="G", topic="T", broker="broker-a", queue=0)
TAGS = ["TagA", "TagC", "TagB"]


def trace(owner_expr, other_expr, answer):
    evs = []

    def e(kind, **f):
        evs.append({"seq": len(evs), "ts": 0, "kind": kind, **f})
    e("trace_started", schema_version=2, profile="rocketmq-4.9.8")
    e("broker_started", broker="broker-a")
    e("topic_created", topic="T", broker="broker-a", queue_count=1, perm=6)
    for cid, expr in (("c1", owner_expr), ("c2", other_expr)):
        e("client_started", client=cid, group="G", consume_mode="CONCURRENTLY", message_model="CLUSTERING",
          subscriptions={"T": {"type": "TAG", "expr": expr}}, config={"consume_from_where": "CONSUME_FROM_FIRST_OFFSET"})
    for i, t in enumerate(TAGS):
        e("message_stored", topic="T", broker="broker-a", queue=0, offset=i, msg_id=f"m{i}", origin_msg_id=f"m{i}",
          source="producer", tags=t, tags_code=tags_code(t))
    e("allocation_computed", client="c1", group="G", topic="T", strategy="AVG", mqs=[["T", "broker-a", 0]],
      cids=["c1", "c2"], allocated=[["T", "broker-a", 0]], view="v")
    e("offset_read", client="c1", **Q, offset=-1, source="store")
    e("pq_created", client="c1", **Q, offset=0, from_where="CONSUME_FROM_FIRST_OFFSET")
    e("pull_issued", client="c1", **Q, offset=0, pull_id=1, max_nums=32)
    e("pull_answered", client="c1", **Q, pull_id=1, offset=0, get_status="FOUND", status="FOUND", next_offset=3,
      min_offset=0, max_offset=3, **answer)
    return evs


def check(evs):
    return check_events(enumerate(evs, 1), get_profile("rocketmq-4.9.8"))


def test_the_client_re_check_drops_what_the_broker_passed_with_the_other_subscription():
    # the broker's table holds c2's '*': TagC reaches c1, whose re-check of 'TagA || TagB' drops it
    rep = check(trace("TagA || TagB", "*", dict(offsets=[0, 2], msg_ids=["m0", "m2"], client_filtered=[1])))
    assert [f.inv for f in rep.findings.errors] == ["INV-SUB-1"]
    msg = rep.findings.errors[0].message
    assert "offset 1 (tags 'TagC'" in msg and "'*'" in msg and "lost" in msg
    assert rep.to_dict()["violations"][0]["guarantee"].startswith("at-least-once")


def test_the_broker_filters_with_the_other_subscription():
    # the broker's table holds c2's 'TagA || TagB': it filters TagC that c1 ('*') subscribes
    rep = check(trace("*", "TagA || TagB", dict(offsets=[0, 2], msg_ids=["m0", "m2"], broker_filtered=[1])))
    assert [f.inv for f in rep.findings.errors] == ["INV-SUB-1"]
    assert "dropped 1 messages c1 subscribes" in rep.findings.errors[0].message


@pytest.mark.parametrize("answer", [dict(offsets=[0, 2], msg_ids=["m0", "m2"], client_filtered=[1]),
                                    dict(offsets=[0, 2], msg_ids=["m0", "m2"], broker_filtered=[1])])
def test_alike_subscriptions_judge_the_filter_as_before(answer):
    # both subscribe 'TagA || TagB': dropping TagC is right wherever it happens... except that
    # the broker must have filtered it (its hash does not match): a client drop is INV-FILTER-1
    rep = check(trace("TagA || TagB", "TagA || TagB", answer))
    got = [f.inv for f in rep.findings.errors]
    assert got == (["INV-FILTER-1"] if "client_filtered" in answer else [])


def test_a_re_check_dropping_what_its_own_subscription_keeps_is_still_a_filter_error():
    rep = check(trace("TagA || TagB", "*", dict(offsets=[2], msg_ids=["m2"], client_filtered=[0, 1])))
    assert "INV-FILTER-1" in [f.inv for f in rep.findings.errors]
