"""Figures of one trace, per consumer group: what the differential report compares.

Every figure is computed from event kinds that both a reference trace and a real (recorded)
trace carry (docs/differential/README.md lists them), so the two sides are measured alike:
deliveries from consume_started, retries from send-backs and retry-topic deliveries, DLQ
entries from the messages stored in %DLQ%<group>, committed offsets from offset_committed,
reassignment times from a client letting a queue go and another client's pq_created.

A figure that a trace cannot give because an event kind it needs is absent is None, with the
reason in the group's `notes` (never a silent zero). Figures read from sampled events (real
traces poll some state) say so in `notes` too.

Streaming: one pass over the events; memory grows with the keys (messages, queues, clients),
not with the number of events.
"""
from __future__ import annotations

from collections import Counter
from statistics import median
from typing import Any, Iterable

from rocketspec.spec.filtering import DLQ_PREFIX, RETRY_PREFIX, decide, subscription

from ..io import TraceInputError, read_events

# Listener results that ask for the message again: concurrent RECONSUME_LATER (and anything
# else that is not CONSUME_SUCCESS: 4.9.8 turns a null or an exception into RECONSUME_LATER);
# orderly SUSPEND_CURRENT_QUEUE_A_MOMENT and ROLLBACK (ConsumeMessageOrderlyService).
CONCURRENT_OK = frozenset({"CONSUME_SUCCESS"})
ORDERLY_OK = frozenset({"SUCCESS", "COMMIT"})

# Why a message was delivered again to the same consumer unit (see `_cause`).
CAUSES = ("retry", "rebalance", "crash", "pause", "reset", "other")

# Events after which a client no longer holds a queue of its group.
_LEAVE_KINDS = ("client_stopped", "client_crashed", "consumer_unregistered")


def _need(ev: dict, name: str, path, line):
    v = ev.get(name)
    if v is None:
        raise TraceInputError(path, line, f"{ev.get('kind')} event lacks the field {name!r}, which the figures need",
                              event=ev.get("seq") if isinstance(ev.get("seq"), int) else None)
    return v


def _qkey(ev) -> tuple:
    return (ev["topic"], ev["broker"], ev["queue"])


def qname(q: tuple) -> str:
    return f"{q[0]}/{q[1]}/{q[2]}"


class _Delivery:
    """The last delivery of one message to one consumer unit."""
    __slots__ = ("client", "queue", "ts", "failed", "finished")

    def __init__(self, client, queue, ts):
        self.client, self.queue, self.ts = client, queue, ts
        self.failed = False
        self.finished = False


class _QueueHolders:
    """Who holds one queue of a clustering group, to time its reassignments."""
    __slots__ = ("holders", "waiting", "released", "shared_since")

    def __init__(self):
        self.holders: dict[str, int] = {}      # client -> ts of its pq_created
        self.shared_since: int | None = None   # ts since when two clients or more hold it
        self.waiting: set[str] = set()         # holders that came while another still held it
        self.released: tuple | None = None     # (client, ts, kind) of the last let-go not yet followed


class _Group:
    def __init__(self, name):
        self.name = name
        self.clients: dict[str, dict] = {}     # client -> client_started
        self.subs: dict[str, tuple] | None = None
        self.subs_differ = False
        self.deliveries = 0
        self.calls = 0
        self.failed_calls = 0
        self.last: dict[tuple, _Delivery] = {}  # (unit, origin) -> last delivery
        self.dups: Counter = Counter()
        self.retry_topic_deliveries = 0
        self.send_backs_requested = 0
        self.send_backs_accepted = 0
        self.dlq_ids: set[str] = set()
        self.dead_lettered_ids: set[str] = set()
        self.committed: dict[tuple, int] = {}
        self.start_offset: dict[tuple, int] = {}   # queue -> first pq_created offset of the group
        self.queues: dict[tuple, _QueueHolders] = {}
        self.reassign: list[dict] = []
        self.overlaps: list[dict] = []             # windows in which two clients held one queue
        self.dropped_at: dict[tuple, int] = {}     # (client, queue) -> last pq_dropped ts
        self.left_at: dict[str, tuple] = {}        # client -> (ts, kind) it crashed / paused
        self.reset_at: int | None = None

    @property
    def mode(self) -> str | None:
        c = next(iter(self.clients.values()), None)
        return None if c is None else c.get("message_model")

    @property
    def consume_mode(self) -> str | None:
        c = next(iter(self.clients.values()), None)
        return None if c is None else c.get("consume_mode")


