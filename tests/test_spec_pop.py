"""The POP invariants (INV-POP-*, spec/actions/pop.py) on hand-written traces built from the
RocketMQ 5.5.0 facts (rocketspec/rocketmq/pop.py): each invariant with a trace that holds and a
trace that violates it, and Hypothesis where a rule holds for all inputs.

`python tests/test_spec_pop.py` writes the catalogue's wrong POP traces (tests/traces/wrong_pop_*).
"""
from __future__ import annotations

import json
import os

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketspec.rocketmq import pop as facts
from rocketspec.rocketmq.profiles import get_profile
from rocketspec.spec.replay import check_events

PROFILE = "rocketmq-5.5.1"
B, G, T = "broker-a", "G", "T"
RT = facts.pop_retry_topic(G, T)        # %RETRY%G_T: KeyBuilder.buildPopRetryTopicV1 (enableRetryTopicV2 false)
IT = 60_000                             # DefaultMQPushConsumer.popInvisibleTime


class Pop:
    """A POP trace: a broker, topic T with `queues` queues, consumers c1.. in POP mode, `msgs`
    messages in T/broker-a/0."""

    def __init__(self, msgs=3, clients=("c1",), max_reconsume=-1, queues=1):
        self.ev: list[dict] = []
        self.ts = 0
        self.pop_id = 0
        self.e("trace_started", schema_version=3, profile=PROFILE, scenario="hand-written")
        self.e("broker_started", broker=B)
        self.e("topic_created", topic=T, broker=B, queue_count=queues, perm=6)
        for c in clients:
            self.e("client_started", client=c, group=G, consume_mode="CONCURRENTLY", message_model="CLUSTERING",
                   subscriptions={T: {"type": "TAG", "expr": "*"}},
                   config={"message_request_mode": "POP", "max_reconsume_times": max_reconsume})
        for i in range(msgs):
            self.e("message_stored", topic=T, broker=B, queue=0, offset=i, msg_id=f"m{i}", origin_msg_id=f"m{i}",
                   source="producer", reconsume_times=0)

    def e(self, kind, ts=None, **f):
        if ts is not None:
            self.ts = max(self.ts, ts)
        d = {"seq": len(self.ev), "ts": self.ts, "kind": kind}
        d.update(f)
        self.ev.append(d)
        return d

    def pop(self, ts, offsets, client="c1", it=IT, topic=T, queue=0, order=False, attempt=None, rc=0,
            ids=None, checkpoint=True):
        """PopMessageProcessor.popMsgFromQueue: a checkpoint (concurrent), then one message_popped
        per offset, then the answer. Returns the handles."""
        self.pop_id += 1
        self.e("pop_requested", ts=ts, client=client, group=G, topic=topic, broker=B, queue=queue,
               pop_id=self.pop_id, invisible_time=it, max_nums=32, order=order,
               **({"attempt_id": attempt} if attempt else {}))
        qid = facts.POP_ORDER_REVIVE_QUEUE if order else 0
        flag = facts.RETRY_FLAG_V1 if topic.startswith("%RETRY%") else facts.RETRY_FLAG_NORMAL
        if checkpoint and not order:
            self.e("pop_checkpoint_written", group=G, topic=topic, broker=B, queue=queue, ck_offset=offsets[0],
                   offsets=list(offsets), pop_time=ts, invisible_time=it, revive_qid=qid, cause="pop",
                   store="revive_log")
        handles = []
        for i, off in enumerate(offsets):
            h = facts.build_handle(offsets[0], ts, it, qid, flag, B, queue, off)
            handles.append(h)
            self.e("message_popped", client=client, group=G, topic=topic, broker=B, queue=queue, offset=off,
                   msg_id=(ids or {}).get(off, f"m{off}"), pop_id=self.pop_id, handle=h, pop_time=ts,
                   invisible_time=it, reconsume_times=rc, order=order, revive_qid=qid, ck_offset=offsets[0],
                   **({"attempt_id": attempt} if attempt else {}))
        self.e("pop_answered", client=client, group=G, topic=topic, broker=B, pop_id=self.pop_id,
               status="FOUND", count=len(offsets))
        return handles

    def ack(self, ts, off, handle, pop_time, result="acked", client="c1", topic=T, reason="consumed", order=False):
        self.e("message_acked", ts=ts, client=client, group=G, topic=topic, broker=B, queue=0, offset=off,
               handle=handle, pop_time=pop_time, result=result, reason=reason, order=order)

    def change(self, ts, off, handle, pop_time, it, result="changed", client="c1", topic=T, order=False,
               suspend=False):
        """ChangeInvisibleTimeProcessor: concurrent, a new checkpoint with pop time = now; orderly,
        the pop time is kept. Returns (new handle, new pop time)."""
        npt = pop_time if order else ts
        nh = facts.build_handle(off, npt, it, facts.POP_ORDER_REVIVE_QUEUE if order else 0, "0", B, 0, off)
        self.e("invisible_time_changed", ts=ts, client=client, group=G, topic=topic, broker=B, queue=0, offset=off,
               handle=handle, pop_time=pop_time, result=result, new_handle=nh, new_pop_time=npt,
               invisible_time=it, suspend=suspend, order=order)
        return nh, npt

    def revive(self, ts, off, pop_time, rc=1, target_offset=0, outcome="retry", topic=T):
        """PopReviveService.reviveRetry: the copy goes to %RETRY%G_T with one more reconsumption."""
        extra = {} if outcome != "retry" else dict(target_topic=RT, target_queue=0, target_offset=target_offset,
                                                     target_msg_id=f"r{off}.{rc}", reconsume_times=rc)
        self.e("message_revived", ts=ts, group=G, topic=topic, broker=B, queue=0, offset=off, msg_id=f"m{off}",
               origin_msg_id=f"m{off}", pop_time=pop_time, outcome=outcome, **extra)

    def end(self, ts=None, reason="quiescent"):
        self.e("trace_ended", ts=ts, reason=reason)
        return self.ev


