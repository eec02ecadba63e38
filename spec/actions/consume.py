"""Consumption: listener calls (concurrent and orderly), the ProcessQueue's message tree
(take, commit, rollback, remove) and the orderly one-consumer-at-a-time rule."""
from __future__ import annotations

import heapq

from rocketspec.rocketmq.retry import DLQ_PREFIX

from ..assumptions import ref
from ..invariants import orderly_consumers_at_once
from .. import limits
from ..state import M_ID, Busy, OrphanOutcome
from . import listener_results as _said
from .common import _client, _duplicate, _pauses_between, _q, _removed_under_consume_lock, reset_stray_cause
from .locks import holds_lock, lease_live, lock_live


def _check_orderly_serial(st, qs, client, ev, out):
    """INV-ORDER-1 (spec.invariants.orderly_consumers_at_once) after `client` started a batch:
    one report per overlapped batch, naming the cause."""
    ts = ev["ts"]
    for other, (cid_, since) in orderly_consumers_at_once(qs):
        if other == client or (other, cid_) in qs.overlaps:
            continue
        if _never_called(st, qs, other, since):
            del qs.busy[other]
            continue
        qs.overlaps = qs.overlaps | {(other, cid_)}
        out.report("INV-ORDER-1", f"two consumers inside the orderly queue: {client} starts a batch while {other}'s "
                   f"batch {cid_} (since ts {since}) is still in its listener call; cause: "
                   f"{_released_cause(st, qs, other, since) or _long_call_cause(st, qs.key[2], other, since, ts)}",
                   qs.key)


def _never_called(st, qs, cid, since) -> bool:
    """Whether `cid`'s batch begun at `since` is no listener call (any more): its rebalance dropped
    the ProcessQueue, then removed it or released the queue after the batch began, under the
    consume lock (common._removed_under_consume_lock)."""
    r = qs.released
    pq = qs.pqs.get(cid)
    if pq is None or pq.status != "dropped":
        return False
    seen = [t for t in ((r.ts if r is not None and r.client == cid else None), pq.removed_ts)
            if t is not None and t >= since]
    return bool(seen) and _removed_under_consume_lock(st, qs, pq, min(seen))


def _released_cause(st, qs, cid, since):
    """Why the other client got the lock, when the caller's own unlock let it in: its rebalance
    removed the ProcessQueue it had lost while this call ran (removeUnnecessaryMessageQueue)."""
    r = qs.released
    if r is None or r.client != cid or r.ts < since:
        return None
    pq = qs.pqs.get(cid)
    group, _, broker, _ = qs.key
    if pq is not None and pq.status != "dropped" and cid not in st.dir.registered.get((broker, group), ()):
        # a client that unregistered with its queues still held: its shutdown's unlockAllMQ
        return (f"{cid} unlocked the queue at ts {r.ts}, its listener call still running: its shutdown unlocks "
                f"every queue without waiting for listener calls (ConsumeMessageOrderlyService.shutdown, "
                f"awaitTerminationMillisWhenShutdown 0 by default)")
    why = f"{cid} unlocked the queue at ts {r.ts}, its listener call still running: its rebalance removed the ProcessQueue it had lost"
    if st.profile.orderly_remove_style == "5x":
        why += (f" (5.x tryRemoveOrderMessageQueue forces the unlock of a dropped queue once "
                f"{st.profile.unlock_delay_ms} ms, rocketmq.client.unlockDelayTimeMills, have passed since its last "
                f"lock, #7644: a call that outlives that while the queue changes owner is consumed by two clients)")
    return why


def _lease_cause(st, broker, cid, last_lock, now):
    """Why `cid` still consumed on its lease from `last_lock` when the broker's entry was gone or
    another's: a configuration without a lease margin, or a pause across the lease (A-LEASE-MARGIN)."""
    b, c = limits.broker(st, broker), limits.client(st, cid)
    lim = (f"client lease {c.lease_ms} ms, broker lock {b.lock_max_live_ms} ms "
           f"({ref('A-LEASE-MARGIN')})")
    if limits.lease_margin(st, broker, cid) <= 0:
        return (f"configuration: the broker lock is not longer than the client lease ({lim}): the broker's "
                f"entry expires while the client still trusts its lease, and another client locks the queue")
    pauses = _pauses_between(st, cid, last_lock, now)
    if pauses:
        t, d = pauses[-1]
        return f"{cid} was paused at ts {t} for {d} ms, past its lease ({lim})"
    return f"a lock or lease violation ({lim})"


