"""The spec's actions: one per trace event kind, named after the RocketMQ mechanism it models.

Each action is a function ``act(st, ev, out)``:

- the **guard** part (first) checks that the step is allowed in state ``st``; every failed check
  is reported with ``out.report(inv_id, message, key)`` naming the invariant it protects (see
  ``spec.invariants``);
- the **effect** part then updates ``st`` in place.

An action keeps going after a failed check (a recorded trace is what happened; the replay
follows it to report every violation, not just the first). ``spec.step``/``spec.guard``/
``spec.apply`` (in ``spec/__init__.py``) wrap these functions for the model checker, which wants
a non-mutating guard and a successor state.

The state-predicate invariants (``spec.invariants`` form "state") are evaluated on the key an
action touched, inside the action, right after its effect.
"""
from __future__ import annotations


from ..allocation_rules import TOTAL_STRATEGIES, expected_allocation, is_sorted_view
from ..tag_rules import client_keeps
from ..filtering import DLQ_PREFIX, RETRY_PREFIX, decide, subscription
from .. import limits
from ..pending import retries_in_flight, unconsumed
from ..kinds import KINDS, MECHANISMS  # noqa: F401 (MECHANISMS: re-exported)
from ..lifecycles import MSG_TABLE, PQ_TABLE
from ..state import M_CODE, M_ID, M_PROPS, M_R, M_TAGS, PQ, Chain, Client, Progress, StoredQueue, View
from .common import _q, _client, _group_client, _end, _skip_to, _duplicate
from .locks import (lock_live, holds_lock, lock_requested, lock_acquired, lock_rejected, lock_released,
                    lock_release_ignored, lock_expired, pq_lock_changed, lease_expired, lock_noop)
from .consume import (consume_started, consume_finished, consume_resubmitted, consume_suspended,
                      pq_messages_removed, messages_taken, pq_committed, _settle, pq_rolled_back)
from .offsets import (_committed_for, _set_committed, _pull_from_where, offset_updated, offset_read,
                      offset_removed, offset_persisted, offset_committed, offset_flushed, offset_erased,
                      offset_loaded)


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


QUIESCENT = "quiescent"     # the trace_ended reason after which nothing may be pending
# a run its recorder stopped at a horizon it declares long enough to settle, with nothing left
# waiting on the clock (the explorer: the scope's horizon_ms): judged as a quiescent end
HORIZON = "horizon"
JUDGED_ENDS = (QUIESCENT, HORIZON)


def trace_ended(st, ev, out):
    """RocketMQ: end of run (quiescence check).
    Actor: recorder."""
    st.ended = ev["reason"]
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
                qs.orphans = {k: v for k, v in qs.orphans.items() if k[0] != cid}
        # Nor has it sent anything back: a copy the old one sent back and never committed is
        # consumed again, and a second failure is a second copy (INV-RETRY-3 counts per consumer,
        # as for two clients across a rebalance).
        for ch in st.chains.values():
            if ch.accepted:
                ch.accepted = {k for k in ch.accepted if k[0] != cid}
    c = Client(cid, ev["group"], ev["consume_mode"], ev["message_model"], ev.get("subscriptions"), ev.get("config"))
    c.limits = limits.ClientLimits(st.profile, c.config)
    d.clients[cid] = c
    g = d.groups.setdefault(ev["group"], {"mode": c.mode, "model": c.model, "clients": set()})
    g["clients"].add(cid)


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
            out.report("INV-OWNER-1", f"every client of the view reported and queues {missing} have no owner", vkey)
    st.dir.alloc[(cid, topic)] = alloc
    # its store reads of newly allocated queues are issued after this: older table values are
    # no longer answers
    queues = st.queues
    for key in st.dir.queue_keys.get((group, topic), ()):
        if queues[key].held:
            queues[key].held.pop(cid, None)


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
        if alloc is not None and mq not in alloc:
            out.report("INV-ALLOC-2", f"{cid} created a ProcessQueue for {list(mq)} outside its allocation", key)
        if orderly and ev["broker"] in st.dir.brokers:
            if not holds_lock(qs, cid, ts):
                out.report("INV-OWNER-2", f"orderly {cid} created a ProcessQueue without holding the broker lock "
                           f"(holder {qs.holder}, expires_at {qs.lock_exp})", key)
    old = qs.pqs.get(cid)
    if old is not None and old.live:
        out.report("INV-PQ-1", f"{cid} already has a live ProcessQueue for the queue (status {old.status})", key)
    # INV-START-1: the first pull offset is computePullFromWhere of the store read.
    read = qs.reads.pop(cid, None)
    sq = st.stored.get((topic, ev["broker"], ev["queue"]))
    committed = _committed_for(st, qs, c)
    reported = False
    if off < 0:
        out.report("INV-START-1", f"ProcessQueue starts at negative offset {off}", key)
        reported = True
    elif read is not None:
        exact, lo, hi = _pull_from_where(st, qs, c, read, sq)
        if lo is None:
            out.report("INV-START-1", f"store read failed ({read}) but a ProcessQueue was created at {off}", key)
            reported = True
        elif (exact is not None and off != exact) or (exact is None and not lo <= off <= hi):
            want = exact if exact is not None else f"[{lo}, {hi}]"
            out.report("INV-START-1", f"ProcessQueue starts at {off}; computePullFromWhere({read}) with "
                       f"{c.from_where if c else '?'} gives {want}", key)
            reported = True
    elif committed is not None and off != committed:
        out.report("INV-START-1", f"ProcessQueue starts at {off} but the committed offset is {committed}", key)
        reported = True
    # effect
    if old is not None and old.batches:
        for k, v in old.batches.items():
            qs.orphans[(cid, k)] = v
    gen = (old.gen + 1) if old is not None else 1
    pq = PQ(cid, gen, off, ts, orderly, broadcast, topic.startswith(RETRY_PREFIX))
    if orderly and not broadcast:
        locked = ev.get("locked")
        if locked is None:
            locked = st.profile.pq_locked_on_create
        pq.locked = bool(locked)
        pq.last_lock_ts = ts
    pq.sampled = ev.get("obs") == "sampled"
    qs.pqs[cid] = pq
    unit = cid if broadcast else ""
    p = qs.units.get(unit)
    if p is None:
        # messages below minOffset were deleted by retention: not expected any more; a start past
        # the queue's end (an operator's write past it) skips nothing stored later: the pull is
        # answered OFFSET_ILLEGAL and the offset corrected (as _skip_to caps a skip; an empty queue:
        # _end)
        qs.units[unit] = Progress(min(max(off, sq.min), sq.next) if sq is not None else min(off, 0))
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
            if read == -1 and committed is None:
                out.report("INV-LOSS-1", f"new ProcessQueue of {cid} starts at {off} (no committed offset: "
                           f"computePullFromWhere of -1); {n} messages {'it' if broadcast else 'the group'} has not consumed are skipped, "
                           f"first {gap}; cause: {_unpersisted_cause(st, qs, cid, p)}", key)
            elif not reported:
                out.report("INV-START-1", f"ProcessQueue of {cid} starts at {off}, skipping {n} unconsumed offsets, "
                           f"first {gap}", key)
        p.skip_to(off, hi)
    elif off < p.start:
        p.start = off


