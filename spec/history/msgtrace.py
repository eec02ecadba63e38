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
shares a requestId (one listener call); SubAfter's timestamp (when written) is taken when the
call returned, and costTime is the call's duration divided by its batch size
(ConsumeMessageTraceHookImpl). The records carry no queue, offset, consumer id, stored-copy id,
dead letters or faults: the guarantees that need them are skipped. The dispatcher drops records
when its queue is full (AsyncTraceDispatcher), so a message-trace history is lossy.

A file holds message bodies one after another (a newline between bodies is allowed). Each
record that cannot be read is reported with the file and the line it starts on.
"""
from __future__ import annotations

from ...errors import UserError
from .model import Consume, History, Problem, Produce

CONTENT, FIELD = "\x01", "\x02"
MSG_TYPES = ("Normal_Msg", "Trans_Msg_Half", "Trans_msg_Commit", "Delay_Msg")   # MessageType ordinals
TX_STATES = ("COMMIT_MESSAGE", "ROLLBACK_MESSAGE", "UNKNOW")                  # LocalTransactionState
CHUNK = 1 << 20


def records(path):
    """(line, fields) for each record of the file, fields split as Java's String.split does."""
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise UserError(f"cannot read: {exc.strerror}", file=path) from None
    with fh:
        line, rest = 1, ""
        while True:
            chunk = fh.read(CHUNK)
            text = rest + chunk.decode("utf-8", errors="replace")
            parts = text.split(FIELD)
            rest = parts.pop()
            for rec in parts:
                start = line
                line += rec.count("\n")
                body = rec.lstrip("\r\n")
                start += rec[:len(rec) - len(body)].count("\n")
                if body:
                    yield start, _java_split(body)
            if not chunk:
                body = rest.lstrip("\r\n")
                if body.rstrip("\r\n"):   # a record without its \u0002 terminator
                    yield line + rest[:len(rest) - len(body)].count("\n"), None
                return


def _java_split(s: str) -> list[str]:
    f = s.split(CONTENT)
    while f and f[-1] == "":
        f.pop()
    return f


def _null(s):
    return None if s in ("null", "") else s


def read_msgtrace(path, recs=None) -> History:
    """`recs`: (line, fields) pairs as `records` yields them, to read records held in memory
    (the history minimizer's candidates) under the name `path`; default: the file's."""
    path = str(path)
    h = History(source=path, format="msgtrace", complete=False, observes=frozenset())
    before: dict[tuple, Consume] = {}
    batch_size: dict[str, int] = {}
    tx: dict[str, Produce] = {}
    unmatched_after = 0
    n = 0
    for line, f in (records(path) if recs is None else recs):
        n += 1
        where = f"{path}:{line}"
        if f is None:
            h.problems.append(Problem(path, line, "the last record has no \\u0002 terminator (a truncated body?)"))
            continue
        try:
            kind = f[0]
            if kind == "Pub":
                p = _pub(f, where)
                if MSG_TYPES[_int(f[11], "msgType")] == "Trans_Msg_Half":
                    p.ok = None if p.ok else False     # visible only once committed
                    tx[p.id] = p
                h.produces.append(p)
            elif kind == "SubBefore":
                _need(f, 7, "SubBefore")
                c = Consume(f[3], f[5], _int(f[1], "timestamp"), None, None, None, None, _int(f[6], "retryTimes"),
                            None, None, f[4], where)
                before[(f[4], f[5])] = c
                batch_size[f[4]] = batch_size.get(f[4], 0) + 1
                h.consumes.append(c)
            elif kind == "SubAfter":
                _need(f, 5, "SubAfter")
                cost, ok = _int(f[3], "costTime"), _bool(f[4], "success")
                c = before.pop((f[1], f[2]), None)
                if c is None:
                    unmatched_after += 1
                    if len(f) >= 9:     # its group and time are known: a delivery whose SubBefore was lost
                        end = _int(f[7], "timestamp")
                        h.consumes.append(Consume(f[8], f[2], None, end, None, None, None, None, ok, None, f[1], where))
                    continue
                c.success = ok
                c.end = _int(f[7], "timestamp") if len(f) >= 9 else c.ts + cost * batch_size.get(f[1], 1)
            elif kind == "EndTransaction":
                _need(f, 13, "EndTransaction")
                state = f[11]
                if state not in TX_STATES:
                    raise ValueError(f"transactionState {state!r}: expected one of {', '.join(TX_STATES)}")
                p = tx.get(f[5])
                if p is not None and p.ok is None:
                    p.ok = True if state == "COMMIT_MESSAGE" else (False if state == "ROLLBACK_MESSAGE" else None)
                    if p.ok:
                        p.ts = _int(f[1], "timestamp")
            else:
                raise ValueError(f"unknown record type {kind!r}: expected Pub, SubBefore, SubAfter or EndTransaction")
        except (ValueError, IndexError) as exc:
            h.problems.append(Problem(path, line, str(exc)))
    h.records = n
    if n == 0:
        raise UserError("no message-trace records (\\u0002-terminated) in the file", file=path)
    _groups(h)
    if unmatched_after:
        h.notes.append(f"{unmatched_after} SubAfter record(s) without their SubBefore (dropped by the dispatcher?)")
    h.notes.append("message-trace records carry no queue, offset, consumer id, stored-copy id, dead letters or "
                   "faults")
    return h


