"""POP actions (RocketMQ 5.x): pops, acks, changes of invisible time, checkpoints, revives, POP
dead letters, assignments and POP listener calls (schema v3; docs/pop.md).

A copy is (group, stored topic, broker, queue, offset); its state is spec.pop_state. The guards
protect the POP invariants (spec.invariants, INV-POP-*): one valid handle per message, no
delivery after an ack, no loss through revive, the retry count, orderly POP's order and single
attempt, stale handles without effect; INV-POP-LIVE-1 is judged at the end (check_pop_end).
What RocketMQ does by design is counted as at-least-once (ANOM-DUP-1), not reported: a message
popped again after a broker restart reloaded an offset below it, the checkpoint of the pop before
the restart, and a change of invisible time with a handle revive already retired (the broker
does not check it).
"""
from __future__ import annotations

from rocketspec.rocketmq import pop as facts
from rocketspec.rocketmq.pop_kv import change_deletes_new_record

from .. import limits
from ..invariants import GUARD
from .common import _duplicate
from ..pop_state import ACKED, DEAD, HELD, LOST, REVIVED, SKIPPED, STORED, Asked, Copy, OrderInfo, pop_queue


def _copy(pq, ev, off):
    cp = pq.copies.get(off)
    if cp is None:
        cp = pq.copies[off] = Copy(since=ev["ts"])
    return cp


def _what(pq, off) -> str:
    g, t, b, q = pq.key
    return f"{t}/{b}/{q} offset {off}"


def _sync_restart(st, pq):
    """A broker restart the queue has not seen yet: its copies held or acked until then may be
    popped again (their commit may be lost), and its order info may be an older flush's."""
    n = st.dir.brokers.get(pq.key[2], 0)
    if n > pq.restarts:
        pq.restarts = n
        pq.reloaded = pq.order is not None
        for cp in pq.copies.values():
            cp.restarted = cp.status in (HELD, ACKED)


def _redelivered(st, pq, cp, off) -> bool:
    """The broker hands `off` out again because a restart reloaded the group's consume offset
    from a flush below it: the pop's (or the orderly ack's) commit past it was not flushed
    (ConsumerOffsetManager.persist every flushConsumerOffsetInterval; the restart's load)."""
    if not cp.restarted:
        return False
    qs = st.queues.get(pq.key)
    flushed = qs.flushed if qs is not None else None
    return flushed is None or off >= flushed


def _order_current(o, ev, off) -> bool:
    """ackOrderly/commitAndNext: the handle counts if it carries the recorded pop time and an
    offset of the recorded attempt not acked yet."""
    return o is not None and o.pop_time == ev["pop_time"] and off in o.offsets and off not in o.acked


def assignment_answered(st, ev, out):
    """RocketMQ: QueryAssignmentProcessor.queryAssignment (allocate4Pop).
    Actor: broker."""


def pop_requested(st, ev, out):
    """RocketMQ: DefaultMQPushConsumerImpl.popMessage / SimpleConsumer.receive (POP_MESSAGE).
    Actor: client."""
    if ev.get("order") and ev.get("attempt_id"):
        st.pop_asked[(ev["client"], ev["pop_id"])] = Asked(ev["group"], ev["topic"], ev["broker"], ev.get("queue", -1),
                                                          ev["attempt_id"], ev.get("max_nums"))


def pop_answered(st, ev, out):
    """RocketMQ: PopMessageProcessor.processRequest (answer).
    Actor: broker."""
    asked = st.pop_asked.pop((ev["client"], ev["pop_id"]), None)
    if asked is not None:
        _reentry_refused(st, ev, asked, out)


def pop_response_lost(st, ev, out):
    """RocketMQ: network loss of a receive's answer between the proxy and a gRPC client.
    Actor: network."""


