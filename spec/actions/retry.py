"""Retry and DLQ: send-back requests and their outcomes, the %RETRY% copies (their delay level,
schedule and delivery) and dead-lettering."""
from __future__ import annotations

from rocketspec.rocketmq.retry import CLEAN_EXPIRED_DELAY_LEVEL, DLQ_PREFIX, RETRY_PREFIX, retry_delay_level

from .. import limits
from ..lifecycles import MSG_TABLE
from ..state import M_ID, M_R, Chain, RetryCopy, ScheduleDone, SendBack
from . import listener_results as _said
from .common import _client, _duplicate, _group_client, reset_stray_cause


# a producer send to %RETRY% (the client's fallback, or the orderly consumer's checkReconsumeTimes)
PRODUCER_PATHS = ("fallback_producer", "orderly_producer")
# a chain entry: a producer send's DLQ copy that keeps its DELAY (the release's defect) and waits
# in the schedule
DLQ_WAITING = "dlq_waiting"
# the request key of a fallback that follows its own consumer send-back: (client, msg_id + this)
FALLBACK_OF = "#fallback"


def _chain(st, group, origin) -> Chain:
    k = (group, origin)
    ch = st.chains.get(k)
    if ch is None:
        ch = st.chains[k] = Chain()
    return ch


def send_back_requested(st, ev, out):
    """RocketMQ: DefaultMQPushConsumerImpl.sendMessageBack.
    Actor: client."""
    cid = ev["client"]
    c = _client(st, ev, out)
    ckey = (ev["group"], ev["origin_msg_id"])
    if c is not None and c.broadcast:
        if ev.get("via") == "orderly_producer":
            # the concurrent service drops a broadcasting group's failed message; the orderly
            # checkReconsumeTimes never looks at the message model (4.9.8 and 5.x), so a message
            # past maxReconsumeTimes goes to %DLQ%<group>, one copy per client that fails it
            out.report("INV-BCAST-1", "a broadcasting orderly client sent a message back past "
                       "maxReconsumeTimes: ConsumeMessageOrderlyService.checkReconsumeTimes sends it to the "
                       "DLQ through the client's producer whatever the message model", ckey)
        else:
            out.report("INV-BCAST-1", "a broadcasting client sent a message back", ckey)
    qkey = None
    off = ev.get("offset")
    # the message's place is judged when the event gives all of it (each field is optional in
    # the schema; without the broker, topic and queue name no queue)
    if ev.get("topic") is not None and ev.get("broker") is not None and ev.get("queue") is not None \
            and off is not None:
        qkey = (ev["group"], ev["topic"], ev["broker"], ev["queue"])
        qs = st.queues.get(qkey)
        pq = qs.pqs.get(cid) if qs is not None else None
        due = qs.due_sendbacks.get(cid) if qs is not None else None
        if due and off in due and (pq is None or (off not in pq.failed and off not in pq.tree)):
            # the send-back loop of a listener call that failed it in a ProcessQueue since replaced
            # or removed (keep_due_sendbacks)
            due.discard(off)
        elif pq is None:
            out.report("INV-RETRY-3", f"send-back of offset {off} from a queue {cid} has no ProcessQueue for", ckey)
        elif pq.orderly:
            if off not in pq.consuming:
                out.report("INV-RETRY-3", f"orderly send-back of offset {off} that is not being consumed"
                           f"{reset_stray_cause(qs, cid)}", ckey)
            elif ev.get("via") == "orderly_producer":
                pq.dead.add(off)
        else:
            s = pq.failed.get(off)
            if s is None and off not in pq.tree:
                out.report("INV-RETRY-3", f"send-back of offset {off} that {cid} neither failed nor holds", ckey)
            elif s is None and (off != pq.tree_min() or ev.get("delay_level") != CLEAN_EXPIRED_DELAY_LEVEL):
                # not failed, so only ProcessQueue.cleanExpiredMsg may send it back: it sends the
                # tree's first message, with sendMessageBack(msg, 3)
                out.report("INV-RETRY-3", f"send-back of offset {off} that {cid} did not fail, and not as "
                           f"cleanExpiredMsg does (the tree's first message {pq.tree_min()}, delay level 3; got "
                           f"delay level {ev.get('delay_level')})", ckey)
            if s is not None:
                pq.failed[off] = "requested"
            elif off in pq.tree:
                pq.failed[off] = "expired"      # cleanExpiredMsg: sendMessageBack(msg, 3), then removeMessage
        sq = st.stored.get((ev["topic"], ev["broker"], ev["queue"]))
        if sq is not None:
            m = sq.msgs.get(off)
            if m is not None and m[M_ID] != ev["msg_id"]:
                out.report("INV-RETRY-3", f"send-back names {ev['msg_id']} but offset {off} holds {m[M_ID]}", ckey)
            if m is not None and ev["reconsume_times"] < m[M_R]:
                out.report("INV-RETRY-2", f"send-back with reconsume_times {ev['reconsume_times']} below the copy's "
                           f"{m[M_R]}", ckey)
    ch = _chain(st, *ckey)
    k = (cid, ev["msg_id"])
    level = ev["delay_level"]
    if ev.get("via") == "fallback_producer" and (k in ch.accepted or (k in ch.requests and
                                                                      ch.requests[k].via == "consumer_send_back")):
        # DefaultMQPushConsumerImpl.sendMessageBack's catch: the consumer send-back of this very
        # delivery threw (its answer never reached the client: an interrupted or timed-out wait),
        # and the same call sends the copy again through the producer. The broker may have stored
        # the first already: two copies of one failure, each paired with its own request
        k = (cid, ev["msg_id"] + FALLBACK_OF)
        # the copy is owed the level the listener chose for this failure (the consumer send-back's,
        # when above 0); the fallback sets 3 + reconsumeTimes in every release (#3731): INV-RETRY-2
        ctx = ch.levels.get((cid, ev["msg_id"]))
        if ctx is not None and ctx > 0:
            level = ctx
    elif ev.get("via") == "consumer_send_back":
        ch.accepted.discard((cid, ev["msg_id"] + FALLBACK_OF))    # a pair of an earlier delivery
        ch.levels[k] = ev["delay_level"]
    ch.requests[k] = SendBack(ev["reconsume_times"], level, ev.get("via"), qkey, off, ev["ts"])


