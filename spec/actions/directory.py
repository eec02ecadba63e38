"""Directory and rebalance: the trace's start and end, brokers, topics, registrations, client
lifecycles, allocations and ProcessQueues; the end-of-run liveness check (INV-LIVE-1)."""
from __future__ import annotations

from ..allocation_rules import TOTAL_STRATEGIES, expected_allocation, is_sorted_view
from ..assumptions import ref
from ..filtering import DLQ_PREFIX, RETRY_PREFIX, decide, subscription
from .. import limits
from ..pending import retries_in_flight, unconsumed
from ..lifecycles import PQ_TABLE
from ..state import M_CODE, M_PROPS, M_TAGS, PQ, Client, Progress, View
from .common import _client, _end, _pauses_between, _q, _removed_under_consume_lock, _skip_to, reset_stray_cause
from . import listener_results as _said
from .locks import holds_lock
from .consume import _settle
from .offsets import _committed_for, _pull_from_where, _set_committed
from .pull import _reset_reached
from .pop import check_pop_end
from .retry import keep_due_sendbacks


LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
# the part of INV-LOSS-1 a trace without start-returned marks (schema version < 4) cannot judge
PART_9281 = "a first start at CONSUME_FROM_LAST_OFFSET skipping messages stored after start() returned (#9281)"
NO_MARK = "the trace has no client_start_returned (schema version < 4): when start() returned is not known"


def trace_started(st, ev, out):
    """RocketMQ: trace header.
    Actor: recorder."""
    d = st.dir
    if d.started:
        out.report("GUARD", "trace_started twice", None)
    d.started = True
    d.profile_name = ev.get("profile")
    d.scenario = ev.get("scenario")
    d.seed = ev.get("seed")
    v = ev.get("schema_version")
    d.marks = type(v) is int and v >= 4     # every client's start() return is marked


QUIESCENT = "quiescent"     # the trace_ended reason after which nothing may be pending
# a run its recorder stopped at a horizon it declares long enough to settle, with nothing left
# waiting on the clock (the explorer: the scope's horizon_ms): judged as a quiescent end
HORIZON = "horizon"
JUDGED_ENDS = (QUIESCENT, HORIZON)


def trace_ended(st, ev, out):
    """RocketMQ: end of run (quiescence check).
    Actor: recorder."""
    st.ended = ev["reason"]
    _said.trace_ended(st, ev, out)
    if ev["reason"] in JUDGED_ENDS:
        check_quiescent(st, out)


def broker_started(st, ev, out):
    """RocketMQ: BrokerController.start.
    Actor: broker."""
    st.dir.brokers.setdefault(ev["broker"], 0)
    st.dir.broker_limits[ev["broker"]] = limits.BrokerLimits(st.profile, ev.get("config"))


def broker_restarted(st, ev, out):
    """RocketMQ: broker restart (in-memory tables lost).
    Actor: broker."""
    b = ev["broker"]
    d = st.dir
    if b not in d.brokers:
        out.report("INV-CLIENT-1", f"broker {b!r} restarted but never started", None)
    d.brokers[b] = d.brokers.get(b, 0) + 1
    # RebalanceLockManager and ConsumerOffsetManager are in memory: locks are gone, offsets
    # come back from the last flush of consumerOffset.json (ConsumerOffsetManager.load). The
    # spec knows that flush: a queue it flushed has that offset again whether or not the broker
    # says so (offset_loaded follows, and is checked against it); a broker that forgets it
    # answers the next read wrongly (INV-START-1). Never flushed: no committed offset.
    for key, qs in st.queues.items():
        if key[2] == b:
            qs.lock_state, qs.holder, qs.lock_exp = "unlocked", None, 0
            _set_committed(st, qs, qs.flushed)
            qs.persists.clear()


def topic_created(st, ev, out):
    """RocketMQ: TopicConfigManager.
    Actor: operator."""
    st.dir.topics[(ev["topic"], ev["broker"])] = (ev["queue_count"], ev.get("perm", 6))


