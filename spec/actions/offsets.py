"""Offsets: the client's offset store (memory or local file), the broker's offset table, reads,
persists, commits, flushes, loads and operators' resets."""
from __future__ import annotations

import heapq
from itertools import chain

from ..invariants import broker_offset_passes, client_offset_passes
from ..filtering import RETRY_PREFIX, decide, subscription
from .. import limits
from ..state import HELD_MAX, M_CODE, M_PROPS, M_TAGS, Client, QueueState
from . import listener_results as _said
from .common import _end, _pauses_between, _q, _skip_to, reset_stray_cause
from .consume import _settle, commit_proven, proof_contradicted


def _committed_for(st, qs: QueueState, client: Client | None):
    """The committed offset a store read must return: broker table (clustering) or the
    client's local offsets file (broadcasting; the spec keeps the value even if a buggy
    rewrite erased it)."""
    if client is not None and client.broadcast:
        loc = qs.local.get(client.cid)
        return None if loc is None else loc[0]
    return qs.committed


def _set_committed(st, qs: QueueState, value):
    """The broker table's entry for the queue becomes `value` (None: no entry). A client whose
    store read may be on its way (RemoteBrokerOffsetStore.readOffset(READ_FROM_STORE) is a
    QUERY_CONSUMER_OFFSET round trip, issued after its allocation of the topic, before its first
    pull) keeps the replaced value: the broker may have answered with it."""
    old = qs.committed
    if old == value:
        return
    qs.committed = value
    group, topic, broker, queue = qs.key
    g = st.dir.groups.get(group)
    if g is None:
        return
    mq = (topic, broker, queue)
    d = st.dir
    for cid in g["clients"]:
        c = d.clients.get(cid)
        if c is None or c.broadcast or mq not in d.alloc.get((cid, topic), ()):
            continue
        pq = qs.pqs.get(cid)
        if pq is not None and pq.status == "active":
            continue            # it has pulled: no read of the queue follows until its next allocation
        h = qs.held.get(cid, ())
        if old not in h:
            h = (h + (old,))[-HELD_MAX:]
            qs.held[cid] = h


def _read_answers(qs: QueueState, cid, committed, observed=True):
    """The table values a store read of `cid` may be answered with: the current one, those
    replaced since its read could have been issued, and those that pulls and persists in flight
    carry: the broker's table takes a commit before the recorder writes its offset_committed
    (under the recorder's lock, which ConsumerManageProcessor.queryConsumerOffset's read of the
    table does not take), so a read answered in between can hold a value committed later in the
    trace. Without the broker in the trace (`observed` false) no commit shows, so none is in flight."""
    if not observed:
        return (committed,) + qs.held.get(cid, ())
    return (committed,) + qs.held.get(cid, ()) + tuple(v for pc in qs.pull_commit.values() for v in pc) + \
        tuple(o for _, o in qs.persists)


def _store_read_ok(off, values) -> bool:
    """ConsumerManageProcessor.queryConsumerOffset: the entry's value; with no entry 0 (offset 0
    still in memory) or QUERY_NOT_FOUND (-1). -2: the query failed on the client, -3 a failed
    local file read."""
    if off == -2:
        return True
    for v in values:
        if v is None:
            if off in (-1, 0, -3):
                return True
        elif off == v:
            return True
    return False


def _pull_from_where(st, qs, client, read, sq, end_at_read=None):
    """computePullFromWhere of a store read: (exact value or None, low, high). `end_at_read`: the
    queue's end when the store was read; its maxOffset query comes after that read and before the
    ProcessQueue is seen, so any end in between may be the answer."""
    if read >= 0:
        return read, read, read
    topic = qs.key[1]
    fw = client.from_where if client else "CONSUME_FROM_LAST_OFFSET"
    mx = _end(sq)
    first = mx if end_at_read is None else min(end_at_read, mx)
    mn = sq.min if sq else 0
    if read == -1:
        if "TIMESTAMP" in fw:
            if topic.startswith(RETRY_PREFIX):
                return (mx if first == mx else None), first, mx
            return None, mn, mx
        if "FIRST" in fw:
            return 0, 0, 0
        if topic.startswith(RETRY_PREFIX):
            return 0, 0, 0
        return (mx if first == mx else None), first, mx
    return None, None, None   # -2/-3: computePullFromWhere fails; no ProcessQueue should follow