def _unpersisted_cause(st, qs, cid, unit):
    """Why a unit that started on a queue before has no committed offset for it."""
    c = st.dir.clients.get(cid)
    if c is not None and c.broadcast:
        if not unit.had_offset:
            return (f"{cid} stopped or crashed before its offset table had an entry for the queue (no batch "
                    f"consumed, no pull answered): its offsets file has none, and its restart reads -1, a first "
                    f"start to computePullFromWhere (A-OFFSET-ENTRY)")
        return (f"{cid} crashed before its offsets file got the queue's offset (LocalFileOffsetStore.persistAll "
                f"runs every {limits.client(st, cid).persist_interval_ms} ms and at shutdown)")
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
                f"pull answered), so no offset reached the broker (A-OFFSET-ENTRY)")
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
        return
    if (pq.status, "pq_removed") not in PQ_TABLE:
        out.report("INV-PQ-1", f"ProcessQueue removed in state {pq.status} (must be dropped first)", qs.key)
    for k, v in pq.batches.items():
        qs.orphans[(pq.client, k)] = v     # ConsumeRequests still hold the removed ProcessQueue
    del qs.pqs[ev["client"]]
    qs.reset_drops.pop(ev["client"], None)


def pull_issued(st, ev, out):
    """RocketMQ: DefaultMQPushConsumerImpl.pullMessage.
    Actor: client."""
    qs = _q(st, ev)
    key = qs.key
    cid = ev["client"]
    c = st.dir.clients.get(cid)
    if c is None or c.status != "running":
        _client(st, ev, out, key)
    pq = qs.pqs.get(cid)
    off = ev["offset"]
    if ev["topic"].startswith(DLQ_PREFIX):
        out.report("INV-DLQ-1", "a pull from the DLQ topic", key)
    if pq is None:
        out.report("INV-PQ-1", f"{cid} pulls a queue it has no ProcessQueue for", key)
        return
    if pq.status == "dropped" and not pq.sampled:
        out.report("INV-DROP-1", f"{cid} pulls from a dropped ProcessQueue", key)
    if pq.pull_id is not None:
        out.report("INV-PULL-1", f"second pull {ev['pull_id']} while pull {pq.pull_id} is in flight", key)
    if off < 0:
        out.report("INV-START-1", f"pull at negative offset {off}", key)
    elif off != pq.next_pull and off != pq.alt_pull:
        out.report("INV-PULL-1", f"pull at offset {off}, the ProcessQueue's next offset is {pq.next_pull}", key)
    co = ev.get("commit_offset")
    if co is not None and co >= 0:
        s = qs.stores.get(cid)
        if s is not None and (key, cid) in st.sampled_stores:
            s[0] = max(s[0], co)
        elif s is not None and s[0] != co:
            out.report("INV-OFFSET-1", f"pull piggybacks commit offset {co}, the client store holds {s[0]}", key)
        qs.pull_commit[cid] = co
    if pq.status == "created":
        pq.status = "active"
    pq.pull_id = ev["pull_id"]
    pq.next_pull = off
    pq.alt_pull = None
    pq.pulls += 1
    qs.held.pop(cid, None)      # no store read of this client follows until its next allocation