def check(evs):
    return check_events(enumerate(evs, 1), get_profile(PROFILE))


def errors(evs) -> dict:
    rep = check(evs)
    return dict(rep.findings.counts) if not rep.ok else {}


def assert_holds(evs):
    rep = check(evs)
    assert rep.ok, [f.to_dict() for f in rep.findings.errors]


def assert_violates(evs, inv):
    rep = check(evs)
    got = sorted({f.inv for f in rep.findings.errors})
    assert got == [inv], [f"{f.inv}: {f.message}" for f in rep.findings.errors]


# ------------------------------------------------------------------ traces that hold


def t_pop_ack():
    p = Pop(msgs=2)
    h = p.pop(1000, [0, 1])
    p.ack(1500, 0, h[0], 1000)
    p.ack(1600, 1, h[1], 1000)
    return p.end(2000)


def t_revive_then_ack():
    """Un-acked past its deadline: revive (at deadline + ackTimeInterval + 1 s) stores a copy in
    %RETRY%G_T with reconsumeTimes 1; the copy is popped and acked."""
    p = Pop(msgs=1)
    h = p.pop(1000, [0])
    at = facts.earliest_revive(1000, IT)
    p.revive(at, 0, 1000, rc=1)
    h2 = p.pop(at + 100, [0], topic=RT, rc=1, ids={0: "r0.1"})
    p.ack(at + 200, 0, h2[0], at + 100, topic=RT)
    return p.end(at + 300)


def test_pop_then_ack_holds():
    assert_holds(t_pop_ack())


def test_revive_into_the_pop_retry_topic_then_ack_holds():
    assert RT == "%RETRY%G_T"
    assert_holds(t_revive_then_ack())


def test_a_change_of_invisible_time_moves_the_deadline_and_the_new_handle_acks():
    """ChangeInvisibleTimeProcessor.appendCheckPointThenAckOrigin: the new handle (pop time = the
    change's time) is current; revive of the new checkpoint only after its own deadline."""
    p = Pop(msgs=1)
    h = p.pop(1000, [0])
    nh, npt = p.change(50_000, 0, h[0], 1000, 30_000)
    p.ack(70_000, 0, nh, npt)         # past the first deadline (61 000), before the new one (80 000)
    assert_holds(p.end(90_000))


# ------------------------------------------------------------------ INV-POP-HANDLE-1


def t_two_valid_handles():
    p = Pop(msgs=1, clients=("c1", "c2"))
    p.pop(1000, [0])
    p.pop(2000, [0], client="c2")       # c1's handle is valid until 61 000
    return p.end(3000, reason="duration")


def t_revive_before_deadline():
    p = Pop(msgs=1)
    p.pop(1000, [0])
    p.revive(30_000, 0, 1000)           # deadline 61 000
    return p.end(31_000, reason="duration")


def test_a_message_handed_out_while_another_handle_is_valid_violates_handle_1():
    assert_violates(t_two_valid_handles(), "INV-POP-HANDLE-1")


def test_revive_before_the_deadline_violates_handle_1():
    assert_violates(t_revive_before_deadline(), "INV-POP-HANDLE-1")


def test_revive_of_an_old_checkpoint_while_the_changed_handle_is_valid_violates_handle_1():
    """#9956/#10276 shape: the old checkpoint should have been acked by the change."""
    p = Pop(msgs=1)
    h = p.pop(1000, [0])
    p.change(50_000, 0, h[0], 1000, 60_000)     # new deadline 110 000
    p.revive(facts.earliest_revive(1000, IT), 0, 1000)
    assert_violates(p.end(64_000, reason="duration"), "INV-POP-HANDLE-1")


