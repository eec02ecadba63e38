"""Units of a trace: sets of events that come and go together, for trace reduction.

A trace is a story of a few things: groups, brokers, topics, queues, clients, ProcessQueues,
messages with their retries, pulls, listener calls, persists, lock requests, pauses. Removing one
event of such a thing alone usually leaves the rest of it dangling (an answer to a pull never
issued), which the spec rejects; removing the whole thing at once often keeps the trace valid.
`units(kind, events)` maps each unit of a kind to the indices of its events, in order of first
appearance (deterministic). A message unit also names the stored positions it frees, so that
the remaining offsets can be renumbered (traces.minimize.renumber).

`key_slice(events, key)` keeps what may matter for a violation's key (docs/trace-conventions.md
lists the keys): the directory, the key's queue(s), their stored messages and the group's
allocations of the topic.
"""
from __future__ import annotations

from ..kinds import KINDS as EVENT_KINDS

# kinds, coarse to fine: the order in which the minimizer tries them
KINDS = ("group", "broker", "topic", "queue", "client", "process_queue", "message", "pause", "lock",
         "persist", "pull", "consume", "event")

DESCRIBE = {
    "group": "consumer group", "broker": "broker", "topic": "topic", "queue": "queue",
    "client": "client", "process_queue": "ProcessQueue of a client", "message": "message and its retries",
    "pause": "client pause", "lock": "lock request", "persist": "offset persist", "pull": "pull",
    "consume": "listener call and its result", "event": "event",
}


def _unit(family: str) -> frozenset:
    """The event kinds of a unit family (the registry's Kind.unit)."""
    return frozenset(n for n, k in EVENT_KINDS.items() if k.unit == family)


# events about the deployment, not about one queue: kept by every slice
DIRECTORY = _unit("directory")
# what processConsumeResult (concurrent) or the orderly loop does with a listener call's result
_RESULT_KINDS = _unit("call_result")
_PULL_KINDS = _unit("pull")
_LOCK_KINDS = _unit("lock_answer")


def qkey(ev):
    """(topic, broker, queue) of an event about one queue, else None."""
    q = ev.get("queue")
    if type(q) is not int:
        return None
    t, b = ev.get("topic"), ev.get("broker")
    if t is None or b is None:
        return None
    return (t, b, q)


def _add(d, label, i):
    lst = d.get(label)
    if lst is None:
        d[label] = [i]
    else:
        lst.append(i)


def units(kind: str, events: list[dict]) -> dict:
    """label -> sorted list of event indices, for every unit of `kind` in `events`. Index 0
    (trace_started) is never part of a unit."""
    return _BUILDERS[kind](events)


def _by_field(name):
    def build(events):
        d: dict = {}
        for i in range(1, len(events)):
            v = events[i].get(name)
            if v is not None:
                _add(d, v, i)
        return d
    return build


def _topics(events):
    d: dict = {}
    for i in range(1, len(events)):
        ev = events[i]
        t = ev.get("topic") or ev.get("real_topic") or ev.get("retry_topic")
        if t is not None:
            _add(d, t, i)
        elif ev["kind"] == "lock_requested":
            ts = {m[0] for m in ev.get("queues") or ()}
            if len(ts) == 1:
                _add(d, ts.pop(), i)
    return d


def _queues(events):
    d: dict = {}
    for i in range(1, len(events)):
        ev = events[i]
        k = qkey(ev)
        if k is not None:
            _add(d, k, i)
        elif ev["kind"] == "lock_requested":
            qs = ev.get("queues") or ()
            if len(qs) == 1:
                _add(d, tuple(qs[0]), i)
    return d


def _process_queues(events):
    d: dict = {}
    for i in range(1, len(events)):
        ev = events[i]
        c = ev.get("client")
        if c is None:
            continue
        k = qkey(ev)
        if k is not None:
            _add(d, (c, ev.get("group"), k), i)
    return d


def _messages(events):
    """A message's whole life: every copy (producer, retry, schedule, DLQ) and every event that
    names its origin; the stored copies' positions are freed (renumbered) by the removal."""
    d: dict = {}
    for i in range(1, len(events)):
        o = events[i].get("origin_msg_id")
        if o is not None:
            _add(d, o, i)
    return d


def message_positions(events, indices) -> list[tuple]:
    """The stored positions (topic, broker, queue, offset) among the events at `indices`."""
    out = []
    for i in indices:
        ev = events[i]
        if ev["kind"] == "message_stored":
            out.append((ev["topic"], ev["broker"], ev["queue"], ev["offset"]))
    return out