def consumer_registered(st, ev, out):
    """RocketMQ: ConsumerManager.registerConsumer (heartbeat).
    Actor: broker."""
    st.dir.registered.setdefault((ev["broker"], ev["group"]), set()).add(ev["client"])


def consumer_unregistered(st, ev, out):
    """RocketMQ: ConsumerManager.unregisterConsumer / channel expiry.
    Actor: broker."""
    st.dir.registered.setdefault((ev["broker"], ev["group"]), set()).discard(ev["client"])


def client_started(st, ev, out):
    """RocketMQ: DefaultMQPushConsumer.start.
    Actor: client."""
    d = st.dir
    cid = ev["client"]
    old = d.clients.get(cid)
    if old is not None and old.status in ("running", "paused"):
        out.report("INV-CLIENT-1", f"client {cid!r} started twice without stopping", None)
    if old is not None:
        # A new incarnation of the client id. The old one stopped or crashed and acts no more
        # (INV-CLIENT-1), so its unfinished batches never finish; its consume ids start again at
        # the new one's, which must not be taken for the old batches.
        for qs in st.queues.values():
            pq = qs.pqs.get(cid)
            if pq is not None:
                if pq.batches:
                    pq.batches = {}
                # nor will it make the offset updates its removeMessage results were waiting for:
                # the new incarnation's first update (its store read) is not one of them
                pq.pending_upd.clear()
            # nor run the OFFSET_ILLEGAL corrections it had scheduled: a store read of the same
            # value is not one (under 5.x it would be taken for updateAndFreeze's)
            qs.illegal.pop(cid, None)
            if qs.orphans:
                qs.orphans = {(c, i): v for (c, i), v in qs.orphans.items() if c != cid}
            qs.due_sendbacks.pop(cid, None)
        # Nor has it sent anything back: a copy the old one sent back and never committed is
        # consumed again, and a second failure is a second copy (INV-RETRY-3 counts per consumer,
        # as for two clients across a rebalance).
        for ch in st.chains.values():
            if ch.accepted:
                ch.accepted = {(c, mid) for c, mid in ch.accepted if c != cid}
    c = Client(cid, ev["group"], ev["consume_mode"], ev["message_model"], ev.get("subscriptions"), ev.get("config"))
    c.limits = limits.ClientLimits(st.profile, c.config)
    d.clients[cid] = c
    g = d.groups.setdefault(ev["group"], {"mode": c.mode, "model": c.model, "clients": set()})
    g["clients"].add(cid)



def client_start_returned(st, ev, out):
    """RocketMQ: DefaultMQPushConsumer.start returns.
    Actor: client.
    Its last step, rebalanceImmediately, only wakes the RebalanceService thread."""
    c = st.dir.clients.get(ev["client"])
    if c is not None and c.from_where == LAST_OFFSET:
        # the recorder writes message_stored before the consume queue shows the message (its
        # dispatcher runs first): a message_stored after this event was readable only after start()
        c.returned_ends = {k: sq.next for k, sq in st.stored.items()}

def _drop_all(st, cid, reason):
    for qs in st.queues.values():
        pq = qs.pqs.get(cid)
        _settle(st, qs, pq, None)
        if pq is not None and pq.status != "dropped":
            pq.status = "dropped"
        qs.busy.pop(cid, None)
        if reason == "crash":
            qs.stores.pop(cid, None)
            qs.reads.pop(cid, None)
            qs.illegal.pop(cid, None)      # a killed client's scheduled tasks never run


def client_stopped(st, ev, out):
    """RocketMQ: DefaultMQPushConsumer.shutdown.
    Actor: client."""
    c = _client(st, ev, out)
    if c is not None:
        c.status = "stopped"
    _drop_all(st, ev["client"], "stop")