def floor_of(floors, cid, pq):
    """The store value a client's earlier observation of this ProcessQueue proved (a persist's or a
    poll's), or None when the ProcessQueue was replaced since or none was seen. The store only
    increases within one ProcessQueue (compareAndIncreaseOnly), so a later read of it is at least
    this value: the floor of spec.state's persist_floor and sample_floor."""
    f = floors.get(cid)
    return f[1] if f is not None and f[0] == pq.gen else None


def set_floor(floors, cid, pq, value) -> None:
    floors[cid] = (pq.gen, value)


def _sampled_store(st, qs, ev, out):
    """An offset-store value read by polling (obs sampled): the store held `stored` at ts; which
    updateOffset produced it is not known. Judged as a state: it never passes a message the
    ProcessQueue still holds unconsumed (INV-OFFSET-3), and never goes back within a live
    ProcessQueue (INV-OFFSET-2). Messages below it that the group handled have left the tree
    (removeMessage is not observable from outside the client)."""
    key, cid, v = qs.key, ev["client"], ev["stored"]
    pq = qs.pqs.get(cid)
    s = qs.stores.get(cid)
    if _reset_value(st, qs, cid, v):
        _note_reset(qs, v)
    stale = qs.stale_next.get(cid)
    if stale is not None and v < stale:
        # correctTagsOffset runs on the answering thread right after the gone ProcessQueue's
        # answer (pull_answered) and never lowers the store: a value below it, seen after that
        # answer, was written after the correction (a reset's or a store read's updateOffset(...,
        # false)), which it no longer follows
        del qs.stale_next[cid]
    read_early = False
    if pq is not None and pq.live:
        if s is not None and v < s[0] and not pq.orderly:
            floor = floor_of(qs.sample_floor, cid, pq)
            if floor is not None and v >= floor:
                # the poller reads the whole table (Release.offsets) before it writes its events,
                # so an exact event written in between (a persist or a pull's commit offset, each
                # read from the store before the RPC the recorder hooks) may carry a newer value;
                # the poll after this one reads after this event, so at least what the spec holds
                # once it is judged. The store keeps the newer value (compareAndIncreaseOnly)
                read_early = True
            else:
                out.report("INV-OFFSET-2", f"client offset moves back from {s[0]} to {v} in a live ProcessQueue "
                           f"(sampled)", key)
        late = qs.stale_next.get(cid) == v and (s is None or v > s[0])
        m = client_offset_passes(pq, v, taken=False) if late else None
        if late and (m is not None or not pq.orderly):
            # set by a gone ProcessQueue's late answer (correctTagsOffset), not by this one's
            # removeMessage; an orderly ProcessQueue's own commit may reach the same value, which
            # passes nothing unconsumed
            if m is not None:
                then = ("; the orderly ProcessQueue's next commit writes its own offset back "
                        "(processConsumeResult: updateOffset(..., false)), a persist before it commits this one"
                        if pq.orderly else "")
                out.report("INV-OFFSET-3", f"client offset {v} (sampled) passes offset {m}, still unconsumed in the "
                           f"ProcessQueue or in a listener call; cause: a pull of the ProcessQueue {cid} had before "
                           f"was answered {v} after that one was dropped, and correctTagsOffset (no dropped check) "
                           f"moved the queue's one offset store there (a reset overwritten by an earlier pull, apache/rocketmq#4206, #4742){then}", key)
            del qs.stale_next[cid]
            qs.stores[cid] = [v, ev.get("frozen") or False]
            set_floor(qs.sample_floor, cid, pq, v)
            st.sampled_stores.add((key, cid))
            return
        # the handled messages below it have left the tree (removeMessage, not observable)
        unit = qs.units.get(pq.client if pq.broadcast else "")
        tree, heap = pq.tree, pq.heap
        while heap and heap[0] < v:
            o = heapq.heappop(heap)
            if o not in tree:
                continue
            if unit is not None and not unit.handled(o) and pq.failed.get(o) not in ("requested", "expired_sent"):
                heapq.heappush(heap, o)
                break
            tree.discard(o)
            pq.failed.pop(o, None)
        m = client_offset_passes(pq, v, taken=False)
        if m is not None:
            out.report("INV-OFFSET-3", f"client offset {v} (sampled) passes offset {m}, still unconsumed in the "
                       f"ProcessQueue or in a listener call{reset_stray_cause(qs, cid) or _uncontained_cause(st, pq, m)}",
                       key)
        pq.pending_upd.clear()
    if not read_early:
        qs.stores[cid] = [v, ev.get("frozen") or False]
    if pq is not None:
        set_floor(qs.sample_floor, cid, pq, qs.stores[cid][0])
    st.sampled_stores.add((key, cid))