def _pauses(events):
    d: dict = {}
    open_: dict = {}
    for i in range(1, len(events)):
        ev = events[i]
        k = ev["kind"]
        if k == "client_paused":
            open_[ev["client"]] = label = (ev["client"], i)
            _add(d, label, i)
        elif k == "client_resumed":
            label = open_.pop(ev["client"], None)
            if label is not None:
                _add(d, label, i)
    return d


def _locks(events):
    """lock_requested and the broker's and client's answers to it (until the client's next request)."""
    d: dict = {}
    open_: dict = {}
    for i in range(1, len(events)):
        ev = events[i]
        k = ev["kind"]
        c = ev.get("client")
        if k == "lock_requested":
            open_[(c, ev["group"])] = label = (c, i)
            _add(d, label, i)
        elif k in _LOCK_KINDS:
            label = open_.get((c, ev.get("group")))
            if label is not None:
                _add(d, label, i)
    return d


def _persists(events):
    """offset_persisted and the broker's commit of it (the next persist commit of that client and queue)."""
    d: dict = {}
    open_: dict = {}
    for i in range(1, len(events)):
        ev = events[i]
        k = ev["kind"]
        if k == "offset_persisted":
            label = (ev["client"], i)
            _add(d, label, i)
            if not ev.get("lost"):
                open_[(ev["client"], ev["group"], qkey(ev))] = label
        elif k == "offset_committed" and ev.get("source") == "persist":
            label = open_.pop((ev.get("client"), ev["group"], qkey(ev)), None)
            if label is not None:
                _add(d, label, i)
    return d


def _pulls(events):
    """A pull: issued, held, answered or failed; with the commit piggybacked on it (the broker's
    next pull-sourced commit of that client and queue)."""
    d: dict = {}
    carrying: dict = {}     # (client, group, queue key) -> the pull whose commit has not been seen
    for i in range(1, len(events)):
        ev = events[i]
        k = ev["kind"]
        if k in _PULL_KINDS:
            label = (ev["client"], ev["pull_id"])
            _add(d, label, i)
            if k == "pull_issued":
                co = ev.get("commit_offset")
                pk = (ev["client"], ev["group"], qkey(ev))
                if type(co) is int and co >= 0:
                    carrying[pk] = label
                else:
                    carrying.pop(pk, None)
        elif k == "offset_committed" and ev.get("source") == "pull":
            label = carrying.pop((ev.get("client"), ev["group"], qkey(ev)), None)
            if label is not None:
                _add(d, label, i)
    return d


def _consumes(events):
    """A listener call: messages_taken before it (orderly), started, finished, and what the client
    did with the result on that queue until its next call or pull cycle step."""
    d: dict = {}
    current: dict = {}     # (client, group, queue key) -> label of the call whose result follows
    taken: dict = {}       # (client, group, queue key) -> index of a messages_taken not yet started
    for i in range(1, len(events)):
        ev = events[i]
        k = ev["kind"]
        c = ev.get("client")
        if c is None:
            continue
        pk = (c, ev.get("group"), qkey(ev))
        if k == "messages_taken":
            taken[pk] = i
            current.pop(pk, None)
        elif k == "consume_started":
            label = (c, ev["consume_id"])
            t = taken.pop(pk, None)
            if t is not None:
                _add(d, label, t)
            _add(d, label, i)
            current.pop(pk, None)
        elif k == "consume_finished":
            label = (c, ev["consume_id"])
            _add(d, label, i)
            current[pk] = label
        elif k in _RESULT_KINDS:
            label = current.get(pk)
            if label is not None:
                _add(d, label, i)
        else:
            current.pop(pk, None)
    return d


def _events(events):
    # labelled by seq, which every rewrite keeps until the very end: a label stays the same event
    return {events[i]["seq"]: [i] for i in range(1, len(events))}


_BUILDERS = {
    "group": _by_field("group"), "broker": _by_field("broker"), "topic": _topics, "queue": _queues,
    "client": _by_field("client"), "process_queue": _process_queues, "message": _messages, "pause": _pauses,
    "lock": _locks, "persist": _persists, "pull": _pulls, "consume": _consumes, "event": _events,
}


def describe(kind: str, label) -> str:
    """A unit in words, e.g. "client c1", "queue Orders/broker-a/0"."""
    if kind in ("group", "broker", "topic", "client"):
        return f"{kind} {label}"
    if kind == "queue":
        return f"queue {label[0]}/{label[1]}/{label[2]}"
    if kind == "process_queue":
        c, _g, k = label
        return f"ProcessQueue of {c} on {k[0]}/{k[1]}/{k[2]}"
    if kind == "message":
        return f"message {label} (every copy and retry)"
    if kind == "pull":
        return f"pull {label[1]} of {label[0]}"
    if kind == "consume":
        return f"listener call {label[1]} of {label[0]}"
    if kind in ("pause", "lock", "persist"):
        return f"{DESCRIBE[kind]} of {label[0]}"
    if kind == "event":
        return f"event seq {label}"
    return f"{kind} {label}"


