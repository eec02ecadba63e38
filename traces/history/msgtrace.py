"""RocketMQ message-trace records (`enableMsgTrace`: the RMQ_SYS_TRACE_TOPIC message bodies).

Layout, as TraceDataEncoder (client 4.9.8) writes and reads it: records end with \\u0002
(FIELD_SPLITOR), fields are separated by \\u0001 (CONTENT_SPLITOR); a null string is written
"null"; like Java's String.split, trailing empty fields are dropped.

  Pub            type ts region producerGroup topic msgId tags keys storeHost bodyLength costTime
                 msgType [offsetMsgId] success [clientHost]
  SubBefore      type ts region group requestId msgId retryTimes keys
  SubAfter       type requestId msgId costTime success keys [contextCode [ts group]]
  EndTransaction type ts region producerGroup topic msgId tags keys storeHost msgType
                 transactionId transactionState fromTransactionCheck

msgId is the message's unique key (UNIQ_KEY: MessageExt.getMsgId on the consumer side), the
same for every retry copy, so it is the history's message identity. A SubBefore/SubAfter pair
shares a requestId (one listener call), and either may be read first: they are two trace
contexts, which the dispatcher may send in two trace messages from two threads. SubAfter's timestamp (when written) is taken when the
call returned, and costTime is the call's duration divided by its batch size
(ConsumeMessageTraceHookImpl). The records carry no queue, offset, consumer id, stored-copy id,
dead letters or faults: the guarantees that need them are skipped. The dispatcher drops records
when its queue is full (AsyncTraceDispatcher), so a message-trace history is lossy.

A file holds message bodies one after another, plain, gzip or zstd (a newline between bodies is
allowed), or an export of the trace messages, one a line, that keeps each message's bornHost:
JSON lines `{"body": ..., "bornHost": "/10.0.0.5:53122", ...}` (other keys ignored), or the
output of `mqadmin printMsg -t RMQ_SYS_TRACE_TOPIC -d true` (`MSGID: <id> MessageExt [...,
bornHost=/10.0.0.5:53122, ...] BODY: <body>`, the tool's own status lines passed over). Bodies
name no consumer; in an export the consumer of each SubBefore/SubAfter is the host of its
trace message's bornHost, as TraceView.decodeFromTraceTransData takes it (client_host). Each record that cannot be read is reported with the file and the line it starts on,
and counted: a body cut short before the next one (a record broken by a line end), a last
record without its \\u0002, bytes that are not UTF-8, a wrong field count, an unknown record
type, a field that is not a number or a boolean where TraceDataEncoder parses one.

Field counts, as TraceDataEncoder.decoderFromTraceDataString (4.9.8) reads them: Pub has 13
fields (clients before offsetMsgId was added), 14 (4.9.8 writes offsetMsgId), or 15 and more
(newer clients append the client host); SubAfter has 6 (older clients: no context code), 7 (the
CLOUD access channel: no timestamp or group, and, as 4.9.8 writes it, no \\u0002 either: the
record ends with \\u0001 and runs into the next one), or 9 and more (timestamp and group);
SubBefore 8, EndTransaction 13. A field left empty at the end is dropped by String.split, so
one fewer is accepted where the last field may be empty (keys).
"""
from __future__ import annotations

import itertools
import re

import orjson

from ...errors import UserError
from .model import Consume, History, Produce
from .text import Unreadable, chunks, decode

CONTENT, FIELD = "\x01", "\x02"
TYPES = ("Pub", "SubBefore", "SubAfter", "EndTransaction")                    # TraceType
MSG_TYPES = ("Normal_Msg", "Trans_Msg_Half", "Trans_msg_Commit", "Delay_Msg")   # MessageType ordinals
TX_STATES = ("COMMIT_MESSAGE", "ROLLBACK_MESSAGE", "UNKNOW")                  # LocalTransactionState
# A SubBefore whose SubAfter has not come, or a half message whose EndTransaction has not, is
# held this long (record time, ms) before it is given up (the dispatcher may have dropped it).
HOLD_MS = 120_000


