"""Orderly locks: the broker's lock table (RebalanceLockManager) and the client's lease on its
ProcessQueue; `lock_live`, `holds_lock` and `lease_live` state when a lock entry or a lease is
live, once."""
from __future__ import annotations

from .. import limits
from ..lifecycles import LOCK_TABLE
from ..state import QueueState, Released
from .common import _client, _q


def lock_live(qs: QueueState, ts) -> bool:
    """The queue's lock entry is live at `ts`: it expires only at a ts past `lock_exp`
    (LockEntry.isExpired), whoever holds it."""
    return ts <= qs.lock_exp


def holds_lock(qs: QueueState, cid, ts) -> bool:
    """`cid` holds the queue's lock at `ts`: it is the holder and the entry is live."""
    return qs.holder == cid and lock_live(qs, ts)


def lease_live(pq, ts, lease_ms) -> bool:
    """The client's lease on its ProcessQueue is live at `ts`: locked, and not past
    `lease_ms` since its last lock (ProcessQueue.isLockExpired)."""
    return pq.locked and ts - pq.last_lock_ts <= lease_ms


def lock_requested(st, ev, out):
    """RocketMQ: RebalanceImpl.lock / lockAll.
    Actor: client."""
    c = _client(st, ev, out)
    if c is not None:
        c.lock_req_ts = ev["ts"]
    if len(ev["queues"]) > 1:
        # lock(mq) asks for one queue; a request for several is lockAll, which asks for the
        # queues of the client's ProcessQueue table (buildProcessQueueTableByBrokerName)
        for topic, broker, queue in ev["queues"]:
            qs = st.queues.get((ev["group"], topic, broker, queue))
            if qs is not None and holds_lock(qs, ev["client"], ev["ts"]):
                qs.listed[ev["client"]] = ev["ts"]
    if c is not None and c.broadcast and not st.profile.broadcast_orderly_takes_locks:
        out.report("INV-BCAST-1", "a broadcasting client asked for broker locks (#8772 fixed in 5.3.2)", None)


def lock_acquired(st, ev, out):
    """RocketMQ: RebalanceLockManager.tryLock.
    Actor: broker."""
    qs = _q(st, ev)
    key = qs.key
    cid, ts, reason = ev["client"], ev["ts"], ev["reason"]
    p = st.profile
    if (qs.lock_state, "lock_acquired") not in LOCK_TABLE:
        out.report("INV-LOCK-1", f"lock acquired in state {qs.lock_state}", key)
    life = limits.broker(st, key[2]).lock_max_live_ms
    if reason == "snapshot":
        pass        # an entry already held when observation began: its lastUpdate is before the trace
    elif ev.get("obs") == "sampled":
        if not ts - life < ev["expires_at"] <= ts + life:
            out.report("INV-LOCK-1", f"lock entry seen at {ts} expires at {ev['expires_at']}, must be within the "
                       f"broker's lock lifetime {life} of its last update (at or before {ts})", key)
    elif ev.get("updated_at") is not None:
        # the entry's own lastUpdate, read from it (a real recorder): exact, and before the event
        if ev["expires_at"] != ev["updated_at"] + life or ev["updated_at"] > ts:
            out.report("INV-LOCK-1", f"lock entry updated at {ev['updated_at']} expires at {ev['expires_at']}, must "
                       f"be its update time + {life} (the broker's lock lifetime), the update at or before {ts}", key)
    else:
        # lastUpdate is the broker's clock when it handled the lock request: between the
        # client's request (lock_requested) and this event (a recorder sees it after; the
        # reference at once)
        c = st.dir.clients.get(cid)
        lo = min(c.lock_req_ts, ts) if c is not None and c.lock_req_ts is not None else ts
        if not lo + life <= ev["expires_at"] <= ts + life:
            out.report("INV-LOCK-1", f"lock entry expires at {ev['expires_at']}, must be its update time + {life} "
                       f"(the broker's lock lifetime), the update at {lo}..{ts}", key)
    h = qs.holder
    if h is not None and h != cid and lock_live(qs, ts):
        out.report("INV-LOCK-1", f"{cid} acquires the lock ({reason}) while {h} holds it until {qs.lock_exp}: "
                   f"two lock holders", key)
    elif reason == "new" and h is not None and qs.lock_state != "unlocked":
        if h != cid:
            out.report("INV-LOCK-1", f"lock 'new' although {h}'s expired entry exists (takeover expected)", key)
    elif reason == "takeover" and (h is None or h == cid) and ev.get("previous_holder") not in (None, cid):
        out.report("INV-LOCK-1", f"takeover from {ev.get('previous_holder')} but the entry names {h}", key)
    elif reason == "renewed" and h != cid:
        out.report("INV-LOCK-1", f"{cid} renews a lock held by {h}", key)
    g = st.dir.groups.get(key[0])
    if g is not None and g["model"] == "BROADCASTING" and not p.broadcast_orderly_takes_locks:
        out.report("INV-BCAST-1", "a broadcasting group holds a broker lock (#8772)", key)
    qs.holder, qs.lock_exp, qs.lock_ts, qs.lock_state = cid, ev["expires_at"], ts, "held"
    qs.lock_epoch = st.dir.brokers.get(key[2], 0)
    qs.granted[cid] = ts