@settings(max_examples=60, deadline=None)
@given(it=st.integers(facts.MIN_POP_INVISIBLE_TIME, facts.MAX_POP_INVISIBLE_TIME),
       pop_time=st.integers(1, 10_000), early=st.integers(1, facts.MIN_POP_INVISIBLE_TIME))
def test_revive_is_judged_by_the_deadline_for_every_invisible_time(it, pop_time, early):
    """For every invisible time the push consumer accepts: revive at the deadline + margin holds,
    revive before the deadline breaks INV-POP-HANDLE-1."""
    p = Pop(msgs=1)
    p.pop(pop_time, [0], it=it)
    p.revive(facts.earliest_revive(pop_time, it), 0, pop_time)
    assert_holds(p.ev + [])
    q = Pop(msgs=1)
    q.pop(pop_time, [0], it=it)
    q.revive(facts.deadline(pop_time, it) - early, 0, pop_time)
    assert_violates(q.ev, "INV-POP-HANDLE-1")


# ------------------------------------------------------------------ INV-POP-ACK-1


def t_acked_then_revived():
    """#7724: an acked message is revived and delivered twice."""
    p = Pop(msgs=1)
    h = p.pop(1000, [0])
    p.ack(2000, 0, h[0], 1000)
    p.revive(facts.earliest_revive(1000, IT), 0, 1000)
    return p.end(64_000, reason="duration")


def test_an_acked_message_revived_violates_ack_1():
    assert_violates(t_acked_then_revived(), "INV-POP-ACK-1")


def test_an_ack_without_effect_lets_revive_bring_the_message_back():
    """An ack the broker answered as stale changed nothing: revive is at-least-once, not a fault."""
    p = Pop(msgs=1)
    h = p.pop(1000, [0])
    p.ack(2000, 0, h[0], 1000, result="rejected")
    at = facts.earliest_revive(1000, IT)
    p.revive(at, 0, 1000)
    h2 = p.pop(at + 1, [0], topic=RT, rc=1, ids={0: "r0.1"})
    p.ack(at + 2, 0, h2[0], at + 1, topic=RT)
    assert_holds(p.end(at + 3))


# ------------------------------------------------------------------ INV-POP-LOSS-1


def t_revive_dropped():
    """#10985 / RocksDB PopConsumerService past popReviveMaxAttemptTimes: revive gives up."""
    p = Pop(msgs=1)
    p.pop(1000, [0])
    p.revive(facts.earliest_revive(1000, IT), 0, 1000, outcome="dropped")
    return p.end(64_000, reason="duration")


def test_revive_giving_up_violates_loss_1():
    assert_violates(t_revive_dropped(), "INV-POP-LOSS-1")


def test_a_failed_revive_reput_is_no_loss():
    p = Pop(msgs=1)
    p.pop(1000, [0])
    at = facts.earliest_revive(1000, IT)
    p.revive(at, 0, 1000, outcome="reput")
    p.revive(at + facts.CK_REWRITE_INTERVALS_S[0] * 1000, 0, 1000)
    assert_holds(p.ev)


def test_acking_as_past_its_retries_below_the_limit_violates_loss_1():
    """ConsumeMessagePopConcurrentlyService acks a failed message only at getMaxReconsumeTimes
    (16 for -1); here the copy was consumed 3 times."""
    p = Pop(msgs=1)
    h = p.pop(1000, [0], rc=3)
    p.ack(2000, 0, h[0], 1000, reason="max_reconsume")
    assert_violates(p.ev, "INV-POP-LOSS-1")
    q = Pop(msgs=1)
    h = q.pop(1000, [0], rc=16)
    q.ack(2000, 0, h[0], 1000, reason="max_reconsume")
    assert_holds(q.ev)


# ------------------------------------------------------------------ INV-POP-DLQ-1


def t_revive_count_not_raised():
    p = Pop(msgs=1)
    p.pop(1000, [0], rc=2)
    p.revive(facts.earliest_revive(1000, IT), 0, 1000, rc=2)     # reviveRetry sets 3
    return p.end(64_000, reason="duration")


def test_a_revived_copy_that_does_not_count_one_more_consumption_violates_dlq_1():
    assert_violates(t_revive_count_not_raised(), "INV-POP-DLQ-1")


def test_after_a_suspend_the_revived_copy_keeps_its_count():
    """PopReviveService.reviveRetry: a suspend's checkpoint keeps reconsumeTimes."""
    p = Pop(msgs=1)
    h = p.pop(1000, [0], rc=2)
    nh, npt = p.change(2000, 0, h[0], 1000, 10_000, suspend=True)
    p.revive(facts.earliest_revive(npt, 10_000), 0, npt, rc=2)
    assert_holds(p.ev)