def pull_held(st, ev, out):
    """RocketMQ: PullRequestHoldService (long polling).
    Actor: broker."""
    pass


def _reset_reached(qs, pq, req, sq, out) -> None:
    """A pull at an operator's offset past the end (qs.reset_ahead) that found the queue grown
    that far: no OFFSET_ILLEGAL correction comes, and the messages stored meanwhile below it are
    skipped, by the operator's write (ANOM-RESET-SKIP)."""
    if pq.broadcast or qs.reset_ahead is None or req != qs.reset_ahead:
        return
    unit = qs.units.get("")
    n = _skip_to(unit, req, sq) if unit is not None else 0
    if n:
        out.report("ANOM-RESET-SKIP", f"the group's offset was reset to {req}, past the queue's end: "
                   f"{n} messages stored meanwhile below it are skipped", qs.key)


_ILLEGAL = {"OFFSET_TOO_SMALL", "OFFSET_OVERFLOW_BADLY", "NO_MESSAGE_IN_QUEUE", "NO_MATCHED_LOGIC_QUEUE"}


def _correction_scheduled(qs, cid, next_offset) -> None:
    """An OFFSET_ILLEGAL answer schedules the client's correction (DefaultMQPushConsumerImpl:
    10 s later updateOffset(mq, nextBeginOffset, false), persist, removeProcessQueue). The task
    is the client's, not the ProcessQueue's: it runs even if the queue was removed meanwhile."""
    qs.illegal.setdefault(cid, []).append(next_offset)


def pull_answered(st, ev, out):
    """RocketMQ: DefaultMessageStore.getMessage + PullAPIWrapper.processPullResult + ProcessQueue.putMessage.
    Actor: broker."""
    qs = _q(st, ev)
    key = qs.key
    cid = ev["client"]
    pq = qs.pqs.get(cid)
    if pq is None or pq.pull_id != ev["pull_id"]:
        # the answer of a pull whose ProcessQueue is gone (removed, or replaced by a new one):
        # PullCallback.onSuccess still runs on the old PullRequest. Its messages go into the old
        # ProcessQueue, which nothing consumes, but an OFFSET_ILLEGAL answer still schedules the
        # correction, for a queue the client may no longer hold
        if ev["status"] == "OFFSET_ILLEGAL":
            _correction_scheduled(qs, cid, ev["next_offset"])
        return
    pq.pull_id = None
    offsets = ev.get("offsets") or ()
    if pq.status == "dropped":
        # PullCallback.onSuccess has no dropped check: FOUND messages are put into a dropped
        # ProcessQueue (nothing consumes them: ConsumeRequest checks dropped). Harmless. An
        # OFFSET_ILLEGAL answer still schedules its correction.
        for o in offsets:
            pq.put(o)
        if ev["status"] == "OFFSET_ILLEGAL":
            _correction_scheduled(qs, cid, ev["next_offset"])
        return
    req, nxt, gs, status = ev["offset"], ev["next_offset"], ev.get("get_status"), ev["status"]
    sq = st.stored.get((ev["topic"], ev["broker"], ev["queue"]))
    if sq is None and ev["broker"] not in st.dir.brokers:
        # the broker is not observed (yet): its store is unknown, its answer is taken as given
        pq.next_pull = nxt
        for o in offsets:
            pq.put(o)
        return
    smax = _end(sq)
    if req != pq.next_pull:
        out.report("INV-PULL-1", f"answer for offset {req}, the pull asked for {pq.next_pull}", key)
    mx = ev.get("max_offset")
    if mx is not None and mx > smax:
        out.report("INV-PULL-2", f"answer says maxOffset {mx}, only {smax} messages were stored", key)
    mn = ev.get("min_offset")
    if mn is not None and mn > (mx if mx is not None else smax):
        out.report("INV-PULL-2", f"answer says minOffset {mn} above maxOffset {mx if mx is not None else smax}", key)
    elif mn is not None and sq is not None and mn > sq.min:
        _retention(st, sq, key, mn, out)
    if status == "OFFSET_ILLEGAL":
        if mn is None:
            mn = sq.min if sq is not None else 0
        if gs is None:
            # a client-side recorder sees no GetMessageStatus: DefaultMessageStore.getMessage's
            # order of cases decides it from the request and the queue's bounds
            top = mx if mx is not None else smax
            gs = ("NO_MESSAGE_IN_QUEUE" if top == 0 else "OFFSET_TOO_SMALL" if req < mn else
                  "OFFSET_OVERFLOW_BADLY" if req > top else "NO_MATCHED_LOGIC_QUEUE")
        if gs == "OFFSET_TOO_SMALL":
            want = mn
        elif gs == "OFFSET_OVERFLOW_BADLY":
            want = mx if mx is not None else smax
        else:
            want = 0
        if nxt != want:
            out.report("INV-PULL-2", f"{gs} at offset {req}: nextBeginOffset must be {want} "
                       f"(min {mn}, max {mx if mx is not None else smax}), answer gives {nxt}", key)
        elif qs.reset_ahead is not None and gs == "OFFSET_OVERFLOW_BADLY":
            unit = qs.units.get(pq.client if pq.broadcast else "")
            n = _skip_to(unit, nxt, sq) if unit is not None else 0
            if n:
                out.report("ANOM-RESET-SKIP", f"the reset past the end is corrected to maxOffset {nxt}: {n} messages "
                           f"stored meanwhile are skipped", key)
            # reset_ahead stays until a commit replaces the reset: the correction below is the
            # client's, 10 s later, and a crash before it leaves the broker at the reset's offset
        pq.next_pull = nxt
        # DefaultMQPushConsumerImpl (OFFSET_ILLEGAL): drop the ProcessQueue, and the correction
        _correction_scheduled(qs, pq.client, nxt)
        return
    if nxt < req:
        out.report("INV-PULL-2", f"nextBeginOffset {nxt} goes back from the request offset {req}", key)
    unit = qs.units.get(pq.client if pq.broadcast else "")
    _reset_reached(qs, pq, req, sq, out)
    bf = ev.get("broker_filtered") or ()
    cf = ev.get("client_filtered") or ()
    implied = ()
    if offsets or bf or cf or nxt > req:
        implied = _check_answer(st, qs, pq, ev, sq, offsets, bf, cf, req, nxt, out)
    if offsets:
        put = pq.put
        for o in offsets:
            put(o)
    if unit is not None:
        for o in bf:
            unit.handle(o)
        for o in cf:
            unit.handle(o)
        for o in implied:
            unit.handle(o)
    pq.next_pull = nxt
    if status != "FOUND" and not pq.tree and not pq.consuming:
        pq.pending_upd.append(nxt)    # correctTagsOffset (msgCount == 0)