def client_crashed(st, ev, out):
    """RocketMQ: process death.
    Actor: client."""
    c = st.dir.clients.get(ev["client"])
    if c is None:
        out.report("INV-CLIENT-1", f"client {ev['client']!r} crashed but never started", None)
        return
    c.status = "crashed"
    _drop_all(st, ev["client"], "crash")


def client_paused(st, ev, out):
    """RocketMQ: stop-the-world pause.
    Actor: client."""
    c = _client(st, ev, out)
    if c is not None:
        c.status = "paused"
        c.paused_until = ev["ts"] + ev["duration"]
        c.pauses = c.pauses[-3:] + ((ev["ts"], ev["duration"]),)


def client_resumed(st, ev, out):
    """RocketMQ: pause ends.
    Actor: client."""
    c = st.dir.clients.get(ev["client"])
    if c is None or c.status not in ("paused", "running"):
        out.report("INV-CLIENT-1", f"client {ev['client']!r} resumed but was not paused", None)
        return
    c.status = "running"


def allocation_computed(st, ev, out):
    """RocketMQ: RebalanceImpl.rebalanceByTopic + AllocateMessageQueueStrategy.
    Actor: client."""
    c = _client(st, ev, out)
    if ev.get("ok") is False:
        return
    group, topic, cid = ev["group"], ev["topic"], ev["client"]
    vkey = (group, topic, ev["view"])
    mqs = tuple(tuple(m) for m in ev["mqs"])
    cids = tuple(ev["cids"])
    alloc = frozenset(tuple(m) for m in ev["allocated"])
    v = st.views.get(vkey)
    if v is None:
        if len(st.views) > 20000:
            st.views.pop(next(iter(st.views)))
        v = st.views[vkey] = View(mqs, cids, ev["strategy"])
        if not is_sorted_view(mqs, cids):
            out.report("INV-OWNER-1", "the view given to the strategy is not sorted (MessageQueue.compareTo, "
                       "client ids by String order)", vkey)
    elif v.mqs != mqs or v.cids != cids:
        out.report("INV-OWNER-1", f"view digest {ev['view']} names two different views", vkey)
    mqset = set(mqs)
    if not alloc <= mqset:
        out.report("INV-ALLOC-1", f"allocated queues not in the view: {sorted(alloc - mqset)}", vkey)
    if cid not in cids and alloc:
        out.report("INV-ALLOC-1", f"client {cid} is not in the view's cids but got {len(alloc)} queues", vkey)
    if c is not None and not c.broadcast:
        exp = expected_allocation(ev["strategy"], list(mqs), list(cids), cid)
        if exp is not None and frozenset(exp) != alloc:
            out.report("INV-ALLOC-1", f"{ev['strategy']} gives {cid} {sorted(exp)}, trace says {sorted(alloc)}", vkey)
        prev = v.alloc.get(cid)
        if prev is not None and prev != alloc:
            out.report("INV-OWNER-1", f"{cid} computed two different allocations from one view", vkey)
        for mq in sorted(alloc):     # sorted: the same report whatever the hash seed
            owner = v.owner.get(mq)
            if owner is not None and owner != cid:
                out.report("INV-OWNER-1", f"queue {list(mq)} allocated to both {owner} and {cid} from one view", vkey)
            v.owner[mq] = cid
        v.alloc[cid] = alloc
        if ev["strategy"] in TOTAL_STRATEGIES and set(v.alloc) >= set(cids) and len(v.owner) != len(mqset):
            missing = sorted(mqset - set(v.owner))
            twice = sorted({x for x in cids if cids.count(x) > 1})
            cause = (f"; cause: the view names {', '.join(twice)} more than once, and each member takes its first "
                     "index: the broker lists one client id per channel (ConsumerGroupInfo.getAllClientId), and a "
                     "heartbeat handled after its channel's close event registers the closed channel again "
                     "(updateChannel checks no liveness), listed until the 120 s expiry scan" if twice else "")
            out.report("INV-OWNER-1", f"every client of the view reported and queues {missing} have no owner{cause}",
                       vkey)
    old = st.dir.alloc.get((cid, topic))
    if old is not None and old != alloc:
        st.dir.alloc_prev[(cid, topic)] = old
    st.dir.alloc[(cid, topic)] = alloc
    # its store reads of newly allocated queues are issued after this: older table values are
    # no longer answers
    queues = st.queues
    for key in st.dir.queue_keys.get((group, topic), ()):
        if queues[key].held:
            queues[key].held.pop(cid, None)


