"""What a run still owes its consumers: the one definition of "nothing left pending" on the
checker's side, read by the spec's end check (INV-LIVE-1 at a quiescent or settled-horizon end).
The reference decides when its own run is drained from its own objects (reference.runner:
`Run.quiescent`, `Run.waiting`): that is the other side of the check, not a second statement
of this rule.

Owed, while a consumer of the group is alive (running or paused; a stopped or crashed group owes
nothing until a consumer comes back):
- every stored message of every queue of a topic the group's live clients subscribe (the DLQ
  is never consumed), to the group (clustering) or to each broadcasting client: handled means
  consumed, sent back, dead-lettered or filtered out (spec.state.Progress);
- every retry copy of a message of the group in flight: sent back and not yet stored in the
  schedule, waiting in the schedule, or delivered to the retry topic and not consumed yet.
"""
from __future__ import annotations

from rocketspec.rocketmq.retry import DLQ_PREFIX, RETRY_PREFIX

# Chain entry states of a retry copy that is still on its way (spec.state.Chain.entries)
IN_FLIGHT = ("sent_back", "delayed", "redelivered")


def _alive(c) -> bool:
    return c.status in ("running", "paused")


def unconsumed(st):
    """Every consumer unit that still owes messages: (queue key, unit, progress or None, stored
    queue), unit "" for a clustering group or a broadcasting client's id. The unit owes the
    offsets in [progress.wm, stored.next) it has not handled, or with no progress every stored
    offset in [stored.min, stored.next)."""
    units_by_topic: dict[str, list] = {}
    for c in st.dir.clients.values():
        # a POP consumer owes no queue: the broker keeps its position (INV-POP-LIVE-1 judges it)
        if _alive(c) and (c.config or {}).get("message_request_mode") != "POP":
            # a clustering consumer also consumes its group's retry topic, subscribed or not in its
            # client_started (RebalancePushImpl/copySubscription subscribe %RETRY%<group> with "*")
            topics = set(c.subs) | (set() if c.broadcast else {RETRY_PREFIX + c.group})
            for t in sorted(topics):
                units_by_topic.setdefault(t, []).append(c)
    for (topic, broker, q), sq in st.stored.items():
        if sq.next <= sq.min or topic.startswith(DLQ_PREFIX):
            continue
        seen = set()
        for c in units_by_topic.get(topic, ()):
            unit = c.cid if c.broadcast else ""
            if (c.group, unit) in seen:
                continue
            seen.add((c.group, unit))
            key = (c.group, topic, broker, q)
            qs = st.queues.get(key)
            p = qs.units.get(unit) if qs is not None else None
            if p is None or p.unhandled_count(p.wm, sq.next):
                yield key, unit, p, sq


def owed_offsets(p, sq):
    """The offsets a unit with progress `p` (or None) still owes of stored queue `sq`, ascending."""
    if p is None:
        return range(sq.min, sq.next)
    return [o for o in range(max(p.wm, sq.min), sq.next) if o not in p.done]


def retries_in_flight(st, live_only=True):
    """(chain key, entry state) of every retry copy still on its way; with `live_only`, only those
    of groups that have a live consumer (a copy of a group nobody consumes is owed to nobody)."""
    d = st.dir
    for ckey, ch in st.chains.items():
        states = [e.state for e in ch.entries if e.state in IN_FLIGHT]
        if not states:
            continue
        if live_only:
            g = d.groups.get(ckey[0])
            if g is None or not any(c in d.clients and _alive(d.clients[c]) for c in g["clients"]):
                continue
        for s in states:
            yield ckey, s