def _reentry_refused(st, ev, asked, out):
    """INV-POP-ORDER-2: an orderly pop under the attempt id its queue's order info holds reads
    the queue again (checkBlock passes its own attempt) from the first offset that attempt left
    un-acked. An answer with room left that lacks it, while that attempt still blocks the queue
    for every other (its offsets neither acked nor visible again), refused the re-entry."""
    count = ev.get("count")
    if count is None or asked.max_nums is None or count >= asked.max_nums:
        return
    for key, pq in st.pop.items():
        g, t, b, q = key
        if (g, t, b) != (asked.group, asked.topic, asked.broker) or asked.queue not in (-1, q):
            continue
        o = pq.order
        if o is None or o.attempt_id != asked.attempt_id or pq.reloaded or st.dir.brokers.get(b, 0) > pq.restarts:
            continue
        left = o.blocking(ev["ts"])
        if left and (q, left[0]) not in asked.popped:
            cause = ""
            if st.profile.pop_kv_lock_fails_same_attempt and limits.broker(st, b).pop_kv:
                cause = ("; cause: apache/rocketmq#10827: on the RocksDB POP path popAsync fails fast when another "
                         "pop of the group and topic holds their lock, so the retried attempt reads nothing and is "
                         "held empty (PopConsumerService.tryLockForPop, 5.5.1, waits for the lock instead)")
            out.report("INV-POP-ORDER-2", f"pop #{ev['pop_id']} of {ev['client']} carries attempt {asked.attempt_id}, "
                       f"which holds {_what(pq, left[0])} (pop time {o.pop_time}), and is answered {ev['status']} "
                       f"with {count} message(s) without it: the queue stays blocked by a batch no consumer has "
                       f"until its invisible time ends{cause}", key)


def pop_consume_started(st, ev, out):
    """RocketMQ: ConsumeMessagePopConcurrentlyService.ConsumeRequest.run (listener called).
    Actor: client."""
    called = st.pop_called.setdefault(ev["group"], set())
    for mid in ev.get("msg_ids") or ():
        called.add(st.pop_origin.get(mid, mid))
    for h in ev.get("handles") or ():
        hd = facts.parse_handle(h)
        pq = st.pop.get((ev["group"], ev.get("topic"), hd["broker"], hd["queue"])) if hd else None
        cp = pq.copies.get(hd["offset"]) if pq is not None else None
        if cp is not None and cp.status == HELD and cp.pop_time == hd["pop_time"]:
            cp.calls += 1
    _called_past_limit(st, ev, out)
    _fifo_past_attempts(st, ev, out)


def _fifo_past_attempts(st, ev, out):
    """INV-POP-DLQ-1 for a SimpleConsumer's FIFO message: the proxy's receive filter sends a
    message to the DLQ once it has had max attempts (retryMaxTimes + 1), counted per offset as
    the broker counts an orderly queue's attempts (mergeOffsetConsumedCount: every new attempt
    that hands the offset out again). A listener call that receives it past that has retried it
    beyond the group's limit. The spec counts the attempts itself from the pops; the reconsume
    times a pop carries is whatever the proxy read."""
    c = st.dir.clients.get(ev["client"])
    if c is None or (c.config or {}).get("client_type") != "SIMPLE":
        return
    limit = facts.proxy_max_attempts(facts.max_reconsume_times(c.max_reconsume))
    for h, mid in zip(ev.get("handles") or (), ev.get("msg_ids") or ()):
        hd = facts.parse_handle(h)
        pq = st.pop.get((ev["group"], ev.get("topic"), hd["broker"], hd["queue"])) if hd else None
        cp = pq.copies.get(hd["offset"]) if pq is not None else None
        if cp is None or not cp.order or cp.handle != h or cp.attempts is None:
            continue
        if facts.proxy_dead_letters(cp.attempts, limit):
            cause = ""
            if cp.reconsume is not None and cp.reconsume < cp.attempts:
                cause = (f"; cause: the pop said {cp.reconsume} reconsumptions: the proxy in local mode reads an "
                         f"orderly pop's count under the queue's key, the minimum over the attempt's offsets "
                         f"(LocalMessageService.popMessage), not the offset's own, so its receive filter "
                         f"never saw {cp.attempts}")
            out.report("INV-POP-DLQ-1", f"{ev['client']}'s listener call #{ev.get('consume_id')} receives {mid} "
                       f"({_what(pq, hd['offset'])}) at its attempt {cp.attempts + 1}, past the group's max "
                       f"attempts {limit}: a FIFO message retried beyond its limit instead of dead-lettered{cause}",
                       pq.key)