def test_dead_letter_before_the_limit_violates_dlq_1_and_at_the_limit_holds():
    """proxy PopMessageResultFilterImpl: TO_DLQ when reconsumeTimes >= maxAttempts (retryMaxTimes + 1)."""
    limit = facts.proxy_max_attempts()
    assert limit == 17
    for rc, ok in ((limit - 1, False), (limit, True)):
        p = Pop(msgs=1)
        h = p.pop(1000, [0], rc=rc)
        p.e("pop_dead_lettered", ts=1001, group=G, topic=T, broker=B, queue=0, offset=0, msg_id="m0",
            reconsume_times=rc, max_attempts=limit, handle=h[0], dlq_offset=0)
        # ProducerProcessor.forwardMessageToDeadLetterQueue, then the proxy acks the handle it popped
        p.ack(1002, 0, h[0], 1000, reason="dead_lettered")
        (assert_holds if ok else lambda e: assert_violates(e, "INV-POP-DLQ-1"))(p.end(1003))


def test_a_dead_lettered_copy_whose_ack_failed_comes_back_at_its_deadline():
    """The ack after the DLQ put may fail: revive then brings the copy back (at-least-once)."""
    p = Pop(msgs=1)
    h = p.pop(1000, [0], rc=17)
    p.e("pop_dead_lettered", ts=1001, group=G, topic=T, broker=B, queue=0, offset=0, msg_id="m0",
        reconsume_times=17, max_attempts=17, handle=h[0])
    p.ack(1002, 0, h[0], 1000, reason="dead_lettered", result="rejected")
    p.revive(facts.earliest_revive(1000, IT), 0, 1000, rc=18)
    assert_holds(p.ev)


@settings(max_examples=60, deadline=None)
@given(rc=st.integers(0, 40), retry_max=st.integers(0, 32))
def test_the_dlq_takes_a_message_exactly_from_its_limit(rc, retry_max):
    limit = facts.proxy_max_attempts(retry_max)
    p = Pop(msgs=1)
    p.pop(1000, [0], rc=rc)
    p.e("pop_dead_lettered", ts=1001, group=G, topic=T, broker=B, queue=0, offset=0, msg_id="m0",
        reconsume_times=rc, max_attempts=limit)
    rep = check(p.ev)
    assert rep.ok == (rc >= limit)


# ------------------------------------------------------------------ INV-POP-ORDER-1


def t_orderly_second_attempt_while_blocked():
    """ConsumerOrderInfoManager.checkBlock: offsets 0-1 are neither acked nor visible again."""
    p = Pop(msgs=3, clients=("c1", "c2"))
    p.pop(1000, [0, 1], order=True, attempt="a1")
    p.pop(2000, [0, 1], order=True, attempt="a2", client="c2")
    return p.end(3000, reason="duration")


def test_orderly_pop_one_attempt_at_a_time():
    p = Pop(msgs=3)
    h = p.pop(1000, [0, 1], order=True, attempt="a1")
    p.ack(1500, 0, h[0], 1000, order=True)
    p.ack(1600, 1, h[1], 1000, order=True)
    h2 = p.pop(2000, [2], order=True, attempt="a2")
    p.ack(2100, 2, h2[0], 2000, order=True)
    assert_holds(p.end(3000))
    assert_violates(t_orderly_second_attempt_while_blocked(), "INV-POP-ORDER-1")


def test_the_same_attempt_id_is_not_blocked():
    """OrderInfo.needBlock: a pop repeating the recorded attempt id (the client's retry)."""
    p = Pop(msgs=2)
    p.pop(1000, [0, 1], order=True, attempt="a1")
    h = p.pop(1200, [0, 1], order=True, attempt="a1", rc=1)
    p.ack(1300, 0, h[0], 1200, order=True)
    p.ack(1400, 1, h[1], 1200, order=True)
    assert_holds(p.end(2000))


def test_a_new_attempt_must_start_at_the_first_unacked_offset():
    """After the deadline the queue unblocks; getNextOffset says the next attempt starts at the
    first un-acked offset (1), so handing out 2 first breaks the order."""
    p = Pop(msgs=3)
    h = p.pop(1000, [0, 1], order=True, attempt="a1")
    p.ack(1500, 0, h[0], 1000, order=True)
    p.pop(facts.deadline(1000, IT) + 1, [2], order=True, attempt="a2")
    assert_violates(p.ev, "INV-POP-ORDER-1")
    q = Pop(msgs=3)
    h = q.pop(1000, [0, 1], order=True, attempt="a1")
    q.ack(1500, 0, h[0], 1000, order=True)
    h2 = q.pop(facts.deadline(1000, IT) + 1, [1, 2], order=True, attempt="a2", rc=1)
    q.ack(62_000, 1, h2[0], facts.deadline(1000, IT) + 1, order=True)
    q.ack(62_001, 2, h2[1], facts.deadline(1000, IT) + 1, order=True)
    assert_holds(q.end(63_000))


# ------------------------------------------------------------------ INV-POP-STALE-1


