"""Persistent sets: the explorer's partial-order reduction of *states* (scope key
``persistent_sets``, ``rocketspec explore --persistent-sets``).

Sleep sets (model_checks/independence.py) save transitions but still visit every interleaving's
intermediate states. In the scopes with two clients most states are such interleavings: one
client pulls and consumes queue 0 while the other works on queue 1, and every mix of their
steps is a state. A persistent set is a subset A of the moves enabled in a state s such that
every run from s that takes no move of A takes only moves independent of every move of A
(Godefroid's condition C1). Expanding only A, plus the cycle proviso below, still reaches:

- every quiescent state (the end check INV-LIVE-1 runs there): a run to a quiescent state must
  contain a move of A (else a move of A, independent of the run, would still be enabled and
  productive at its end), which can be moved to the front;
- every rejected move (guard violations, known bugs): the same exchange argument moves a move
  of A to the front or shows the rejected move still enabled, with the same verdict, after a
  move of A; the proviso keeps that from being postponed forever;
- every violation of a state predicate: each one is a conjunction over queue keys of a
  condition on that key's QueueState and stored messages (spec.invariants.STATE_PREDICATES),
  which is inside the key's resource and does not read the clock. If a run from s violates it
  on key x without taking a move of A (A's moves are all on one key y), the run never touches x
  when y = x (it is independent of A), so s violates it already; when y != x a move of A does
  not change x, so the violation survives the exchange. (`check_state` runs on every state
  kept.)

Cycle proviso for breadth-first search: when a move of A leads to a state already seen at a
depth no greater than the state's own, the state is expanded fully. Around a cycle of the
reduced graph the breadth-first depths cannot rise at every edge, so some edge u -> v has
depth(v) <= depth(u); v was seen before u was expanded (breadth-first order), so u was expanded
fully: every cycle has a fully expanded state (condition C3). A successor first seen at the
next depth (by this or another state of the level) does not trigger it.

**Which sets.** A = every enabled move that touches one queue key q (its footprint contains
``("q", q)``), taken only when all of these hold, so that no move outside A, now or after any
run of moves outside A, reads or writes what A's moves read or write:

1. no fault is left in the run's budget (a crash, a pause or a reset is dependent with everything
   its client or queue does, and a crash changes the view), no adversary moves, clustering
   only. Listener failures may be left: a failure is a move of its own queue (with the shared
   budget, which no move of A uses), and a queue with a failure move enabled is not chosen;
2. no crashed client is still registered (its channel expiry would change the view and
   reassign queues): the view is fixed for the rest of the run. Paused clients may be: a pause
   does not change the view, and the resume of another client than c (the one move of the
   client while paused) writes only that client's status, which no move of A reads;
3. exactly one client c that has not crashed has a ProcessQueue on q, it is live, c is running,
   no orphan batch is left on q: under the fixed view no other client's rebalance allocates q
   (allocations partition the queues), so no other client ever touches q. (A crashed client's
   ProcessQueue stays in the state, dropped; no move reads it again.)
4. orderly: c's ProcessQueue is locked with a valid lease and c holds the broker entry, not
   expired. A running client renews every 20 s (< 30 s lease, < 60 s entry) and nobody else
   asks for q, so lockAll only renews (``pq.locked`` stays true, which is all the moves of A
   read of the lock) and lock(mq) on the consume path never becomes enabled. Such a lockAll,
   enabled now or later, is independent of A although both name q: it writes the broker entry
   and the lease timestamp, which no move of A reads, and reads liveness and the entry, which
   no move of A writes. It is not put into A;
5. q is not the retry queue while a retry copy waits in the schedule or the failures left in
   the budget can still send a message back (a delivery would store into q);
6. every move of A is *timeless* and local to q: its events are among `TIMELESS_KINDS` (no
   orderly consume start, which checks the lease against the clock and stamps the busy entry;
   no ProcessQueue creation, drop or removal, no lock event, no send-back), no budget,
   explorer variable or time step, and its footprint is exactly ``{("q", q)}``. Timeless moves
   neither read the clock (the generator computes them without it) nor store a timestamp (the
   spec's actions for these kinds do not), nor change anything a deadline is computed from
   (locks, leases, pauses, the schedule, which clients have live ProcessQueues), so a time step
   and a move of A commute and leave each other enabled. A rebalance of c that keeps its
   ProcessQueue on q (enabled while a new queue's lock is rejected, or after another of its
   ProcessQueues was dropped) reads only the liveness of that ProcessQueue, which no move of A
   changes, and creates, drops and locks only other queues: it is not put into A either.

The first queue key (in key order) that qualifies gives A; otherwise the state is expanded fully.
With persistent sets the first counterexample found is a shortest one *of the reduced graph*,
not necessarily of the whole graph (re-run without the reduction for a shortest trace);
`tests/test_explore_persistent.py` checks on several scopes that the reduced search finds the
same violations and exactly the same quiescent states as the full one.
"""
from __future__ import annotations

from rocketspec.spec.kinds import kinds_where
from rocketspec.spec.state import M_R

from .generator import RETRY, is_reconsume_counter
from .independence import ALL

TIMELESS_KINDS = kinds_where("timeless")     # (spec.kinds: the registry of event kinds)


