"""What a client's listener calls declare, judged against the broker, at a level that observes the
client's reports and the broker but not the client's internals (its ProcessQueues and send-backs):
the parts of INV-RETRY-1 and INV-OFFSET-3 such a level can judge (spec/observation.PART_NEEDS).

- INV-RETRY-1, orderly listener call past maxReconsumeTimes: an orderly clustering client gives a
  message its listener failed at reconsume_times maxReconsumeTimes back to the DLQ
  (ConsumeMessageOrderlyService.checkReconsumeTimes, `>=`); it comes back into a listener call with
  a higher count only when that send to the DLQ failed. A failed send is the client's internal, so
  the part excuses what can make it fail that this level does observe: a pause of the client or a
  restart of the broker since the failed call. A count the same client did not raise itself (no
  earlier call of the message seen, or another client's) is the stored copy's and not judged here.
- INV-OFFSET-3, broker commit past a message a listener call declared not consumed: a concurrent
  clustering call declares its messages past ackIndex (CONSUME_SUCCESS) or all of them (any other
  status) not consumed; processConsumeResult sends each back, and keeps one whose send-back failed
  in the ProcessQueue, where it blocks the offset until it is consumed again. So the broker's
  committed offset passes such a message only after the broker accepted its send-back
  (message_sent_back: the recorder writes it before the client can learn of it) or a listener call
  of the group received it again or consumed it; an operator's reset past it is a skip by design.
  The client's own commit cannot pass a message one of its calls still holds (it commits its
  ProcessQueue's first unconsumed offset), so a failure such a call declares after that commit is
  owed as well; another client's commit past it is a duplicate's and not judged.

The rest of each rule needs the client's internals; at a level that has them the whole rule is
judged instead, and these parts are not run.
"""
from __future__ import annotations

from ..observation import PART_DECLARED_UNCONSUMED, PART_ORDERLY_LIMIT, judges_part
from .common import _pauses_between, _q

# a QueueState.said record: [msg_id, origin id, consumed by the group, sent back by the group (a
# message the group handled either way is not lost by a duplicate's failure), owed (client,
# consume_id, why, CONSUME_SUCCESS) or None, last call's end ts, its client, broker restarts then,
# the commit (offset, source, client) that passed it while a listener call held it, or None]
_ID, _ORIGIN, _OK, _SENT, _OWED, _END, _BY, _EPOCH, _PASSED = range(9)


def _judged(out) -> tuple[bool, bool]:
    return (judges_part(out, "INV-RETRY-1", PART_ORDERLY_LIMIT),
            judges_part(out, "INV-OFFSET-3", PART_DECLARED_UNCONSUMED))


def _record(st, qs, o, mid, origin) -> list:
    rec = qs.said.get(o)
    if rec is None or rec[_ID] != mid:
        rec = qs.said[o] = [mid, origin, False, False, None, None, None, 0, None]
        g = qs.key[0]
        for i in {mid, origin}:
            st.said_ids.setdefault((g, i), set()).add((qs.key, o))
    return rec


def _forget(st, qs, o) -> None:
    rec = qs.said.pop(o)
    g = qs.key[0]
    for i in {rec[_ID], rec[_ORIGIN]}:
        locs = st.said_ids.get((g, i))
        if locs is not None:
            locs.discard((qs.key, o))
            if not locs:
                del st.said_ids[(g, i)]


def call_started(st, ev, out) -> None:
    """consume_started: remember the call; an orderly call's counts past the client's limit."""
    orderly, declared = _judged(out)
    if not (orderly or declared):
        return
    qs = _q(st, ev)
    cid = ev["client"]
    offsets, ids = ev["offsets"], ev["msg_ids"]
    origins = [o or i for o, i in zip(ev.get("origin_msg_ids") or ids, ids)]
    qs.said_calls[(cid, ev["consume_id"])] = (tuple(offsets), tuple(ids), tuple(origins))
    recons = ev.get("reconsume_list")
    c = st.dir.clients.get(cid)
    if orderly and recons is not None and c is not None and c.orderly and not c.broadcast and c.max_reconsume >= 0:
        _past_limit(st, qs, ev, c.max_reconsume, offsets, ids, recons, out)
    g = qs.key[0]
    for o, mid, origin in zip(offsets, ids, origins):
        _record(st, qs, o, mid, origin)[_OWED] = None     # delivered again: not lost (yet)
        _received_again(st, g, mid, origin)