def t_stale_ack_took_effect():
    """#10276 shape: after a change, the old handle's ack deletes the new checkpoint."""
    p = Pop(msgs=1)
    h = p.pop(1000, [0])
    p.change(2000, 0, h[0], 1000, 30_000)
    p.ack(3000, 0, h[0], 1000, result="acked")      # the old pop time: no longer current
    return p.end(4000, reason="duration")


def test_an_ack_with_a_stale_handle_that_takes_effect_violates_stale_1():
    assert_violates(t_stale_ack_took_effect(), "INV-POP-STALE-1")


def test_an_ack_with_a_stale_handle_answered_without_effect_holds():
    p = Pop(msgs=1)
    h = p.pop(1000, [0])
    nh, npt = p.change(2000, 0, h[0], 1000, 30_000)
    p.ack(3000, 0, h[0], 1000, result="stale")
    p.ack(3100, 0, nh, npt)
    assert_holds(p.end(4000))


def test_an_orderly_ack_with_another_pop_time_that_counts_violates_stale_1():
    """ackOrderly -> commitAndNext returns -2 for another pop time: nothing may change."""
    p = Pop(msgs=2)
    p.pop(1000, [0, 1], order=True, attempt="a1")
    p.ack(1500, 0, "x", 999, order=True)
    assert_violates(p.ev, "INV-POP-STALE-1")


# ------------------------------------------------------------------ INV-POP-LIVE-1


def t_held_at_the_end():
    p = Pop(msgs=1)
    p.pop(1000, [0])
    return p.end(200_000)


def test_a_message_still_held_at_a_quiescent_end_violates_live_1():
    assert_violates(t_held_at_the_end(), "INV-POP-LIVE-1")


def test_a_revived_copy_never_handed_out_violates_live_1():
    p = Pop(msgs=1)
    p.pop(1000, [0])
    p.revive(facts.earliest_revive(1000, IT), 0, 1000)
    assert_violates(p.end(200_000), "INV-POP-LIVE-1")


def test_a_run_cut_short_is_not_judged_for_liveness():
    p = Pop(msgs=1)
    p.pop(1000, [0])
    assert_holds(p.end(2000, reason="duration"))


def test_a_pop_consumer_owes_no_pull_progress():
    """A client_started with message_request_mode POP: INV-LIVE-1 does not expect ProcessQueues."""
    assert_holds(t_pop_ack())


# ------------------------------------------------------------------ what RocketMQ does by design (ANOM-DUP-1)
# A broker restart reloads the consume offsets from their last flush (BrokerController: every
# flushConsumerOffsetInterval, 5 s; the order info every 10 s) and keeps the revive log; a
# change of invisible time is taken whatever the handle's deadline (ChangeInvisibleTimeProcessor
# 5.5.0: appendCheckPointThenAckOrigin, no deadline check). Both deliver a message again.


def warnings(evs) -> dict:
    rep = check(evs)
    assert rep.ok, [f"{f.inv}: {f.message}" for f in rep.findings.errors]
    return dict(rep.findings.counts)


def _commit(p, ts, off, source, flush=False, client="c1"):
    """ConsumerOffsetManager.commitOffset of G's T/broker-a/0 (and its flush, when `flush`)."""
    p.e("offset_committed", ts=ts, broker=B, group=G, topic=T, queue=0, offset=off, client=client, source=source)
    if flush:
        p.e("offset_flushed", group=G, topic=T, broker=B, queue=0, offset=off, store="broker")


def _restart(p, ts, loaded=None):
    p.e("broker_restarted", ts=ts, broker=B)
    if loaded is not None:
        p.e("offset_loaded", group=G, topic=T, broker=B, queue=0, offset=loaded, store="broker")


def t_orderly_ack_lost_by_a_restart(flushed):
    """ackOrderly commits offset 1; the broker restarts; with the commit not flushed (the last
    flush holds 0) the next attempt gets offset 0 again."""
    p = Pop(msgs=2)
    _commit(p, 900, 0, "pop", flush=True)
    h = p.pop(1000, [0], order=True, attempt="a1")
    p.ack(1500, 0, h[0], 1000, order=True)
    _commit(p, 1500, 1, "ack", flush=flushed)
    _restart(p, 3000, loaded=1 if flushed else 0)
    h2 = p.pop(4000, [0, 1], order=True, attempt="a2")
    p.ack(4100, 0, h2[0], 4000, order=True)
    p.ack(4200, 1, h2[1], 4000, order=True)
    return p.end(5000)


def test_an_orderly_ack_a_restart_lost_before_its_flush_is_popped_again_as_at_least_once():
    assert warnings(t_orderly_ack_lost_by_a_restart(flushed=False)).get("ANOM-DUP-1") == 1


def test_an_acked_message_popped_again_after_its_commit_was_flushed_still_violates_ack_1():
    assert_violates(t_orderly_ack_lost_by_a_restart(flushed=True), "INV-POP-ACK-1")


