"""Orderly retries, the DLQ and #6163; orderly broadcast and #8772 (digest §6, §7, §12).

An orderly consumer retries locally: SUSPEND puts the batch back and raises each message's
reconsume count in memory. checkReconsumeTimes sends a message whose count r reached
maxReconsumeTimes to %RETRY%<group> with a producer send, delay level 3 + r, header
RECONSUME_TIME = r (4.9.x) or r + 1 (5.1.1+). The broker dead-letters it when
4.9.x: header >= max; 5.1.1+: header > max, or the group still holds a live lock.
5.0.0 had the broker's '>' without the lock check and the client's r: 2 > 2 is false, so the
message went back to %RETRY% through the schedule, and again, for ever (#6163).
"""
import pytest

from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import load_scenario

MAX = 2   # orderly-dlq sets maxReconsumeTimes = 2


def poison_story(profile):
    events = run_to_list(load_scenario("orderly-dlq"), 1, profile)
    pid = next(e["origin_msg_id"] for e in events if e["kind"] == "message_stored" and e.get("tags") == "poison")
    deliveries = [e for e in events if e["kind"] == "consume_started" and pid in e["origin_msg_ids"]]
    sent = [e for e in events if e["kind"] == "message_sent_back" and e["origin_msg_id"] == pid]
    dlq = [e for e in events if e["kind"] == "message_dead_lettered" and e["origin_msg_id"] == pid]
    for d in deliveries:
        d["poison_r"] = d["reconsume_list"][d["origin_msg_ids"].index(pid)]
    return events, deliveries, sent, dlq


@pytest.mark.parametrize("profile,header", [("rocketmq-4.9.8", MAX), ("rocketmq-5.3.3", MAX + 1)])
def test_current_releases_dead_letter_after_max_plus_one_deliveries(profile, header):
    events, deliveries, sent, dlq = poison_story(profile)
    # Deliveries with local counts 0, 1, 2: the third failure reaches r >= max and sends it back.
    assert [d["poison_r"] for d in deliveries] == [0, 1, 2]
    assert len(deliveries) == MAX + 1
    # One producer send (via orderly_producer), straight to the DLQ, carrying r (4.9.x) or r+1 (5.x).
    assert [(s["via"], s["outcome"], s["reconsume_times"]) for s in sent] == [("orderly_producer", "dlq", header)]
    assert len(dlq) == 1 and dlq[0]["reconsume_times"] == header
    # The send-back succeeded, so the batch counts as done: the queue's offset moves past it.
    assert events[-1]["reason"] == "quiescent"


def test_bug_6163_retries_forever():
    events, deliveries, sent, dlq = poison_story("bug-6163-rocketmq-5.0.0")
    assert dlq == []
    # Every send-back is a retry at level 3 + 2 with the count 2 that the broker compares with '>'.
    assert len(sent) >= 5 and {(s["outcome"], s["reconsume_times"], s["delay_level"]) for s in sent} == {
        ("retry", MAX, 3 + MAX)}
    # After the three local deliveries, each retry copy comes back from %RETRY% once, fails, and
    # (r = 2 >= 2) is sent back at once: one more delivery per schedule round, until time runs out.
    assert len(deliveries) == MAX + 1 + len(sent) - 1
    assert {d["topic"] for d in deliveries[MAX + 1:]} == {"%RETRY%GID_dlq"}
    assert events[-1]["reason"] == "duration"


def test_messages_that_succeed_after_local_retries_are_not_sent_back():
    events = run_to_list(load_scenario("orderly-dlq"), 1, "rocketmq-5.3.3")
    o7 = {e["origin_msg_id"] for e in events if e["kind"] == "message_stored" and e.get("keys") == "order-7"}
    assert o7
    assert not [e for e in events if e["kind"] == "message_sent_back" and e["origin_msg_id"] in o7]
    sus = [e for e in events if e["kind"] == "consume_suspended" and e["reason"] == "suspend"]
    assert sus and {e["delay"] for e in sus} == {2000}   # the consumer's suspendCurrentQueueTimeMillis


@pytest.mark.parametrize("profile,blocked", [("rocketmq-5.3.3", False), ("rocketmq-4.9.8", True)])
def test_orderly_broadcast_consumers_block_each_other_only_before_8772(profile, blocked):
    # Broadcasting: each consumer consumes every queue. Before 5.3.2 the rebalance locked new
    # queues on the broker; the second consumer was refused, and since lockAll only runs in
    # CLUSTERING the winner never renews: the loser starts after the 60 s broker lock expires.
    events = run_to_list(load_scenario("orderly-broadcast"), 1, profile)
    first = {}
    for e in events:
        if e["kind"] == "consume_started":
            first.setdefault(e["client"], e["ts"])
    counts = {c: sum(len(e["offsets"]) for e in events if e["kind"] == "consume_started" and e["client"] == c)
              for c in ("c1", "c2")}
    assert counts == {"c1": 200, "c2": 200}
    late = max(first.values())
    if blocked:
        assert late > 60000
        assert any(e["kind"] == "lock_rejected" for e in events)
        assert any(e["kind"] == "lock_acquired" and e["reason"] == "takeover" for e in events)
        assert not any(e["kind"] == "lock_acquired" and e["reason"] == "renewed" for e in events)
    else:
        assert late < 1000
        assert not any(e["kind"].startswith("lock_") for e in events)
