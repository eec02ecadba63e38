"""OpenChaos history files (openmessaging/openchaos, the MQ model: QueueClient and Recorder).

One line per record, tab-separated, null strings written "null" (the recorder's String.format):

  request   clientId  operation  REQUEST   value  shardingKey  timestamp  extraInfo
  response  clientId  operation  RESPONSE  result  value  shardingKey  timestamp  sendLatency
            extraInfo  [endToEndLatency]
  fault     fault  faultName  operation  timestamp

operation is enqueue or dequeue; result SUCCESS, FAILURE or UNKNOWN. The value is the message
body the harness generated, unique per enqueue: the history's message identity. The RocketMQ
driver writes SendResult.toString() as an enqueue's extraInfo (its messageQueue and queueOffset
give the queue and offset) and "receive status [ msgId = .., topic = .., group = .., queueId =
.., queueOffset = ..]" for a dequeue; with an ordering test the sharding key is the message's
keys. Its consumers subscribe to the chaos topic with "*" in one clustering group. Dequeue
receipts are points in time (the listener's call is not timed) and name no broker, so
orderly exclusivity cannot be judged and order is judged per sharding key.

The harness writes every invocation and response itself, so the history is complete by default
(its own checker counts an unconsumed message as lost).
"""
from __future__ import annotations

import re

from ...errors import UserError
from .model import Consume, Disruption, History, Problem, Produce

_SEND = re.compile(r"messageQueue=MessageQueue \[topic=(?P<topic>[^,\]]*), brokerName=(?P<broker>[^,\]]*), "
                   r"queueId=(?P<queue>-?\d+)\], queueOffset=(?P<offset>-?\d+)")
_RECV = re.compile(r"receive status \[ msgId = (?P<msg>[^,]*), topic = (?P<topic>[^,]*), group = (?P<group>[^,]*), "
                   r"queueId = (?P<queue>-?\d+), queueOffset = (?P<offset>-?\d+)\]")
RESULTS = ("SUCCESS", "FAILURE", "UNKNOWN")
DEFAULT_GROUP = "ChaosTest_ConsumerGroup"   # QueueClient.SUBSCRIPTION_NAME


def _null(s):
    return None if s == "null" else s