def _stale_grant(st, qs, cid, ts) -> str:
    """The cause of an orderly ProcessQueue created without the broker lock, when the client was
    paused after the broker granted it: RebalanceImpl.updateProcessQueueTableInRebalance locks,
    then creates the ProcessQueue, and a pause between the two outlives the lock."""
    granted = qs.granted.get(cid)
    pauses = _pauses_between(st, cid, granted, ts) if granted is not None else []
    if not pauses:
        return ""
    t, d = pauses[-1]
    lim, b = limits.client(st, cid), limits.broker(st, qs.key[2])
    return (f"; cause: the broker granted {cid} the lock at ts {granted}, then {cid} was paused at ts {t} for {d} "
            f"ms (client lease {lim.lease_ms} ms, broker lock {b.lock_max_live_ms} ms): the lock expired and "
            f"{qs.holder} took it over meanwhile, and the rebalance, resumed, created the ProcessQueue on that "
            f"stale grant")


def _own_unlock_after_grant(qs, cid) -> str:
    """The cause of an orderly ProcessQueue created without the broker lock when the client's own
    unlock took away the grant it was created on. removeProcessQueue takes the old ProcessQueue out
    of the table first and unlocks it one-way after (RebalancePushImpl.tryRemoveOrderMessageQueue,
    after waiting up to 500 ms for its consume lock); the rebalance it triggers finds the queue free,
    locks it and creates the new ProcessQueue as locked. Only a removed ProcessQueue (or a shutdown)
    unlocks, and the new one cannot be created without a grant, so an unlock by this client after
    its last grant is the old one's, handled after the new one's lock: sent later, or handled later
    (the broker runs lockBatch and unlockBatch on the admin executor's threads, 16 by default)."""
    r, granted, old = qs.released, qs.granted.get(cid), qs.pqs.get(cid)
    if r is None or r.client != cid or granted is None or granted > r.ts or old is None or old.live:
        return ""
    return (f"; cause: {cid}'s own unlock released the queue at ts {r.ts}, after the broker granted {cid} the "
            f"lock at ts {granted}: removing its previous ProcessQueue (removeProcessQueue: out of the table, then a "
            f"one-way unlock in RebalancePushImpl.tryRemoveOrderMessageQueue) raced the rebalance that locked the "
            f"queue again and created this one as locked, and the broker handled the old unlock after the new lock; "
            f"the queue has no broker lock until {cid}'s next lockAll")


def _listed_under_lock(qs, cid, ev) -> bool:
    """A ProcessQueue seen by polling (announced at its first pull, maybe long after a pause)
    that the client's lockAll had already named while the client held the live broker lock: it
    was in the table by then, created under that lock, and not since replaced."""
    listed = qs.listed.get(cid)
    if ev.get("obs") != "sampled" or listed is None:
        return False
    old = qs.pqs.get(cid)
    return old is None or (old.removed_ts is not None and old.removed_ts < listed)