def _retention(st, sq, key, mn, out):
    """The broker's minOffset moved up: messages below it were deleted by retention. Units that
    had not consumed them lose them (ANOM-RETENTION), and nothing below is expected any more."""
    sq.min = mn
    tkey = (key[1], key[2], key[3])
    for k, qs in st.queues.items():
        if (k[1], k[2], k[3]) != tkey:
            continue
        for u, p in qs.units.items():
            lost = p.skip_to(mn, sq.next)     # only stored messages can be lost
            if lost:
                out.report("ANOM-RETENTION", f"{lost} messages below minOffset {mn} were deleted before "
                           f"{'client ' + u if u else 'group ' + k[0]} consumed them", k)
    for o in [o for o in sq.msgs if o < mn]:
        del sq.msgs[o]


def _check_answer(st, qs, pq, ev, sq, offsets, bf, cf, req, nxt, out):
    key = qs.key
    msgs = sq.msgs if sq is not None else {}
    smax = _end(sq)
    prev = req - 1
    for o in offsets:
        if o <= prev:
            out.report("INV-PULL-2", f"answer offsets not ascending/unique or before the request: {list(offsets)[:8]}", key)
            break
        prev = o
    if offsets and (offsets[-1] >= nxt or offsets[-1] >= smax):
        out.report("INV-PULL-2", f"answer lists offset {offsets[-1]} beyond nextBeginOffset {nxt} or never stored "
                   f"(max {smax})", key)
    ids = ev.get("msg_ids")
    if ids is not None:
        for o, mid in zip(offsets, ids):
            m = msgs.get(o)
            if m is not None and m[M_ID] != mid:
                out.report("INV-PULL-2", f"offset {o} is {m[M_ID]} in the store, the answer says {mid}", key)
                break
    scanned = len(offsets) + len(bf) + len(cf)
    expect = max(0, min(nxt, smax) - req)
    implied = []
    if scanned != expect:
        # offsets the answer skipped without listing them: the broker filtered them (a recorder
        # on the client sees only what the broker returned). Allowed for messages the group's
        # subscription rejects at the broker (or unknown to the trace); a matching one skipped
        # is unfaithful. Walks the stored messages, not the offset range.
        acc = set(offsets) | set(bf) | set(cf)
        hi = min(nxt, smax)
        if hi - req <= 4 * len(msgs) + 64:
            cand = (o for o in range(req, hi) if o not in acc)
        else:
            cand = sorted(o for o in msgs if req <= o < hi and o not in acc)
        missing = []
        for o in cand:
            m = msgs.get(o)
            if m is None or _broker_rejects(st, pq, key[1], m) is not False:
                implied.append(o)
            elif len(missing) < 8:
                missing.append(o)
        if missing:
            out.report("INV-PULL-2", f"offsets {missing[:8]} in [{req}, {nxt}) neither returned nor filtered, and the "
                       f"group's subscription matches them at the broker", key)
    # INV-FILTER-1
    topic = key[1]
    if topic.startswith(RETRY_PREFIX):
        if bf or cf:
            out.report("INV-FILTER-1", "retry-topic subscription is '*': nothing may be filtered", key)
        return implied
    c = st.dir.clients.get(pq.client)
    s = c.subs.get(topic) if c is not None else None
    if s is None:
        return implied
    others = _other_subscriptions(st, c, topic, s)
    if others:
        _check_answer_inconsistent(qs, c, s, others, msgs, offsets, bf, cf, out)
        return implied
    sub = subscription(s.get("type"), s.get("expr"))
    if sub is None or (sub[0] == "TAG" and sub[1].every):
        if bf or cf:
            out.report("INV-FILTER-1", f"subscription '*' but offsets were filtered: {list(bf or cf)[:8]}", key)
        return implied
    for offs, wrong, what in _filter_judgements(offsets, bf, cf):
        for o in offs:
            m = msgs.get(o)
            if m is not None and wrong(*decide(sub, m[M_TAGS], m[M_CODE], m[M_PROPS])):
                out.report("INV-FILTER-1", f"offset {o} (tags {m[M_TAGS]!r}) "
                           + what.format(expr=repr(s.get("expr"))), key)
                break
    return implied