def _long_call_cause(st, broker, cid, since, now):
    """Why a listener call of `cid` that began at `since` was still running at `now`, against
    the limits it outlived (A-LEASE-MARGIN)."""
    b, c = limits.broker(st, broker), limits.client(st, cid)
    margin = limits.lease_margin(st, broker, cid)
    ran = now - since
    pauses = _pauses_between(st, cid, since, now)
    what = "; ".join(f"{cid} was paused at ts {t} for {d} ms" for t, d in pauses) or \
        f"{cid}'s listener call has run {ran} ms"
    lim = (f"client lease {c.lease_ms} ms, broker lock {b.lock_max_live_ms} ms, margin {margin} ms "
           f"({ref('A-LEASE-MARGIN')})")
    if margin <= 0:
        return f"{what}; configuration: the broker lock is not longer than the client lease ({lim})"
    if ran > margin:
        return f"{what}: the call outlived the lease margin ({ran} ms > {lim})"
    return f"{what} ({ran} ms, within the {lim}): a lock or lease violation let the other client in"


def _renewed_unseen(qs, pq, cid, ts, lease) -> bool:
    """The ProcessQueue is seen by polling (a recorder), and the broker granted `cid` the lock
    after the last lock the poller showed, within the lease before ts: the client sets locked and
    lastLockTimestamp when that grant's answer arrives (RebalanceImpl.lock and lockAll), at or after
    the grant, so its lease may have been live at ts before any poll showed it."""
    granted = qs.granted.get(cid)
    return pq.sampled and granted is not None and pq.last_lock_ts < granted <= ts and ts - granted <= lease


