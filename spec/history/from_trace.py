"""A full trace yields its history: keep what a user sees, drop the internals.

Produce: `message_stored` with source producer (its queue, offset, tags, keys, properties).
Consume: a `consume_started` and its `consume_finished` (one record per message of the batch;
the listener's status, and ack_index for a partly acknowledged concurrent batch). Dead letter:
`message_dead_lettered`. Disruptions: consumers starting, stopping, crashing, pausing, a broker
restarting, a consumer unregistered by the broker, a one-way call lost. Resets: an offset the
broker committed with source reset. Retention: `messages_deleted`, and a snapshot's min offset.
The trace is complete when it ended quiescent: every record is there and nothing is in flight.
"""
from __future__ import annotations

from .model import (SUCCESS_STATUSES, Consume, DeadLetter, Disruption, Expired, History, Produce, Reset)

# trace kind -> what a user sees of it (a disruption), for the kinds that are one
_DISRUPTIONS = {
    "client_started": "joined", "client_stopped": "left", "client_crashed": "crashed",
    "client_paused": "paused", "client_resumed": "resumed", "broker_restarted": "broker restarted",
    "consumer_unregistered": "unregistered", "oneway_lost": "one-way call lost",
}


def _queue(ev):
    return (ev["topic"], ev["broker"], ev["queue"])


def history_from_events(events, source: str = "<events>") -> History:
    """`events`: (line, event) pairs of a schema-v1/v2 trace, in order."""
    h = History(source=source, format="trace", complete=False,
                observes=frozenset({"dead_letters", "disruptions", "resets", "retention", "membership"}))
    origin: dict[str, str] = {}          # stored copy -> the producer's message
    started: dict[tuple, tuple] = {}     # (client, consume_id) -> (consume_started, line)
    ended = None
    n = 0
    for line, ev in events:
        n += 1
        k = ev["kind"]
        where = f"{source}:{line}"
        if k == "message_stored":
            origin[ev["msg_id"]] = ev["origin_msg_id"]
            if ev["source"] == "producer":
                h.produces.append(Produce(ev["msg_id"], ev["topic"], ev["ts"], True, _queue(ev), ev["offset"],
                                          ev.get("tags"), ev.get("keys"), ev.get("props"),
                                          (ev.get("props") or {}).get("SHARDING_KEY"), where))
        elif k == "consume_started":
            started[(ev["client"], ev["consume_id"])] = (ev, where)
        elif k == "consume_finished":
            st = started.pop((ev["client"], ev["consume_id"]), None)
            if st is not None:
                _consumed(h, st[0], ev, st[1], origin)
        elif k == "message_dead_lettered":
            h.dead_letters.append(DeadLetter(ev["group"], ev["origin_msg_id"], ev["ts"], ev["reconsume_times"], where))
        elif k == "client_started":
            g = h.group(ev["group"])
            cfg = ev.get("config") or {}
            g.consume_mode, g.message_model = ev["consume_mode"], ev["message_model"]
            subs = {t: (s.get("type") or "TAG", s.get("expr") or "*") for t, s in (ev["subscriptions"] or {}).items()
                    if not t.startswith("%RETRY%")}
            g.subscriptions = {**(g.subscriptions or {}), **subs}
            if "max_reconsume_times" in cfg:
                g.max_reconsume_times = cfg["max_reconsume_times"]
            if "consume_timeout" in cfg:          # minutes, as DefaultMQPushConsumer.consumeTimeout
                g.consume_timeout_ms = cfg["consume_timeout"] * 60000
            if g.started_ts is None:
                g.started_ts = ev["ts"]
            g.members[ev["client"]] = [ev["ts"], None]
        elif k in ("client_stopped", "client_crashed") and ev["group"] in h.groups:
            m = h.groups[ev["group"]].members.get(ev["client"])
            if m is not None and m[1] is None:
                m[1] = ev["ts"]
        elif k == "offset_committed" and ev.get("source") == "reset":
            h.resets.append(Reset(ev["ts"], ev["group"], (ev["topic"], ev["broker"], ev["queue"]), ev["offset"]))
        elif k == "pq_dropped" and ev["reason"] == "reset":
            # a client-side recorder sees an operator's reset as its queues dropped for it
            h.resets.append(Reset(ev["ts"], ev["group"], _queue(ev), None))
        elif k == "messages_deleted":
            h.expired.append(Expired(ev["ts"], _queue(ev), ev["min_offset"]))
        elif k == "queue_snapshot" and ev["min_offset"] > 0:
            h.expired.append(Expired(ev["ts"], _queue(ev), ev["min_offset"]))
        elif k == "trace_ended":
            ended = ev["reason"]
        if k in _DISRUPTIONS:
            what = _DISRUPTIONS[k]
            if k == "consumer_unregistered" and ev["reason"] == "shutdown":
                what = "left"           # the broker's side of a graceful shutdown, not a fault
            h.disruptions.append(Disruption(ev["ts"], what, ev.get("group"), ev.get("client")))
    # Batches still running when the trace ended: delivered, result unknown.
    for st, where in started.values():
        _consumed(h, st, None, where, origin)
    h.records = n
    h.complete = ended == "quiescent"
    if not h.complete:
        h.notes.append(f"the trace ended {ended or 'without trace_ended'}, not quiescent: messages may still "
                       "have been in flight, so an absent consume is unobserved, not lost")
    return h


def _consumed(h: History, st: dict, fin: dict | None, where: str, origin: dict) -> None:
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
        h.consumes.append(Consume(st["group"], oid, st["ts"], end, st["client"], _queue(st), off, rc, success,
                                  copy, batch, where))


def history_from_trace(path) -> History:
    from ...traces.io import read_events

    return history_from_events(read_events(path), str(path))