def _uncontained_cause(st, pq, m) -> str:
    """Why a failed message left the tree unsent (5.1.0+), or "". processConsumeResult sends a
    failed message back only if ProcessQueue.containsMessage finds it (the #5481 fix: cleanExpiredMsg
    may have sent it back already), and containsMessage answers false when its lockInterruptibly is
    interrupted, as the consumer's shutdown interrupts running consume threads (shutdownNow, with
    awaitTerminationMillisWhenShutdown 0). removeMessage then takes the message out and the offset
    passes it: never sent back, lost once that offset is persisted."""
    if not st.profile.sendback_skips_not_contained or pq.failed.get(m) != "failed":
        return ""
    return (f"; cause: the listener call of offset {m} failed and no send-back followed: processConsumeResult "
            f"skips the send-back when ProcessQueue.containsMessage answers false, which it does when an "
            f"interrupt (the consumer's shutdown) stops its read lock, and then moves the offset past the "
            f"message (the containment check of #5481's fix, ConsumeMessageConcurrentlyService; RocketMQ's log "
            f"says \"Failed to check message's existence in process queue\"): the message is lost if this offset "
            f"is persisted")


def _note_reset(qs, off) -> None:
    """An operator's reset of the queue's offset to `off`: the recent ones (newest last) are
    what a client's later persist of it may carry."""
    qs.resets.append(off)
    if len(qs.resets) > 4:
        gone = qs.resets.pop(0)
        if gone not in qs.resets:
            qs.written_ahead.discard(gone)


def _reset_value(st, qs, cid, off) -> bool:
    """Whether `off`, seen by polling or carried by a persist of `cid` whose ProcessQueue a reset
    dropped, is the operator's offset: MQClientInstance.resetOffset sets it (updateConsumeOffset)
    10 s after the drop, and removeUnnecessaryMessageQueue persists it. The drop itself was seen by
    polling, later than it happened, so the 10 s are not counted from it here."""
    return cid in qs.reset_drops and off not in qs.resets and _reset_target(st, qs.key, off)


def _reset_target(st, key, off) -> bool:
    """Whether `off` is an offset resetOffsetByTime could set on the queue: in [min, max]."""
    sq = st.stored.get((key[1], key[2], key[3]))
    return sq is not None and sq.min <= off <= sq.next