def _called_past_limit(st, ev, out):
    """INV-POP-DLQ-1: the push consumer in POP mode calls its listener on no message whose
    reconsumeTimes is above getMaxReconsumeTimes() (-1 means 16): processPopResult acks such a
    message as it is popped (5.3.1+). The SimpleConsumer's limit is the proxy's (pop_dead_lettered)."""
    c = st.dir.clients.get(ev["client"])
    if c is None or (c.config or {}).get("client_type") != "POP_PUSH":
        return
    limit = facts.max_reconsume_times(c.max_reconsume)
    past = [(mid, n) for mid, n in zip(ev.get("msg_ids") or (), ev.get("reconsume_list") or ())
            if n is not None and facts.push_pop_past_limit(n, c.max_reconsume)]
    if not past:
        return
    cause = ("; cause: #8332, processPopResult before 5.3.1 has no past-limit check, so a copy revived past the "
             "limit (a failure at the limit, or a call longer than the invisible time) reaches the listener again"
             if not st.profile.pop_push_acks_past_limit else
             "; processPopResult acks a message past the limit before any listener call (#8332's fix, 5.3.1)")
    ids = ", ".join(f"{mid} ({n} reconsumptions)" for mid, n in past[:8])
    out.report("INV-POP-DLQ-1", f"{ev['client']}'s listener call #{ev.get('consume_id')} receives {ids}, past "
               f"its maxReconsumeTimes {limit}: the message is retried beyond the limit{cause}",
               _held_queue(st, ev, past[0][0]))


def _held_queue(st, ev, mid):
    """The POP queue key of the copy `mid` a listener call holds (the message's last pop), if known."""
    for key, pq in st.pop.items():
        if key[0] == ev["group"] and any(cp.msg_id == mid and cp.status == HELD for cp in pq.copies.values()):
            return key
    return None


def pop_consume_finished(st, ev, out):
    """RocketMQ: POP listener returns.
    Actor: client."""


def message_popped(st, ev, out):
    """RocketMQ: PopMessageProcessor.popMsgFromQueue.
    Actor: broker."""
    pq = pop_queue(st, ev["group"], ev["topic"], ev["broker"], ev["queue"])
    off, ts, pt = ev["offset"], ev["ts"], ev["pop_time"]
    key = pq.key
    _sync_restart(st, pq)
    sq = st.stored.get((ev["topic"], ev["broker"], ev["queue"]))
    if off not in pq.copies and (sq is None or not sq.min <= off < sq.next):
        out.report(GUARD, f"{ev['client']} is handed {_what(pq, off)}, which was never stored", key)
    cp = _copy(pq, ev, off)
    if cp.stored_at is None and sq is not None and sq.stored_at is not None:
        cp.stored_at = sq.stored_at.get(off)
    st.pop_origin[ev["msg_id"]] = ev.get("origin_msg_id") or cp.origin or ev["msg_id"]
    if cp.status in (ACKED, HELD) and cp.pop_time != pt and _redelivered(st, pq, cp, off):
        _duplicate(st, out, key, f"{_what(pq, off)} ({cp.msg_id}), {cp.status} before broker {ev['broker']} "
                   f"restarted, is handed to {ev['client']} again: the commit past it was not flushed")
        if cp.status == HELD and not cp.order:
            cp.prior[cp.pop_time] = cp.deadline     # its checkpoint still waits in the revive log
    elif cp.status == ACKED and ev["order"] and (o := _acked_behind_unacked(pq, off, pt)) is not None:
        _duplicate(st, out, key, f"{_what(pq, off)} ({cp.msg_id}), acked in the attempt of pop time {o.pop_time} "
                   f"while offset {o.unacked()[0]} before it was not, is handed to {ev['client']} again: the next "
                   f"attempt starts at the first un-acked offset (commitAndNext)")
    elif cp.status == ACKED:
        out.report("INV-POP-ACK-1", f"{_what(pq, off)} ({cp.msg_id or ev['msg_id']}) was acked at "
                   f"{cp.since} and is handed out again to {ev['client']}", key)
    elif cp.valid_at(ts) and cp.pop_time != pt and not ev["order"]:
        # (an orderly queue's second attempt is INV-POP-ORDER-1's; the same attempt id may re-pop)
        out.report("INV-POP-HANDLE-1", f"{_what(pq, off)} is handed to {ev['client']} while "
                   f"{cp.client}'s handle (pop time {cp.pop_time}) is valid until {cp.deadline}", key)
    asked = st.pop_asked.get((ev["client"], ev.get("pop_id")))
    if asked is not None:
        asked.popped.add((ev["queue"], off))
    cp.attempts = _orderly_pop(pq, ev, off, out) if ev["order"] else None
    cp.msg_id = ev["msg_id"]
    cp.origin = ev.get("origin_msg_id") or cp.origin or ev["msg_id"]
    cp.reconsume = ev["reconsume_times"]
    cp.status, cp.since = HELD, ts
    cp.handle, cp.pop_time = ev["handle"], pt
    cp.deadline = facts.deadline(pt, ev["invisible_time"])
    cp.client, cp.order, cp.suspend = ev["client"], bool(ev["order"]), False
    cp.restarted = False
    cp.same_key_deleted = False
    cp.calls = 0
    cp.popped += 1