def test_an_orderly_ack_popped_again_without_a_restart_still_violates_ack_1():
    p = Pop(msgs=2)
    h = p.pop(1000, [0], order=True, attempt="a1")
    p.ack(1500, 0, h[0], 1000, order=True)
    p.pop(4000, [0, 1], order=True, attempt="a2")
    assert_violates(p.end(5000, reason="duration"), "INV-POP-ACK-1")


@settings(max_examples=60, deadline=None)
@given(flushed=st.integers(0, 4), off=st.integers(0, 3))
def test_after_a_restart_an_acked_copy_comes_back_as_at_least_once_only_above_the_flushed_offset(flushed, off):
    """ConsumerOffsetManager.load brings back the last flush: what it lists as consumed (below
    the flushed offset) the broker never hands out again; at or above it a restart may."""
    p = Pop(msgs=5)
    _commit(p, 900, flushed, "pop", flush=True)            # an earlier pop's commit, flushed
    hs = p.pop(1000, list(range(5)))
    _commit(p, 1000, 5, "pop")                             # this pop's, not flushed
    for i, h in enumerate(hs):
        p.ack(1100 + i, i, h, 1000)
    _restart(p, 3000, loaded=flushed)
    p.pop(4000, [off])
    evs = p.end(4100, reason="duration")
    if off >= flushed:
        assert warnings(evs).get("ANOM-DUP-1") == 1
    else:
        assert_violates(evs, "INV-POP-ACK-1")


def test_after_a_restart_an_orderly_attempt_is_not_held_to_the_order_info_of_before():
    """The order info is flushed every 10 s: after a restart the broker may not know the last
    attempt, so a new attempt while it was blocking, and an ack with its pop time, are not
    judged until the next attempt (without the restart: INV-POP-ORDER-1, INV-POP-STALE-1)."""
    p = Pop(msgs=2)
    h = p.pop(1000, [0, 1], order=True, attempt="a1")
    _restart(p, 2000)
    p.ack(2500, 0, h[0], 1000, order=True)                 # commitAndNext without order info: offset + 1
    p.pop(3000, [1], order=True, attempt="a2")              # offset 1 still invisible under a1
    assert warnings(p.end(3100, reason="duration")).get("ANOM-DUP-1") == 1
    q = Pop(msgs=2)
    q.pop(1000, [0, 1], order=True, attempt="a1")
    q.pop(3000, [1], order=True, attempt="a2")
    assert_violates(q.end(3100, reason="duration"), "INV-POP-ORDER-1")


def t_concurrent_pop_lost_by_a_restart(restart=True):
    """The pop's commit (offset 1) is lost: after the restart c2 pops offset 0 again while c1's
    handle is valid; c1's checkpoint still waits in the revive log and c1 acks it."""
    p = Pop(msgs=1, clients=("c1", "c2"))
    h = p.pop(1000, [0])
    _commit(p, 1000, 1, "pop")
    if restart:
        _restart(p, 2000)
    h2 = p.pop(3000, [0], client="c2")
    p.ack(3500, 0, h[0], 1000)                   # the checkpoint of the pop before the restart
    p.ack(3600, 0, h2[0], 3000, client="c2")
    return p.end(4000)


def test_a_concurrent_pop_a_restart_lost_hands_the_message_out_again_as_at_least_once():
    assert warnings(t_concurrent_pop_lost_by_a_restart()).get("ANOM-DUP-1") == 1


def test_the_same_second_handle_without_a_restart_still_violates_handle_1():
    assert "INV-POP-HANDLE-1" in errors(t_concurrent_pop_lost_by_a_restart(restart=False))


def test_a_concurrent_ack_after_the_restart_does_not_bring_the_lost_pop_commit_back():
    """The pop's commit past offset 0 is lost with the restart; acking the (still waiting)
    checkpoint afterwards commits nothing, so the next pop hands offset 0 out again."""
    p = Pop(msgs=1)
    h = p.pop(1000, [0])
    _commit(p, 1000, 1, "pop")
    _restart(p, 2000)
    p.ack(2500, 0, h[0], 1000)
    p.pop(3000, [0])
    assert warnings(p.end(3100, reason="duration")).get("ANOM-DUP-1") == 1


def test_the_checkpoint_from_before_a_restart_revives_as_at_least_once_and_a_later_one_does_not():
    p = Pop(msgs=1, clients=("c1", "c2"))
    p.pop(1000, [0])
    _restart(p, 2000)
    h2 = p.pop(3000, [0], client="c2")
    p.ack(3600, 0, h2[0], 3000, client="c2")
    p.revive(facts.earliest_revive(1000, IT), 0, 1000)      # c1's checkpoint, never acked
    assert warnings(p.end(70_000, reason="duration")).get("ANOM-DUP-1") == 2
    p.ev.pop()
    p.revive(facts.earliest_revive(3000, IT), 0, 3000)      # c2's, acked: still an error
    assert_violates(p.end(70_000, reason="duration"), "INV-POP-ACK-1")