def pq_created(st, ev, out):
    """RocketMQ: updateProcessQueueTableInRebalance (add) + computePullFromWhere.
    Actor: client."""
    qs = _q(st, ev)
    key = qs.key
    c = _client(st, ev, out, key)
    cid, topic, off, ts = ev["client"], ev["topic"], ev["offset"], ev["ts"]
    if topic.startswith(DLQ_PREFIX):
        out.report("INV-DLQ-1", f"a ProcessQueue was created for the DLQ topic {topic}", key)
    broadcast = c is not None and c.broadcast
    orderly = c is not None and c.orderly
    if c is not None and not broadcast:
        alloc = st.dir.alloc.get((cid, topic))
        mq = (topic, ev["broker"], ev["queue"])
        # Seen by polling, announced at its first pull: the rebalance that created it
        # (updateProcessQueueTableInRebalance) hands that pull to the pull thread, which may run
        # it after the next rebalance computed an allocation without the queue and before that
        # rebalance removes the ProcessQueue
        earlier = st.dir.alloc_prev.get((cid, topic), ()) if ev.get("obs") == "sampled" else ()
        if alloc is not None and mq not in alloc and mq not in earlier:
            out.report("INV-ALLOC-2", f"{cid} created a ProcessQueue for {list(mq)} outside its allocation", key)
        if orderly and ev["broker"] in st.dir.brokers:
            # (seen by polling: created when it was first possible to see, maybe under a lock of
            # this client's that has expired since, e.g. across a pause)
            if not holds_lock(qs, cid, ts) and not (ev.get("obs") == "sampled" and qs.holder == cid) \
                    and not _listed_under_lock(qs, cid, ev):
                out.report("INV-OWNER-2", f"orderly {cid} created a ProcessQueue without holding the broker lock "
                           f"(holder {qs.holder}, expires_at {qs.lock_exp})"
                           f"{_stale_grant(st, qs, cid, ts) or _own_unlock_after_grant(qs, cid)}", key)
    old = qs.pqs.get(cid)
    if old is not None and old.live:
        out.report("INV-PQ-1", f"{cid} already has a live ProcessQueue for the queue (status {old.status})", key)
    # INV-START-1: the first pull offset is computePullFromWhere of the store read.
    read, end_at_read = qs.reads.pop(cid, (None, None))
    sq = st.stored.get((topic, ev["broker"], ev["queue"]))
    committed = _committed_for(st, qs, c)
    reported = False
    if off < 0 and orderly and ev.get("obs") == "sampled":
        pass        # seen after its first pull's re-read set the PullRequest's offset: pull_issued judges it
    elif off < 0:
        out.report("INV-START-1", f"ProcessQueue starts at negative offset {off}", key)
        reported = True
    elif read is not None:
        exact, lo, hi = _pull_from_where(st, qs, c, read, sq, end_at_read)
        if lo is not None and read == -1 and _end_at_start(st, c, key) is not None:
            lo, exact = min(lo, _end_at_start(st, c, key)), None    # #9281's fix: the end when start() returned
        if lo is None:
            out.report("INV-START-1", f"store read failed ({read}) but a ProcessQueue was created at {off}", key)
            reported = True
        elif (exact is not None and off != exact) or (exact is None and not lo <= off <= hi):
            want = exact if exact is not None else f"[{lo}, {hi}]"
            # a sampled start while a ProcessQueue a reset left out of the table still pulls the
            # queue (#2449): the poller may have taken that PullRequest's offset for the new one's
            stray = reset_stray_cause(qs, cid) if ev.get("obs") == "sampled" else ""
            out.report("INV-START-1", f"ProcessQueue starts at {off}; computePullFromWhere({read}) with "
                       f"{c.from_where if c else '?'} gives {want}{stray}", key)
            reported = True
    elif committed is not None and off != committed:
        out.report("INV-START-1", f"ProcessQueue starts at {off} but the committed offset is {committed}", key)
        reported = True
    # effect
    if old is not None and old.batches:
        for k, v in old.batches.items():
            qs.orphans[(cid, k)] = v
    if old is not None:
        keep_due_sendbacks(qs, old)
    gen = (old.gen + 1) if old is not None else 1
    pq = PQ(cid, gen, off, ts, orderly, broadcast, topic.startswith(RETRY_PREFIX))
    if orderly and not broadcast:
        locked = ev.get("locked")
        if locked is None:
            locked = st.profile.pq_locked_on_create
        pq.locked = bool(locked)
        pq.last_lock_ts = ts
    pq.sampled = ev.get("obs") == "sampled"
    if st.profile.offset_entry_on_create and off >= 0:
        pq.pending_upd.append(off)      # #10955's fix: the rebalance writes the start offset in the table
    qs.pqs[cid] = pq
    if old is None and qs.reset_drops.get(cid, ts + 1) <= ts:
        # the reset's update of a queue added during its wait (offsets._added_in_reset_wait) is
        # past: this ProcessQueue is the next rebalance's
        del qs.reset_drops[cid]
    unit = cid if broadcast else ""
    p = qs.units.get(unit)
    if p is None:
        # messages below minOffset were deleted by retention: not expected any more; a start past
        # the queue's end (an operator's write past it) skips nothing stored later: the pull is
        # answered OFFSET_ILLEGAL and the offset corrected (as _skip_to caps a skip; an empty queue:
        # _end)
        qs.units[unit] = Progress(min(max(off, sq.min), sq.next) if sq is not None else min(off, 0))
        if committed is None and read in (-1, None) and off > 0:
            _skipped_after_start(st, qs, c, off, sq, out)
    elif off > p.wm and qs.reset_ahead is not None and off <= qs.reset_ahead and not broadcast:
        n = _skip_to(p, off, sq)
        if n:
            out.report("ANOM-RESET-SKIP", f"the group's offset was reset to {qs.reset_ahead}, past the queue's end: "
                       f"{n} messages stored meanwhile are skipped", key)
    elif off > p.wm:
        hi = min(off, sq.next if sq else off)
        gap = p.unhandled_first(p.wm, hi)
        if gap:
            n = p.unhandled_count(p.wm, hi)
            if committed is None and read in (-1, None):
                # (no read seen: a store with no entry answers -1)
                out.report("INV-LOSS-1", f"new ProcessQueue of {cid} starts at {off} (no committed offset: "
                           f"computePullFromWhere of -1); {n} messages {'it' if broadcast else 'the group'} has not consumed are skipped, "
                           f"first {gap}; cause: {_unpersisted_cause(st, qs, cid, p)}", key)
            elif not reported:
                out.report("INV-START-1", f"ProcessQueue of {cid} starts at {off}, skipping {n} unconsumed offsets, "
                           f"first {gap}", key)
        p.skip_to(off, hi)
    elif off < p.start:
        p.start = off