def _acked_behind_unacked(pq, off, pop_time):
    """The last attempt, if it acked orderly offset `off` behind one it left un-acked: the broker
    commits the first un-acked offset (OrderInfo.getNextOffset) and the next attempt reads from
    there, so it hands the acked one out again (at-least-once, by the queue's design). None else."""
    o = pq.order
    if o is not None and o.pop_time == pop_time:
        o = o.last          # this attempt's first offsets are in: the one before it
    if o is None or off not in o.acked:
        return None
    left = o.unacked()
    return o if left and left[0] < off else None


def _orderly_pop(pq, ev, off, out):
    """INV-POP-ORDER-1: an orderly queue is handed out one attempt at a time (checkBlock), and a
    new attempt starts at the first offset the last one left un-acked (getNextOffset). Returns the
    earlier attempts the broker counts for the offset (None where a restart's reload hides them)."""
    o, ts, pt, key = pq.order, ev["ts"], ev["pop_time"], pq.key
    aid = ev.get("attempt_id")
    # the same pop's next offset: its pop time, and its attempt where both carry one (two attempts
    # may share a pop time: a pop's time is taken when it arrives, and it may wait for a lock)
    if o is not None and o.pop_time == pt and (o.attempt_id is None or aid is None or o.attempt_id == aid):
        if o.offsets and off <= o.offsets[-1]:
            out.report("INV-POP-ORDER-1", f"orderly pop of {_what(pq, off)} after offset {o.offsets[-1]} "
                       f"in the same attempt", key)
        n = o.add(off, ev.get("attempt_id"))
        o.visible[off] = facts.deadline(pt, ev["invisible_time"])
        return n if o.known else None
    if o is not None:
        same = o.attempt_id is not None and o.attempt_id == ev.get("attempt_id")
        # after a restart the broker's order info is its last flush's (every 10 s), which may
        # not know the attempt the spec remembers
        blocking = o.blocking(ts) if not pq.reloaded else []
        if blocking and not same:
            out.report("INV-POP-ORDER-1", f"{ev['client']} gets {_what(pq, off)} while the attempt of pop "
                       f"time {o.pop_time} still holds offsets {blocking[:8]} (neither acked nor visible again)",
                       key)
        left = o.unacked()
        if left and off > left[0]:
            out.report("INV-POP-ORDER-1", f"orderly pop starts at {_what(pq, off)} and skips offset "
                       f"{left[0]}, which the last attempt left un-acked", key)
        # the previous attempt's handles are no longer current: a new pop time replaces them
        for o_off in left:
            c = pq.copies.get(o_off)
            if c is not None and c.status == HELD and c.pop_time == o.pop_time and o_off != off:
                c.status, c.handle, c.pop_time, c.deadline = STORED, None, None, None
    # the counts carry over from the last attempt; a reload may have replaced it with an older
    # flush's, unless this attempt starts past all of it (then nothing carries over)
    known = o is None or (o.known and not pq.reloaded) or off > max(o.offsets, default=-1)
    pq.order = n = OrderInfo(pt, ev.get("attempt_id"), o, known)
    if o is not None:
        o.last = None
    pq.reloaded = False
    count = n.add(off, ev.get("attempt_id"))
    n.visible[off] = facts.deadline(pt, ev["invisible_time"])
    return count if known else None


def _stale_took_effect(pq, ev, off, what, out):
    out.report("INV-POP-STALE-1", f"{ev['client']}'s {what} of {_what(pq, off)} with a handle of pop time "
               f"{ev['pop_time']} took effect, but that handle is not current", pq.key)