def keep_due_sendbacks(qs, pq) -> None:
    """Keep what `pq`'s listener calls failed and did not send back yet, as `pq` leaves the table
    or is replaced. ConsumeMessageConcurrentlyService.processConsumeResult (5.5.0 lines 279-294)
    sends a failed batch back one message at a time with the ProcessQueue its ConsumeRequest
    holds; a send-back may wait seconds (consumerSendMessageBack's 5 s timeout on a channel the
    broker closed), and the loop goes on after the ProcessQueue was dropped, removed and replaced:
    containsMessage asks the old one, whose messages nothing clears (only resetOffset's clear()).
    Random real run 16140 (5.3.3): offset 28's send-back timed out after a pause, and offset 31's
    followed 5 s later, when a new ProcessQueue held the queue."""
    if pq.orderly or not pq.failed:
        return
    due = {o for o, s in pq.failed.items() if s == "failed"}
    if due:
        qs.due_sendbacks.setdefault(pq.client, set()).update(due)


def send_back_failed(st, ev, out):
    """RocketMQ: send-back and fallback failed.
    Actor: client."""
    ch = st.chains.get((ev["group"], ev["origin_msg_id"]))
    req = ch.requests.pop((ev["client"], ev["msg_id"]), None) if ch is not None else None
    if req is None:
        out.report("GUARD", "send-back failed but was never requested", (ev["group"], ev["origin_msg_id"]))
        return
    qkey, off = req.queue_key, req.offset
    if qkey is not None:
        qs = st.queues.get(qkey)
        pq = qs.pqs.get(ev["client"]) if qs is not None else None
        if pq is not None and off in pq.failed:
            if pq.failed[off] == "expired":
                # cleanExpiredMsg's send-back threw: the message stays in the tree, in its
                # listener call, as if never sent (cleanExpiredMsg may try it again)
                del pq.failed[off]
            else:
                pq.failed[off] = "resubmit"
    _gc_chain(st, (ev["group"], ev["origin_msg_id"]), ch)