class TraceStats:
    """Feed (line, event) pairs in trace order; `result()` gives the figures."""

    def __init__(self, path: str = "<events>"):
        self.path = path
        self.kinds: Counter = Counter()
        self.obs: dict[str, Counter] = {}
        self.first: dict | None = None
        self.ended: str | None = None
        self.produced: Counter = Counter()
        self.produced_tags: Counter = Counter()   # (topic, tags) of producer messages: the workload
        self.messages: list[tuple] = []  # producer messages: (topic, queue key, offset, msg_id, tags, code, props)
        self.groups: dict[str, _Group] = {}
        self.calls: dict[tuple, tuple] = {}   # (client, consume_id) -> (group, [(unit, origin)])
        self.client_group: dict[str, str] = {}
        self.last_ts = 0

    def group(self, name) -> _Group:
        g = self.groups.get(name)
        if g is None:
            g = self.groups[name] = _Group(name)
        return g

    # ------------------------------------------------------------------ events
    def feed(self, line, ev: dict) -> None:
        kind = ev.get("kind")
        self.kinds[kind] += 1
        self.last_ts = ev["ts"]
        o = ev.get("obs")
        if o is not None and o != "exact":
            self.obs.setdefault(kind, Counter())[o] += 1
        h = getattr(self, "_" + str(kind), None)
        if h is not None:
            h(line, ev)

    def _trace_started(self, line, ev):
        self.first = ev

    def _trace_ended(self, line, ev):
        self.ended = ev.get("reason")

    def _client_started(self, line, ev):
        g = self.group(_need(ev, "group", self.path, line))
        client = _need(ev, "client", self.path, line)
        g.clients[client] = ev
        self.client_group[client] = g.name
        subs = {t: (s.get("type"), s.get("expr")) for t, s in (ev.get("subscriptions") or {}).items()
                if isinstance(s, dict)}
        if g.subs is None:
            g.subs = subs
        elif subs != g.subs:
            g.subs_differ = True
        g.left_at.pop(client, None)

    def _message_stored(self, line, ev):
        topic = _need(ev, "topic", self.path, line)
        if ev.get("source") == "producer":
            self.produced[topic] += 1
            self.produced_tags[(topic, ev.get("tags"))] += 1
            self.messages.append((topic, _qkey(ev), ev.get("offset"), _need(ev, "msg_id", self.path, line),
                                  ev.get("tags"), ev.get("tags_code"), ev.get("props")))
        elif topic.startswith(DLQ_PREFIX):
            self.group(topic[len(DLQ_PREFIX):]).dlq_ids.add(_need(ev, "msg_id", self.path, line))

    def _message_dead_lettered(self, line, ev):
        self.group(_need(ev, "group", self.path, line)).dead_lettered_ids.add(_need(ev, "msg_id", self.path, line))

    def _consume_started(self, line, ev):
        g = self.group(_need(ev, "group", self.path, line))
        client = _need(ev, "client", self.path, line)
        ids = _need(ev, "msg_ids", self.path, line)
        origins = ev.get("origin_msg_ids") or ids
        retries = ev.get("reconsume_list") or [0] * len(ids)
        q = _qkey(ev)
        unit = client if g.mode == "BROADCASTING" else None
        g.calls += 1
        g.deliveries += len(ids)
        if q[0].startswith(RETRY_PREFIX):
            g.retry_topic_deliveries += len(ids)
        keys = []
        for i, origin in enumerate(origins):
            k = (unit, origin)
            prev = g.last.get(k)
            if prev is not None:
                g.dups[self._cause(g, prev, client, q, ids[i] != origin or (retries[i] if i < len(retries) else 0))] += 1
            g.last[k] = _Delivery(client, q, ev["ts"])
            keys.append(k)
        self.calls[(client, ev.get("consume_id"))] = (g.name, keys)

    def _cause(self, g: _Group, prev: _Delivery, client, q, is_retry_copy) -> str:
        """Why a message came to the same unit again: the listener asked for it (retry), the
        previous receiver crashed or froze, an operator reset the offset, the queue moved (a
        rebalance: another client, or the same one after its ProcessQueue was dropped)."""
        if prev.failed:
            return "retry"
        left = g.left_at.get(prev.client)
        if prev.client != client and left is not None and left[0] >= prev.ts:
            return left[1]
        if g.reset_at is not None and g.reset_at >= prev.ts:
            return "reset"
        if prev.client != client:
            return "rebalance"
        d = g.dropped_at.get((client, prev.queue))
        if d is not None and d >= prev.ts:
            return "rebalance"
        if is_retry_copy:
            return "retry"
        return "other"

    def _consume_finished(self, line, ev):
        call = self.calls.pop((ev.get("client"), ev.get("consume_id")), None)
        if call is None:
            return
        g = self.groups[call[0]]
        status = ev.get("status")
        ok = ORDERLY_OK if g.consume_mode == "ORDERLY" else CONCURRENT_OK
        keys = call[1]
        if ev.get("dropped") and g.consume_mode != "ORDERLY":
            failed_from = len(keys)          # the result was not processed: nothing sent back
        elif status not in ok:
            failed_from = 0
        else:
            ack = ev.get("ack_index")
            failed_from = len(keys) if ack is None or g.consume_mode == "ORDERLY" else ack + 1
        if failed_from < len(keys):
            g.failed_calls += 1
        for i, k in enumerate(keys):
            d = g.last.get(k)
            if d is not None:
                d.finished = True
                d.failed = i >= failed_from

    def _consume_resubmitted(self, line, ev):
        pass  # the messages stay in the ProcessQueue; their next consume_started is a retry

    def _send_back_requested(self, line, ev):
        self.group(_need(ev, "group", self.path, line)).send_backs_requested += 1

    def _message_sent_back(self, line, ev):
        if ev.get("outcome") in ("retry", "dlq"):
            self.group(_need(ev, "group", self.path, line)).send_backs_accepted += 1

    def _offset_committed(self, line, ev):
        g = self.group(_need(ev, "group", self.path, line))
        g.committed[_qkey(ev)] = _need(ev, "offset", self.path, line)
        if ev.get("source") == "reset":
            g.reset_at = ev["ts"]

    # ---- who holds which queue (clustering reassignment times)
    def _pq_created(self, line, ev):
        g = self.group(_need(ev, "group", self.path, line))
        client, q, ts = ev["client"], _qkey(ev), ev["ts"]
        if q not in g.start_offset and ev.get("offset") is not None:
            g.start_offset[q] = ev["offset"]
        qs = g.queues.get(q)
        if qs is None:
            qs = g.queues[q] = _QueueHolders()
        if client in qs.holders:
            return
        qs.holders[client] = ts
        if len(qs.holders) > 1:
            qs.waiting.add(client)
            if qs.shared_since is None:
                qs.shared_since = ts
        elif qs.released is not None:
            was, rts, rkind = qs.released
            qs.released = None
            if was != client:
                g.reassign.append({"queue": qname(q), "from": was, "to": client, "ms": ts - rts, "after": rkind})

    def _release(self, g: _Group, client, q, ts, kind):
        qs = g.queues.get(q)
        if qs is None or client not in qs.holders:
            return
        del qs.holders[client]
        qs.waiting.discard(client)
        if len(qs.holders) <= 1 and qs.shared_since is not None:
            g.overlaps.append({"queue": qname(q), "ms": ts - qs.shared_since})
            qs.shared_since = None
        if qs.holders:
            # another client took the queue before this one let it go: a negative time (overlap)
            for other in sorted(qs.waiting):
                g.reassign.append({"queue": qname(q), "from": client, "to": other,
                                   "ms": qs.holders[other] - ts, "after": kind})
            qs.waiting.clear()
            qs.released = None
        else:
            qs.released = (client, ts, kind)

    def _pq_dropped(self, line, ev):
        g = self.group(_need(ev, "group", self.path, line))
        q = _qkey(ev)
        g.dropped_at[(ev["client"], q)] = ev["ts"]
        if ev.get("reason") == "reset":
            g.reset_at = ev["ts"]
        self._release(g, ev["client"], q, ev["ts"], "pq_dropped")

    def _pq_removed(self, line, ev):
        g = self.group(_need(ev, "group", self.path, line))
        self._release(g, ev["client"], _qkey(ev), ev["ts"], "pq_removed")

    def _leave(self, line, ev, cause=None):
        g = self.group(_need(ev, "group", self.path, line))
        client = _need(ev, "client", self.path, line)
        if cause is not None:
            g.left_at[client] = (ev["ts"], cause)
        for q, qs in g.queues.items():
            if client in qs.holders:
                self._release(g, client, q, ev["ts"], ev["kind"])

    def _client_stopped(self, line, ev):
        self._leave(line, ev)

    def _client_crashed(self, line, ev):
        self._leave(line, ev, "crash")

    def _consumer_unregistered(self, line, ev):
        self._leave(line, ev)

    def _client_paused(self, line, ev):
        g = self.group(_need(ev, "group", self.path, line))
        g.left_at[_need(ev, "client", self.path, line)] = (ev["ts"], "pause")

    # ------------------------------------------------------------------ figures
    def result(self) -> dict:
        first = self.first or {}
        out = {"path": str(self.path), "scenario": first.get("scenario"), "profile": first.get("profile"),
               "seed": first.get("seed"), "events": sum(self.kinds.values()), "ended": self.ended,
               "kinds": dict(sorted(self.kinds.items())),
               "observed": {k: dict(c) for k, c in sorted(self.obs.items())},
               "produced": dict(sorted(self.produced.items())),
               "produced_tags": {t: {str(tag): n for (tt, tag), n in sorted(self.produced_tags.items(), key=str)
                                     if tt == t} for t in sorted(self.produced)},
               "groups": {}}
        for name in sorted(self.groups):
            g = self.groups[name]
            if not g.clients and not g.deliveries:
                continue  # a group named only by a DLQ topic or offsets, with no consumer in the trace
            out["groups"][name] = self._group_figures(g)
        return out

    def _absent(self, *kinds) -> bool:
        return not any(self.kinds.get(k) for k in kinds)

    def _sampled(self, *kinds) -> list[str]:
        return [k for k in kinds if k in self.obs]

    def _group_figures(self, g: _Group) -> dict:
        f: dict[str, Any] = {}
        notes: dict[str, str] = {}

        def na(name, why):
            f[name] = None
            notes[name] = why

        f["mode"] = g.mode
        f["consume_mode"] = g.consume_mode
        f["clients"] = len(g.clients)
        subs = g.subs or {}
        f["subscriptions"] = {t: e for t, (_, e) in sorted(subs.items())}
        if g.subs_differ:
            notes["subscriptions"] = "the group's clients subscribe differently; the first client's are shown"
        user_topics = [t for t in subs if not t.startswith(RETRY_PREFIX)]
        f["produced"] = sum(self.produced.get(t, 0) for t in user_topics)
        if self._absent("consume_started"):
            for k in ("listener_calls", "deliveries", "delivered", "duplicates", "retry_topic_deliveries",
                      "never_consumed"):
                na(k, "the trace has no consume_started events")
        else:
            f["listener_calls"] = g.calls
            f["deliveries"] = g.deliveries
            f["delivered"] = len(g.last)
            f["duplicates"] = g.deliveries - len(g.last)
            if self._absent("consume_finished") and f["duplicates"]:
                notes["duplicates"] = "no consume_finished events: causes other than a crash or a rebalance are unknown"
            for c in CAUSES:
                f["duplicates_" + c] = g.dups.get(c, 0)
            f["retry_topic_deliveries"] = g.retry_topic_deliveries
            self._never_consumed(g, f, notes, user_topics)
        if self._absent("consume_finished"):
            na("failed_calls", "the trace has no consume_finished events")
        else:
            f["failed_calls"] = g.failed_calls
        concurrent_clustering = g.mode == "CLUSTERING" and g.consume_mode == "CONCURRENTLY"
        for name, kind, value in (("send_backs_requested", "send_back_requested", g.send_backs_requested),
                                  ("send_backs_accepted", "message_sent_back", g.send_backs_accepted)):
            if not self._absent(kind) or (concurrent_clustering and not g.failed_calls
                                          and not self._absent("consume_finished")):
                f[name] = value  # nothing failed, so nothing to send back: a true zero
            else:
                na(name, f"the trace has no {kind} events")
        if self._absent("message_stored", "message_dead_lettered"):
            na("dlq", "the trace has neither message_stored nor message_dead_lettered events")
        else:
            f["dlq"] = len(g.dlq_ids | g.dead_lettered_ids)
        if self._absent("offset_committed"):
            na("committed", "the trace has no offset_committed events")
        else:
            f["committed"] = {qname(q): v for q, v in sorted(g.committed.items(), key=lambda kv: kv[0])}
        if g.mode != "CLUSTERING":
            na("reassign_ms", "not applicable: queues are reassigned only in clustering mode")
        elif self._absent("pq_created"):
            na("reassign_ms", "the trace has no pq_created events")
        else:
            times = [r["ms"] for r in g.reassign]
            f["reassignments"] = len(times)
            f["reassign_ms"] = {"list": times, "min": min(times) if times else None,
                                "median": median(times) if times else None, "max": max(times) if times else None}
            f["reassign_detail"] = g.reassign
            # two clients holding one queue at once (ProcessQueues on both): where concurrent
            # duplicates around a rebalance come from; still open at the end counts to the end
            open_ = [{"queue": qname(q), "ms": self.last_ts - qs.shared_since, "open": True}
                     for q, qs in sorted(g.queues.items()) if qs.shared_since is not None]
            ov = g.overlaps + open_
            f["overlaps"] = len(ov)
            f["overlap_max_ms"] = max((o["ms"] for o in ov), default=None)
            f["overlap_detail"] = ov
            s = self._sampled("pq_created", "pq_dropped", "pq_removed", "consumer_unregistered")
            if s:
                notes["reassign_ms"] = (f"from sampled events ({', '.join(s)}): each time is exact to within the "
                                        "recorder's polling period")
        f["notes"] = notes
        return f

    def _never_consumed(self, g: _Group, f, notes, user_topics):
        """Producer messages on the group's topics that match its subscription and that no unit
        of the group consumed. Below the group's first pull offset of a queue they were skipped
        by design (CONSUME_FROM_LAST_OFFSET on a first start) and are counted apart."""
        units = [None] if g.mode != "BROADCASTING" else sorted(g.clients)
        missing = skipped = filtered = unknown = 0
        subs = g.subs or {}
        for topic, q, offset, msg_id, tags, code, props in self.messages:
            if topic not in user_topics:
                continue
            typ, expr = subs[topic]
            _, match = decide(subscription(typ, expr), tags, code, props)
            if match is None:
                unknown += 1
                continue
            if not match:
                filtered += 1
                continue
            start = g.start_offset.get(q)
            for u in units:
                if (u, msg_id) in g.last:
                    continue
                if start is not None and offset is not None and offset < start:
                    skipped += 1
                else:
                    missing += 1
        f["never_consumed"] = missing
        f["skipped_before_start"] = skipped
        f["filtered_out"] = filtered
        if unknown:
            notes["never_consumed"] = f"{unknown} messages whose match with the subscription is unknown are left out"