def records(path):
    """(line, fields) for each record of the file, fields split as Java's String.split does;
    (line, Unreadable(why)) for a record that cannot be read. The file holds bodies one after
    another, or an export of the trace messages (`export`): then each record's fields are
    `Fields` carrying the host of the client that wrote them."""
    data = chunks(path)
    first = next(data, b"")
    layout = export_layout(first)
    data = itertools.chain((first,), data)
    if layout is not None:
        yield from exported(data, layout)
        return
    line, rest = 1, b""
    for data in data:
        parts = (rest + data).split(b"\x02")
        rest = parts.pop()
        for raw in parts:
            start = line
            line += raw.count(b"\n")
            yield from _record(start, raw, True)
    if rest.strip(b"\r\n"):
        yield from _record(line, rest, False)


# ------------------------------------------------------------------ exports: bodies with their bornHost

class Fields(list):
    """A record's fields and `host`: the client that wrote it, from its trace message's bornHost."""
    __slots__ = ("host",)

    def __init__(self, fields, host):
        super().__init__(fields)
        self.host = host


# What RocketMQ's tools print around the messages (printMsg, printMsgByQueue, consumeMessage):
# not records, passed over.
_TOOL_LINES = re.compile(rb"^(minOffset=\S*, maxOffset=\S*, MessageQueue \[.*\]|-{8,}|Consume ok"
                         rb"|.* no matched msg\. .*|.* print msg finished\. .*|The old(?:l)?er \d+ message.*"
                         rb"|.* no matched msg, offset=.*)\s*$")
_PRINTED = re.compile(r"^MSGID: (?P<id>\S*) MessageExt \[.*?, bornHost=(?P<born>[^,\]]*), ")
_BODY_AT = "'}] BODY: "        # Message.toString ends with transactionId='...'}, MessageExt's with ]


def export_layout(head: bytes):
    """"json" (JSON lines, one trace message each), "printmsg" (`mqadmin printMsg` output) or
    None (bodies), told by the first bytes."""
    s = head.lstrip(b" \t\r\n")
    if s[:1] == b"{":
        return "json"
    first = s.split(b"\n", 1)[0]
    if first.startswith(b"MSGID: ") or _TOOL_LINES.match(first):
        return "printmsg"
    return None


def client_host(born: str | None) -> str | None:
    """The client's identity from a bornHost as exports write it (Java's InetSocketAddress:
    "/10.0.0.5:53122", "host/10.0.0.5:53122", or a bare address): its IP address, without the
    port, as TraceView.decodeFromTraceTransData takes it (MessageExt.getBornHostString). One
    process's trace producer is shared by its clients and connects to each broker on its own
    port, so the port names a connection, not a consumer."""
    if born is None:
        return None
    a = born.strip().rpartition("/")[2]
    if a.startswith("["):                        # [v6]:port
        return a[1:a.index("]")] if "]" in a else a
    if a.count(":") in (1, 8):                  # v4:port, or Java's full v6 form and a port
        a = a.rsplit(":", 1)[0]
    return a or None


def exported(data, layout):
    """Records of an export, line by line: each line one trace message (its body and bornHost)."""
    n, rest = 0, b""
    for chunk in data:
        parts = (rest + chunk).split(b"\n")
        rest = parts.pop()
        for raw in parts:
            n += 1
            yield from _exported_line(n, raw.rstrip(b"\r"), layout)
    if rest.strip():
        yield from _exported_line(n + 1, rest.rstrip(b"\r"), layout)


def _exported_line(n, raw: bytes, layout):
    if not raw.strip():
        return
    if layout == "printmsg" and _TOOL_LINES.match(raw):
        return
    body, host = _message(raw, layout)
    if isinstance(body, Unreadable):
        yield n, body
        return
    parts = body.encode("utf-8", "surrogatepass").split(b"\x02")
    last = parts.pop()
    out = [r for raw_rec in parts for r in _record(n, raw_rec, True)]
    if last.strip(b"\r\n"):
        out.extend(_record(n, last, False))
    if not out:
        yield n, Unreadable("a trace message with an empty body")
    for line, f in out:
        yield line, (f if isinstance(f, Unreadable) else Fields(f, host))