def message_sent_back(st, ev, out):
    """RocketMQ: consumerSendMsgBack / handleRetryAndDLQ.
    Actor: broker."""
    _said.sent_back(st, ev, out)
    ckey = (ev["group"], ev["origin_msg_id"])
    ch = _chain(st, *ckey)
    cid = ev.get("client")
    mid = ev["msg_id"]
    req = None
    twin = False        # one of the two copies of a consumer send-back and its own fallback
    if ev.get("via") is None and cid is not None:
        req = ch.requests.pop((cid, mid + FALLBACK_OF), None)
        if req is not None:
            twin = True
            ch.accepted.add((cid, mid + FALLBACK_OF))
    if req is None:
        req = ch.requests.pop((cid, mid), None)
        twin = req is not None and req.via == "consumer_send_back" and (
            (cid, mid + FALLBACK_OF) in ch.requests or (cid, mid + FALLBACK_OF) in ch.accepted)
    if req is None:
        for k in list(ch.requests):
            k_cid, k_mid = k
            if k_mid == mid:
                req = ch.requests.pop(k)
                cid = k_cid
                break
    if req is None and cid is not None:
        # a producer send to %RETRY% names no consumed copy the broker can see (its origin is the
        # message's): the sending client's one request of this message is the one it answers
        mine = [k for k in ch.requests if k[0] == cid]
        if len(mine) > 1:
            # a producer send answers a producer-path request, not a consumer send-back
            mine = [k for k in mine if ch.requests[k].via in PRODUCER_PATHS] or mine
        if len(mine) == 1:
            req = ch.requests.pop(mine[0])
            mid = mine[0][1]
            if mid.endswith(FALLBACK_OF):
                req, mid = _fallback_of_other_copy(ch, cid, mid[:-len(FALLBACK_OF)], req)
    # the path the copy took: the event's (a consumerSendMsgBack request may end as the fallback
    # producer's send when the broker could not be reached), else the request's
    via = ev.get("via") or (req.via if req is not None else None)
    r = req.reconsume_times if req is not None else ev["reconsume_times"]
    if via == "consumer_send_back":
        # consumerSendMsgBack looks the message up by commit-log offset: the count it judges is
        # the stored copy's, not the client's in-memory one (raised by failed send-backs)
        stored_r = None
        if req is not None and req.queue_key is not None:
            sq = st.stored.get(req.queue_key[1:])
            m = sq.msgs.get(req.offset) if sq is not None else None
            stored_r = m[M_R] if m is not None else None
        r = stored_r if stored_r is not None else ev["reconsume_times"]
    dl = req.delay_level if req is not None else ev.get("delay_level", 0)
    client = _group_client(st, ev["group"], cid)
    mx = limits.max_reconsume(st, client)
    if mx is None and via == "orderly_producer":
        mx = r          # orderly sends back only once the count reached the client's maximum
    what = f"copy {mid} with reconsume_times {r}"
    if via == "fallback_producer":
        # the fallback producer's send: handleRetryAndDLQ judges its new copy's count, the client's
        # count + 1, with the release's comparison (4.9.x >=, 5.x >; a concurrent group holds no lock)
        judged = r + 1
        what += f" (its fallback copy {judged})"
        over = mx is not None and (judged >= mx if st.profile.retry_dlq_compare == "ge" else judged > mx)
    else:
        over = mx is not None and r >= mx
    should_dlq = over or (dl is not None and dl < 0)
    outcome = ev["outcome"]
    if outcome == "retry" and should_dlq:
        out.report("INV-RETRY-1", f"{what} >= maxReconsumeTimes {mx} was sent to %RETRY% instead of the DLQ", ckey)
    elif outcome == "dlq" and not should_dlq:
        out.report("INV-RETRY-1", f"{what} < maxReconsumeTimes {mx} was dead-lettered early", ckey)
    if twin and (cid, mid) in ch.accepted:
        _duplicate(st, out, ckey, f"{cid}'s send-back of {mid} was stored, and so was its fallback's copy "
                   f"(the client never got the send-back's answer)")
    elif (cid, mid) in ch.accepted and outcome != "discarded":
        out.report("INV-RETRY-3", f"{cid} sent copy {mid} back twice: two retry copies of one failure", ckey)
    ch.accepted.add((cid, mid))
    if outcome == "retry":
        levels = len(limits.broker(st, ev["broker"]).delay_ms) - 1
        want = dl if (dl is not None and dl > 0) else retry_delay_level(r)
        want = min(want, levels)
        got = ev.get("delay_level")
        if got is not None and got != want:
            cause = ("; cause: the fallback producer send (sendMessageBack's catch) sets 3 + reconsumeTimes, "
                     "not the level the listener chose (#3731)") if (
                via == "fallback_producer" and got == min(retry_delay_level(r), levels)) else ""
            out.report("INV-RETRY-2", f"retry of copy {mid} (reconsume_times {r}) at delay level {got}, "
                       f"expected {want}{cause}", ckey)
        ch.entries.append(RetryCopy("sent_back", r + 1, got if got is not None else want, None, None, mid,
                                    req.ts if req is not None else ev["ts"]))
    elif outcome == "dlq" and via in PRODUCER_PATHS and st.profile.producer_dlq_keeps_delay:
        # 4.9.x: the DLQ copy of a producer send keeps the request's DELAY and waits in the
        # schedule before it lands in %DLQ% (SendMessageProcessor puts the properties back): a
        # late dead letter, judged when the schedule store shows it
        ch.entries.append(RetryCopy(DLQ_WAITING, r, dl, None, None, mid, req.ts if req is not None else ev["ts"]))
    elif outcome == "discarded":
        st.counts["ANOM-DISCARD"] = st.counts.get("ANOM-DISCARD", 0) + 1
        if out is not None:
            out.example("ANOM-DISCARD", f"{mid} sent back by {cid} was discarded (no retry queue)", ckey)
    # the failed original is now handled by the group, or by the broadcasting client that sent it
    # (the orderly send-back past maxReconsumeTimes; processConsumeResult then commits past it):
    # its successor carries the obligation
    if req is not None and req.queue_key is not None:
        qs = st.queues.get(req.queue_key)
        if qs is not None:
            pq = qs.pqs.get(cid)
            if pq is not None and pq.broadcast and pq.orderly:
                unit = qs.units.get(pq.client)
                if unit is not None and unit.handle(req.offset):
                    pq.dup_seen.add(req.offset)     # its commit, still to come, is not a second handling
            elif pq is not None and not pq.broadcast:
                unit = qs.units.get("")
                if unit is not None:
                    unit.handle(req.offset)
                if pq.failed.get(req.offset) == "expired":
                    pq.failed[req.offset] = "expired_sent"
                    pq.expired.add(req.offset)
    _gc_chain(st, ckey, ch)