def _end_at_start(st, c, key):
    """Under #9281's fix (profile last_offset_at_start), the queue's end when c's start() returned,
    where its first start at CONSUME_FROM_LAST_OFFSET with no offset may begin; else None."""
    if not st.profile.last_offset_at_start or c is None or c.returned_ends is None \
            or c.from_where != LAST_OFFSET or key[1].startswith(RETRY_PREFIX):
        return None
    return c.returned_ends.get((key[1], key[2], key[3]), 0)


def _skipped_after_start(st, qs, c, off, sq, out):
    """A unit's first start at LAST with no offset (the store read gave -1) starts at maxOffset as
    the first rebalance reads it (RebalancePushImpl.computePullFromWhereWithException), and start()
    only wakes that rebalance: what was stored after start() returned and before the read is
    skipped (INV-LOSS-1; apache/rocketmq#9281, open). What was stored before start() returned is
    skipped by design. Judged only with the client's start-returned mark (schema v4)."""
    key = qs.key
    topic = key[1]
    if c is None or c.from_where != LAST_OFFSET or topic.startswith(RETRY_PREFIX) or sq is None:
        return
    if c.returned_ends is None:
        if not st.dir.marks:
            out.part_not_judged("INV-LOSS-1", PART_9281, NO_MARK, c.cid)
        # else the first rebalance ran before the mark was written: what it read was stored before
        # the mark, so nothing is certainly stored after start() returned and below the start
        return
    lo = max(c.returned_ends.get((topic, key[2], key[3]), 0), sq.min)
    hi = min(off, sq.next)
    if hi <= lo:
        return
    s = c.subs.get(topic)
    sub = subscription(s.get("type"), s.get("expr")) if isinstance(s, dict) else None
    lost = []
    for o in range(lo, hi):
        m = sq.msgs.get(o)
        # only a message the subscription certainly wants (a filtered one is not owed)
        if m is not None and decide(sub, m[M_TAGS], m[M_CODE], m[M_PROPS]) == (True, True):
            lost.append(o)
    if not lost:
        return
    if st.profile.last_offset_at_start:
        cause = (f"{c.cid} read the queue's end after its start() returned, where this profile's client takes "
                 f"it when start() returns: a loss")
    else:
        cause = (f"the first rebalance, which start() only wakes (MQClientInstance.rebalanceImmediately), read "
                 f"maxOffset {off} after start() returned (RebalancePushImpl.computePullFromWhereWithException; "
                 f"apache/rocketmq#9281, open; {ref('A-LAST-FIRST-REBALANCE')})")
    out.report("INV-LOSS-1", f"new ProcessQueue of {c.cid} starts at {off} (first start at CONSUME_FROM_LAST_OFFSET, "
               f"no offset: the store read gave -1); {len(lost)} messages stored after {c.cid}'s start() returned "
               f"are skipped, first {lost[:8]}; cause: {cause}", key)