def consume_started(st, ev, out):
    """RocketMQ: ConsumeRequest.run (listener called).
    Actor: client."""
    _said.call_started(st, ev, out)
    qs = _q(st, ev)
    key = qs.key
    cid = ev["client"]
    c = st.dir.clients.get(cid)
    if c is None or c.status != "running":
        c = _client(st, ev, out, key)
    pq = qs.pqs.get(cid)
    offsets = ev["offsets"]
    if pq is None:
        out.report("INV-PQ-1", f"{cid} consumes from a queue it has no ProcessQueue for", key)
        return
    if pq.status == "dropped" and not pq.sampled:
        # (polled: the drop was seen after it happened, and ConsumeRequest.run checks the flag
        # once, before the hook and the listener: a call that passed the check may start after)
        out.report("INV-DROP-1", f"{cid} starts a batch {offsets[:8]} on a dropped ProcessQueue", key)
    if key[1].startswith(DLQ_PREFIX):
        out.report("INV-DLQ-1", "a message of the DLQ topic was consumed", key)
    cons_id = ev["consume_id"]
    if cons_id in pq.batches:
        out.report("GUARD", f"consume id {cons_id} reused while in flight", key)
    if pq.orderly:
        _settle(st, qs, pq, out)
        pq.commit_proof = None          # a new batch: the proven commit's outcome is past
        again = pq.dead.intersection(offsets) if pq.dead else ()
        for o in sorted(again):
            pq.dead.discard(o)
            out.report("INV-RETRY-1", f"{cid} consumes offset {o} again after sending it to the DLQ past "
                       f"maxReconsumeTimes" + (reset_stray_cause(qs, cid) or
                       "; cause: ConsumeMessageOrderlyService.checkReconsumeTimes dead-letters "
                       "a message at its limit but answers suspend for the whole batch while another of its "
                       "messages is under the limit, and processConsumeResult puts the whole batch back "
                       "(makeMessageToConsumeAgain), the dead letter with it")
                       + ("; the group is broadcasting, so the dead letter itself is the orderly send-back that "
                          "ignores the message model (INV-BCAST-1)" if pq.broadcast else ""), key)
        taken, pq.unheard = pq.unheard, None
        if offsets and list(offsets) != pq.consuming[-len(offsets):]:
            # no messages_taken before it (a recorder outside the client): infer the take
            _take_lowest(pq, offsets)
        if taken is not None and list(offsets) != list(taken):
            # ConsumeRequest.run calls the listener with the very list takeMessages returned,
            # in the same thread; the next take waits for processConsumeResult
            out.report("INV-ORDER-2", f"{cid}'s listener call {cons_id} receives {list(offsets)[:8]}, but "
                       f"takeMessages just took {list(taken)[:8]} and no listener call received them", key)
        elif list(offsets) != pq.consuming[-len(offsets):] if offsets else True:
            out.report("INV-ORDER-2", f"orderly batch {list(offsets)[:8]} is not the messages just taken "
                       f"({pq.consuming[-8:]}){reset_stray_cause(qs, cid)}", key)
        if not pq.broadcast:
            ts = ev["ts"]
            lease = limits.client(st, cid).lease_ms
            if not lease_live(pq, ts, lease) and not _renewed_unseen(qs, pq, cid, ts, lease):
                out.report("INV-OWNER-2", f"{cid} consumes an orderly queue without a valid lease (locked="
                           f"{pq.locked}, last lock {pq.last_lock_ts}, now {ts}); cause: "
                           f"{_lease_cause(st, key[2], cid, pq.last_lock_ts, ts)}", key)
            elif not holds_lock(qs, cid, ts) and key[2] in st.dir.brokers:
                # (a broker not observed yet, e.g. a recorder attached later, tells nothing)
                if qs.holder is None or (qs.holder == cid and not lock_live(qs, ts)):
                    # nobody else holds the entry: a window of exposure, not a second owner
                    why = (f"the broker restarted and forgot its locks ({ref('A-BROKER-LOCKS')})"
                           if st.dir.brokers.get(key[2], 0) != qs.lock_epoch else
                           "the entry was released or expired under a valid client lease")
                    out.report("ANOM-LOCK-GAP", f"{cid} consumes under a valid lease while the broker has no "
                               f"lock entry for it: {why}", key)
                else:
                    out.report("INV-OWNER-2", f"{cid} consumes but the broker lock is held by {qs.holder} "
                               f"(expires_at {qs.lock_exp}, now {ts}); cause: "
                               f"{_lease_cause(st, key[2], cid, pq.last_lock_ts, ts)}", key)
            b = qs.busy.get(cid)
            if b is not None:
                # a step rule the state cannot show: one consume thread per queue in a client
                out.report("INV-ORDER-1", f"client {cid} starts a second batch on the queue while consume "
                           f"{b.consume_id} is still running (one consume thread per queue)", key)
            if pq.status != "dropped":
                qs.busy[cid] = Busy(cons_id, ts)
            # else: the drop was seen before this before-hook, and ConsumeRequest.run re-checks the
            # flag under the consume lock after the hook: it breaks without the listener or the
            # after-hook (no consume_finished), so this batch holds no consume thread
            _check_orderly_serial(st, qs, cid, ev, out)
    else:
        tree = pq.tree
        for o in offsets:
            if o not in tree:
                out.report("INV-PQ-1", f"offset {o} consumed but not in {cid}'s ProcessQueue", key)
                break
        if pq.batches:
            for b in pq.batches.values():
                if not set(b).isdisjoint(offsets):
                    out.report("INV-PQ-1", f"offsets {list(offsets)[:8]} consumed twice at once by {cid}", key)
                    break
        if pq.failed:
            for o in offsets:
                pq.failed.pop(o, None)
    sq = st.stored.get((key[1], key[2], key[3]))
    ids = ev.get("msg_ids")
    if ids is not None and st.chains:
        # a copy this client already sent back, handed to it again (a queue dropped and taken
        # again, a pull from an offset its send-back's advance had not reached): a new delivery,
        # whose failure is a new failure with a copy of its own (INV-RETRY-3 is one copy per failure)
        origins = ev.get("origin_msg_ids") or ids
        for mid, origin in zip(ids, origins):
            ch = st.chains.get((ev["group"], origin or mid))
            if ch is not None and ch.accepted:
                ch.accepted.discard((cid, mid))
    if sq is not None and ids is not None:
        msgs = sq.msgs
        for o, mid in zip(offsets, ids):
            m = msgs.get(o)
            if m is not None and m[M_ID] != mid:
                out.report("INV-PQ-1", f"offset {o} holds {m[M_ID]}, the listener got {mid}", key)
                break
    unit = qs.units.get(pq.client if pq.broadcast else "")
    if unit is not None:
        for o in offsets:
            if o < unit.wm or o in unit.done:
                _duplicate(st, out, key, f"{cid} consumes offset {o} again (already handled by the group)")
                if pq.orderly:
                    pq.dup_seen.add(o)
    pq.batches[cons_id] = tuple(offsets)