def _message(raw: bytes, layout):
    """(body, client host) of one exported trace message, or (Unreadable(why), None)."""
    text, bad = decode(raw)
    if bad is not None:
        return Unreadable(bad), None
    if layout == "json":
        try:
            d = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            return Unreadable(f"not JSON ({exc}): expected one trace message per line, "
                              '{"body": ..., "bornHost": ...}'), None
        if not isinstance(d, dict) or not isinstance(d.get("body"), str):
            return Unreadable('a JSON line without a "body" string: expected one trace message per line, '
                              '{"body": ..., "bornHost": ...}'), None
        born = d.get("bornHost")
        if born is not None and not isinstance(born, str):
            return Unreadable(f"bornHost {born!r}: expected a string such as \"/10.0.0.5:53122\""), None
        return d["body"], client_host(born)
    m = _PRINTED.match(text)
    at = text.find(_BODY_AT)
    if m is None or at < 0:
        return Unreadable("expected a message as `mqadmin printMsg` prints it: MSGID: <id> MessageExt [..., "
                          "bornHost=..., ...] BODY: <body>"), None
    body = text[at + len(_BODY_AT):]
    if body == "NOT PRINT BODY":
        return Unreadable("printed without its body: run printMsg with -d true"), None
    return body, client_host(m["born"])


def _record(line, raw: bytes, terminated: bool):
    body = raw.lstrip(b"\r\n")
    line += raw[:len(raw) - len(body)].count(b"\n")
    if not body:
        return
    cut = body.rfind(b"\n")
    if cut >= 0:                # a line end inside a record: the body before it was cut short
        head, body = body[:cut].rstrip(b"\r"), body[cut + 1:]
        text, bad = decode(head)
        chain = None if bad is not None else _cloud_chain(text)
        if chain:
            for f in chain:
                yield line, f
        else:
            yield line, Unreadable("a record broken by a line end: the message body ends inside it (a truncated "
                                   "body?); expected records ending with \\u0002")
        line += head.count(b"\n") + 1
        if not body:
            return
    text, bad = decode(body)
    if bad is not None:
        yield line, Unreadable(bad)
        return
    if not terminated:
        chain = _cloud_chain(text)
        if not chain:
            yield line, Unreadable("the last record has no \\u0002 terminator (a truncated body?)")
            return
        for f in chain:
            yield line, f
        return
    f = _java_split(text)
    while len(f) > 7 and f[0] == "SubAfter" and f[7] in TYPES:   # CLOUD SubAfters run into the next record
        yield line, f[:7]
        f = f[7:]
    yield line, f


def _cloud_chain(text: str):
    """The CLOUD SubAfter records (7 fields each, each ending with \\u0001) that make up
    `text` wholly, or None."""
    f = text.split(CONTENT)
    if f[-1] != "" or (len(f) - 1) % 7:
        return None
    out = [f[i:i + 7] for i in range(0, len(f) - 1, 7)]
    return out if all(r[0] == "SubAfter" for r in out) else None


def _java_split(s: str) -> list[str]:
    f = s.split(CONTENT)
    while f and f[-1] == "":
        f.pop()
    return f


def _null(s):
    return None if s in ("null", "") else s