def _fallback_of_other_copy(ch, cid, mid, req):
    """The fallback copy the recorder tied to copy `mid`, whose own consumer send-back the broker
    has stored since, is another copy's when the client still waits on that copy's consumer
    send-back, made earlier with the same count: (request, consumed copy) for the fallback."""
    if (cid, mid) not in ch.accepted:
        return req, mid + FALLBACK_OF
    # The recorder names the copy last given to the listener with the send's unique key, and
    # every copy of a message carries it. A consumer send-back the broker never stored (its
    # fast failure answers SYSTEM_BUSY to a request that waited past waitTimeMillsInSendQueue
    # and drops it, BrokerFastFailure.cleanExpiredRequestInQueue) throws in the client, whose
    # catch sends the copy through the producer with the consumed copy's count + 1
    # (DefaultMQPushConsumerImpl.sendMessageBack): that copy's count cannot tell two copies of
    # one count apart, and the copy named here was stored by its own send-back
    for k, other in ch.requests.items():
        if k[0] == cid and other.via == "consumer_send_back" and other.ts <= req.ts \
                and other.reconsume_times == req.reconsume_times:
            del ch.requests[k]
            ctx = ch.levels.get(k)
            level = ctx if ctx is not None and ctx > 0 else req.delay_level
            return SendBack(other.reconsume_times, level, req.via, other.queue_key, other.offset, req.ts), k[1]
    return req, mid + FALLBACK_OF