def _in_flight(qs, pq, cid, consume_id) -> bool:
    return (cid, consume_id) in (qs.orphans or {}) or (pq is not None and consume_id in pq.batches)


def consume_finished(st, ev, out):
    """RocketMQ: listener returns.
    Actor: client."""
    _said.call_finished(st, ev, out)
    qs = _q(st, ev)
    key = qs.key
    cid = ev["client"]
    c = st.dir.clients.get(cid)
    pq = qs.pqs.get(cid)
    if c is None or c.status != "running":
        # DefaultMQPushConsumerImpl.shutdown does not wait for listener calls
        # (awaitTerminationMillisWhenShutdown, 0 by default): a call in flight at the stop returns after it
        if not (c is not None and c.status == "stopped" and _in_flight(qs, pq, cid, ev["consume_id"])):
            c = _client(st, ev, out, key)
    orphan = qs.orphans.pop((cid, ev["consume_id"]), None) if qs.orphans else None
    if orphan is not None:
        if not ev.get("dropped") and not (pq is not None and pq.orderly):
            out.report("INV-DROP-1", "a batch of a removed ProcessQueue was processed (not reported dropped)", key)
        b = qs.busy.get(cid)
        if b is not None and b.consume_id == ev["consume_id"]:
            del qs.busy[cid]
        if c is not None and c.orderly:
            # processConsumeResult works on the removed ProcessQueue the ConsumeRequest holds:
            # its commit or rollback, next, is that ProcessQueue's, not a newer one's
            # (processConsumeResult runs in the same task: the outcome, if any, has its time; a
            # ProcessQueue that resetOffset cleared has nothing to commit, and none follows)
            qs.orphan_outcome[cid] = OrphanOutcome(tuple(orphan), ev["ts"])
        return
    if pq is None:
        out.report("GUARD", f"consume {ev['consume_id']} finished but never started", key)
        return
    batch = pq.batches.pop(ev["consume_id"], None)
    b = qs.busy.get(cid)
    if b is not None and b.consume_id == ev["consume_id"]:
        del qs.busy[cid]
    if batch is None:
        out.report("GUARD", f"consume {ev['consume_id']} finished but never started", key)
        return
    if pq.orderly:
        if ev["status"] in ("SUCCESS", "COMMIT") and not ev.get("dropped") and c is not None and \
                _cfg_auto_commit(c):
            pq.commit_due = True
        return      # outcome follows as pq_committed / pq_rolled_back / consume_suspended
    dropped = ev.get("dropped")
    if dropped:
        if pq.status != "dropped":
            if pq.sampled:
                pq.status = "dropped"     # the flag, read exactly here, before the poller saw it
            else:
                out.report("GUARD", "consume_finished says dropped but the ProcessQueue is live", key)
        return
    if pq.status == "dropped" and not pq.sampled:
        # (polled: processConsumeResult re-checks the flag after the hook reported it; the
        # poller's drop time is only an upper bound, so the event's own flag decides)
        out.report("INV-DROP-1", "result of a batch processed although its ProcessQueue was dropped", key)
    n = len(batch)
    if ev["status"] == "CONSUME_SUCCESS":
        ai = ev.get("ack_index")
        ack = n - 1 if ai is None else min(ai, n - 1)
    else:
        ack = -1
    unit = qs.units.get(pq.client if pq.broadcast else "")
    for i, o in enumerate(batch):
        if i <= ack or pq.broadcast:
            if unit is not None:
                unit.handle(o)
        elif o in pq.tree:
            pq.failed[o] = "failed"
        # else: cleanExpiredMsg already sent it back and removed it; processConsumeResult skips
        # it (5.1.0+, #5481); a client that sends it back again is caught by INV-RETRY-3