def offset_updated(st, ev, out):
    """RocketMQ: OffsetStore.updateOffset / updateAndFreeze.
    Actor: client."""
    qs = _q(st, ev)
    _settle(st, qs, qs.pqs.get(ev["client"]), out)
    cl = st.dir.clients.get(ev["client"])
    unit = qs.units.get(ev["client"] if cl is not None and cl.broadcast else "")
    if unit is not None:
        unit.had_offset = True      # the client's offset table has an entry for the queue now
    if ev.get("obs") == "sampled":
        _sampled_store(st, qs, ev, out)
        return
    proof_contradicted(qs, qs.pqs.get(ev["client"]), ev["stored"], "its updateOffset", out)
    key = qs.key
    cid = ev["client"]
    c = st.dir.clients.get(cid)
    off, inc = ev["offset"], ev["increase_only"]
    pq = qs.pqs.get(cid)
    s = qs.stores.get(cid)
    prev = s[0] if s is not None else None
    frozen = s[1] if s is not None else False
    source = None
    # a value the ProcessQueue may still update to; once it is dropped, neither consume service
    # updates the offset any more (processConsumeResult checks isDropped), so an updateOffset(...,
    # false) there is first the client's own task of a correction or a reset, and only then the
    # dropped queue's (INV-DROP-1 below)
    pending = pq is not None and pq.pending_upd and off in pq.pending_upd
    if pending and (inc or pq.status != "dropped"):
        pq.pending_upd.remove(off)
        source = "pq"
    elif not inc and off in qs.illegal.get(cid, ()):
        fixes = qs.illegal[cid]
        fixes.remove(off)
        if not fixes:
            del qs.illegal[cid]
        source = "illegal"
    if source is None:
        committed = _committed_for(st, qs, c)
        due = qs.reset_drops.get(cid)
        if not inc and off >= 0 and due is not None and ev["ts"] >= due:
            # MQClientInstance.resetOffset dropped this client's ProcessQueue: its next
            # updateOffset(mq, offset, false) of the queue is the operator's offset. Nothing else
            # sets one in between: the ProcessQueue stays in the table until the reset removes
            # it, so no rebalance creates one and reads the store (a drop by an OFFSET_ILLEGAL
            # answer, whose correction matched above, is not a reset's). A ProcessQueue dropped
            # before and kept in the table (an orderly one whose call held the consume lock)
            # is dropped by the reset again: setDropped(true) is called on every queue of the
            # topic it holds. Before the 10 s are up, an update is not the reset's
            source = "reset"
            _note_reset(qs, off)
        elif pending:       # the dropped ProcessQueue's own update
            pq.pending_upd.remove(off)
            source = "pq"
        # READ_FROM_STORE: the client adopts the store's value with updateOffset(..., false)
        elif not inc and off >= 0 and _store_read_ok(
                off, _read_answers(qs, cid, committed, key[2] in st.dir.brokers)):
            source = "read"
        elif not inc and off in qs.resets:
            source = "reset"        # MQClientInstance.resetOffset: updateOffset(mq, reset, false)
        elif not inc and off >= 0 and (
                pq is not None and pq.status == "dropped" and c is not None
                and c.status in ("running", "paused") and _reset_target(st, key, off)):
            # the operator's offset, which the broker handed this client (Broker2Client.resetOffset
            # commits nothing while the group's consumers are online): not the client's to judge.
            # The reset shows by the ProcessQueue it dropped (above), or not at all when an OFFSET_ILLEGAL
            # answer dropped it already: MQClientInstance.resetOffset drops it again, which no
            # trace shows (a drop is reported once), and 10 s later sets the operator's offset;
            # then an offset the reset could set (in [minOffset, maxOffset]:
            # getOffsetInQueueByTime) is taken as one.
            source = "reset"
            _note_reset(qs, off)
        else:
            out.report("INV-OFFSET-1", f"offset update to {off} that the ProcessQueue did not produce "
                       f"(pending {pq.pending_upd[-4:] if pq else []}, committed {committed})", key)
            source = "unknown"
    if source == "pq" and pq is not None and pq.status == "dropped":
        out.report("INV-DROP-1", f"offset update to {off} from a dropped ProcessQueue", key)
    if source == "illegal" and st.profile.controllable_offset:
        want, want_frozen = off, True          # updateAndFreeze
    elif frozen:
        want, want_frozen = prev, True
    elif inc:
        want, want_frozen = (off if prev is None else max(prev, off)), False
    else:
        want, want_frozen = off, False
    stored = ev["stored"]
    if stored != want:
        out.report("INV-OFFSET-1", f"store holds {stored} after update({off}, increaseOnly={inc}) from {prev}"
                   f"{' (frozen)' if frozen else ''}; expected {want}", key)
    if pq is not None and pq.live and source == "pq":
        if prev is not None and stored < prev:
            out.report("INV-OFFSET-2", f"client offset moves back from {prev} to {stored} in a live ProcessQueue", key)
    m = client_offset_passes(pq, stored)
    if m is not None:
        out.report("INV-OFFSET-3", f"client offset {stored} passes unconsumed offset {m} still in the "
                   f"ProcessQueue", key)
    fr = ev.get("frozen")
    qs.stores[cid] = [stored, want_frozen if fr is None else fr]