def stream_msgtrace(path, h: History, recs=None):
    """Yield the history records of the message-trace bodies at `path`, keeping `h`'s header;
    `recs`: (line, fields) pairs as `records` yields them, to read records held in memory (the
    history minimizer's candidates) under the name `path`; default: the file's."""
    path = str(path)
    h.infer_subscriptions = True
    # (requestId, msgId) -> its SubBefores, until their SubAfters: one call may hold two copies of
    # a message (a %RETRY% copy and a later one, pulled together), each with its own SubBefore and
    # SubAfter, which the consume hook writes in the batch's order (ConsumeMessageTraceHookImpl
    # iterates the same list before and after the call)
    before: dict[tuple, list[Consume]] = {}
    open_calls: dict[str, list] = {}        # requestId -> [messages, SubAfters still to come]
    # (requestId, msgId) -> SubAfters read before their SubBefore, until it comes: a call's
    # SubBefore and SubAfter are two trace contexts (ConsumeMessageTraceHookImpl appends each on
    # its own), which the dispatcher may flush into two trace messages sent by different threads
    # (AsyncTraceDispatcher.flushTraceContext, AsyncDataSendTask), so the SubAfter's message can
    # be stored, or logged as failed, before the SubBefore's
    early: dict[tuple, list] = {}
    early_calls: dict[str, list] = {}       # requestId -> [SubAfters held for it (its batch size), still held]
    lost = [0]                              # SubAfters whose SubBefore never came
    tx: dict[str, Produce] = {}             # half messages until their EndTransaction
    hosts = set()                           # consumer hosts an export named
    n, now = 0, None
    for line, f in (records(path) if recs is None else recs):
        n += 1
        where = f"{path}:{line}"
        if isinstance(f, Unreadable):
            h.problem(path, line, f)
            continue
        if getattr(f, "host", None) is not None and f and f[0] in ("SubBefore", "SubAfter"):
            hosts.add(f.host)
        try:
            kind = f[0]
            if kind == "Pub":
                p = _pub(f, where)
                now = p.ts
                if MSG_TYPES[_int(f[11], "msgType", len(MSG_TYPES))] == "Trans_Msg_Half" and p.ok:
                    p.ok = None                 # visible only once committed
                    tx[p.id] = p
                else:
                    yield p
            elif kind == "SubBefore":
                _need(f, 7, 8, "SubBefore")
                c = Consume(f[3], f[5], _int(f[1], "timestamp"), None, getattr(f, "host", None), None, None,
                            _int(f[6], "retryTimes"), None, None, f[4], where)
                h.group(f[3])
                now = c.ts
                held = early.get((f[4], f[5]))
                if held:
                    ok, end, cost, _ = held.pop(0)
                    if not held:
                        del early[(f[4], f[5])]
                    ec = early_calls[f[4]]
                    c.success = ok
                    c.end = end if end is not None else c.ts + cost * ec[0]
                    ec[1] -= 1
                    if not ec[1]:
                        del early_calls[f[4]]
                    yield c
                    continue
                before.setdefault((f[4], f[5]), []).append(c)
                oc = open_calls.setdefault(f[4], [0, 0])
                oc[0] += 1
                oc[1] += 1
            elif kind == "SubAfter":
                _need(f, 5, 6, "SubAfter")
                cost, ok = _int(f[3], "costTime"), _bool(f[4], "success")
                if len(f) >= 7:
                    _int(f[6], "contextCode")
                end = _int(f[7], "timestamp") if len(f) >= 9 else None
                waiting = before.get((f[1], f[2]))
                c = waiting.pop(0) if waiting else None
                if waiting is not None and not waiting:
                    del before[(f[1], f[2])]
                if c is None:       # its SubBefore is still to come, or was lost
                    lone = None
                    if len(f) >= 9:     # its group and time are known: a delivery, if its SubBefore was lost
                        h.group(f[8])
                        lone = Consume(f[8], f[2], None, end, getattr(f, "host", None), None, None, None, ok, None,
                                       f[1], where)
                    early.setdefault((f[1], f[2]), []).append((ok, end, cost, (end if end is not None else now, lone)))
                    ec = early_calls.setdefault(f[1], [0, 0])
                    ec[0] += 1
                    ec[1] += 1
                    continue
                oc = open_calls[f[1]]
                c.success = ok
                c.end = end if end is not None else c.ts + cost * oc[0]
                oc[1] -= 1
                if not oc[1]:
                    del open_calls[f[1]]
                yield c
            elif kind == "EndTransaction":
                _need(f, 13, 13, "EndTransaction")
                state = f[11]
                if state not in TX_STATES:
                    raise ValueError(f"transactionState {state!r}: expected one of {', '.join(TX_STATES)}")
                _int(f[9], "msgType", len(MSG_TYPES))
                _bool(f[12], "fromTransactionCheck")
                p = tx.get(f[5])
                if p is not None:
                    p.ok = True if state == "COMMIT_MESSAGE" else (False if state == "ROLLBACK_MESSAGE" else None)
                    if p.ok is not None:
                        del tx[f[5]]
                        if p.ok:
                            p.ts = _int(f[1], "timestamp")
                        yield p
            else:
                raise ValueError(f"unknown record type {kind!r}: expected Pub, SubBefore, SubAfter or EndTransaction")
        except ValueError as exc:
            h.problem(path, line, str(exc))
        if n % 4096 == 0 and now is not None:
            yield from _give_up(before, open_calls, tx, now - HOLD_MS)
            yield from _lone_afters(early, early_calls, now - HOLD_MS, lost)
    yield from _give_up(before, open_calls, tx, None)
    yield from _lone_afters(early, early_calls, None, lost)
    h.records = n
    if n == 0:
        raise UserError("no message-trace records (\\u0002-terminated) in the file", file=path)
    if lost[0]:
        h.notes.append(f"{lost[0]} SubAfter record(s) without their SubBefore (dropped by the dispatcher?)")
    if hosts:
        h.notes.append(f"consumers told apart by their host (the trace messages' bornHost, as TraceView reads it): "
                       f"{len(hosts)} host(s); consumers of one group on one host count as one")
    h.notes.append("message-trace records carry no queue, offset, " + ("" if hosts else "consumer id, ")
                   + "stored-copy id, dead letters or faults")


