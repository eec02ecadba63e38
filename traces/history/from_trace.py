"""A full trace yields its history: keep what a user sees, drop the internals.

Produce: `message_stored` with source producer (its queue, offset, tags, keys, properties).
Consume: a `consume_started` and its `consume_finished` (one record per message of the batch;
the listener's status, and ack_index for a partly acknowledged concurrent batch). Dead letter:
`message_dead_lettered`. POP (docs/pop.md): a POP listener call (`pop_consume_started` and its
`pop_consume_finished`) is a consume record per message, as the client's consume trace hook
records it (ConsumeMessagePopConcurrentlyService runs the same hooks as a pull consumer); its
queue and offset are the copy's (a revived copy's: the POP retry topic's), its deadline the
handle's (`message_popped`, moved by `invisible_time_changed`); the proxy's `pop_dead_lettered`
is a dead letter. Disruptions: consumers starting, stopping, crashing, pausing, a broker
restarting, a consumer unregistered by the broker, a one-way call lost. Resets: an offset the
broker committed with source reset. Retention: `messages_deleted`, and a snapshot's min offset.
The trace is complete when it ended quiescent: every record is there and nothing is in flight.
"""
from __future__ import annotations

from ..kinds import KINDS
from .model import (SUCCESS_STATUSES, Consume, DeadLetter, Disruption, Expired, History, Produce, Reset)

# trace kind -> what a user sees of it (a disruption), for the kinds that are one (the registry's
# Kind.history "disruption:<what>")
_DISRUPTIONS = {n: k.history[len("disruption:"):] for n, k in KINDS.items()
                if k.history is not None and k.history.startswith("disruption:")}


def _queue(ev):
    return (ev["topic"], ev["broker"], ev["queue"])


def stream_events(h: History, events):
    """Yield the history records of `events` ((line, event) pairs of a schema-v1/v2 trace, in
    order), keeping `h`'s header (groups, completeness) up to date as they pass."""
    source = h.source
    h.complete = None           # known at trace_ended
    # a retry or DLQ copy -> the producer's message, until the copy is consumed (a producer's own
    # message is its own origin: nothing to hold)
    origin: dict[str, str] = {}
    started: dict[tuple, tuple] = {}     # (client, consume_id) -> (consume_started, line)
    # POP: handle -> what its pop handed out ([queue, offset, origin id, deadline, copy id]), until it is
    # acked, replaced, revived or dead-lettered; a call keeps its own reference
    handles: dict[str, list] = {}
    pop_started: dict[tuple, tuple] = {}  # (client, consume_id) -> (pop_consume_started, line, its handles' facts)
    ended = None
    n = 0
    for line, ev in events:
        n += 1
        k = ev["kind"]
        if k == "message_stored":
            if ev["origin_msg_id"] != ev["msg_id"]:
                origin[ev["msg_id"]] = ev["origin_msg_id"]
            if ev["source"] == "producer":
                yield Produce(ev["msg_id"], ev["topic"], ev["ts"], True, _queue(ev), ev["offset"], ev.get("tags"),
                              ev.get("keys"), ev.get("props"), (ev.get("props") or {}).get("SHARDING_KEY"),
                              f"{source}:{line}")
        elif k == "consume_started":
            started[(ev["client"], ev["consume_id"])] = (ev, f"{source}:{line}")
        elif k == "consume_finished":
            st = started.pop((ev["client"], ev["consume_id"]), None)
            if st is not None:
                yield from _consumed(st[0], ev, st[1], origin)
        elif k == "message_popped":
            handles[ev["handle"]] = [_queue(ev), ev["offset"], ev.get("origin_msg_id") or origin.get(ev["msg_id"], ev["msg_id"]),
                                     ev["pop_time"] + ev["invisible_time"], ev["msg_id"]]
        elif k == "invisible_time_changed":
            held = handles.pop(ev["handle"], None)
            if held is not None and ev["result"] == "changed" and ev.get("new_handle") is not None:
                held[3] = ev["new_pop_time"] + ev["invisible_time"]
                handles[ev["new_handle"]] = held
            elif held is not None:
                handles[ev["handle"]] = held
        elif k == "message_acked" and ev["result"] == "acked":
            handles.pop(ev["handle"], None)
        elif k == "message_revived":
            if ev.get("handle") is not None and ev["outcome"] == "retry":
                handles.pop(ev["handle"], None)
            if ev["outcome"] == "retry" and ev.get("target_msg_id") is not None:
                origin[ev["target_msg_id"]] = ev.get("origin_msg_id") or origin.get(ev["msg_id"], ev["msg_id"])
        elif k == "pop_consume_started":
            pop_started[(ev["client"], ev["consume_id"])] = (ev, f"{source}:{line}",
                                                             [handles.get(hd) for hd in ev["handles"]])
        elif k == "pop_consume_finished":
            st = pop_started.pop((ev["client"], ev["consume_id"]), None)
            if st is not None:
                yield from _pop_consumed(*st, ev, origin)
        elif k == "pop_dead_lettered":
            yield DeadLetter(ev["group"], ev.get("origin_msg_id") or origin.get(ev["msg_id"], ev["msg_id"]), ev["ts"],
                             ev["reconsume_times"], f"{source}:{line}")
        elif k == "message_dead_lettered":
            yield DeadLetter(ev["group"], ev["origin_msg_id"], ev["ts"], ev["reconsume_times"], f"{source}:{line}")
        elif k == "messages_deleted":
            yield Expired(ev["ts"], _queue(ev), ev["min_offset"])
        elif k == "queue_snapshot" and ev["min_offset"] > 0:
            yield Expired(ev["ts"], _queue(ev), ev["min_offset"])
        elif k == "client_started":
            g = h.group(ev["group"])
            cfg = ev.get("config") or {}
            g.learn("consume_mode", ev["consume_mode"])
            g.learn("message_model", ev["message_model"])
            subs = {t: (s.get("type") or "TAG", s.get("expr") or "*") for t, s in (ev["subscriptions"] or {}).items()
                    if not t.startswith("%RETRY%")}
            g.learn("subscriptions", {**(g.subscriptions or {}), **subs})
            # a POP consumer: a push consumer in POP mode (its message_request_mode) or a
            # SimpleConsumer, which only pops
            if cfg.get("message_request_mode") == "POP" or cfg.get("client_type") == "SIMPLE":
                g.learn("pop", cfg.get("client_type") or "POP_PUSH")
            if "max_reconsume_times" in cfg:
                g.learn("max_reconsume_times", cfg["max_reconsume_times"])
            if cfg.get("consume_from_where") is not None:
                g.learn("consume_from_where", cfg["consume_from_where"])
            if "consume_timeout" in cfg:          # minutes, as DefaultMQPushConsumer.consumeTimeout
                g.learn("consume_timeout_ms", cfg["consume_timeout"] * 60000)
            if g.started_ts is None:
                g.started_ts = ev["ts"]
            g.members[ev["client"]] = [ev["ts"], None]
        elif k in ("client_stopped", "client_crashed") and ev["group"] in h.groups:
            m = h.groups[ev["group"]].members.get(ev["client"])
            if m is not None and m[1] is None:
                m[1] = ev["ts"]
        elif k == "offset_committed" and ev.get("source") == "reset":
            yield Reset(ev["ts"], ev["group"], (ev["topic"], ev["broker"], ev["queue"]), ev["offset"])
        elif k == "pq_dropped" and ev["reason"] == "reset":
            # a client-side recorder sees an operator's reset as its queues dropped for it
            yield Reset(ev["ts"], ev["group"], _queue(ev), None)
        elif k == "trace_ended":
            ended = ev["reason"]
        if k in _DISRUPTIONS:
            what = _DISRUPTIONS[k]
            if k == "consumer_unregistered" and ev["reason"] == "shutdown":
                what = "left"           # the broker's side of a graceful shutdown, not a fault
            yield Disruption(ev["ts"], what, ev.get("group"), ev.get("client"))
    # Batches still running when the trace ended: delivered, result unknown.
    for st, where in started.values():
        yield from _consumed(st, None, where, origin)
    for st, where, held in pop_started.values():
        yield from _pop_consumed(st, where, held, None, origin)
    h.records = n
    h.complete = ended == "quiescent"
    if not h.complete:
        h.notes.append(f"the trace ended {ended or 'without trace_ended'}, not quiescent: messages may still "
                       "have been in flight, so an absent consume is unobserved, not lost")