def offset_read(st, ev, out):
    """RocketMQ: OffsetStore.readOffset.
    Actor: client."""
    qs = _q(st, ev)
    key = qs.key
    cid = ev["client"]
    off = ev["offset"]
    c = st.dir.clients.get(cid)
    if ev["source"] == "store":
        committed = _committed_for(st, qs, c)
        broadcast = c is not None and c.broadcast
        values = (committed,) if broadcast else _read_answers(qs, cid, committed, key[2] in st.dir.brokers)
        if not _store_read_ok(off, values):
            where = "local offsets file" if broadcast else "broker"
            held = qs.held.get(cid, ()) if not broadcast else ()
            since = f" (and since {cid}'s allocation held {list(held)})" if held else ""
            if committed is not None:
                out.report("INV-START-1", f"store read returns {off}, the {where} holds {committed}{since}", key)
            else:
                out.report("INV-START-1", f"store read returns {off} but no offset is committed{since}", key)
        # the next read (the orderly first pull's re-read) is issued after this one was answered
        qs.held.pop(cid, None)
        if off >= 0:
            # readOffset(READ_FROM_STORE) puts what it read in the client's table before it
            # returns (updateOffset(mq, off, false), both stores, 4.9.8 and 5.x; a frozen 5.x
            # entry keeps its value), after the rebalance removed the queue's old entry
            # (removeDirtyOffset): a poller can miss both, and the value it saw before is gone
            s = qs.stores.get(cid)
            if s is not None and not s[1]:
                s[0] = off
        sq = st.stored.get((key[1], key[2], key[3]))
        qs.reads[cid] = (off, _end(sq))
        pq = qs.pqs.get(cid)
        _added_in_reset_wait(st, qs, cid, pq, ev["ts"])
        if pq is not None and pq.status == "created":
            # orderly first pull after locking re-reads the offset (computePullFromWhere)
            exact, lo, hi = _pull_from_where(st, qs, c, off, sq)
            pq.alt_pull = exact
            qs.reads.pop(cid, None)
    else:
        s = qs.stores.get(cid)
        want = s[0] if s is not None else -1
        if off != want:
            out.report("INV-OFFSET-1", f"memory read returns {off}, the store holds {want}", key)


def _added_in_reset_wait(st, qs, cid, pq, ts) -> None:
    """A store read of a queue `cid` holds no ProcessQueue of, while an operator's reset of the
    topic waits in `cid` (it dropped another queue's ProcessQueue there, and its 10 s are not up):
    the rebalance is adding the queue (computePullFromWhere). MQClientInstance.resetOffset dropped
    only the ProcessQueues in the table before its wait (4.9.8 lines 1074-1081); after it, it sets
    the operator's offset on every queue of the topic in the table (1088-1096), this one too,
    persists it (removeUnnecessaryMessageQueue) and takes the ProcessQueue out of the table
    without dropping it. Its PullRequest, deferred while the consumer was suspended, pulls and
    consumes on beside the one the next rebalance creates: pullMessage checks isDropped and, for
    an orderly one, isLocked, which the rebalance set at creation (RebalanceImpl.java 377) and
    nothing clears outside the table."""
    if cid in qs.reset_drops or (pq is not None and pq.removed_ts is None):
        return      # (a ProcessQueue still in the table: the reset's first loop dropped it)
    due = next((o.reset_drops[cid] for o in st.queues.values()
                if o.key[:2] == qs.key[:2] and o is not qs and cid in o.reset_drops), None)
    if due is not None and ts < due:
        qs.reset_drops[cid] = due
        qs.reset_strays[cid] = due


def offset_removed(st, ev, out):
    """RocketMQ: OffsetStore.removeOffset.
    Actor: client."""
    qs = _q(st, ev)
    qs.stores.pop(ev["client"], None)


