"""Helpers every mechanism's actions share: the queue and client an event names, the stored
queue's end, skipping offsets, pauses, duplicates."""
from __future__ import annotations

from .. import limits
from ..state import PQ, Client, QueueState, SpecState


INT_MAX = 2 ** 31 - 1


def _q(st: SpecState, ev) -> QueueState:
    key = (ev["group"], ev["topic"], ev["broker"], ev["queue"])
    qs = st.queues.get(key)
    if qs is None:
        qs = st.queues[key] = QueueState(key)
        st.dir.queue_keys.setdefault(key[:2], set()).add(key)
    return qs


def _client(st, ev, out, key=None):
    """INV-CLIENT-1: the acting client is started and neither paused, stopped nor crashed."""
    cid = ev["client"]
    c = st.dir.clients.get(cid)
    if c is None:
        out.report("INV-CLIENT-1", f"client {cid!r} acts but never started", key)
        return None
    if c.status != "running":
        if c.status == "paused" and ev["ts"] >= c.paused_until:
            c.status = "running"
        elif c.status == "paused" and c.pauses and ev["ts"] <= c.pauses[-1][0]:
            pass    # stamped in the millisecond the pause was (its time is read once the signal is sent)
        else:
            out.report("INV-CLIENT-1", f"client {cid!r} acts while {c.status}", key)
    return c


def _unit(pq_or_client) -> str:
    return pq_or_client.client if isinstance(pq_or_client, PQ) and pq_or_client.broadcast else (
        pq_or_client.cid if isinstance(pq_or_client, Client) and pq_or_client.broadcast else "")


def _group_client(st, group, cid=None):
    d = st.dir
    if cid is not None and cid in d.clients:
        return d.clients[cid]
    g = d.groups.get(group)
    if g:
        for c in g["clients"]:
            return d.clients.get(c)
    return None


def _pauses_between(st, cid, lo, hi):
    c = st.dir.clients.get(cid)
    return [(t, d) for t, d in (c.pauses if c is not None else ()) if t <= hi and t + d >= lo]


def _end(sq) -> int:
    """A stored queue's maxOffset (its next offset); a queue with nothing stored yet is empty
    (message_stored expects its first offset to be 0)."""
    return sq.next if sq is not None else 0


def _skip_to(p, off, sq):
    """Mark [p.wm, min(off, max offset)) handled (skipped); return how many were unhandled."""
    return p.skip_to(min(off, _end(sq)))


def _duplicate(st, out, key, what):
    """ANOM-DUP-1, once per repeated consumption of a message (at-least-once allows it)."""
    st.counts["ANOM-DUP-1"] = st.counts.get("ANOM-DUP-1", 0) + 1
    if out is not None:
        out.example("ANOM-DUP-1", what, key)


def _removed_under_consume_lock(st, qs, pq, ts) -> bool:
    """Whether the client's removal of orderly ProcessQueue `pq`, seen at `ts`, took its consume
    lock: 4.9.x's removeUnnecessaryMessageQueue removes and unlocks a clustering orderly
    ProcessQueue only under that lock, which a listener call holds throughout (ConsumeRequest.run
    re-checks the dropped flag under it after the before-hook, and breaks without calling the
    listener). 5.x's tryRemoveOrderMessageQueue takes its write half (a listener call holds the
    read half) unless it forces the unlock, which it does only once unlockDelayTimeMills have
    passed since the ProcessQueue's last lock (#7644); the last lock the spec knows is no later
    than the client's, so a removal within that delay of it was not forced. Not the shutdown's
    unlockAllMQ (a client no longer registered)."""
    group, _, broker, _ = qs.key
    if not (pq.orderly and not pq.broadcast and pq.client in st.dir.registered.get((broker, group), ())):
        return False
    if st.profile.orderly_remove_style != "5x":
        return True
    return ts <= pq.last_lock_ts + limits.client(st, pq.client).unlock_delay_ms


def reset_stray_cause(qs, cid) -> str:
    """The cause of a violation on a queue where `cid` has a ProcessQueue an operator's reset took
    out of the table without dropping it (_added_in_reset_wait), or ""."""
    if cid not in qs.reset_strays:
        return ""
    return (f"; cause: {cid}'s rebalance added the queue during an operator reset's 10 s wait, after "
            f"MQClientInstance.resetOffset had dropped the ProcessQueues then in the table; the reset then "
            f"removed the new one from the table without dropping it (at ts {qs.reset_strays[cid]} or just before), "
            f"so its PullRequest pulls and consumes the queue beside the ProcessQueue the next rebalance "
            f"created: two PullRequests of one queue, the consequence of apache/rocketmq#2449, which its fix "
            f"(a synchronized resetOffset) leaves open for a rebalance during the wait")