def t_fifo_held_when_the_group_leaves(stays=()):
    """An orderly handle has no revive: the message waits for the group's next attempt."""
    p = Pop(msgs=1, clients=("c1", *stays))
    p.pop(1000, [0], order=True, attempt="a1")
    p.e("client_stopped", ts=2000, client="c1", group=G)
    return p.end(200_000)


def test_a_fifo_message_held_when_the_last_client_leaves_is_not_owed_at_the_end():
    assert_holds(t_fifo_held_when_the_group_leaves())


def test_a_fifo_message_held_while_a_client_of_the_group_lives_still_violates_live_1():
    assert_violates(t_fifo_held_when_the_group_leaves(stays=("c2",)), "INV-POP-LIVE-1")


def test_a_concurrent_message_held_when_the_group_leaves_still_violates_live_1():
    """Revive owes a concurrent checkpoint back whether or not a consumer is left."""
    p = Pop(msgs=1)
    p.pop(1000, [0])
    p.e("client_stopped", ts=2000, client="c1", group=G)
    assert_violates(p.end(200_000), "INV-POP-LIVE-1")


def t_change_after_revive():
    """The call outlived the handle: revive put the message into %RETRY%G_T, then the client's
    change of invisible time reached the broker, which wrote a new checkpoint (5.5.0
    ChangeInvisibleTimeProcessor: no deadline check; the ack of the old checkpoint matches
    nothing). The new checkpoint revives the message a second time."""
    p = Pop(msgs=1)
    h = p.pop(1000, [0])
    at = facts.earliest_revive(1000, IT)
    p.revive(at, 0, 1000, rc=1, target_offset=0)
    nh, npt = p.change(at + 500, 0, h[0], 1000, 3000)
    h2 = p.pop(at + 600, [0], topic=RT, rc=1, ids={0: "r0.1"}, client="c1")
    p.ack(at + 700, 0, h2[0], at + 600, topic=RT)
    p.revive(facts.earliest_revive(npt, 3000), 0, npt, rc=1, target_offset=1)
    h3 = p.pop(facts.earliest_revive(npt, 3000) + 100, [1], topic=RT, rc=1, ids={1: "r0.1b"})
    p.ack(facts.earliest_revive(npt, 3000) + 200, 1, h3[0], facts.earliest_revive(npt, 3000) + 100, topic=RT)
    return p


def test_a_change_with_the_handle_revive_retired_takes_effect_as_at_least_once():
    assert warnings(t_change_after_revive().end(200_000)).get("ANOM-DUP-1") == 1


def test_a_change_with_a_handle_an_earlier_change_replaced_still_violates_stale_1():
    p = Pop(msgs=1)
    h = p.pop(1000, [0])
    p.change(2000, 0, h[0], 1000, 30_000)
    p.change(3000, 0, h[0], 1000, 30_000)           # the first handle again: no checkpoint waits for it
    assert_violates(p.end(4000, reason="duration"), "INV-POP-STALE-1")


def test_a_change_after_an_ack_still_violates_stale_1():
    p = Pop(msgs=1)
    h = p.pop(1000, [0])
    p.ack(2000, 0, h[0], 1000)
    p.change(3000, 0, h[0], 1000, 30_000)
    assert_violates(p.end(4000, reason="duration"), "INV-POP-STALE-1")


# ------------------------------------------------------------------ the lifecycle


def _statuses(st):
    return {(k, off): cp.status for k, pq in st.pop.items() for off, cp in pq.copies.items()}


def test_the_holding_traces_move_copies_only_along_the_pop_lifecycle():
    """spec.lifecycles.PopMessageLifecycle is the copy's lifecycle: every status change the
    actions make on the holding traces is one of its transitions (a copy first seen starts
    'stored'; a revive's new copy in the retry topic starts there), and so is every one of
    the at-least-once traces (a broker restart, a late change)."""
    from rocketspec.spec.actions import HANDLERS
    from rocketspec.spec.lifecycles import POP_TABLE
    from rocketspec.spec.replay import Findings
    from rocketspec.spec.state import SpecState

    q = Pop(msgs=3)
    h = q.pop(1000, [0, 1], order=True, attempt="a1")
    q.ack(1500, 0, h[0], 1000, order=True)
    q.pop(facts.deadline(1000, IT) + 1, [1, 2], order=True, attempt="a2", rc=1)
    seen = 0
    kinds = {k for _, k in POP_TABLE}      # the lifecycle's events (an offset's reload is not one)
    by_design = (t_orderly_ack_lost_by_a_restart(flushed=False), t_concurrent_pop_lost_by_a_restart(),
                 t_change_after_revive().end(200_000))
    for evs in (t_pop_ack(), t_revive_then_ack(), q.ev, *by_design):
        st = SpecState(get_profile(PROFILE))
        out = Findings(st)
        for ev in evs:
            before = _statuses(st)
            out.ev = ev
            HANDLERS[ev["kind"]](st, ev, out)
            for where, now in _statuses(st).items():
                was = before.get(where, "stored")
                home = where[0] == (ev.get("group"), ev.get("topic"), ev.get("broker"), ev.get("queue"))
                if (was != now or (where[1] == ev.get("offset") and ev["kind"] in kinds)) and home:
                    assert now in POP_TABLE.get((was, ev["kind"]), ()), (was, ev["kind"], now)
                    seen += 1
        assert out.error_count == 0
    assert seen >= 10