def _lone_afters(early, early_calls, edge, lost):
    """SubAfters read before `edge` (record time; None: all) whose SubBefore never came: counted
    in `lost`; one whose record names its group and time is a delivery of unknown count."""
    for k in [k for k, held in early.items()
              if edge is None or (held[0][3][0] is not None and held[0][3][0] < edge)]:
        for *_, (_, lone) in early.pop(k):
            lost[0] += 1
            ec = early_calls[k[0]]
            ec[1] -= 1
            if not ec[1]:
                del early_calls[k[0]]
            if lone is not None:
                yield lone


def _give_up(before, open_calls, tx, edge):
    """Calls whose SubAfter never came (result unknown) and half messages never ended, older
    than `edge` (None: all)."""
    for k in [k for k, cs in before.items() if edge is None or cs[0].ts < edge]:
        for c in before.pop(k):
            open_calls.pop(c.batch, None)
            yield c
    for k in [k for k, p in tx.items() if edge is None or (p.ts is not None and p.ts < edge)]:
        yield tx.pop(k)


def read_msgtrace(path, recs=None) -> History:
    """The whole history, held in memory (`recs`: as for stream_msgtrace)."""
    h = new_history(path)
    for rec in stream_msgtrace(path, h, recs):
        h.keep(rec)
    return h


def new_history(path) -> History:
    return History(source=str(path), format="msgtrace", complete=False, observes=frozenset())


def _pub(f, where) -> Produce:
    _need(f, 13, 13, "Pub")
    success = f[12] if len(f) == 13 else f[13]
    _int(f[9], "bodyLength")
    _int(f[10], "costTime")
    return Produce(f[5], f[4], _int(f[1], "timestamp"), _bool(success, "success"), None, None, _null(f[6]),
                   _null(f[7]), None, None, where, _null(f[12]) if len(f) >= 14 else None)


def _need(f, least, full, kind):
    if len(f) < least:
        raise ValueError(f"{kind} record with {len(f)} fields: expected {full}"
                         + ("" if least == full else f" (at least {least})"))


def _int(s, name, below=None) -> int:
    try:
        v = int(s)
    except ValueError:
        raise ValueError(f"{name} {s!r} is not an integer") from None
    if below is not None and not 0 <= v < below:
        raise ValueError(f"{name} {v} is not one of 0 to {below - 1}")
    return v


def _bool(s, name) -> bool:
    # Boolean.parseBoolean: "true" (any case) is true, anything else false; be strict here
    if s.lower() not in ("true", "false"):
        raise ValueError(f"{name} {s!r}: expected true or false")
    return s.lower() == "true"


# ------------------------------------------------------------------ encoding (fixtures)

def encode_trace(events, region="DefaultRegion", producer_group="PID_trace") -> list[str]:
    """Message-trace bodies for a rocketspec trace, in TraceDataEncoder's layout: one Pub per
    producer message, a SubBefore and a SubAfter per listener call (one record per message of
    the batch, as the consume hook writes them). For fixtures and for comparing the levels."""
    return [body for _, body in _encode(events, region, producer_group)]