def _broker_rejects(st, pq, topic, m):
    """Whether the broker's filter rejects stored message m for pq's group: True (some
    subscription of the group rejects it: the broker filters with one of them), False (every
    one passes it), None (unknown: no subscription, SQL92 not evaluable)."""
    if topic.startswith(RETRY_PREFIX):
        return False
    c = st.dir.clients.get(pq.client)
    s = c.subs.get(topic) if c is not None else None
    if s is None:
        return None
    subs = [s] + [{"type": k[0], "expr": k[1]} for k in _other_subscriptions(st, c, topic, s)]
    seen_unknown = False
    for x in subs:
        b = decide(subscription(x.get("type"), x.get("expr")), m[M_TAGS], m[M_CODE], m[M_PROPS])[0]
        if b is False:
            return True
        if b is None:
            seen_unknown = True
    return None if seen_unknown else False


def _other_subscriptions(st, c, topic, own):
    """The subscriptions of `topic` by the group's other live consumers that differ from `own`:
    {(type, expr): client}. Empty when the group subscribes alike (the broker filters with the
    same subscription the client re-checks)."""
    g = st.dir.groups.get(c.group)
    if g is None or len(g["clients"]) < 2:
        return {}
    mine = (own.get("type") or "TAG", own.get("expr"))
    out = {}
    for cid in g["clients"]:
        o = st.dir.clients.get(cid)
        if o is None or o is c or o.status not in ("running", "paused"):
            continue
        s = o.subs.get(topic)
        if s is not None:
            k = (s.get("type") or "TAG", s.get("expr"))
            if k != mine:
                out.setdefault(k, cid)
    return out


def _check_answer_inconsistent(qs, c, own, others, msgs, offsets, bf, cf, out):
    """A pull answer for a group whose consumers subscribe the topic differently. The broker
    filters with one subscription per group and topic, the last heartbeat's
    (ConsumerGroupInfo.updateSubscription keeps the newest subVersion): any member's. The client
    re-checks tags with its own (PullAPIWrapper.processPullResult) and moves past what it drops.
    What one member wants and this pull drops is lost for the group: INV-SUB-1."""
    key = qs.key
    mine = subscription(own.get("type"), own.get("expr"))
    subs = [(own.get("expr"), mine)] + [(k[1], subscription(*k)) for k in others]

    def wants(sub, m):
        return decide(sub, m[M_TAGS], m[M_CODE], m[M_PROPS])[1]

    def broker_passes(sub, m):
        return decide(sub, m[M_TAGS], m[M_CODE], m[M_PROPS])[0]

    def rechecks(m):    # the client's own re-check: tags only, SQL92 and '*' keep everything
        return mine is None or mine[0] != "TAG" or client_keeps(mine[1], m[M_TAGS])

    lost_cf, lost_bf = [], []
    for o in offsets:
        m = msgs.get(o)
        if m is not None and (not rechecks(m) or not any(broker_passes(sb, m) is not False for _, sb in subs)):
            out.report("INV-FILTER-1", f"offset {o} (tags {m[M_TAGS]!r}) was handed to the ProcessQueue but neither "
                       f"{c.cid}'s re-check of {own.get('expr')!r} nor any subscription of the group passes it", key)
            break
    for o in cf:
        m = msgs.get(o)
        if m is None:
            continue
        if rechecks(m):
            out.report("INV-FILTER-1", f"offset {o} (tags {m[M_TAGS]!r}) wrongly dropped by the client's re-check of "
                       f"{own.get('expr')!r}", key)
            break
        wanted_by = [e for e, sb in subs[1:] if wants(sb, m)]
        if wanted_by:
            lost_cf.append((o, m[M_TAGS], wanted_by[0]))
    for o in bf:
        m = msgs.get(o)
        if m is None:
            continue
        if all(broker_passes(sb, m) is True for _, sb in subs):
            out.report("INV-FILTER-1", f"offset {o} (tags {m[M_TAGS]!r}) matches every subscription of the group at "
                       f"the broker but was filtered", key)
            break
        if wants(mine, m):
            lost_bf.append((o, m[M_TAGS]))
    who = ", ".join(f"{cid}: {k[1]!r}" for k, cid in others.items())
    if lost_cf:
        o, tags, want = lost_cf[0]
        out.report("INV-SUB-1", f"the group's consumers subscribe {key[1]} differently ({c.cid}: {own.get('expr')!r}; "
                   f"{who}): the broker kept the last heartbeat's subscription and passed {len(lost_cf)} messages "
                   f"that {c.cid}'s re-check drops, e.g. offset {o} (tags {tags!r}, subscribed by {want!r}); the "
                   f"queue is {c.cid}'s, so no consumer of the group gets them: lost", key)
    if lost_bf:
        o, tags = lost_bf[0]
        out.report("INV-SUB-1", f"the group's consumers subscribe {key[1]} differently ({c.cid}: {own.get('expr')!r}; "
                   f"{who}): the broker filtered with another member's subscription (the last heartbeat's) and "
                   f"dropped {len(lost_bf)} messages {c.cid} subscribes, e.g. offset {o} (tags {tags!r}): lost", key)