def offset_persisted(st, ev, out):
    """RocketMQ: OffsetStore.persist (one-way).
    Actor: client."""
    qs = _q(st, ev)
    key = qs.key
    cid = ev["client"]
    s = qs.stores.get(cid)
    off = ev["offset"]
    commit_proven(st, qs, cid, off, "persist", ev, out)
    if s is not None and (key, cid) in st.sampled_stores:
        # the store is seen by polling: the persist (exact) shows a value the poll had not seen
        # yet; in a live ProcessQueue it can only be newer (increaseOnly)
        fixes = qs.illegal.get(cid)
        stale = False
        if fixes and off in fixes and off != s[0]:
            # an OFFSET_ILLEGAL correction (DefaultMQPushConsumerImpl, 4.9.8 and 5.x: one task
            # runs updateOffset(mq, nextBeginOffset, false) or updateAndFreezeOffset, then
            # persist(mq)) persisted ms after its update, between two polls: the persist of that
            # answer's nextBeginOffset proves the update
            fixes.remove(off)
            if not fixes:
                del qs.illegal[cid]
            s[1] = st.profile.controllable_offset
        elif off < s[0]:
            pq = qs.pqs.get(cid)
            if pq is not None and pq.live and not pq.orderly:
                # persistAll reads each queue's value (RemoteBrokerOffsetStore, 5.5.0 lines 128-134,
                # 4.9.8 lines 121-127) before the RPC the recorder sees: an update polled between
                # the two is newer than what the persist carries. The read follows the client's
                # previous persist of the queue, so it is at least the value seen then; before
                # the ProcessQueue's first persist nothing in the trace bounds the read
                floor = floor_of(qs.persist_floor, cid, pq)
                if floor is not None and off < floor:
                    out.report("INV-OFFSET-1", f"persist sends {off}, below the store's value {s[0]} seen earlier "
                               f"and the value {floor} seen at its previous persist", key)
                else:
                    stale = True    # read before the update the poller saw: the store keeps the newer value
        if not stale:
            s[0] = off
        pq = qs.pqs.get(cid)
        if pq is not None:
            set_floor(qs.persist_floor, cid, pq, s[0])
    elif s is not None and s[0] != off:
        out.report("INV-OFFSET-1", f"persist sends {off}, the client store holds {s[0]}", key)
    c = st.dir.clients.get(cid)
    if c is not None and c.broadcast:
        out.report("INV-BCAST-1", "a broadcasting client persisted an offset to the broker", key)
    if not ev["lost"]:
        k = (cid, off)
        qs.persists[k] = qs.persists.get(k, 0) + 1


def offset_committed(st, ev, out):
    """RocketMQ: ConsumerOffsetManager.commitOffset.
    Actor: broker."""
    _said.committed(st, ev, out)
    qs = _q(st, ev)
    key = qs.key
    off = ev["offset"]
    src = ev.get("source", "persist")
    cid = ev.get("client")
    if src == "snapshot":
        # the value the broker held when observation began (schema v2): nothing to judge; the
        # group's progress below it happened unobserved, so it is not a skip
        _set_committed(st, qs, off)
        qs.flushed = off
        unit = qs.units.get("")
        if unit is not None:
            unit.skip_to(off, unit.wm)
        return
    sampled = ev.get("obs") == "sampled"
    if sampled:
        # the table was seen holding `off` by polling: a state, not a step. When a persist or a
        # pull in flight carries the value, its exact commit event describes the change (before
        # or after this one): nothing to do here. Otherwise the change is judged as a state below.
        if off == qs.committed or any(p_off == off for _, p_off in qs.persists) or any(off in v for v in qs.pull_commit.values()):
            return
    elif src == "persist":
        k = (cid, off)
        n = qs.persists.get(k)
        if n is None and cid is None:
            k = next(((c, p_off) for c, p_off in qs.persists if p_off == off), None)
            n = qs.persists.get(k) if k else None
        if not n:
            out.report("INV-OFFSET-1", f"broker commits {off} from {cid}, which no persist in flight carries", key)
        elif n == 1:
            del qs.persists[k]
        else:
            qs.persists[k] = n - 1
    elif src == "pull":
        pc = qs.pull_commit.get(cid, ())
        if off not in pc:
            carried = " or ".join(map(str, pc)) if pc else "none"
            out.report("INV-OFFSET-1", f"broker commits {off} from {cid}'s pull, which carried {carried}", key)
        else:
            i = pc.index(off)
            qs.pull_commit[cid] = pc[:i] + pc[i + 1:]
    if src in ("persist", "pull") and cid is not None and not sampled:
        commit_proven(st, qs, cid, off, f"{src} committed by the broker", ev, out)
    if "previous" in ev and ev.get("previous") != qs.committed and not sampled:
        out.report("GUARD", f"broker commit says previous {ev.get('previous')}, the table held {qs.committed}", key)
    g = st.dir.groups.get(key[0])
    if g is not None and g["model"] == "BROADCASTING" and src != "reset":
        # (an operator may write any group's broker offset; broadcasting clients never read it)
        out.report("INV-BCAST-1", "offset committed on the broker for a broadcasting group", key)
    unit = qs.units.get("")
    # an operator's reset: written by mqadmin (no consumer online), or carried by a client whose
    # offset table holds it: set on the broker's request (MQClientInstance.resetOffset, then
    # removeUnnecessaryMessageQueue persists it), or read from the broker before a correction
    # replaced it there, and committed again by a persist or by a pull (PullMessageRequestHeader's
    # commitOffset, which the broker commits as a persist) over another value (a pull that commits
    # the table's own value again changes nothing: the reset is judged where it was)
    if src == "persist" and cid is not None and _reset_value(st, qs, cid, off):
        _note_reset(qs, off)        # the reset's update, not seen by the poller before its persist
    reset = src == "reset" or (off in qs.resets and (src == "persist" or (src == "pull" and off != qs.committed)))
    if qs.committed is not None and off < qs.committed and not reset and src != "snapshot":
        _offset_back(st, qs, g, unit, off, src, cid, ev["ts"], out)
    if reset:
        if src == "reset":
            _note_reset(qs, off)
        sq = st.stored.get((key[1], key[2], key[3]))
        qs.reset_ahead = off if off > _end(sq) else None
        if qs.reset_ahead is not None:
            qs.written_ahead.add(off)       # (a reset's value: in qs.resets)
        # a client persisting the operator's offset again (its table still holds it) skips what
        # the write skipped; past the queue's end, nothing stored since: its pull is answered
        # OFFSET_ILLEGAL and corrected (pull_answered judges that correction's skip)
        if unit is not None and (src == "reset" or qs.reset_ahead is None):
            left = _skip_to(unit, off, sq)
            if left:
                out.report("ANOM-RESET-SKIP", f"operator reset to {off} skips {left} messages the group had "
                           f"not consumed", key)
    elif qs.reset_ahead is not None and off != qs.reset_ahead:
        qs.reset_ahead = None       # the reset's offset is replaced (the illegal-offset correction landed)
    _set_committed(st, qs, off)
    qs.lost_entry = None
    m = broker_offset_passes(st, qs)
    if m is not None:
        out.report("INV-OFFSET-3", f"broker commits {off} but offset {m} has not been consumed by the group", key)