def encode_export(events, layout="json", region="DefaultRegion", producer_group="PID_trace") -> list[str]:
    """The trace messages of `encode_trace` as an export writes them, one a line, each with the
    bornHost of the client that sent it: "json" ({"body", "bornHost", "storeTimestamp"}) or
    "printmsg" (`mqadmin printMsg -d true`). Client number i is host 10.0.0.i; the port changes
    from message to message (one connection per broker), as a trace producer's does."""
    hosts: dict = {}
    out = []
    for i, (client, body) in enumerate(_encode(events, region, producer_group)):
        ip = f"10.0.0.{hosts.setdefault(client, len(hosts) + 1)}"
        born = f"/{ip}:{50000 + i % 3}"
        ts = int(body.split(CONTENT, 2)[1]) if body.split(CONTENT, 2)[1].isdigit() else 0
        if layout == "json":
            out.append(orjson.dumps({"msgId": f"TRACE{i}", "bornHost": born, "storeTimestamp": ts,
                                     "body": body}).decode())
        else:
            raw = list(body.encode())
            out.append(f"MSGID: TRACE{i} MessageExt [brokerName=broker-a, queueId=0, storeSize={len(raw) + 200}, "
                       f"queueOffset={i}, sysFlag=0, bornTimestamp={ts}, bornHost={born}, storeTimestamp={ts}, "
                       f"storeHost=/10.0.1.1:10911, msgId=TRACE{i}, commitLogOffset={i * 400}, bodyCRC=1, "
                       f"reconsumeTimes=0, preparedTransactionOffset=0, "
                       f"toString()=Message{{topic='RMQ_SYS_TRACE_TOPIC', flag=0, properties={{KEYS=m{i}, WAIT=true}}, "
                       f"body={raw}, transactionId='null'}}] BODY: {body}")
    return out


def _encode(events, region, producer_group):
    """(client, body) per trace message of `encode_trace` (client: the trace's client, "producer")."""
    out = []
    start = {}
    stored = {}
    for ev in events:
        k = ev["kind"]
        if k == "message_stored":
            stored[ev["msg_id"]] = ev
            if ev["source"] == "producer":
                out.append(("producer", CONTENT.join(map(str, (
                    "Pub", ev["ts"], region, producer_group, ev["topic"], ev["msg_id"], ev.get("tags") or "null",
                    ev.get("keys") or "null", ev["broker"], ev.get("body_size", 0), 0, 0,
                    f"{ev['broker']}:{ev['offset']}", "true"))) + FIELD))
        elif k == "consume_started":
            start[(ev["client"], ev["consume_id"])] = ev
            rid = f"{ev['client']}/{ev['consume_id']}"
            origins = ev.get("origin_msg_ids") or [stored.get(m, {}).get("origin_msg_id", m) for m in ev["msg_ids"]]
            recons = ev.get("reconsume_list") or [0] * len(origins)
            out.append((ev["client"], "".join(
                CONTENT.join(map(str, ("SubBefore", ev["ts"], region, ev["group"], rid, oid, rc,
                                       stored.get(m, {}).get("keys") or "null"))) + FIELD
                for m, oid, rc in zip(ev["msg_ids"], origins, recons))))
        elif k == "consume_finished":
            st = start.pop((ev["client"], ev["consume_id"]), None)
            if st is None:
                continue
            rid = f"{ev['client']}/{ev['consume_id']}"
            ok = ev["status"] in ("CONSUME_SUCCESS", "SUCCESS", "COMMIT")
            cost = (ev["ts"] - st["ts"]) // max(1, len(st["msg_ids"]))
            origins = st.get("origin_msg_ids") or [stored.get(m, {}).get("origin_msg_id", m) for m in st["msg_ids"]]
            out.append((ev["client"], "".join(
                CONTENT.join(map(str, ("SubAfter", rid, oid, cost, str(ok).lower(),
                                       stored.get(m, {}).get("keys") or "null", 0 if ok else 4, ev["ts"], st["group"])))
                + FIELD for m, oid in zip(st["msg_ids"], origins))))
    return out