def _filter_judgements(offsets, bf, cf):
    """(offsets, wrong given (broker decision, client decision), what went wrong) for one answer."""
    return (
        (offsets, _handed_wrongly, "does not match {expr} but was handed to the ProcessQueue"),
        (bf, _broker_dropped_wrongly, "matches {expr} at the broker but was filtered"),
        (cf, _client_dropped_wrongly, "wrongly dropped by the client's re-check of {expr}"),
    )


def _handed_wrongly(b, cl):
    return b is False or cl is False


def _broker_dropped_wrongly(b, cl):
    return b is True


def _client_dropped_wrongly(b, cl):
    return b is False or cl is True


def messages_deleted(st, ev, out):
    """RocketMQ: commit-log retention (DefaultMessageStore clean expired files).
    Actor: broker."""
    tkey = (ev["topic"], ev["broker"], ev["queue"])
    sq = st.stored.get(tkey)
    if sq is None:
        sq = st.stored[tkey] = StoredQueue()
    mn = ev["min_offset"]
    if mn > sq.next:
        out.report("GUARD", f"retention to minOffset {mn} beyond maxOffset {sq.next}", tkey)
    if mn > sq.min:
        _retention(st, sq, (None,) + tkey, mn, out)


def pull_failed(st, ev, out):
    """RocketMQ: PullCallback.onException (broker error response or failed call).
    Actor: client.

    The broker rejected the pull (e.g. SUBSCRIPTION_NOT_LATEST) or the call failed: the
    PullCallback's onException ends it and re-queues the same PullRequest later, so the next
    pull asks for the same offset. Only a pull still in flight ends: a second pull while one is
    really in flight stays INV-PULL-1 (#2449)."""
    qs = _q(st, ev)
    pq = qs.pqs.get(ev["client"])
    if pq is None or pq.pull_id != ev["pull_id"]:
        return      # the ProcessQueue is gone or was replaced: nothing was in flight for it
    pq.pull_id = None
    if ev["reason"] not in ("rejected", "exception"):
        out.report("GUARD", f"pull_failed reason {ev['reason']!r}: expected rejected or exception", qs.key)


def queue_snapshot(st, ev, out):
    """RocketMQ: the queue's min/max offset when observation began (or after a gap).
    Actor: recorder.

    The queue holds [min_offset, max_offset) whose messages were not observed (observation
    began on a running broker, or a gap in observation). Below min_offset is retention; the
    next message_stored continues at max_offset."""
    tkey = (ev["topic"], ev["broker"], ev["queue"])
    sq = st.stored.get(tkey)
    if sq is None:
        sq = st.stored[tkey] = StoredQueue()
    mn, mx = ev["min_offset"], ev["max_offset"]
    if not 0 <= mn <= mx:
        out.report("GUARD", f"queue snapshot with min_offset {mn} and max_offset {mx}", tkey)
        return
    if mx < sq.next:
        out.report("GUARD", f"queue snapshot says max_offset {mx}, {sq.next} messages were stored already", tkey)
        return
    sq.next = mx
    if mn > sq.min:
        _retention(st, sq, (None,) + tkey, mn, out)