# ------------------------------------------------------------------ the facts


def test_handle_round_trip_and_facts():
    h = facts.build_handle(5, 1000, IT, 3, "1", B, 0, 7)
    assert h == "5 1000 60000 3 1 broker-a 0 7"          # ExtraInfoUtil.buildExtraInfo, KEY_SEPARATOR " "
    assert facts.parse_handle(h) == {"ck_offset": 5, "pop_time": 1000, "invisible_time": IT, "revive_qid": 3,
                                     "retry_flag": "1", "broker": B, "queue": 0, "offset": 7}
    assert facts.parse_handle("1 2 3") is None
    assert facts.pop_retry_topic("G", "T", v2=True) == "%RETRY%G+T"
    assert facts.revive_target(RT, G) == RT
    assert facts.client_invisible_time(1000) == 60_000 and facts.client_invisible_time(10_000) == 10_000
    assert facts.max_reconsume_times(-1) == 16
    assert facts.pop_delay_ms(0, 2) == 60_000 and facts.pop_delay_ms(99, 0) == 7_200_000
    assert facts.reput_invisible_time(IT, 0) == IT + 10_000 and facts.reput_invisible_time(IT, 99) == IT + 7_200_000
    assert facts.order_next_offset([3, 4, 5], {3}) == 4 and facts.order_next_offset([3, 4], {3, 4}) == 5
    assert facts.pop_shares_all(-1, 3) and not facts.pop_shares_all(1, 4)


def test_every_pop_event_of_these_traces_is_valid_schema_v3():
    from rocketspec.traces.schema import validate_event

    for build in (t_pop_ack, t_revive_then_ack, t_two_valid_handles, t_orderly_second_attempt_while_blocked):
        for ev in build():
            assert validate_event(ev) is None, (ev, validate_event(ev))


# the catalogue's hand-written wrong traces (traces/reports/catalogue.py HAND_TRACES)
WRONG = {
    "wrong_pop_two_valid_handles.jsonl": t_two_valid_handles,
    "wrong_pop_acked_then_revived.jsonl": t_acked_then_revived,
    "wrong_pop_revive_dropped.jsonl": t_revive_dropped,
    "wrong_pop_revive_count.jsonl": t_revive_count_not_raised,
    "wrong_pop_orderly_two_attempts.jsonl": t_orderly_second_attempt_while_blocked,
    "wrong_pop_stale_ack.jsonl": t_stale_ack_took_effect,
    "wrong_pop_held_at_end.jsonl": t_held_at_the_end,
}


def test_the_committed_wrong_pop_traces_are_these():
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "traces")
    for name, build in WRONG.items():
        committed = [json.loads(x) for x in open(os.path.join(here, name)).read().splitlines() if x.strip()]
        assert committed == build(), name


if __name__ == "__main__":
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "traces")
    for name, build in WRONG.items():
        with open(os.path.join(here, name), "w") as fh:
            for d in build():
                fh.write(json.dumps(d, separators=(",", ":")) + "\n")
        print("wrote", name)


def test_an_orderly_offset_acked_behind_an_unacked_one_comes_again_by_design():
    """A FIFO attempt of offsets 0 and 1 (the reference under the state machine: f1's call on 0
    outlived its handle while broker-b was down, so that ack failed; the ack of 1 took effect).
    ackOrderly commits the first un-acked offset (OrderInfo.getNextOffset, 0) and the next pop
    reads from there: offset 1, acked, is handed out again. No filter of acked offsets exists in
    5.5.0's popMsgFromQueue or QueueLevelConsumerManager.update, so this is at-least-once
    (ANOM-DUP-1), not an acked message delivered again (INV-POP-ACK-1)."""
    from handtraces import check, load

    from pathlib import Path

    evs = load(Path(__file__).parent / "fixtures" / "pop-fifo-acked-behind-unacked.jsonl")
    rep = check(evs, "rocketmq-5.5.1", renumber=False)
    assert rep.ok, [(f.inv, f.message) for f in rep.findings.errors]
    assert rep.findings.counts.get("ANOM-DUP-1", 0) >= 1
    acked = [e for e in evs if e["kind"] == "message_acked" and e["result"] == "acked"]
    assert [(e["offset"], e["pop_time"]) for e in acked] == [(1, 4)]
    again = [e for e in evs if e["kind"] == "message_popped" and e["offset"] == 1]
    assert [e["pop_time"] for e in again] == [4, 17007]