def consume_resubmitted(st, ev, out):
    """RocketMQ: submitConsumeRequestLater after failed send-back.
    Actor: client."""
    qs = _q(st, ev)
    pq = qs.pqs.get(ev["client"])
    if pq is None:
        return
    for o in ev["offsets"]:
        if pq.failed.get(o) not in ("failed", "resubmit"):
            out.report("GUARD", f"offset {o} resubmitted but it did not fail a send-back", qs.key)
        pq.failed[o] = "resubmit"


def consume_suspended(st, ev, out):
    """RocketMQ: ConsumeMessageOrderlyService suspend/retry later.
    Actor: client."""
    _q(st, ev)


def pq_messages_removed(st, ev, out):
    """RocketMQ: ProcessQueue.removeMessage.
    Actor: client.

    ProcessQueue.removeMessage: -1 if the tree was empty before, else the tree minimum after
    removal, else queueOffsetMax + 1."""
    qs = _q(st, ev)
    key = qs.key
    pq = qs.pqs.get(ev["client"])
    if pq is None:
        out.report("INV-PQ-1", f"{ev['client']} removes messages from a ProcessQueue it does not have", key)
        return
    tree = pq.tree
    offsets = ev["offsets"]
    failed = pq.failed
    if failed:
        for o in offsets:
            s = failed.get(o)
            if s is not None and s not in ("requested", "expired_sent"):
                out.report("INV-OFFSET-3", f"offset {o} removed from the ProcessQueue although its send-back did not "
                           f"succeed (it must stay and block the offset)", key)
            failed.pop(o, None)
    if not tree:
        want = -1
    else:
        for o in offsets:
            tree.discard(o)
        if tree:
            want = pq.tree_min()
        else:
            want = pq.max_new + 1
    got = ev["offset"]
    if got != want:
        out.report("INV-OFFSET-1", f"removeMessage returned {got}; the ProcessQueue gives {want} (tree min "
                   f"{pq.tree_min()}, queueOffsetMax {pq.max_new})", key)
    if got >= 0:
        pu = pq.pending_upd
        pu.append(got)
        if len(pu) > 64:
            del pu[:32]


def messages_taken(st, ev, out):
    """RocketMQ: ProcessQueue.takeMessages.
    Actor: client."""
    qs = _q(st, ev)
    key = qs.key
    pq = qs.pqs.get(ev["client"])
    _settle(st, qs, pq, out)
    if pq is None:
        out.report("INV-PQ-1", f"{ev['client']} takes messages from a ProcessQueue it does not have", key)
        return
    if pq.status == "dropped":
        out.report("INV-DROP-1", "messages taken from a dropped ProcessQueue", key)
    pq.commit_proof = None
    offsets = ev["offsets"]
    for o in offsets:
        m = pq.tree_min()
        if m != o:
            out.report("INV-ORDER-2", f"takeMessages took {list(offsets)[:8]} but the lowest offset in the tree is {m}",
                       key)
            break
        pq.tree.discard(o)
        heapq.heappop(pq.heap)
    for o in offsets:
        pq.tree.discard(o)
    pq.consuming.extend(offsets)
    pq.consuming.sort()
    if ev.get("obs", "exact") == "exact" and offsets:
        if pq.unheard is not None:
            out.report("INV-ORDER-2", f"takeMessages took {list(offsets)[:8]} while the {list(pq.unheard)[:8]} it "
                       f"took before never reached a listener call", key)
        pq.unheard = tuple(offsets)