def _offset_back(st, qs, g, unit, off, src, cid, ts, out):
    """The broker's committed offset moves back (commitOffset overwrites). Concurrent: allowed
    (ANOM-OFFSET-BACK, a late persist). Orderly: more than one batch of consumed and committed
    messages below the old value is INV-ORDER-3."""
    prev = qs.committed
    key = qs.key
    n = 0
    if g is not None and g["mode"] == "ORDERLY" and g["model"] == "CLUSTERING" and unit is not None:
        # consumed and committed by the group in [off, prev): below the watermark all, above it the
        # handled ones (counted without walking the gap); only messages still stored can be
        # consumed again: none below the queue's min offset (retention) or at its end and past it
        # (an operator's write past the end, which the watermark may have skipped to)
        sq = st.stored.get((key[1], key[2], key[3]))
        lo, hi = (max(off, sq.min), min(prev, sq.next)) if sq is not None else (off, off)   # (nothing stored)
        n = max(0, min(hi, unit.wm) - lo) + sum(1 for o in unit.done if lo <= o < hi)
        if n > qs.batch_max:
            n = _delivered_again(st, qs, unit, lo, hi, cid, n)
    if n > qs.batch_max:
        c = st.dir.clients.get(cid) if cid else None
        pauses = _pauses_between(st, cid, 0, ts) if cid else []
        why = f"{cid} persisted its stale offset {off}"
        if pauses:
            t, d = pauses[-1]
            lim = limits.client(st, cid)
            b = limits.broker(st, key[2])
            why += (f" after a pause at ts {t} of {d} ms (client lease {lim.lease_ms} ms, broker lock "
                    f"{b.lock_max_live_ms} ms, channel expiry {b.channel_expired_ms} ms): meanwhile the queue "
                    f"moved on to {prev}")
        elif c is not None and c.status != "running":
            why += f" while {c.status}"
        out.report("INV-ORDER-3", f"the orderly queue's broker offset moves back from {prev} to {off} ({src} from "
                   f"{cid}): {n} messages the group had consumed and committed will be consumed again, more "
                   f"than the one batch in flight at a handover (largest batch {qs.batch_max}); cause: {why}", key)
    else:
        out.report("ANOM-OFFSET-BACK", f"broker offset moves back from {prev} to {off} ({src} from {cid})", key)