def lines(path):
    """(line, text) for each non-blank line of the file."""
    try:
        fh = open(path, encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UserError(f"cannot read: {exc.strerror}", file=path) from None
    with fh:
        for line, raw in enumerate(fh, 1):
            text = raw.rstrip("\r\n")
            if text.strip():
                yield line, text


def read_openchaos(path, rows=None) -> History:
    """`rows`: (line, text) pairs as `lines` yields them, to read lines held in memory (the
    history minimizer's candidates) under the name `path`; default: the file's."""
    path = str(path)
    h = History(source=path, format="openchaos", complete=True, observes=frozenset({"disruptions"}))
    n = 0
    topics = set()
    for line, text in (lines(path) if rows is None else rows):
        n += 1
        f = text.split("\t")
        try:
            _record(h, f, f"{path}:{line}", topics)
        except ValueError as exc:
            h.problems.append(Problem(path, line, str(exc)))
    h.records = n
    if n == 0:
        raise UserError("empty OpenChaos history", file=path)
    # QueueClient.setup starts every consumer before the first invocation
    first = min([p.ts for p in h.produces if p.ts is not None] + [c.ts for c in h.consumes if c.ts is not None],
                default=None)
    for g in h.groups.values():
        g.message_model = "CLUSTERING"
        g.subscriptions = {t: ("TAG", "*") for t in topics}
        g.started_ts = first
        if first is not None:       # the consumers joined the group then: a rebalance
            for client in sorted({c.client for c in h.consumes if c.group == g.name}):
                h.disruptions.append(Disruption(first, "joined", g.name, client))
    h.disruptions.sort(key=lambda d: d.ts)
    h.notes.append("subscriptions: the RocketMQ driver subscribes its one clustering group to the chaos topic with "
                   "'*'; consume mode unknown (declare ORDERLY with --groups for an ordering test)")
    return h


def _record(h: History, f: list[str], where: str, topics: set) -> None:
    if f[0] == "fault":
        if len(f) < 4:
            raise ValueError(f"fault line with {len(f)} fields: expected fault, name, operation, timestamp")
        h.disruptions.append(Disruption(_int(f[3], "timestamp"), "fault", None, None, f"{f[1]} {f[2]}"))
        return
    if len(f) < 3 or f[2] not in ("REQUEST", "RESPONSE"):
        raise ValueError("expected clientId, operation, REQUEST|RESPONSE, ... or a fault line")
    client, op = f[0], f[1]
    _int(client, "clientId")
    if op not in ("enqueue", "dequeue"):
        raise ValueError(f"operation {op!r}: expected enqueue or dequeue")
    if f[2] == "REQUEST":
        if len(f) < 6:
            raise ValueError(f"REQUEST line with {len(f)} fields: expected at least 6")
        _int(f[5], "timestamp")
        return
    if len(f) < 9:
        raise ValueError(f"RESPONSE line with {len(f)} fields: expected at least 9")
    result, value, key, ts, extra = f[3], _null(f[4]), _null(f[5]), _int(f[6], "timestamp"), _null(f[8])
    if result not in RESULTS:
        raise ValueError(f"result {result!r}: expected one of {', '.join(RESULTS)}")
    if op == "enqueue":
        if value is None:
            raise ValueError("enqueue response without a value")
        m = _SEND.search(extra or "")
        topic = m["topic"] if m else None
        if topic:
            topics.add(topic)
        ok = {"SUCCESS": True, "FAILURE": False, "UNKNOWN": None}[result]
        h.produces.append(Produce(value, topic, ts, ok, (m["topic"], m["broker"], int(m["queue"])) if m else None,
                                  int(m["offset"]) if m else None, None, key, None, key, where))
        return
    if result != "SUCCESS" or value is None:
        return                  # an empty poll
    m = _RECV.search(extra or "")
    group = m["group"] if m else DEFAULT_GROUP
    if m:
        topics.add(m["topic"])
    h.group(group)
    h.consumes.append(Consume(group, value, ts, ts, f"client{client}", None, int(m["offset"]) if m else None, None,
                              True, None, None, where))


def _int(s, name) -> int:
    try:
        return int(s)
    except ValueError:
        raise ValueError(f"{name} {s!r} is not an integer") from None


# ------------------------------------------------------------------ encoding (fixtures)

_FAULT_NAMES = {"client_crashed": "kill", "broker_restarted": "broker-restart", "client_paused": "pause",
                "client_resumed": "pause"}


def encode_trace(events, group_name: str | None = None) -> list[str]:
    """An OpenChaos history for a rocketspec trace, in the Recorder's layout: an enqueue
    request and response per producer message (SendResult as the RocketMQ driver prints it), a
    dequeue response per message a listener was called with, a fault line per crash, pause and
    broker restart. For fixtures and for comparing the levels."""
    out, stored, clients, started = [], {}, {}, {}

    def cid(name):
        return clients.setdefault(name, len(clients))

    for ev in events:
        k = ev["kind"]
        if k == "message_stored":
            stored[ev["msg_id"]] = ev
            if ev["source"] == "producer":
                key = ev.get("keys") or "null"
                send = (f"SendResult [sendStatus=SEND_OK, msgId={ev['msg_id']}, offsetMsgId={ev['msg_id']}, "
                        f"messageQueue=MessageQueue [topic={ev['topic']}, brokerName={ev['broker']}, "
                        f"queueId={ev['queue']}], queueOffset={ev['offset']}]")
                out.append(f"{cid('producer')}\tenqueue\tREQUEST\t{ev['msg_id']}\t{key}\t{ev['ts']}\tnull")
                out.append(f"{cid('producer')}\tenqueue\tRESPONSE\tSUCCESS\t{ev['msg_id']}\t{key}\t{ev['ts']}\t0\t"
                           f"{send}\t0")
        elif k == "consume_started":
            started[(ev["client"], ev["consume_id"])] = ev
        elif k == "consume_finished":
            # the driver's listener always returns CONSUME_SUCCESS: only successful calls map
            ev_fin, ev = ev, started.pop((ev["client"], ev["consume_id"]), None)
            if ev is None or ev_fin["status"] not in ("CONSUME_SUCCESS", "SUCCESS", "COMMIT"):
                continue
            origins = ev.get("origin_msg_ids") or [stored.get(m, {}).get("origin_msg_id", m) for m in ev["msg_ids"]]
            for m, oid, off in zip(ev["msg_ids"], origins, ev["offsets"]):
                first = stored.get(oid, {})
                key = first.get("keys") or "null"
                info = (f"receive status [ msgId = {oid}, topic = {first.get('topic', ev['topic'])}, group = "
                        f"{group_name or ev['group']}, queueId = {ev['queue']}, queueOffset = {off}]")
                out.append(f"{cid(ev['client'])}\tdequeue\tRESPONSE\tSUCCESS\t{oid}\t{key}\t{ev['ts']}\t0\t{info}\t0")
        elif k in _FAULT_NAMES:
            op = "end" if k == "client_resumed" else "start"
            out.append(f"fault\t{_FAULT_NAMES[k]}\t{op}\t{ev['ts']}")
    return out