def pq_committed(st, ev, out):
    """RocketMQ: ProcessQueue.commit.
    Actor: client."""
    qs = _q(st, ev)
    key = qs.key
    if _orphan_outcome(st, qs, ev, out):
        return
    pq = qs.pqs.get(ev["client"])
    if pq is None:
        out.report("INV-PQ-1", f"{ev['client']} commits a ProcessQueue it does not have", key)
        return
    if proof_contradicted(qs, pq, ev["offset"], "ProcessQueue.commit", out):
        pq.pending_upd.append(ev["offset"])
        return
    offsets = list(ev["offsets"])
    if not pq.consuming:
        out.report("INV-ORDER-2", "commit with nothing taken (NoSuchElementException in RocketMQ)", key)
    elif offsets != pq.consuming:
        out.report("INV-ORDER-2", f"commit of {offsets[:8]}, the consuming map holds {pq.consuming[:8]}", key)
    want = (pq.consuming[-1] + 1) if pq.consuming else None
    if want is not None and ev["offset"] != want:
        out.report("INV-OFFSET-1", f"commit returned {ev['offset']}, lastKey + 1 is {want}", key)
    pq.commit_due = False
    _commit(st, qs, pq, offsets, ev["client"], out)
    pq.pending_upd.append(ev["offset"])


def _commit(st, qs, pq, offsets, cid, out):
    """ProcessQueue.commit's effect on the spec state: the consuming map's messages are handled
    by the unit (a duplicate if another client handled them meanwhile)."""
    if len(offsets) > qs.batch_max:
        qs.batch_max = len(offsets)
    unit = qs.units.get(pq.client if pq.broadcast else "")
    if unit is not None:
        seen = pq.dup_seen
        for o in offsets:
            # counted when its consumption started if it was handled then; else it was handled
            # by another client while this one consumed it: the duplicate shows at the commit
            if not unit.handle(o) and o not in seen:
                _duplicate(st, out, qs.key, f"{cid} commits offset {o}, already handled by the group")
        seen.clear()
    pq.consuming = []


def commit_proven(st, qs, cid, value, what, ev, out) -> None:
    """A pull's commitOffset or a persist of `cid` carrying `value` (`what` names it) while its
    orderly commit is due: ConsumeMessageOrderlyService.processConsumeResult (4.9.8 and 5.x) runs
    ProcessQueue.commit (lastKey + 1) and updateOffset(mq, it, false) right after the consume
    hook, and both pullMessage (READ_FROM_MEMORY) and persistAll read the offset store. A value of
    lastKey + 1 there can only be that commit's, so the commit has happened. Taken as proof only
    when the store is seen by polling: its offset_updated may come later (obs sampled). An exact
    pq_committed or offset_updated of that commit after it contradicts the proof (INV-OFFSET-3,
    reported there)."""
    pq = qs.pqs.get(cid)
    if pq is None or not pq.commit_due or not pq.consuming:
        return
    last = pq.consuming[-1] + 1
    # or a later no-message answer's next offset: correctTagsOffset writes it only when msgCount
    # is 0, which the consuming map keeps above 0 until the commit
    if value != last and not (value > last and value in pq.pending_upd):
        return
    if not _store_polled(st, qs, cid, pq):
        return
    pq.commit_proof = (tuple(pq.consuming), value, what, ev.get("seq"))
    _settle(st, qs, pq, out)


def _store_polled(st, qs, cid, pq) -> bool:
    """Whether `cid`'s offset store is seen by polling: a sampled offset_updated of it (this
    queue's, else any queue's); before any offset_updated of this queue told how it is seen, a
    ProcessQueue seen by polling (a recorder outside the client polls both tables)."""
    sampled = st.sampled_stores
    if (qs.key, cid) in sampled:
        return True
    if cid in qs.stores:
        return False            # this queue's store was seen exactly
    return pq.sampled or any(c == cid for _, c in sampled)