def message_scheduled(st, ev, out):
    """RocketMQ: delay level -> SCHEDULE_TOPIC_XXXX.
    Actor: broker."""
    real = ev.get("real_topic") or ""
    if real.startswith(DLQ_PREFIX):
        _dlq_scheduled(st, ev, out, real[len(DLQ_PREFIX):])
        return
    if not real.startswith(RETRY_PREFIX):
        return
    group = ev.get("group") or real[len(RETRY_PREFIX):]
    ckey = (group, ev["origin_msg_id"])
    ch = st.chains.get(ckey)
    lvl = ev["delay_level"]
    entry = None
    if ch is not None:
        for e in ch.entries:
            if e.state == "sent_back" and e.level == lvl:
                entry = e
                break
        if entry is None:
            entry = next((e for e in ch.entries if e.state == "sent_back"), None)
    if entry is None:
        out.report("GUARD", f"retry copy scheduled without an accepted send-back (origin {ev['origin_msg_id']})", ckey)
        ch = _chain(st, *ckey)
        entry = RetryCopy("sent_back", ev.get("reconsume_times", 0), lvl, None, None, None)
        ch.entries.append(entry)
    if ("sent_back", "message_scheduled") not in MSG_TABLE:
        out.report("GUARD", "message lifecycle: scheduling not allowed", ckey)
    table = limits.broker(st, ev["broker"]).delay_ms
    if 0 < lvl < len(table):
        # deliver time = the schedule copy's store time + the level's delay
        # (ScheduleMessageService.computeDeliverTimestamp). A recorder sees the store after it
        # happened: the store time lies between the send-back request (send_back_requested) and
        # this event's ts (equal to both when the clock is the broker's, as in the reference)
        stored_at = ev["deliver_ts"] - table[lvl]
        lo = entry.sent_ts if entry.sent_ts is not None else ev["ts"]
        if not min(lo, ev["ts"]) <= stored_at <= ev["ts"]:
            out.report("INV-RETRY-2", f"delay level {lvl} is {table[lvl]} ms: the copy was stored at "
                       f"{stored_at} by its deliver time {ev['deliver_ts']}, outside [{min(lo, ev['ts'])}, {ev['ts']}] "
                       f"(send-back requested .. scheduled)", ckey)
    if ev.get("reconsume_times") is not None and ev["reconsume_times"] != entry.r_next:
        out.report("INV-RETRY-2", f"scheduled copy carries reconsume_times {ev['reconsume_times']}, expected "
                   f"{entry.r_next}{_count_lost_cause(entry, ev)}", ckey)
    entry.state, entry.deliver_ts, entry.sched_id = "delayed", ev["deliver_ts"], ev["msg_id"]


def _count_lost_cause(entry, ev) -> str:
    """Why a producer's %RETRY% copy carries count 0: DefaultMQProducerImpl.sendKernelImpl moves
    the message's RECONSUME_TIME property into the request header and clears it from the message
    (4.9.8 and 5.x alike), so a send the producer retries after a failed attempt carries none, and
    the broker stores 0 (random real run 13109: the fallback send-back was requested twice)."""
    # (the broker's consumerSendMsgBack counts from the stored copy and never writes 0 past a
    # failure: a 0 where more is owed comes from a producer's request header)
    if ev["reconsume_times"] != 0 or entry.r_next == 0:
        return ""
    return ("; cause: a producer send of the copy retried after a failed attempt carries no count: "
            "sendKernelImpl moves RECONSUME_TIME into the request header and clears it from the message on the "
            "first attempt, so the retried attempt sends none and the broker stores 0 (a count the message traces "
            "never show: the next failure restarts the count below the limit)")