def lock_rejected(st, ev, out):
    """RocketMQ: RebalanceLockManager.tryLock (held by another).
    Actor: broker."""
    qs = _q(st, ev)
    if qs.holder is None or qs.holder != ev["holder"] or not lock_live(qs, ev["ts"]) or qs.holder == ev["client"]:
        h = st.dir.clients.get(ev["holder"])
        if h is not None and h.lock_req_ts is not None and h.lock_req_ts <= ev["ts"] and ev["holder"] != ev["client"] \
                and (qs.holder is None or not lock_live(qs, ev["ts"])):
            # the holder's own lockBatch took the free entry first; its lock_acquired is written
            # when that request's answer goes out, after this one's (it carries the entry's
            # updated_at, which lock_acquired checks)
            return
        out.report("INV-LOCK-1", f"lock of {ev['client']} rejected for holder {ev['holder']}, but the entry names "
                   f"{qs.holder} (expires_at {qs.lock_exp})", qs.key)


def lock_released(st, ev, out):
    """RocketMQ: RebalanceLockManager.unlockBatch.
    Actor: broker."""
    qs = _q(st, ev)
    if qs.holder != ev["client"]:
        out.report("INV-LOCK-1", f"unlock by {ev['client']} removed an entry held by {qs.holder}", qs.key)
    elif lock_live(qs, ev["ts"]):
        # a client unlocks only queues of its ProcessQueue table (RebalanceImpl.unlock from
        # removeUnnecessaryMessageQueue, unlockAll from the orderly service's shutdown): the
        # ProcessQueue was in it, under this live lock, as with lockAll
        qs.listed[ev["client"]] = ev["ts"]
    qs.holder, qs.lock_state, qs.lock_exp = None, "unlocked", 0
    qs.released = Released(ev["client"], ev["ts"])


def lock_release_ignored(st, ev, out):
    """RocketMQ: unlockBatch by a non-owner.
    Actor: broker."""
    qs = _q(st, ev)
    if qs.holder == ev["client"]:
        out.report("INV-LOCK-1", f"unlock by the owner {ev['client']} was ignored", qs.key)


def lock_expired(st, ev, out):
    """RocketMQ: LockEntry.isExpired.
    Actor: broker."""
    qs = _q(st, ev)
    if qs.holder != ev["holder"]:
        out.report("INV-LOCK-1", f"expiry of {ev['holder']}'s lock, the entry names {qs.holder}", qs.key)
    elif lock_live(qs, ev["ts"]):
        out.report("INV-LOCK-1", f"lock found expired at {ev['ts']}, it expires only after {qs.lock_exp}", qs.key)
    qs.lock_state = "expired"


def _set_under_last_grant(st, qs, ev) -> bool:
    """A polled change is seen after it happened, maybe long after (a stopped client's poller is
    stopped too). The client sets locked and lastLockTimestamp together, on the answer of a
    lockBatch that granted it the queue (RebalanceImpl.lock and lockAll), so the change happened at
    last_lock_ts: it was made under the client's last grant when that grant was still live then."""
    if ev.get("obs") != "sampled":
        return False
    granted = qs.granted.get(ev["client"])
    life = limits.broker(st, qs.key[2]).lock_max_live_ms
    return granted is not None and granted <= ev["last_lock_ts"] <= granted + life


def pq_lock_changed(st, ev, out):
    """RocketMQ: ProcessQueue.setLocked / lastLockTimestamp.
    Actor: client."""
    qs = _q(st, ev)
    pq = qs.pqs.get(ev["client"])
    if pq is None:
        return
    if ev["locked"] and pq.orderly and not pq.broadcast and qs.key[2] in st.dir.brokers:
        if not holds_lock(qs, ev["client"], ev["ts"]) and not _set_under_last_grant(st, qs, ev):
            out.report("INV-OWNER-2", f"{ev['client']}'s ProcessQueue marked locked but the broker lock is "
                       f"held by {qs.holder}", qs.key)
    if ev["last_lock_ts"] > ev["ts"]:
        out.report("GUARD", "lastLockTimestamp in the future", qs.key)
    pq.locked = ev["locked"]
    pq.last_lock_ts = ev["last_lock_ts"]


def lease_expired(st, ev, out):
    """RocketMQ: ProcessQueue.isLockExpired.
    Actor: client."""
    qs = _q(st, ev)
    pq = qs.pqs.get(ev["client"])
    lease = limits.client(st, ev["client"]).lease_ms
    if pq is not None and lease_live(pq, ev["ts"], lease):
        out.report("GUARD", f"lease reported expired at {ev['ts']} but last lock {pq.last_lock_ts} is within "
                   f"{lease} ms (the client's lease)", qs.key)


def lock_noop(st, ev, out):
    pass