def message_acked(st, ev, out):
    """RocketMQ: AckMessageProcessor (ackOrderly for orderly POP).
    Actor: broker."""
    pq = pop_queue(st, ev["group"], ev["topic"], ev["broker"], ev["queue"])
    off, ts = ev["offset"], ev["ts"]
    cp = pq.copies.get(off)
    if cp is None or cp.popped == 0:
        out.report(GUARD, f"{ev['client']} acks {_what(pq, off)}, which was never handed out", pq.key)
        return
    _sync_restart(st, pq)
    orderly = bool(ev.get("order")) or cp.order
    # after a restart, until the next attempt, ackOrderly may find no order info (commitAndNext
    # then commits offset + 1) or an older flush's
    current = (pq.reloaded or _order_current(pq.order, ev, off)) if orderly else cp.current(ev["pop_time"])
    if ev["result"] != "acked":
        return
    if not current and not orderly and ev["pop_time"] in cp.prior:
        del cp.prior[ev["pop_time"]]     # the checkpoint of the pop before the restart: acked, done
        return
    if not current:
        _stale_took_effect(pq, ev, off, "ack", out)
    reason = ev.get("reason")
    c = st.dir.clients.get(ev["client"])
    limit = facts.max_reconsume_times(c.max_reconsume) if c is not None else None
    if reason == "max_reconsume" and cp is not None and cp.reconsume is not None:
        if limit is not None and cp.reconsume < limit:
            # above the raw maxReconsumeTimes but not the resolved one: processPopResult's #8490
            cause = (f"; cause: #8490, processPopResult compared reconsumeTimes with the raw maxReconsumeTimes "
                     f"{c.max_reconsume}, not getMaxReconsumeTimes() ({limit})"
                     if facts.push_pop_past_limit(cp.reconsume, c.max_reconsume, limit_resolved=False) else "")
            out.report("INV-POP-LOSS-1", f"{ev['client']} acks {_what(pq, off)} as past its retries after "
                       f"{cp.reconsume} reconsumptions, below its limit {limit}: the message is dropped{cause}",
                       pq.key)
    # (a recorded ack names no reason: a push consumer's copy counted past its limit is acked so)
    if (reason == "max_reconsume" or (reason is None and limit is not None and cp.reconsume is not None
                                      and cp.reconsume > limit)) and c is not None \
            and (c.config or {}).get("client_type") == "POP_PUSH":
        _dropped_unheard(st, ev, pq, off, cp, out)
    cp = _copy(pq, ev, off)
    if cp.status == DEAD and current:
        cp.handle, cp.deadline = None, None      # the ack that follows the DLQ put: revive will not come
    else:
        cp.status, cp.since, cp.handle, cp.deadline = ACKED, ts, None, None
        # ackOrderly commits past the offset; a concurrent ack commits nothing (the pop did)
        cp.restarted = cp.restarted and not orderly
    if orderly and pq.order is not None and off in pq.order.offsets:
        pq.order.acked.add(off)


PART_UNHEARD = "a message acked past its retries that no listener call received"
NO_CALLS = "the trace has no POP listener call of the group (pop_consume_started): who received what is not known"


def _dropped_unheard(st, ev, pq, off, cp, out):
    """An ack past the retries (processPopResult: reconsumeTimes > maxReconsumeTimes is acked
    before the listener, and the push consumer in POP mode has no DLQ) of a message no listener
    call ever received: every attempt it was counted for was a pop whose handle ran out before its
    call (ConsumeRequest.run returns on isPopTimeout without calling the listener), then a
    revive. The application never saw it, and nothing keeps it: a loss. Judged only where the
    trace holds the group's listener calls."""
    called = st.pop_called.get(pq.key[0])
    if not called:
        out.part_not_judged("INV-POP-LOSS-1", PART_UNHEARD, NO_CALLS, ev["client"])
        return
    first = cp.origin or cp.msg_id
    if first is None or first in called:
        return
    out.report("INV-POP-LOSS-1", f"{ev['client']} acks {_what(pq, off)} ({first}) as past its retries "
               f"({cp.reconsume} reconsumptions), but no listener call ever received the message; cause: each "
               f"of its pops ran out of invisible time before its listener call (ConsumeRequest.run skips a "
               f"batch whose handle ran out, isPopTimeout) and the revive counted it as an attempt, then "
               f"DefaultMQPushConsumerImpl.processPopResult acked it unseen (reconsumeTimes above "
               f"maxReconsumeTimes; no DLQ in POP mode): the message is dropped unconsumed", pq.key)


