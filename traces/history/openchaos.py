"""OpenChaos history files (openmessaging/openchaos: the queue model's QueueClient and Recorder,
and its RocketMQ driver), read as the harness writes them.

`ChaosControl` names the file `<yyyy-MM-dd-HH-mm-ss>-<driver name>-chaos-history-file`; its
checkers write their verdicts beside it, the file name with "history" replaced
(`...-chaos-queue-result-file`, `...-order-result-file`: YAML of QueueTestResult and
OrderTestResult). One line per record, tab-separated; a null string is written "null"
(String.format):

  request   clientId  operation  REQUEST   value  shardingKey  timestamp  extraInfo           (7 fields)
  response  clientId  operation  RESPONSE  result  value  shardingKey  timestamp  sendLatency
            extraInfo  endToEndLatency                                                        (10 fields)
  fault     fault  faultName  start|end  timestamp                                              (4 fields)

Older Recorders (io.openmessaging.chaos) wrote fewer fields, read here too: until September
2020 REQUEST without extraInfo (6) and RESPONSE without extraInfo and endToEndLatency (8;
sendLatency was "latency"), then RESPONSE without endToEndLatency (9). A first-generation line
carries no SendResult or receipt: no topic, queue or offset (the one chaos topic is named
UNNAMED_TOPIC), and the dequeue value is the message body, the enqueued counter.

operation is enqueue or dequeue (a KV-model history's put/get is refused); result SUCCESS,
FAILURE or UNKNOWN. The value is a counter the harness draws per enqueue (SequenceGenerator),
unique in a run: the history's message identity. Each QueueClient (clientId) owns one producer
and one consumer. The RocketMQ driver:
- enqueue: `DefaultMQProducer.send` to the chaos topic; with an ordering test the sharding key
  is the message's keys and picks the queue; extraInfo is `SendResult.toString()`, whose
  messageQueue and queueOffset give the queue and offset. The driver hands it over in a field
  of the shared enum constant `InvokeResult.SUCCESS`, so with several clients at once the
  extraInfo of one enqueue line may be another send's result: the adapter keeps it as written
  and no guarantee judges by it alone (the dequeue receipt names the queue id the message was
  really read from);
- dequeue: one RESPONSE line per message, written by the listener (push: a
  `MessageListenerConcurrently` that always returns CONSUME_SUCCESS, so no retries) or per
  message of a `DefaultLitePullConsumer.poll` followed by `commitSync` (pull); extraInfo is
  "receive status [ msgId = <UNIQ_KEY>, topic = .., group = .., queueId = .., queueOffset = ..]",
  the shardingKey column is the message's keys. A receipt names no broker and the call is not
  timed (a point in time), so orderly exclusivity (H-ORDER-1) is skipped; the consumers are
  concurrent, so order (H-ORDER-2) is judged only for a group declared ORDERLY (--groups), per
  sharding key;
- consumers subscribe the chaos topic with "*" in one clustering group (ChaosTest_ConsumerGroup)
  and start before the first invocation (QueueClient.setup).

The harness writes every invocation and response itself, so the history is complete by default
(its own QueueChecker counts an unconsumed message as lost). Every line that cannot be read is
reported with the file and line, and counted.
"""
from __future__ import annotations

import re

from ...errors import UserError
from .model import Consume, Disruption, History, Produce
from .text import Unreadable, chunks, decode

_SEND = re.compile(r"messageQueue=MessageQueue \[topic=(?P<topic>[^,\]]*), brokerName=(?P<broker>[^,\]]*), "
                   r"queueId=(?P<queue>-?\d+)\], queueOffset=(?P<offset>-?\d+)")
_RECV = re.compile(r"receive status \[ msgId = (?P<msg>[^,]*), topic = (?P<topic>[^,]*), group = (?P<group>[^,]*), "
                   r"queueId = (?P<queue>-?\d+), queueOffset = (?P<offset>-?\d+)\]")
RESULTS = ("SUCCESS", "FAILURE", "UNKNOWN")
DEFAULT_GROUP = "ChaosTest_ConsumerGroup"   # QueueClient.SUBSCRIPTION_NAME
# Field counts by Recorder generation (openmessaging/openchaos, RequestLogEntry and
# ResponseLogEntry.toString): the first, io.openmessaging.chaos before September 2020, writes
# REQUEST with 6 fields and RESPONSE with 8 (no extraInfo, no endToEndLatency); from then until
# October 2020, 7 and 9 (extraInfo added); since, 7 and 10 (endToEndLatency added).
FIELDS = {"REQUEST": (6, 7), "RESPONSE": (8, 9, 10)}
# The first generation names no topic (no SendResult): every QueueClient sends to the one chaos
# topic the run created, whose name the history does not hold.
UNNAMED_TOPIC = "(the chaos topic)"


def _null(s):
    return None if s == "null" else s