def pull_flow_controlled(st, ev, out):
    """RocketMQ: pullMessage flow control.
    Actor: client."""
    qs = _q(st, ev)
    _client(st, ev, out, qs.key)


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
        if pq is None:
            out.report("INV-RETRY-3", f"send-back of offset {off} from a queue {cid} has no ProcessQueue for", ckey)
        elif pq.orderly:
            if off not in pq.consuming:
                out.report("INV-RETRY-3", f"orderly send-back of offset {off} that is not being consumed", ckey)
        else:
            s = pq.failed.get(off)
            if s is None and off not in pq.tree:
                out.report("INV-RETRY-3", f"send-back of offset {off} that {cid} neither failed nor holds", ckey)
            elif s is None and (off != pq.tree_min() or ev.get("delay_level") != 3):
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
    ch.requests[(cid, ev["msg_id"])] = (ev["reconsume_times"], ev["delay_level"], ev.get("via"), qkey, off, ev["ts"])


def send_back_failed(st, ev, out):
    """RocketMQ: send-back and fallback failed.
    Actor: client."""
    ch = st.chains.get((ev["group"], ev["origin_msg_id"]))
    req = ch.requests.pop((ev["client"], ev["msg_id"]), None) if ch is not None else None
    if req is None:
        out.report("GUARD", "send-back failed but was never requested", (ev["group"], ev["origin_msg_id"]))
        return
    qkey, off = req[3], req[4]
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
    ckey = (ev["group"], ev["origin_msg_id"])
    ch = _chain(st, *ckey)
    cid = ev.get("client")
    mid = ev["msg_id"]
    req = ch.requests.pop((cid, mid), None)
    if req is None:
        for k in list(ch.requests):
            if k[1] == mid:
                req = ch.requests.pop(k)
                cid = k[0]
                break
    # the path the copy took: the event's (a consumerSendMsgBack request may end as the fallback
    # producer's send when the broker could not be reached), else the request's
    via = ev.get("via") or (req[2] if req is not None else None)
    r = req[0] if req is not None else ev["reconsume_times"]
    if via == "consumer_send_back":
        # consumerSendMsgBack looks the message up by commit-log offset: the count it judges is
        # the stored copy's, not the client's in-memory one (raised by failed send-backs)
        stored_r = None
        if req is not None and req[3] is not None:
            sq = st.stored.get(req[3][1:])
            m = sq.msgs.get(req[4]) if sq is not None else None
            stored_r = m[M_R] if m is not None else None
        r = stored_r if stored_r is not None else ev["reconsume_times"]
    dl = req[1] if req is not None else ev.get("delay_level", 0)
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
    if (cid, mid) in ch.accepted and outcome != "discarded":
        out.report("INV-RETRY-3", f"{cid} sent copy {mid} back twice: two retry copies of one failure", ckey)
    ch.accepted.add((cid, mid))
    if outcome == "retry":
        levels = len(limits.broker(st, ev["broker"]).delay_ms) - 1
        want = dl if (dl is not None and dl > 0) else 3 + r
        want = min(want, levels)
        got = ev.get("delay_level")
        if got is not None and got != want:
            out.report("INV-RETRY-2", f"retry of copy {mid} (reconsume_times {r}) at delay level {got}, "
                       f"expected {want}", ckey)
        ch.entries.append(["sent_back", r + 1, got if got is not None else want, None, None, mid,
                           req[5] if req is not None and len(req) > 5 else ev["ts"]])
    elif outcome == "discarded":
        st.counts["ANOM-DISCARD"] = st.counts.get("ANOM-DISCARD", 0) + 1
        if out is not None:
            out.example("ANOM-DISCARD", f"{mid} sent back by {cid} was discarded (no retry queue)", ckey)
    # the failed original is now handled by the group (its successor carries the obligation)
    if req is not None and req[3] is not None:
        qs = st.queues.get(req[3])
        if qs is not None:
            pq = qs.pqs.get(cid)
            if pq is not None and not pq.broadcast:
                unit = qs.units.get("")
                if unit is not None:
                    unit.handle(req[4])
                if pq.failed.get(req[4]) == "expired":
                    pq.failed[req[4]] = "expired_sent"
                    pq.expired.add(req[4])
    _gc_chain(st, ckey, ch)