def _delivered_again(st, qs, unit, lo, hi, cid, handled):
    """Of the group's `handled` offsets in [lo, hi), how many a pull from lo hands to the
    listener again: not those the subscription filters (the broker's tag-code or SQL92 filter,
    or the client's exact re-check), which were skipped, never consumed, and are skipped again.
    Every one counts where the subscription or the message is unknown."""
    key = qs.key
    c = st.dir.clients.get(cid) if cid else None
    s = c.subs.get(key[1]) if c is not None and not key[1].startswith(RETRY_PREFIX) else None
    sub = subscription(s.get("type"), s.get("expr")) if s is not None else None
    sq = st.stored.get((key[1], key[2], key[3]))
    if sq is None or sub is None or (sub[0] == "TAG" and sub[1].every):
        return handled          # (nothing is filtered, or what is cannot be told)
    msgs = sq.msgs
    n = 0
    for o in chain(range(lo, min(hi, unit.wm)), sorted(o for o in unit.done if lo <= o < hi)):
        m = msgs.get(o)
        if m is None or False not in decide(sub, m[M_TAGS], m[M_CODE], m[M_PROPS]):
            n += 1
    return n


def offset_flushed(st, ev, out):
    """RocketMQ: offset table flush.
    Actor: broker or client."""
    qs = _q(st, ev)
    if ev["store"] == "broker":
        if qs.committed is not None and ev["offset"] != qs.committed:
            out.report("GUARD", f"broker flushes {ev['offset']}, its table holds {qs.committed}", qs.key)
        qs.flushed = ev["offset"]
    else:
        cid = ev.get("client")
        s = qs.stores.get(cid)
        if s is not None and s[0] != ev["offset"]:
            out.report("INV-OFFSET-1", f"local store flushes {ev['offset']}, it holds {s[0]}", qs.key)
        qs.local[cid] = [ev["offset"], False]


def offset_erased(st, ev, out):
    """RocketMQ: LocalFileOffsetStore.persistAll rewrite (pre-#7740); broker: commitOffset get-then-put race.
    Actor: broker or client."""
    qs = _q(st, ev)
    if ev["store"] == "broker":
        # ConsumerOffsetManager.commitOffset's get-then-put: two first commits of one topic@group
        # each put a new map, the second replaces the first and its entries (a real 4.9.8 race).
        # The queue has no committed offset until its next commit: a read answers -1 (or 0).
        if qs.committed is not None:
            qs.lost_entry = qs.committed
        _set_committed(st, qs, None)
        return
    loc = qs.local.get(ev.get("client"))
    if loc is not None:
        loc[1] = True       # the spec keeps the value: a correct LocalFileOffsetStore never forgets it


def offset_loaded(st, ev, out):
    """RocketMQ: offset table load.
    Actor: broker or client."""
    qs = _q(st, ev)
    if ev["store"] == "broker":
        off = ev["offset"]
        if qs.flushed is not None and off != qs.flushed:
            out.report("GUARD", f"broker reloads {off}, its last flush was {qs.flushed}", qs.key)
        _set_committed(st, qs, off)
        # ConsumerOffsetManager.load reads the last flush of consumerOffset.json: what was
        # written after it is gone, a pending reset past the end with it, and the value may be an
        # operator's own write (an older one, when a later write was not flushed yet). Past the
        # queue's end, such a write is corrected as it was when written (OFFSET_ILLEGAL, then
        # maxOffset), and what that skips is the operator's (ANOM-RESET-SKIP). So is a write that
        # was past the end when made and that the queue has outgrown since: no correction comes,
        # and the next owner starts there, past what was stored below it meanwhile
        key = qs.key
        end = _end(st.stored.get((key[1], key[2], key[3])))
        qs.reset_ahead = off if off in qs.resets and (off > end or off in qs.written_ahead) else None
    else:
        loc = qs.local.get(ev.get("client"))
        if loc is not None and loc[0] != ev["offset"]:
            out.report("INV-START-1", f"local offsets file reloads {ev['offset']}, last flushed {loc[0]}", qs.key)