def _pub(f, where) -> Produce:
    _need(f, 13, "Pub")
    success = f[12] if len(f) == 13 else f[13]
    return Produce(f[5], f[4], _int(f[1], "timestamp"), _bool(success, "success"), None, None, _null(f[6]),
                   _null(f[7]), None, None, where, _null(f[12]) if len(f) >= 14 else None)


def _groups(h: History) -> None:
    """Subscriptions are not in the records: infer topic subscriptions from what each group
    consumed (filters unknown)."""
    topic = {p.id: p.topic for p in h.produces}
    for c in h.consumes:
        g = h.group(c.group)
        t = topic.get(c.id)
        if t is not None:
            if g.subscriptions is None:
                g.subscriptions, g.subscriptions_inferred = {}, True
            g.subscriptions.setdefault(t, ("TAG", "*"))
        if c.ts is not None and (g.started_ts is None or c.ts < g.started_ts):
            g.started_ts = None     # unknown: a message-trace history does not see consumers start


def _need(f, n, kind):
    if len(f) < n:
        raise ValueError(f"{kind} record with {len(f)} fields: expected at least {n}")


def _int(s, name) -> int:
    try:
        return int(s)
    except ValueError:
        raise ValueError(f"{name} {s!r} is not an integer") from None


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
    out = []
    start = {}
    stored = {}
    for ev in events:
        k = ev["kind"]
        if k == "message_stored":
            stored[ev["msg_id"]] = ev
            if ev["source"] == "producer":
                out.append(CONTENT.join(map(str, (
                    "Pub", ev["ts"], region, producer_group, ev["topic"], ev["msg_id"], ev.get("tags") or "null",
                    ev.get("keys") or "null", ev["broker"], ev.get("body_size", 0), 0, 0,
                    f"{ev['broker']}:{ev['offset']}", "true"))) + FIELD)
        elif k == "consume_started":
            start[(ev["client"], ev["consume_id"])] = ev
            rid = f"{ev['client']}/{ev['consume_id']}"
            origins = ev.get("origin_msg_ids") or [stored.get(m, {}).get("origin_msg_id", m) for m in ev["msg_ids"]]
            recons = ev.get("reconsume_list") or [0] * len(origins)
            out.append("".join(CONTENT.join(map(str, ("SubBefore", ev["ts"], region, ev["group"], rid, oid, rc,
                                                      stored.get(m, {}).get("keys") or "null"))) + FIELD
                               for m, oid, rc in zip(ev["msg_ids"], origins, recons)))
        elif k == "consume_finished":
            st = start.pop((ev["client"], ev["consume_id"]), None)
            if st is None:
                continue
            rid = f"{ev['client']}/{ev['consume_id']}"
            ok = ev["status"] in ("CONSUME_SUCCESS", "SUCCESS", "COMMIT")
            cost = (ev["ts"] - st["ts"]) // max(1, len(st["msg_ids"]))
            origins = st.get("origin_msg_ids") or [stored.get(m, {}).get("origin_msg_id", m) for m in st["msg_ids"]]
            out.append("".join(CONTENT.join(map(str, ("SubAfter", rid, oid, cost, str(ok).lower(),
                                                      stored.get(m, {}).get("keys") or "null", 0 if ok else 4,
                                                      ev["ts"], st["group"]))) + FIELD
                               for m, oid in zip(st["msg_ids"], origins)))
    return out