def _received_again(st, g, mid, origin) -> None:
    """A listener call of the group received the message after a commit passed it (a pull from a
    stale offset, a retry copy): what that commit seemed to lose was not lost."""
    for i in {mid, origin}:
        lost = st.said_lost.pop((g, i), None)
        if lost is not None:
            for j in lost[2]:
                st.said_lost.pop((g, j), None)


def _past_limit(st, qs, ev, mx, offsets, ids, recons, out) -> None:
    cid = ev["client"]
    broker = qs.key[2]
    for o, mid, r in zip(offsets, ids, recons):
        if r is None or r <= mx:
            continue
        rec = qs.said.get(o)
        if rec is None or rec[_ID] != mid or rec[_END] is None or rec[_BY] != cid:
            continue        # a count this client did not raise: the stored copy's
        since = rec[_END]
        if _pauses_between(st, cid, since, ev["ts"]) or st.dir.brokers.get(broker, 0) != rec[_EPOCH]:
            continue        # its send to the DLQ may have failed for that
        cause = ("the client's orderly retry check compares reconsume_times with '>' where 4.9.8's "
                 "ConsumeMessageOrderlyService.checkReconsumeTimes uses '>=' (one retry more than "
                 "maxReconsumeTimes; rocketmq-client-go v2.1.2's pushConsumer.checkReconsumeTimes does this)"
                 if r == mx + 1 else "the client does not dead-letter an orderly message at maxReconsumeTimes")
        out.report_part("INV-RETRY-1", PART_ORDERLY_LIMIT,
                        f"{cid}'s orderly listener call {ev['consume_id']} gets offset {o} ({mid}) with reconsume_times "
                        f"{r} > maxReconsumeTimes {mx}: its call at ts {since} failed it and the client did not send "
                        f"it to the DLQ (nothing this level observes could have failed that send: no pause of "
                        f"{cid}, no broker restart since); cause: {cause}", qs.key)


def call_finished(st, ev, out) -> None:
    """consume_finished: what the call declared not consumed is owed a send-back."""
    orderly, declared = _judged(out)
    if not (orderly or declared):
        return
    qs = _q(st, ev)
    cid = ev["client"]
    call = qs.said_calls.pop((cid, ev["consume_id"]), None)
    if call is None:
        return
    offsets, ids, origins = call
    epoch = st.dir.brokers.get(qs.key[2], 0)
    recs = []
    for o, mid, origin in zip(offsets, ids, origins):
        rec = _record(st, qs, o, mid, origin)
        rec[_END], rec[_BY], rec[_EPOCH] = ev["ts"], cid, epoch
        recs.append(rec)
    c = st.dir.clients.get(cid)
    if not declared or ev.get("dropped") or c is None or c.orderly or c.broadcast:
        return
    n = len(recs)
    status = ev["status"]
    ai = ev.get("ack_index")
    if status == "CONSUME_SUCCESS":
        ack = n - 1 if ai is None else min(ai, n - 1)
        why = f"past ack_index {ai} of its CONSUME_SUCCESS"
    else:
        ack, why = -1, f"its listener returned {status}"
    floor = qs.said_floor
    held = _held(qs)
    for i, (o, rec) in enumerate(zip(offsets, recs)):
        if i <= ack:
            rec[_OK] = True
        elif not rec[_SENT] and not rec[_OK] and (o >= floor or _passed_while_held(rec, cid, o, held)):
            # (below the highest offset the broker committed, the group passed the message before:
            # a duplicate's failure loses nothing, and a loss then was judged at that commit)
            rec[_OWED] = (cid, ev["consume_id"], why, status == "CONSUME_SUCCESS")


def _held(qs) -> dict:
    """offset -> the clients whose listener calls (started, not finished) hold it."""
    held = {}
    for (cid, _), (offsets, _, _) in qs.said_calls.items():
        for o in offsets:
            held.setdefault(o, set()).add(cid)
    return held


def _passed_while_held(rec, cid, o, held) -> bool:
    """The client's own commit passed the message while this call of it held it, and no other call
    holds it now. A client commits its ProcessQueue's first unconsumed offset (removeMessage), which
    an unfinished call's message keeps; another client's commit past it (the queue moved on) is a
    duplicate's, not judged here."""
    p = rec[_PASSED]
    return p is not None and p[2] == cid and not (held.get(o, set()) - {cid})