def _consumed(st: dict, fin: dict | None, where: str, origin: dict):
    status = None if fin is None else fin["status"]
    ok = None if status is None else status in SUCCESS_STATUSES
    ack = None if fin is None else fin.get("ack_index")
    n = len(st["msg_ids"])
    origins = st.get("origin_msg_ids") or [origin.get(m, m) for m in st["msg_ids"]]
    recons = st.get("reconsume_list") or [None] * n
    batch = f"{st['client']}/{st['consume_id']}"
    end = None if fin is None else fin["ts"]
    for i, (copy, oid, off, rc) in enumerate(zip(st["msg_ids"], origins, st["offsets"], recons)):
        # A concurrent batch acknowledged up to ack_index: the rest failed (processConsumeResult).
        success = ok if not ok or ack is None else i <= ack
        if success and copy in origin and st.get("origin_msg_ids"):
            del origin[copy]        # the event names its origins: the map is only for older traces
        yield Consume(st["group"], oid, st["ts"], end, st["client"], _queue(st), off, rc, success, copy, batch, where)


def _pop_consumed(st: dict, where: str, held: list, fin: dict | None, origin: dict):
    """The consume records of one POP listener call: the trace hook's SubBefore/SubAfter pair per
    message (success: the call returned CONSUME_SUCCESS), with what its pop handed out."""
    status = None if fin is None else fin["status"]
    ok = None if status is None else status in SUCCESS_STATUSES
    ack = None if fin is None else fin.get("ack_index")
    recons = st.get("reconsume_list") or [None] * len(st["msg_ids"])
    batch = f"{st['client']}/pop/{st['consume_id']}"
    end = None if fin is None else fin["ts"]
    for i, (copy, rc, h) in enumerate(zip(st["msg_ids"], recons, held)):
        # the stored copy's id is the pop's (a client names the message by its UNIQ_KEY)
        queue, off, oid, dl, copy = h if h is not None else ((st["topic"], st["broker"], None), None,
                                                            origin.get(copy, copy), None, copy)
        success = ok if not ok or ack is None else i <= ack
        yield Consume(st["group"], oid, st["ts"], end, st["client"], queue, off, rc, success, copy, batch, where,
                      deadline=dl)


def history_from_events(events, source: str = "<events>") -> History:
    """The whole history of `events` ((line, event) pairs), held in memory."""
    h = new_history(source)
    for rec in stream_events(h, events):
        h.keep(rec)
    return h


def new_history(source: str) -> History:
    return History(source=str(source), format="trace", complete=None,
                   observes=frozenset({"dead_letters", "disruptions", "resets", "retention", "membership"}))


def stream_trace(path, h: History):
    from ...traces.io import read_events

    return stream_events(h, read_events(path))


def history_from_trace(path) -> History:
    from ...traces.io import read_events

    return history_from_events(read_events(path), str(path))