def trace_stats(path, progress=None) -> dict:
    """The figures of the trace at `path` (any format traces.io reads). The events are read
    without schema validation so that a trace the checker refuses still has figures; a line
    that is not an event, or an event without a field a figure needs, is a TraceInputError."""
    st = TraceStats(path)
    it = read_events(path, validate=False, progress=progress)
    first = True
    for line, ev in it:
        if first:
            if ev.get("kind") != "trace_started":
                raise TraceInputError(path, line, f"the first event must be trace_started, got {ev.get('kind')!r}")
            first = False
        if not isinstance(ev.get("ts"), int) or isinstance(ev.get("ts"), bool):
            raise TraceInputError(path, line, "expected an integer ts on every event")
        st.feed(line, ev)
    if first:
        raise TraceInputError(path, None, "empty trace: expected a trace_started event first")
    return st.result()


def stats_of_events(events: Iterable[dict], path: str = "<events>") -> dict:
    """The figures of events given in order (tests, the reference run in memory)."""
    st = TraceStats(path)
    for i, ev in enumerate(events, start=1):
        st.feed(i, ev)
    return st.result()


def verdict(path, profile=None) -> dict:
    """The checker's verdict on the trace at `path`: holds, violated (with the invariants that
    failed, counted), or refused (the checker rejected the input; the message says why)."""
    from rocketspec.spec.replay import check_trace

    try:
        rep = check_trace(path, profile, max_listed=20)
    except TraceInputError as exc:
        return {"verdict": "refused", "errors": None, "message": str(exc), "invariants": {}, "warnings": None}
    d = rep.to_dict()
    inv = Counter(v["invariant"] for v in d["violations"])
    return {"verdict": d["verdict"], "profile": d["profile"], "errors": d["errors"], "invariants": dict(sorted(inv.items())),
            "warnings": len(d["warnings"]), "warning_invariants": dict(sorted(Counter(w["invariant"] for w in d["warnings"]).items())),
            "message": None}


__all__ = ["TraceStats", "trace_stats", "stats_of_events", "verdict", "CAUSES", "qname"]