# ---------------------------------------------------------------------------- the cast

class Cast:
    """The story's characters: the clients, brokers, topics and messages a trace introduces
    (client_started, broker_started, topic_created, message_stored). A reduced trace keeps a
    character's introduction while any later event names it, so that it reads as a story: the
    spec does not ask for every one of them (e.g. an offset_read by a client that never started,
    a schedule of a message never stored, are not judged), the reader does."""

    # kind -> (character, the field that names it)
    INTRO = {"client_started": ("client", "client"), "broker_started": ("broker", "broker"),
             "topic_created": ("topic", "topic"), "message_stored": ("message", "msg_id")}
    _MESSAGE_FIELDS = ("msg_id", "origin_msg_id")
    _MESSAGE_LISTS = ("msg_ids", "origin_msg_ids")

    def __init__(self, events):
        self.names = {"client": set(), "broker": set(), "topic": set(), "message": set()}
        for ev in events:
            who = self.INTRO.get(ev["kind"])
            if who is not None:
                self.names[who[0]].add(ev[who[1]])

    def introduces(self, ev) -> str:
        who = self.INTRO.get(ev["kind"])
        if who is None:
            return ""
        return (f"introduces {who[0]} {ev[who[1]]}, which later events name (kept for the story: the spec "
                "does not need it for this violation)")

    def introduced(self, events) -> bool:
        """Every character an event names was introduced before it."""
        names = self.names
        clients, brokers, topics, messages = names["client"], names["broker"], names["topic"], names["message"]
        seen = {"client": set(), "broker": set(), "topic": set(), "message": set()}
        seen_c, seen_b, seen_t, seen_m = seen["client"], seen["broker"], seen["topic"], seen["message"]
        intro = self.INTRO
        for ev in events:
            who = intro.get(ev["kind"])
            if who is not None:
                seen[who[0]].add(ev[who[1]])
            c = ev.get("client")
            if c is not None and c in clients and c not in seen_c:
                return False
            b = ev.get("broker")
            if b is not None and b in brokers and b not in seen_b:
                return False
            t = ev.get("topic")
            if t is not None and t in topics and t not in seen_t:
                return False
            for f in self._MESSAGE_FIELDS:
                m = ev.get(f)
                if m is not None and m in messages and m not in seen_m:
                    return False
            for f in self._MESSAGE_LISTS:
                ms = ev.get(f)
                if ms:
                    for m in ms:
                        if m in messages and m not in seen_m:
                            return False
        return True


# ---------------------------------------------------------------------------- slicing by key

def key_slice(events: list[dict], key: tuple | None, level: int) -> list[int] | None:
    """Indices of the events kept by slice `level` around a violation's `key` (a spec key tuple:
    queue (group, topic, broker, queue), retry chain (group, origin_msg_id), view (group, topic,
    view) or stored queue (topic, broker, queue)). Level 1: the directory, the key's queue(s)
    for its group, their stored messages, the group's allocations and lock requests of those
    topics, and the chain's events. Level 2: everything of the key's group, and every stored
    message. None when the level does not apply (no key, or nothing to narrow)."""
    if key is None:
        return None
    group, queues, origin, topics = _key_parts(events, key)
    keep = []
    for i, ev in enumerate(events):
        k = ev["kind"]
        if k in DIRECTORY:
            keep.append(i)
            continue
        g = ev.get("group")
        same = g is None or group is None or g == group
        if level >= 2:
            if same:
                keep.append(i)
            continue
        if origin is not None and ev.get("origin_msg_id") == origin and same:
            keep.append(i)
            continue
        q = qkey(ev)
        if q is not None and q in queues and (same or k == "message_stored"):
            keep.append(i)
        elif k == "allocation_computed" and g == group and ev["topic"] in topics:
            keep.append(i)
        elif k == "lock_requested" and g == group and any(tuple(m) in queues for m in ev.get("queues") or ()):
            keep.append(i)
    return keep


def _key_parts(events, key):
    """(group, queue keys, origin, topics) that a key's slice is made of."""
    if len(key) == 4:
        g, t, b, q = key
        queues = {(t, b, q)}
        origin = None
    elif len(key) == 2:
        g, origin = key
        queues = {qkey(ev) for ev in events if ev.get("origin_msg_id") == origin and qkey(ev) is not None}
    elif len(key) == 3 and isinstance(key[2], int):
        g, queues, origin = None, {tuple(key)}, None
    else:
        g, t, _view = key
        queues = {qkey(ev) for ev in events if ev.get("group") == g and ev.get("topic") == t
                  and qkey(ev) is not None}
        origin = None
    topics = {q[0] for q in queues}
    return g, queues, origin, topics