def _unpersisted_cause(st, qs, cid, unit):
    """Why a unit that started on a queue before has no committed offset for it."""
    c = st.dir.clients.get(cid)
    if c is not None and c.broadcast:
        if not unit.had_offset:
            return (f"{cid} stopped or crashed before its offset table had an entry for the queue (no batch "
                    f"consumed, no pull answered): its offsets file has none, and its restart reads -1, a first "
                    f"start to computePullFromWhere (apache/rocketmq#10955, open; {ref('A-OFFSET-ENTRY')})")
        return (f"{cid} crashed before its offsets file got the queue's offset (LocalFileOffsetStore.persistAll "
                f"runs every {limits.client(st, cid).persist_interval_ms} ms from 10 s after the client started "
                f"(MQClientInstance's schedule), and at shutdown)")
    if qs.lost_entry is not None:
        return (f"the broker's offset table lost the queue's committed offset {qs.lost_entry} (offset_erased: "
                f"ConsumerOffsetManager.commitOffset's get-then-put race replaced the topic@group's map)")
    d = st.dir
    prev = [c for c in qs.pqs if c != cid] or [c for c in qs.stores if c != cid]
    parts = []
    for c in prev:
        cl = d.clients.get(c)
        st_ = cl.status if cl is not None else "unknown"
        parts.append(f"{c} ({st_})")
    who = ", ".join(parts) if parts else "the previous owner"
    if not unit.had_offset:
        return (f"{who} held the queue but its offset table never had an entry for it (no batch consumed, no "
                f"pull answered), so no offset reached the broker (apache/rocketmq#10955, open; {ref('A-OFFSET-ENTRY')})")
    return (f"{who} consumed the queue but no offset reached the broker (a crash or lost persist before the "
            f"first persist; persist interval {limits.client(st, prev[0] if prev else cid).persist_interval_ms} ms)")


def pq_dropped(st, ev, out):
    """RocketMQ: ProcessQueue.setDropped(true).
    Actor: client."""
    qs = _q(st, ev)
    pq = qs.pqs.get(ev["client"])
    _settle(st, qs, pq, out)
    if pq is None:
        out.report("INV-PQ-1", f"{ev['client']} drops a ProcessQueue it does not have", qs.key)
        return
    if (pq.status, "pq_dropped") not in PQ_TABLE and not (pq.sampled and pq.status == "dropped"):
        out.report("INV-PQ-1", f"ProcessQueue dropped in state {pq.status}", qs.key)
    pq.status = "dropped"
    if ev.get("reason") == "reset":
        # MQClientInstance.resetOffset: the client sets the operator's offset next (updateOffset
        # with increaseOnly false), once it has slept 10 s, and persists it as it removes the
        # ProcessQueue (the first reset's wait, if two overlap: #2449)
        qs.reset_drops.setdefault(ev["client"], ev["ts"] + st.profile.reset_offset_wait_ms)