def sent_back(st, ev, out) -> None:
    """message_sent_back: the broker accepted a send-back of the message (any copy of it)."""
    orderly, declared = _judged(out)
    if not declared:
        return
    g = ev["group"]
    for i in {ev["msg_id"], ev["origin_msg_id"]}:
        for qkey, o in st.said_ids.get((g, i), ()):
            qs = st.queues.get(qkey)
            rec = qs.said.get(o) if qs is not None else None
            if rec is not None:
                rec[_SENT], rec[_OWED] = True, None


def committed(st, ev, out) -> None:
    """offset_committed: the broker's offset passes what it passes; judged and forgotten."""
    orderly, declared = _judged(out)
    if not (orderly or declared):
        return
    qs = _q(st, ev)
    off = ev["offset"]
    if off > qs.said_floor:
        qs.said_floor = off
    if not qs.said:
        return
    src = ev.get("source", "persist")
    # an operator's reset past a message skips it by design (ANOM-RESET-SKIP); the table's value
    # when observation began judges nothing
    skip = src in ("reset", "snapshot") or off in qs.resets
    held = _held(qs)
    for o in sorted(o for o in qs.said if o < off):
        rec = qs.said[o]
        owed = rec[_OWED]
        if declared and not skip and owed is not None and not rec[_OK] and not rec[_SENT]:
            _owe_loss(st, qs, o, rec, _loss_words(rec, o, (off, src, ev.get("client") or "a client")))
        elif declared and not skip and o in held and not rec[_OK] and not rec[_SENT]:
            # a listener call still holds it: what it declares is judged when it finishes; the first
            # commit of a client past its own call's message is the one that matters
            if rec[_PASSED] is None and ev.get("client") in held[o]:
                rec[_PASSED] = (off, src, ev.get("client"))
            continue
        _forget(st, qs, o)


def _loss_words(rec, o, commit) -> str:
    cid, consume_id, why, success = rec[_OWED]
    if rec[_PASSED] is not None:
        off, src, by = rec[_PASSED]
        return (f"broker commits {off} ({src} from {by}) past offset {o} ({rec[_ID]}) while {cid}'s listener call "
                f"{consume_id} held it; the call then declared it not consumed ({why}); the broker accepted no "
                f"send-back of it and no listener call of the group received it again before the end: it is lost; "
                f"cause: the client committed past a message its own listener call had not finished (a client "
                f"commits its ProcessQueue's first unconsumed offset, ProcessQueue.removeMessage, which a message "
                f"in a running call keeps)")
    off, src, by = commit
    cause = ("the client ignored the listener's ConsumeConcurrentlyContext.ackIndex and acked the whole "
             "CONSUME_SUCCESS batch (4.9.8's processConsumeResult sends the messages past ackIndex back; "
             "rocketmq-client-go v2.1.2 never reads AckIndex)" if success else
             "the client acked a failed message without a send-back the broker accepted (4.9.8's "
             "processConsumeResult keeps a message whose send-back failed and consumes it again)")
    return (f"broker commits {off} ({src} from {by}) past offset {o} ({rec[_ID]}), which {cid}'s listener call "
            f"{consume_id} declared not consumed ({why}); the broker accepted no send-back of it and no listener "
            f"call of the group received it again before the end: it is lost; cause: {cause}")


def _owe_loss(st, qs, o, rec, words) -> None:
    lost = (qs.key, words, {rec[_ID], rec[_ORIGIN]}, o)
    for i in lost[2]:
        st.said_lost[(qs.key[0], i)] = lost


def trace_ended(st, ev, out) -> None:
    """What commits passed and no listener call of the group received again is lost (a message may
    come back after the commit: a client pulling from an offset it read before the commit); so is
    what a listener call declared not consumed after its own client's commit had passed it."""
    for qs in st.queues.values():
        for o in sorted(o for o, rec in qs.said.items() if rec[_PASSED] is not None and rec[_OWED] is not None):
            rec = qs.said[o]
            if not (rec[_OK] or rec[_SENT]):
                _owe_loss(st, qs, o, rec, _loss_words(rec, o, rec[_PASSED]))
    if not st.said_lost:
        return
    # one loss is keyed by each of its ids (the message's and its origin's): report it once, by
    # its queue and offset
    seen = set()
    for key in sorted(st.said_lost, key=repr):
        lost = st.said_lost[key]
        if (lost[0], lost[3]) in seen:
            continue
        seen.add((lost[0], lost[3]))
        out.report_part("INV-OFFSET-3", PART_DECLARED_UNCONSUMED, lost[1], lost[0])
    st.said_lost.clear()
