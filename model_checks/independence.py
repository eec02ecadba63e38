"""Which explorer moves commute: the independence relation behind the explorer's sleep sets.

Two moves are *independent* in a state when each leaves the other enabled with the same events
and both orders reach the same state. The explorer uses a static, conservative approximation:
each move gets a *footprint*, the set of resources its events touch, and two moves are
independent iff their footprints are disjoint. A resource covers everything the spec's actions
for those events read or write, and everything the generator reads to compute the move:

- no resource for the client itself: its status changes only by global moves (crash, pause,
  resume), and its allocation is written and read within one rebalance move;
- ``("q", topic, broker, queue)``: the queue's stored messages and its QueueState (the broker
  offset and persists, every client's ProcessQueue, offset-store entry and the group's progress);
- ``("chain", origin)``: send-backs and retry copies of one message;
- ``("view", topic, view)``: a rebalance writes the view's allocations; it reads the client's
  ProcessQueues of the topic, which are on the queues its allocation names or it drops (so those
  queues are in its footprint). The registrations it reads change only by global moves
  (registration, channel expiry);
- ``("locks",)``: broker lock entries (4.9.x's orderly DLQ decision reads every lock);
- ``("budget",)`` and ``("aux",)``: the explorer's fault/failure budget and orderly counters.

A time step, a crash, a pause, a resume, a channel expiry and any event kind not listed below
touch everything (``ALL``): they are dependent with every move. Independence only ever prunes
transitions whose target is reached another way; the tests compare the reachable states with
and without it.
"""
from __future__ import annotations

from rocketspec.spec.kinds import kinds_where

ALL = frozenset({"*"})

# event kinds whose effect and generator inputs are covered by their own fields (client, queue
# key, origin message, view); anything else is treated as touching the whole state. Both sets
# are facts of the kind registry (spec.kinds).
_LOCAL = kinds_where("local")
_LOCKS = kinds_where("locks")


def footprint(move) -> frozenset:
    """The resources a move touches (see the module docstring); `ALL` when it is global."""
    if move.tick:
        return ALL
    res = set()
    if move.cost:
        res.add(("budget",))
    if move.aux is not None:
        res.add(("aux",))
    for e in move.events:
        k = e["kind"]
        if k not in _LOCAL:
            return ALL
        if "queue" in e and "topic" in e:
            res.add(("q", e["topic"], e.get("broker"), e["queue"]))
        o = e.get("origin_msg_id")
        if o is not None:
            res.add(("chain", o))
        if k == "allocation_computed":
            res.add(("view", e["topic"], e["view"]))
            for m in e["allocated"]:
                res.add(("q",) + tuple(m))
        elif k == "lock_requested":
            for m in e["queues"]:
                res.add(("q",) + tuple(m))
        if k in _LOCKS or e.get("via") == "orderly_producer":
            res.add(("locks",))
    return frozenset(res)


def independent(a: frozenset, b: frozenset) -> bool:
    return a is not ALL and b is not ALL and a.isdisjoint(b)


__all__ = ["ALL", "footprint", "independent"]