def pq_removed(st, ev, out):
    """RocketMQ: removeUnnecessaryMessageQueue.
    Actor: client."""
    qs = _q(st, ev)
    pq = qs.pqs.get(ev["client"])
    _settle(st, qs, pq, out)
    if pq is None:
        out.report("INV-PQ-1", f"{ev['client']} removes a ProcessQueue it does not have", qs.key)
        return
    if pq.sampled:
        # seen leaving the table by polling: a pull or listener call of it that passed its
        # dropped check before may still show; it stays known (dropped) until replaced
        pq.status = "dropped"
        pq.removed_ts = ev["ts"]
        if pq.client in qs.busy and _removed_under_consume_lock(st, qs, pq, ev["ts"]):
            # the batch begun before is no call: its ConsumeRequest broke on the dropped flag
            # after the before-hook (no consume_finished)
            del qs.busy[pq.client]
        return
    if (pq.status, "pq_removed") not in PQ_TABLE:
        out.report("INV-PQ-1", f"ProcessQueue removed in state {pq.status} (must be dropped first)", qs.key)
    for k, v in pq.batches.items():
        qs.orphans[(pq.client, k)] = v     # ConsumeRequests still hold the removed ProcessQueue
    keep_due_sendbacks(qs, pq)
    del qs.pqs[ev["client"]]
    qs.reset_drops.pop(ev["client"], None)


def oneway_lost(st, ev, out):
    """RocketMQ: network loss of a one-way call.
    Actor: network."""
    pass


def check_quiescent(st, out):
    """INV-LIVE-1 at trace_ended{reason: quiescent or horizon}: nothing is owed (spec.pending).
    A pull still on its way or held (long polling) at an operator's offset written past the end,
    once the queue has grown that far, gets no OFFSET_ILLEGAL correction (getMessage answers
    OFFSET_OVERFLOW_ONE or FOUND there): what was stored below the write is the operator's skip,
    as at an answer (_reset_reached). A run can end so: 5.x's first pull comes 500 ms after the
    queue is taken, and a message stored meanwhile stops the correction that 4.9.8's immediate
    pull of the empty queue gets. Judged from the end state, so the order of the hold and the
    client's consumption in one millisecond does not matter (tests/test_reduction.py)."""
    for qs in st.queues.values():
        for pq in qs.pqs.values():
            _settle(st, qs, pq, out)
            if pq.pull_id is not None and pq.status != "dropped" and qs.reset_ahead is not None:
                sq = st.stored.get(qs.key[1:])
                if _end(sq) >= pq.next_pull:
                    _reset_reached(qs, pq, pq.next_pull, sq, out)
    for key, unit, p, sq in unconsumed(st):
        if p is None:
            out.report("INV-LIVE-1", f"{sq.next - sq.min} stored messages and group {key[0]}"
                       f"{' client ' + unit if unit else ''} never consumed the queue", key)
        else:
            left = p.unhandled_first(p.wm, sq.next)
            out.report("INV-LIVE-1", f"quiescent but offsets {left} were never consumed"
                       f"{' by ' + unit if unit else ''} (handled below {p.wm}, max {sq.next})", key)
    reported = set()
    for ckey, state in retries_in_flight(st):
        if ckey not in reported:
            reported.add(ckey)
            out.report("INV-LIVE-1", f"retry copy of {ckey[1]} still {state} at quiescence", ckey)
    check_pop_end(st, out)