def invisible_time_changed(st, ev, out):
    """RocketMQ: ChangeInvisibleTimeProcessor.
    Actor: broker."""
    pq = pop_queue(st, ev["group"], ev["topic"], ev["broker"], ev["queue"])
    off, ts = ev["offset"], ev["ts"]
    cp = pq.copies.get(off)
    if cp is None or cp.popped == 0:
        out.report(GUARD, f"{ev['client']} changes the invisible time of {_what(pq, off)}, which was never handed "
                   f"out", pq.key)
        return
    _sync_restart(st, pq)
    orderly = bool(ev.get("order")) or cp.order
    current = (pq.reloaded or _order_current(pq.order, ev, off)) if orderly else cp.current(ev["pop_time"])
    if ev["result"] != "changed":
        return
    it = ev.get("invisible_time")
    npt = ev.get("new_pop_time")
    if npt is None:
        npt = ev["pop_time"] if orderly else ts
    if not current and not orderly and ev["pop_time"] in cp.prior:
        # the holder of the handle from before the restart: its checkpoint is acked, a new one waits
        del cp.prior[ev["pop_time"]]
        if it is not None:
            cp.prior[npt] = facts.deadline(npt, it)
        return
    if not current and not orderly and cp.status == REVIVED and cp.pop_time == ev["pop_time"]:
        # appendCheckPointThenAckOrigin checks no deadline: the new checkpoint holds the message
        # again while its revived copy is out, and the ack of the old one matches nothing
        _duplicate(st, out, pq.key, f"{ev['client']} changes the invisible time of {_what(pq, off)} with the "
                   f"handle of pop time {ev['pop_time']}, which revive retired at {cp.since}: the message goes "
                   f"out again")
    elif not current:
        _stale_took_effect(pq, ev, off, "change of invisible time", out)
    cp = _copy(pq, ev, off)
    if cp.status == ACKED:
        return      # reported above (a stale change): the ack stands
    cp.status, cp.since = HELD, ts
    cp.handle = ev.get("new_handle") or ev["handle"]
    cp.pop_time = npt
    # orderly: the new visibility is pop time + the answer's invisible time (updateNextVisibleTime)
    new_deadline = facts.deadline(npt, it) if it is not None else cp.deadline
    cp.same_key_deleted = (not orderly and cp.deadline is not None and change_deletes_new_record(
        cp.deadline, new_deadline, st.profile.pop_kv_change_deletes_same_key))
    cp.deadline = new_deadline
    cp.client = ev["client"]
    cp.suspend = bool(ev.get("suspend"))
    if orderly and pq.order is not None and off in pq.order.offsets and cp.deadline is not None:
        pq.order.visible[off] = cp.deadline


def pop_checkpoint_written(st, ev, out):
    """RocketMQ: PopMessageProcessor.appendCheckPoint / PopBufferMergeService / PopConsumerService.
    Actor: broker."""
    pq = pop_queue(st, ev["group"], ev["topic"], ev["broker"], ev["queue"])
    _sync_restart(st, pq)
    for off in ev["offsets"]:
        cp = pq.copies.get(off)
        if (cp is not None and cp.status == ACKED and ev.get("cause", "pop") == "pop"
                and not _redelivered(st, pq, cp, off)):
            out.report("INV-POP-ACK-1", f"{_what(pq, off)} was acked at {cp.since} and a new pop's checkpoint "
                       f"(pop time {ev['pop_time']}) holds it again", pq.key)