def lines(path):
    """(line, text) for each non-blank line of the file; (line, Unreadable(why)) for a line that
    is not UTF-8."""
    n, rest = 0, b""
    for data in chunks(path):
        parts = (rest + data).split(b"\n")
        rest = parts.pop()
        for raw in parts:
            n += 1
            yield from _line(n, raw)
    if rest:
        yield from _line(n + 1, rest)


def _line(n, raw):
    text, bad = decode(raw.rstrip(b"\r"))
    if bad is not None:
        yield n, Unreadable(bad)
    elif text.strip():
        yield n, text


def stream_openchaos(path, h: History, rows=None):
    """Yield the history records of the OpenChaos history at `path`, keeping `h`'s header;
    `rows`: (line, text) pairs as `lines` yields them, to read lines held in memory (the history
    minimizer's candidates) under the name `path`; default: the file's."""
    path = str(path)
    n = 0
    st = {"first": None, "topics": set(), "clients": set(), "groups": set()}
    for line, text in (lines(path) if rows is None else rows):
        n += 1
        if isinstance(text, Unreadable):
            h.problem(path, line, text)
            continue
        try:
            yield from _record(h, text.split("\t"), f"{path}:{line}", st)
        except ValueError as exc:
            h.problem(path, line, str(exc))
    h.records = n
    if n == 0:
        raise UserError("empty OpenChaos history", file=path)
    h.notes.append("the RocketMQ driver subscribes one clustering group to the chaos topic with '*' and consumes "
                   "concurrently, always succeeding (declare ORDERLY with --groups for a driver that consumes in "
                   "order)")
    own = harness_verdict(path)
    if own:
        h.notes.append(own)


def harness_verdict(path) -> str | None:
    """OpenChaos's own QueueChecker verdict, from the result file beside the history (its name with
    "history" replaced by "queue-result"; YAML of QueueTestResult), as a note to compare with."""
    import os
    import re

    d, base = os.path.split(str(path))
    if "history" not in base:
        return None
    res = os.path.join(d, base.replace("history", "queue-result"))
    try:
        with open(res, encoding="utf-8", errors="replace") as fh:
            text = fh.read(1 << 20)
    except OSError:
        return None
    got = {k: m.group(1) for k in ("lostMessageCount", "duplicateMessageCount", "atLeastOnce", "atMostOnce")
           if (m := re.search(rf"^\s*{k}\s*:\s*(\S+)", text, re.M))}
    if not got:
        return None
    return (f"OpenChaos's own QueueChecker ({os.path.basename(res)}): " + ", ".join(f"{k} {v}" for k, v in got.items())
            + " (it counts every dequeue of a value after the first as a duplicate; H-DUP-1 judges each by its "
            "reason)")


def _group(h, name, st):
    g = h.group(name)
    if name not in st["groups"]:
        st["groups"].add(name)
        # QueueClient.setup starts every consumer before the first invocation
        g.learn("message_model", "CLUSTERING")
        g.learn("consume_mode", "CONCURRENTLY")
        if g.started_ts is None:
            g.started_ts = st["first"]
        _subscribe(g, st["topics"])
    return g


def _subscribe(g, topics):
    if "subscriptions" not in g.declared:
        g.subscriptions, g.subscriptions_inferred = {**(g.subscriptions or {}), **{t: ("TAG", "*") for t in topics}}, \
            False