def proof_contradicted(qs, pq, value, event, out) -> bool:
    """An exact observation of a proven commit (`event`: its pq_committed, or its offset_updated
    to `value`): the commit happened after the pull or persist that carried its offset, which then
    passed messages still in the consuming map. True if it was one (reported)."""
    proof = pq.commit_proof if pq is not None else None
    if proof is None or value != proof[1]:
        return False
    pq.commit_proof = None
    offsets, _, what, seq = proof
    out.report("INV-OFFSET-3", f"{pq.client}'s {what} (seq {seq}) carried offset {value} before {event} "
               f"(exact) of {list(offsets)[:8]}: it passed messages still being consumed", qs.key)
    return True


def _settle(st, qs, pq, out):
    """A recorder outside the client sees the orderly listener's result but not
    ProcessQueue.commit (processConsumeResult commits right after a SUCCESS/COMMIT with
    autoCommit). When no pq_committed followed, the commit happened before this ProcessQueue's
    next step: apply it now."""
    if pq is not None and pq.commit_due:
        pq.commit_due = False
        if pq.consuming:
            _commit(st, qs, pq, list(pq.consuming), pq.client, out)


def _cfg_auto_commit(c) -> bool:
    v = c.config.get("auto_commit") if isinstance(c.config, dict) else None
    return v is None or bool(v)


def _take_lowest(pq, offsets) -> bool:
    """takeMessages inferred at a listener call (not observable outside the client): the batch
    must be the lowest offsets of the message tree. True if it was (and they were taken)."""
    tree = pq.tree
    new = [o for o in offsets if o not in pq.consuming]
    if not new or any(o not in tree for o in new):
        return False
    if heapq.nsmallest(len(new), tree) != sorted(new):
        return False
    for o in new:
        tree.discard(o)
    pq.consuming.extend(new)
    pq.consuming.sort()
    return True


def _orphan_outcome(st, qs, ev, out) -> bool:
    """The commit or rollback that follows an orderly batch of a removed ProcessQueue (its
    ConsumeRequest still holds it, e.g. after OFFSET_ILLEGAL took it out of the table during the
    call): it concerns that ProcessQueue, which nothing consumes again. A commit's messages are
    handled by the group; a rollback returns them to a tree that is gone."""
    cid = ev["client"]
    pending = qs.orphan_outcome.pop(cid, None) if qs.orphan_outcome else None
    if pending is None or pending.ts != ev["ts"]:
        return False
    batch = pending.offsets
    if ev["kind"] == "pq_committed":
        offsets = list(ev["offsets"])
        if not set(batch) <= set(offsets):
            out.report("INV-ORDER-2", f"{cid} commits {offsets[:8]} of its removed ProcessQueue, whose "
                       f"batch was {list(batch)[:8]}", qs.key)
        if len(offsets) > qs.batch_max:
            qs.batch_max = len(offsets)
        unit = qs.units.get("")
        if unit is not None:
            for o in offsets:
                if not unit.handle(o):
                    _duplicate(st, out, qs.key, f"{cid} commits offset {o} of a removed ProcessQueue, already "
                               f"handled by the group")
    return True


def pq_rolled_back(st, ev, out):
    """RocketMQ: ProcessQueue.rollback / makeMessageToConsumeAgain.
    Actor: client."""
    qs = _q(st, ev)
    if _orphan_outcome(st, qs, ev, out):
        return
    pq = qs.pqs.get(ev["client"])
    if pq is None:
        out.report("INV-PQ-1", f"{ev['client']} rolls back a ProcessQueue it does not have", qs.key)
        return
    back = set(ev["offsets"])
    if not back <= set(pq.consuming):
        out.report("INV-ORDER-2", f"rollback of {sorted(back - set(pq.consuming))[:8]} that were not taken", qs.key)
    pq.consuming = [o for o in pq.consuming if o not in back]
    pq.dup_seen -= back     # consumed again later: a new consumption
    for o in back:
        if o not in pq.tree:
            pq.tree.add(o)
            heapq.heappush(pq.heap, o)
