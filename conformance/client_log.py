"""Membership changes of a real run, read from RocketMQ's own log (`rocketmq_client.log`).

The recorder's driver runs every client and the broker with `user.home` set to the run's folder,
so RocketMQ's client logger writes `<run>/logs/rocketmqlogs/rocketmq_client.log`, shared by the
driver's JVM (broker, in-process clients) and each client JVM of its own (kills, pauses). The
lines read here are RocketMQ 4.9.8's own, each proving one thing at the time it was written:

| line (logger) | record | what it proves |
|---|---|---|
| `rebalanced result changed. ... group=G, topic=T, clientId=C, ...` (RebalanceImpl, client) | `rebalanced` | C added or removed a ProcessQueue of T: a queue of G changed hands at C |
| `new consumer connected, group: G ...clientId=C...` (ConsumerGroupInfo, broker) | `joined` | the broker registered a new channel of C in G |
| `unregister a consumer[G] from consumerGroupInfo ...clientId=C...` (broker) | `left` | C unregistered (a graceful shutdown) |
| `NETTY EVENT: remove not active channel[...clientId=C...] ..., consumer group: G` (broker) | `left` | C's channel closed (a kill, the idle close of a frozen client) |
| `SCAN: remove expired channel ... consumerGroup=G` (broker) | `left` | a channel of G went silent past the broker's expiry |

Times: the logger writes local wall-clock time with no zone. The offset to epoch milliseconds is
taken from the log itself: `RebalancePushImpl.messageQueueChanged` logs `currentTimeMillis` as
its new subscription version on the line after each `rebalanced result changed`, and the broker
logs a heartbeat's `lastUpdateTimestamp` with each new channel; the offset is that difference
rounded to a quarter hour (every time zone's offset is one). A log with neither is not placed in
time, and nothing is read from it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

LOG = Path("logs") / "rocketmqlogs" / "rocketmq_client.log"
QUARTER_HOUR_MS = 15 * 60 * 1000

_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) +\w+ +\S+ +- (.*)$")
_REBALANCED = re.compile(r"rebalanced result changed\. allocateMessageQueueStrategyName=([^,]*), group=([^,]+), "
                         r"topic=([^,]+), clientId=([^,]+), mqAllSize=(\d+), cidAllSize=(\d+), rebalanceResultSize=(\d+)")
_VERSION = re.compile(r"Rebalance changed, also update version: -?\d+, (\d+)")
_CONNECTED = re.compile(r"new consumer connected, group: (\S+) .*clientId=([^,\]]+).*lastUpdateTimestamp=(\d+)")
_UNREGISTERED = re.compile(r"unregister a consumer\[([^\]]+)\] from consumerGroupInfo .*clientId=([^,\]]+)")
_CLOSED = re.compile(r"NETTY EVENT: remove not active channel\[.*clientId=([^,\]]+).*consumer group: (\S+)")
_EXPIRED = re.compile(r"SCAN: remove expired channel from ConsumerManager consumerTable\. channel=[^,]*, consumerGroup=(\S+)")


@dataclass(frozen=True, slots=True)
class Change:
    ts: int                 # epoch ms
    what: str               # rebalanced | joined | left
    group: str
    client: str | None
    detail: str
    line: int


def read_changes(run_dir) -> tuple[list[Change], str]:
    """(membership changes in time order, a note saying what was read) from the run's client log;
    no changes and the reason when the log is absent or cannot be placed in time."""
    path = Path(run_dir) / LOG
    if not path.is_file():
        return [], f"no {LOG} in the run's folder: membership changes not read"
    raw, offsets = [], []
    with path.open(encoding="utf-8", errors="replace") as fh:
        for n, text in enumerate(fh, 1):
            m = _LINE.match(text.rstrip("\n"))
            if m is None:
                continue        # a stack trace's line, or two processes' writes interleaved
            local = int(datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc).timestamp() * 1000)
            local += int(m[2])
            msg = m[3]
            if (v := _VERSION.search(msg)) is not None:
                offsets.append(int(v[1]) - local)
            elif (v := _REBALANCED.search(msg)) is not None:
                raw.append((local, "rebalanced", v[2], v[4],
                            f"topic {v[3]}: {v[7]} of {v[5]} queues among {v[6]} consumers ({v[1]})", n))
            elif (v := _CONNECTED.search(msg)) is not None:
                offsets.append(int(v[3]) - local)
                raw.append((local, "joined", v[1], v[2], "the broker registered a new channel", n))
            elif (v := _UNREGISTERED.search(msg)) is not None:
                raw.append((local, "left", v[1], v[2], "unregistered", n))
            elif (v := _CLOSED.search(msg)) is not None:
                raw.append((local, "left", v[2], v[1], "its channel closed", n))
            elif (v := _EXPIRED.search(msg)) is not None:
                raw.append((local, "left", v[1], None, "a channel expired", n))
    if not raw:
        return [], f"{path}: no membership change in RocketMQ's client log"
    if not offsets:
        return [], f"{path}: no line gives the log's clock (membership changes not placed in time, not read)"
    offsets.sort()
    median = offsets[len(offsets) // 2]
    shift = round(median / QUARTER_HOUR_MS) * QUARTER_HOUR_MS
    changes = sorted((Change(t + shift, *rest) for t, *rest in raw), key=lambda c: (c.ts, c.line))
    return changes, (f"{len(changes)} membership change(s) from RocketMQ's client log ({LOG}; local time "
                     f"{'+' if shift >= 0 else '-'}{abs(shift) // 60000} min to epoch)")


_TRACE_SEND_FAILED = "send trace data failed, the traceData is "


def failed_trace_bodies(run_dir) -> list[str]:
    """The message-trace bodies a client's AsyncTraceDispatcher could not send, as RocketMQ's log
    holds them: its send callback logs "send trace data failed, the traceData is <body>" (4.9.8
    and 5.x alike) and drops the records. They are the client's own records of what its
    application saw (e.g. the batch held across a SIGSTOP whose first send after the resume timed
    out: random real run 13014)."""
    path = Path(run_dir) / LOG
    if not path.is_file():
        return []
    out = []
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            i = line.find(_TRACE_SEND_FAILED)
            if i >= 0:
                body = line[i + len(_TRACE_SEND_FAILED):].rstrip("\n")
                if body:
                    out.append(body)
    return out