def message_scheduled(st, ev, out):
    """RocketMQ: delay level -> SCHEDULE_TOPIC_XXXX.
    Actor: broker."""
    real = ev.get("real_topic") or ""
    if real.startswith(DLQ_PREFIX):
        out.report("INV-DLQ-1", f"a dead-lettered copy of {ev['origin_msg_id']} goes through the schedule (delay level "
                   f"{ev['delay_level']}) instead of straight to {real} (#2724)",
                   (ev.get("group") or real[len(DLQ_PREFIX):], ev["origin_msg_id"]))
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
            if e[0] == "sent_back" and e[2] == lvl:
                entry = e
                break
        if entry is None:
            entry = next((e for e in ch.entries if e[0] == "sent_back"), None)
    if entry is None:
        out.report("GUARD", f"retry copy scheduled without an accepted send-back (origin {ev['origin_msg_id']})", ckey)
        ch = _chain(st, *ckey)
        entry = ["sent_back", ev.get("reconsume_times", 0), lvl, None, None, None]
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
        lo = entry[6] if len(entry) > 6 and entry[6] is not None else ev["ts"]
        if not min(lo, ev["ts"]) <= stored_at <= ev["ts"]:
            out.report("INV-RETRY-2", f"delay level {lvl} is {table[lvl]} ms: the copy was stored at "
                       f"{stored_at} by its deliver time {ev['deliver_ts']}, outside [{min(lo, ev['ts'])}, {ev['ts']}] "
                       f"(send-back requested .. scheduled)", ckey)
    if ev.get("reconsume_times") is not None and ev["reconsume_times"] != entry[1]:
        out.report("INV-RETRY-2", f"scheduled copy carries reconsume_times {ev['reconsume_times']}, expected "
                   f"{entry[1]}", ckey)
    entry[0], entry[3], entry[4] = "delayed", ev["deliver_ts"], ev["msg_id"]


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
        entry = next((e for e in ch.entries if e[0] == "delayed" and e[4] == ev["msg_id"]), None)
    if entry is None:
        done = st.sched_done.get(ev["msg_id"])
        if done is not None and st.dir.brokers.get(ev["broker"], 0) > done[1]:
            # the schedule service's delay offsets are flushed every 10 s: after a broker
            # restart it delivers again what it delivered since the last flush (at-least-once)
            _duplicate(st, out, ckey, f"the schedule delivers {ev['msg_id']} again after a broker restart")
            ch = _chain(st, *ckey)
            ch.entries.append(["redelivered", done[0], ev["delay_level"], None, ev["msg_id"], None])
            return
        out.report("GUARD", f"schedule delivered {ev['msg_id']} that was never scheduled", ckey)
        return
    if ev["ts"] < entry[3]:
        out.report("INV-RETRY-2", f"retry copy delivered at {ev['ts']}, before its deliver time {entry[3]}", ckey)
    entry[0] = "redelivered"
    sd = st.sched_done
    sd[ev["msg_id"]] = (entry[1], st.dir.brokers.get(ev["broker"], 0))
    if len(sd) > 200000:
        for k in list(sd)[:100000]:
            del sd[k]


def message_stored(st, ev, out):
    """RocketMQ: CommitLog append + ConsumeQueue dispatch.
    Actor: broker."""
    tkey = (ev["topic"], ev["broker"], ev["queue"])
    sq = st.stored.get(tkey)
    if sq is None:
        sq = st.stored[tkey] = StoredQueue()
    off = ev["offset"]
    if off != sq.next:
        out.report("GUARD", f"message stored at offset {off}, the queue's next offset is {sq.next}", tkey)
        if off > sq.next:
            sq.next = off
    sq.next = max(sq.next, off + 1)
    r = ev.get("reconsume_times", 0) or 0
    topic = ev["topic"]
    if topic[0] == "%":
        if topic.startswith(RETRY_PREFIX):
            group = topic[len(RETRY_PREFIX):]
            ckey = (group, ev["origin_msg_id"])
            mx = limits.max_reconsume(st, _group_client(st, group))
            if mx is not None and r > mx:
                out.report("INV-RETRY-1", f"retry copy {ev['msg_id']} stored with reconsume_times {r} > "
                           f"maxReconsumeTimes {mx}", ckey)
            if ev.get("source") == "schedule":
                ch = st.chains.get(ckey)
                entry = next((e for e in ch.entries if e[0] == "redelivered"), None) if ch else None
                if entry is None:
                    out.report("GUARD", f"retry copy {ev['msg_id']} stored without a schedule delivery", ckey)
                else:
                    if r != entry[1]:
                        out.report("INV-RETRY-2", f"retry copy stored with reconsume_times {r}, expected {entry[1]}",
                                   ckey)
                    ch.entries.remove(entry)
                    _gc_chain(st, ckey, ch)
        elif topic.startswith(DLQ_PREFIX):
            if (ev.get("delay_level") or 0) > 0:
                out.report("INV-DLQ-1", f"dead-lettered copy {ev['msg_id']} keeps delay level {ev['delay_level']} "
                           f"(#2724)", (topic[len(DLQ_PREFIX):], ev["origin_msg_id"]))
            return      # DLQ copies are never consumed: nothing else to keep
    sq.msgs[off] = (ev["msg_id"], ev["origin_msg_id"], ev.get("tags"), ev.get("tags_code"), ev.get("props"), r)


def message_dead_lettered(st, ev, out):
    """RocketMQ: %DLQ% store.
    Actor: broker."""
    ckey = (ev["group"], ev["origin_msg_id"])
    ch = st.chains.get(ckey)
    if ch is not None:
        _gc_chain(st, ckey, ch)


def _gc_chain(st, ckey, ch):
    if not ch.requests and all(e[0] in ("redelivered",) for e in ch.entries) and not ch.entries:
        st.chains.pop(ckey, None)


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


# Each kind's action is the function of its name above; its other facts (the mechanism it
# models, the keys it touches, what the explorer needs) are in spec.kinds.
HANDLERS = {name: globals()[name] for name in KINDS}