def eligible(gen, node) -> bool:
    """Conditions 1 and 2 of the module docstring (the state as a whole)."""
    if node.budget[0]:
        return False
    d = node.st.dir
    reg = None
    for c, cl in d.clients.items():
        if cl.status in ("running", "paused"):
            continue
        if cl.status != "crashed":
            return False
        if reg is None:
            reg = set().union(*d.registered.values()) if d.registered else set()
        if c in reg:
            return False
    return True


def _queue_qualifies(gen, node, key, qs):
    """Conditions 3 to 5 for queue key q: (client c, its ProcessQueue), or None."""
    if qs.orphans:
        return None
    st, now = node.st, node.now
    clients = st.dir.clients
    c = pq = None
    for cid, p in qs.pqs.items():
        if clients[cid].status == "crashed":
            continue            # dropped with its client, read by nothing any more
        if c is not None:
            return None
        c, pq = cid, p
    if c is None or clients[c].status != "running" or not pq.live:
        return None
    if pq.orderly:
        if not (pq.locked and now - pq.last_lock_ts <= gen.lease and qs.holder == c and now <= qs.lock_exp):
            return None
    if key[1] == RETRY and (_send_back_possible(gen, node) or gen.copy_in_schedule(st)):
        return None
    return c, pq


def _send_back_possible(gen, node) -> bool:
    """Whether the failures left in the budget can still send a message back (into the retry
    topic, through the schedule). A concurrent failure always sends back; an orderly one only
    when the message's local count has reached maxReconsumeTimes (checkReconsumeTimes), so a
    message at count r needs maxReconsumeTimes - r failures more before the one that sends."""
    left = node.budget[1]
    if not left:
        return False
    if not gen.orderly:
        return True
    top = max((m[M_R] for sq in node.st.stored.values() for m in sq.msgs.values()), default=0)
    for k, r in node.aux.items():
        if is_reconsume_counter(k):
            top = max(top, r)
    return gen.scope.max_reconsume_times - top + 1 <= left


def _local(move, fp, res, orderly) -> bool:
    """Condition 6 for one move touching resource `res`."""
    if move.tick or move.env or move.cost or move.aux or fp != {res}:
        return False
    for e in move.events:
        k = e["kind"]
        if k not in TIMELESS_KINDS or (k == "consume_started" and orderly):
            return False
    return True


_LOCK_KINDS = frozenset({"lock_requested", "lock_acquired", "lock_rejected", "lock_expired", "pq_lock_changed"})


def _renews(move, c, key) -> bool:
    """A lockAll whose only effect on queue `key` is c renewing its own entry and keeping its
    ProcessQueue locked (its events for other queues concern other resources)."""
    if move.tick or move.env or move.cost:
        return False
    for e in move.events:
        k = e["kind"]
        if k not in _LOCK_KINDS:
            return False
        if k == "lock_requested" or (e["topic"], e["broker"], e["queue"]) != key[1:]:
            continue
        if e["client"] != c:
            return False
        if k == "lock_acquired" and e["reason"] == "renewed":
            continue
        if k == "pq_lock_changed" and e["locked"]:
            continue
        return False
    return True


def _is_resume(move) -> bool:
    return len(move.events) == 1 and move.events[0]["kind"] == "client_resumed" and not move.tick


def _leaves_alone(move, c, key) -> bool:
    """A rebalance of c that keeps its live ProcessQueue on `key`: key is only in the allocation it
    reports (creations, drops and locks are of other queues)."""
    evs = move.events
    if move.tick or move.env or move.cost or not evs or evs[0]["kind"] != "allocation_computed":
        return False
    if evs[0]["client"] != c or list(key[1:]) not in evs[0]["allocated"]:
        return False
    for e in evs[1:]:
        if e["kind"] == "lock_requested":
            if list(key[1:]) in e["queues"]:
                return False
        elif (e.get("topic"), e.get("broker"), e.get("queue")) == key[1:]:
            return False
    return True


def persistent_subset(gen, node, moves, fps) -> list[int] | None:
    """The indices of a persistent subset of `moves` (with footprints `fps`), or None: expand all."""
    if not eligible(gen, node):
        return None
    for fp, m in zip(fps, moves):
        # global moves other than time steps and resumes (expiry, faults, unknown kinds): none
        # expected in an eligible state, but never reduce next to one
        if fp is ALL and not m.tick and not _is_resume(m):
            return None
    st = node.st
    for key in sorted(st.queues):
        qs = st.queues[key]
        owner = _queue_qualifies(gen, node, key, qs)
        if owner is None:
            continue
        c, orderly = owner[0], owner[1].orderly
        res = ("q", key[1], key[2], key[3])
        pick = []
        ok = True
        for i, (m, fp) in enumerate(zip(moves, fps)):
            if m.tick or _is_resume(m) or res not in fp or _leaves_alone(m, c, key) or (
                    orderly and _renews(m, c, key)):
                continue
            if not _local(m, fp, res, orderly):
                ok = False
                break
            pick.append(i)
        if ok and pick:
            return pick
    return None


__all__ = ["TIMELESS_KINDS", "eligible", "persistent_subset"]