def schedule_delivered(st, ev, out):
    """RocketMQ: ScheduleMessageService.messageTimeUp.
    Actor: broker."""
    real = ev.get("real_topic") or ""
    group = ev.get("group") or (real[len(RETRY_PREFIX):] if real.startswith(RETRY_PREFIX) else None)
    if group is None:
        return
    ckey = (group, ev["origin_msg_id"])
    ch = st.chains.get(ckey)
    entry = None
    if ch is not None:
        entry = next((e for e in ch.entries if e.state == "delayed" and e.sched_id == ev["msg_id"]), None)
    if entry is None:
        done = st.sched_done.get(ev["msg_id"])
        if done is not None and st.dir.brokers.get(ev["broker"], 0) > done.restarts:
            # the schedule service's delay offsets are flushed every 10 s: after a broker
            # restart it delivers again what it delivered since the last flush (at-least-once)
            _duplicate(st, out, ckey, f"the schedule delivers {ev['msg_id']} again after a broker restart")
            ch = _chain(st, *ckey)
            ch.entries.append(RetryCopy("redelivered", done.reconsume_times, ev["delay_level"], None, ev["msg_id"],
                                        None))
            return
        out.report("GUARD", f"schedule delivered {ev['msg_id']} that was never scheduled", ckey)
        return
    if ev["ts"] < entry.deliver_ts:
        out.report("INV-RETRY-2", f"retry copy delivered at {ev['ts']}, before its deliver time {entry.deliver_ts}",
                   ckey)
    entry.state = "redelivered"
    sd = st.sched_done
    sd[ev["msg_id"]] = ScheduleDone(entry.r_next, st.dir.brokers.get(ev["broker"], 0))
    if len(sd) > 200000:
        for k in list(sd)[:100000]:
            del sd[k]


def _dlq_scheduled(st, ev, out, group):
    """A copy on its way to %DLQ% stored in the schedule: the dead letter is late by a delay level
    (INV-DLQ-1, at the history level H-RETRY-3), whatever the path. The cause the finding names
    is the path's: a consumer send-back's DLQ copy keeps its level only before 4.9.2 (#2724); a
    producer send's keeps the send's DELAY on a release whose send path puts it back
    (producer_dlq_keeps_delay: 4.9.x; 5.0.0 writes DELAY=-1, #3978), at that level."""
    ckey = (ev.get("group") or group, ev["origin_msg_id"])
    ch = st.chains.get(ckey)
    entry = None
    if ch is not None:
        entry = next((e for e in ch.entries if e.state == DLQ_WAITING and e.sched_id is None), None)
    if entry is None:
        out.report("INV-DLQ-1", f"a dead-lettered copy of {ev['origin_msg_id']} goes through the schedule (delay level "
                   f"{ev['delay_level']}) instead of straight to %DLQ%{group} (#2724)", ckey)
        return
    out.report("INV-DLQ-1", f"the dead-lettered copy of {ev['origin_msg_id']} goes through the schedule (delay level "
               f"{ev['delay_level']}) before %DLQ%{group}: this release's send path puts the producer send's DELAY back "
               f"after handleRetryAndDLQ cleared it (#2724's fix covers consumerSendMsgBack only; 5.0.0 writes "
               f"DELAY=-1, #3978)", ckey)
    levels = len(limits.broker(st, ev["broker"]).delay_ms) - 1
    want = min(entry.level, levels) if entry.level else None
    if want is not None and ev["delay_level"] != want:
        out.report("INV-RETRY-2", f"the DLQ copy of {ev['origin_msg_id']} waits at delay level {ev['delay_level']}, "
                   f"expected the send's {want}", ckey)
    entry.deliver_ts, entry.sched_id = ev["deliver_ts"], ev["msg_id"]


def message_dead_lettered(st, ev, out):
    """RocketMQ: %DLQ% store.
    Actor: broker."""
    ckey = (ev["group"], ev["origin_msg_id"])
    ch = st.chains.get(ckey)
    if ch is not None:
        waiting = next((e for e in ch.entries if e.state == DLQ_WAITING and e.sched_id is not None), None)
        if waiting is not None:
            ch.entries.remove(waiting)
        _gc_chain(st, ckey, ch)


def _gc_chain(st, ckey, ch):
    if not ch.requests and all(e.state in ("redelivered",) for e in ch.entries) and not ch.entries:
        st.chains.pop(ckey, None)