def message_revived(st, ev, out):
    """RocketMQ: PopReviveService.reviveRetry / PopConsumerService.revive.
    Actor: broker."""
    pq = pop_queue(st, ev["group"], ev["topic"], ev["broker"], ev["queue"])
    off, ts, outcome, key = ev["offset"], ev["ts"], ev["outcome"], pq.key
    cp = pq.copies.get(off)
    if cp is None or cp.popped == 0:
        out.report(GUARD, f"revive of {_what(pq, off)} (checkpoint of pop time {ev['pop_time']}), which was never "
                   f"handed out", key)
        return
    _sync_restart(st, pq)
    if outcome == "reput":
        return      # the checkpoint waits again: nothing revived yet
    if outcome == "retry" and ev["msg_id"] and cp.msg_id and ev["msg_id"] != cp.msg_id:
        _revived_another(st, ev, pq, off, cp, out)
        return
    if ev["pop_time"] in cp.prior and cp.pop_time != ev["pop_time"] and outcome != "dropped":
        # the checkpoint of the pop before the restart, un-acked: a second copy of a message
        # handed out again since
        del cp.prior[ev["pop_time"]]
        _duplicate(st, out, key, f"revive puts {_what(pq, off)} back (checkpoint of pop time {ev['pop_time']}, "
                   f"before the broker restarted) though it was handed out again since")
        _store_revived(st, ev, cp)
        return
    if outcome == "dropped":
        out.report("INV-POP-LOSS-1", f"revive gave up on {_what(pq, off)} ({ev['msg_id']}): no ack, no retry "
                   f"copy, no dead letter", key)
        if cp.status not in (ACKED, DEAD):
            cp.status, cp.since, cp.handle = LOST, ts, None
        return
    if cp.status == ACKED:
        out.report("INV-POP-ACK-1", f"{_what(pq, off)} ({ev['msg_id']}) was acked at {cp.since} and revive "
                   f"puts it back (checkpoint of pop time {ev['pop_time']})", key)
    elif cp.status == HELD and ts < cp.deadline:
        out.report("INV-POP-HANDLE-1", f"revive puts {_what(pq, off)} back (checkpoint of pop time "
                   f"{ev['pop_time']}) while {cp.client}'s handle of pop time {cp.pop_time} is valid until "
                   f"{cp.deadline}: two valid handles", key)
    elif cp.status == DEAD and cp.handle is not None and ts >= cp.deadline:
        pass    # the ack after the DLQ put did not take effect: the copy comes back (at-least-once)
    elif cp.status in (REVIVED, DEAD, SKIPPED, LOST):
        out.report("INV-POP-HANDLE-1", f"{_what(pq, off)} is revived again (checkpoint of pop time "
                   f"{ev['pop_time']}) after it was {cp.status} at {cp.since}", key)
    if outcome == "skipped":
        if cp.status != ACKED:
            cp.status, cp.since, cp.handle = SKIPPED, ts, None
        return
    # outcome retry: the copy is stored in the retry topic with one more reconsumption
    rc = ev.get("reconsume_times")
    if rc is not None and cp.reconsume is not None and cp.status in (HELD, STORED):
        want = facts.revived_reconsume_times(cp.reconsume, cp.suspend)
        if rc != want:
            out.report("INV-POP-DLQ-1", f"the revived copy of {_what(pq, off)} counts {rc} reconsumptions, "
                       f"expected {want} ({cp.reconsume} before"
                       f"{', kept by a suspend' if cp.suspend else ', plus this one'})", key)
    if cp.status != ACKED:
        cp.status, cp.since, cp.handle, cp.deadline = REVIVED, ts, None, None
    _store_revived(st, ev, cp)


def _revived_another(st, ev, pq, off, cp, out):
    """#7724: the revive's read at the checkpoint's offset returned another message, put back in
    its place. getBizMessage reads one message from the offset on; where retention deleted the
    offset's commit-log data before the consume queue was corrected, that is the next message whose
    data exists, and no release checks its offset. The message put back is judged as revived again;
    the checkpoint's own message, whose data is gone, is retention's: the revive found nothing of it
    to put back, as the fixed read (PR #7739) finds nothing."""
    key, ts, mid = pq.key, ev["ts"], ev["msg_id"]
    at, other = next(((o, c) for o, c in sorted(pq.copies.items()) if c.msg_id == mid), (None, None))
    what = (f"revive of {_what(pq, off)} ({cp.msg_id}, checkpoint of pop time {ev['pop_time']}) puts back another "
            f"message, {mid}{f' (offset {at})' if at is not None else ''}, in its place (#7724: the revive reads from "
            f"the offset on, and does not check the offset of what it read)")
    if other is not None and other.status == ACKED:
        out.report("INV-POP-ACK-1", f"{what}; {mid} was acked at {other.since}", key)
    elif other is not None and other.status == HELD and other.deadline is not None and ts < other.deadline:
        out.report("INV-POP-HANDLE-1", f"{what}, while {other.client}'s handle of pop time {other.pop_time} is "
                   f"valid until {other.deadline}: two valid handles", key)
    elif other is not None and other.status in (REVIVED, DEAD, SKIPPED, LOST):
        out.report("INV-POP-HANDLE-1", f"{what}, after it was {other.status} at {other.since}", key)
    else:
        _duplicate(st, out, key, f"{what}: a second copy of it")
    if cp.status == HELD and cp.pop_time == ev["pop_time"]:
        cp.status, cp.since, cp.handle, cp.deadline = SKIPPED, ts, None, None
    _store_revived(st, ev, other if other is not None else Copy(since=ts))


def _store_revived(st, ev, cp):
    """The retry copy a revive stored (outcome retry): a new copy of the retry topic's queue."""
    tt, tq, to = ev.get("target_topic"), ev.get("target_queue"), ev.get("target_offset")
    if tt is not None and tq is not None and to is not None:
        tpq = pop_queue(st, ev["group"], tt, ev["broker"], tq)
        if to not in tpq.copies:
            origin = ev.get("origin_msg_id") or cp.origin or ev["msg_id"]
            tpq.copies[to] = c = Copy(ev.get("target_msg_id"), origin, ev.get("reconsume_times"), STORED, ev["ts"])
            c.stored_at = ev["ts"]