def _record(h: History, f: list[str], where: str, st: dict):
    if f[0] == "fault":
        if len(f) != 4:
            raise ValueError(f"fault line with {len(f)} fields: expected 4 (fault, name, start|end, timestamp)")
        if f[2] not in ("start", "end"):
            raise ValueError(f"fault operation {f[2]!r}: expected start or end")
        yield Disruption(_int(f[3], "timestamp"), "fault", None, None, f"{f[1]} {f[2]}")
        return
    if len(f) < 3 or f[2] not in FIELDS:
        raise ValueError("expected clientId, operation, REQUEST|RESPONSE, ... or a fault line")
    client, op, typ = f[0], f[1], f[2]
    _int(client, "clientId")
    if op not in ("enqueue", "dequeue"):
        raise ValueError(f"operation {op!r}: expected enqueue or dequeue (a queue-model history)")
    if len(f) not in FIELDS[typ]:
        raise ValueError(f"{typ} line with {len(f)} fields: expected {' or '.join(map(str, FIELDS[typ]))} (the "
                         "Recorder's layouts: docs/history.md)")
    if typ == "REQUEST":
        ts = _int(f[5], "timestamp")
        if st["first"] is None:
            st["first"] = ts
        return
    result, value, key, ts = f[3], _null(f[4]), _null(f[5]), _int(f[6], "timestamp")
    extra = _null(f[8]) if len(f) >= 9 else None
    _int(f[7], "sendLatency")
    if len(f) == 10:
        _int(f[9], "endToEndLatency")
    if result not in RESULTS:
        raise ValueError(f"result {result!r}: expected one of {', '.join(RESULTS)}")
    if st["first"] is None:
        st["first"] = ts
    if op == "enqueue":
        if value is None:
            raise ValueError("enqueue response without a value")
        m = _SEND.search(extra or "")
        topic = m["topic"] if m else (UNNAMED_TOPIC if len(f) == 8 else None)
        if topic is not None and topic not in st["topics"]:
            st["topics"].add(topic)
            for g in h.groups.values():
                _subscribe(g, st["topics"])
        ok = {"SUCCESS": True, "FAILURE": False, "UNKNOWN": None}[result]
        yield Produce(value, topic, ts, ok, (m["topic"], m["broker"], int(m["queue"])) if m else None,
                      int(m["offset"]) if m else None, None, key, None, key, where)
        return
    if result != "SUCCESS":
        if value is not None:
            raise ValueError(f"a dequeue {result} with a value {value!r}: only SUCCESS carries a message")
        return                  # an empty poll
    if value is None:
        raise ValueError("a dequeue SUCCESS without a value")
    m = _RECV.search(extra or "")
    if m is None and len(f) == 8 and UNNAMED_TOPIC not in st["topics"]:
        st["topics"].add(UNNAMED_TOPIC)
        for g in h.groups.values():
            _subscribe(g, st["topics"])
    if m and m["topic"] not in st["topics"]:
        st["topics"].add(m["topic"])
        for g in h.groups.values():
            _subscribe(g, st["topics"])
    g = _group(h, m["group"] if m else DEFAULT_GROUP, st)
    who = f"client{client}"
    if (g.name, who) not in st["clients"]:        # the consumer joined the group: a rebalance
        st["clients"].add((g.name, who))
        yield Disruption(st["first"], "joined", g.name, who)
    yield Consume(g.name, value, ts, ts, who, None, int(m["offset"]) if m else None, None, True, None, None, where)


def read_openchaos(path, rows=None) -> History:
    """The whole history, held in memory (`rows`: as for stream_openchaos)."""
    h = new_history(path)
    for rec in stream_openchaos(path, h, rows):
        h.keep(rec)
    return h


def new_history(path) -> History:
    return History(source=str(path), format="openchaos", complete=True, observes=frozenset({"disruptions"}))


def _int(s, name) -> int:
    try:
        return int(s)
    except ValueError:
        raise ValueError(f"{name} {s!r} is not an integer") from None


# ------------------------------------------------------------------ encoding (fixtures)

# trace kind -> (OpenChaos fault mode, operation): a consumer process killed (KillFault kills a
# node and restarts it at the end), a broker restarted, a process suspended (PauseFault: SIGSTOP,
# then SIGCONT at the end)
_FAULTS = {"client_crashed": ("random-kill", "start"), "broker_restarted": ("fixed-kill", "start"),
           "client_paused": ("random-suspend", "start"), "client_resumed": ("random-suspend", "end")}


def encode_trace(events, group_name: str | None = None) -> list[str]:
    """An OpenChaos history for a rocketspec trace, as the Recorder and the RocketMQ driver write
    it: per producer message an enqueue REQUEST and RESPONSE whose value is the harness's counter
    (0, 1, 2...) and whose extraInfo is SendResult.toString(); per message a listener was called
    with and consumed (the driver's listener always succeeds), a dequeue RESPONSE with the
    receipt; a fault line per crash, pause and broker restart, named as OpenChaos names its
    faults. For fixtures and for comparing the levels."""
    out, stored, clients, started, values = [], {}, {}, {}, {}

    def cid(name):
        return clients.setdefault(name, len(clients))

    for ev in events:
        k = ev["kind"]
        if k == "message_stored":
            stored[ev["msg_id"]] = ev
            if ev["source"] == "producer":
                v = values[ev["msg_id"]] = str(len(values))
                key = ev.get("keys") or "null"
                send = (f"SendResult [sendStatus=SEND_OK, msgId={ev['msg_id']}, offsetMsgId={ev['msg_id']}, "
                        f"messageQueue=MessageQueue [topic={ev['topic']}, brokerName={ev['broker']}, "
                        f"queueId={ev['queue']}], queueOffset={ev['offset']}]")
                out.append(f"{cid('producer')}\tenqueue\tREQUEST\t{v}\t{key}\t{ev['ts']}\tnull")
                out.append(f"{cid('producer')}\tenqueue\tRESPONSE\tSUCCESS\t{v}\t{key}\t{ev['ts']}\t0\t{send}\t0")
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
                e2e = ev["ts"] - first.get("ts", ev["ts"])
                out.append(f"{cid(ev['client'])}\tdequeue\tRESPONSE\tSUCCESS\t{values.get(oid, oid)}\t{key}\t{ev['ts']}"
                           f"\t0\t{info}\t{e2e}")
        elif k in _FAULTS:
            mode, op = _FAULTS[k]
            out.append(f"fault\t{mode}\t{op}\t{ev['ts']}")
    return out