def pop_dead_lettered(st, ev, out):
    """RocketMQ: proxy PopMessageResultFilterImpl (TO_DLQ) + forwardMessageToDeadLetterQueue.
    Actor: broker."""
    pq = pop_queue(st, ev["group"], ev["topic"], ev["broker"], ev["queue"])
    off, key = ev["offset"], pq.key
    known = pq.copies.get(off)
    if known is None or known.popped == 0:
        out.report(GUARD, f"{_what(pq, off)} ({ev['msg_id']}) is dead-lettered but was never handed out", key)
    cp = _copy(pq, ev, off)
    # its deliveries: the reconsumptions it carries, and the calls on it since this pop (a gRPC
    # PushConsumer's FIFO retries in the client before it forwards the message to the DLQ)
    calls = cp.calls if cp.status == HELD else 0
    if not facts.proxy_dead_letters(ev["reconsume_times"] + calls, ev["max_attempts"]):
        out.report("INV-POP-DLQ-1", f"{_what(pq, off)} ({ev['msg_id']}) goes to the DLQ after "
                   f"{ev['reconsume_times']} reconsumptions and {calls} listener calls since it was popped, "
                   f"before its limit of {ev['max_attempts']} attempts", key)
    if cp.status == ACKED:
        out.report("INV-POP-ACK-1", f"{_what(pq, off)} was acked at {cp.since} and is dead-lettered", key)
    # the handle stays current: the proxy acks it right after the DLQ put
    cp.status, cp.since = DEAD, ev["ts"]


def check_pop_end(st, out):
    """INV-POP-LIVE-1 at a judged end (quiescent or settled horizon): no popped message is still
    held un-acked (its deadline passed long ago: revive, or the orderly queue's next attempt,
    owes it back), and no revived copy waits un-delivered while its group has a live client. An
    orderly handle has no revive: with no live client left in its group, nobody makes the next
    attempt, and the message waits in the broker for the next consumer (not a loss)."""
    alive = {c.group for c in st.dir.clients.values() if c.status in ("running", "paused")}
    for key, pq in st.pop.items():
        for off, cp in sorted(pq.copies.items()):
            if cp.status == HELD and not (cp.order and key[0] not in alive):
                out.report("INV-POP-LIVE-1", f"{_what(pq, off)} ({cp.msg_id}) is still held un-acked by "
                           f"{cp.client}'s handle (deadline {cp.deadline}) when the run ends: it never came back"
                           f"{_skipped_cause(st, cp) or _same_key_cause(cp)}", key)
            elif cp.status == STORED and cp.popped == 0 and key[0] in alive and cp.origin is not None:
                out.report("INV-POP-LIVE-1", f"the revived copy {cp.msg_id} at {_what(pq, off)} was never "
                           f"handed out again", key)


def _same_key_cause(cp) -> str:
    """#10276 named where it explains a held copy that never came back: its last change of
    invisible time kept the deadline, so on the profile's RocksDB POP path the new record had the
    old key, and the delete of the old key removed it."""
    if not cp.same_key_deleted:
        return ""
    return (f"; cause: #10276, its last change of invisible time kept the deadline {cp.deadline}, so the new "
            f"record's RocksDB key (deadline + group + topic + queue + offset) was the old one's, and "
            f"PopConsumerService.changeInvisibilityDuration deleted that key after writing it (5.5.0; 5.5.1 skips "
            f"the delete): nothing is left for the revive to scan")


def _skipped_cause(st, cp) -> str:
    """#7914 named where it explains a held copy that never came back: the profile's revive skips
    a message stored after its checkpoint's pop time, and this copy's current handle is such a
    checkpoint's (its pop started before the message was stored, and read it after)."""
    if cp.stored_at is None or cp.order or cp.pop_time is None or not facts.revive_skips_last_epoch(
            cp.pop_time, cp.stored_at, st.profile.pop_revive_skips_last_epoch):
        return ""
    return (f"; cause: #7914, the message was stored at {cp.stored_at}, after the pop time {cp.pop_time} of its "
            f"checkpoint (the pop took its time before it read the queue), and before 5.3.0 revive skips such a "
            f"message (\"skip ck from last epoch\") and counts it done: no retry copy")
