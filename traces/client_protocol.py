"""The client driver protocol's reports (docs/driver-protocol.md), read back into trace events.

A client program under test (`rocketspec record --client CMD`) prints one JSON object per line
on its stdout; the Java driver copies them, unread, to `client-NAME.life-N.proto` beside the
trace parts. Here each line is checked (a bad line is bad input: exit 2, naming the client, the
file and line, and what was expected) and turned into the trace event it reports, with `_t`
(the client's wall clock in ns, the parts' merge key) so `record.merge_parts` merges it with
the broker's events.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from rocketspec.errors import UserError

PROTOCOL = 1
# What a client reports: the event's type and the fields it must carry, with their JSON types.
REPORTS = {
    "started": {"client_id": str},
    "consume_started": {"consume_id": int, "topic": str, "broker": str, "queue": int, "messages": list},
    "consume_finished": {"consume_id": int, "status": str},
    # a POP client's (a gRPC SimpleConsumer's) listener call: its messages carry their receipt handle
    "pop_consume_started": {"consume_id": int, "topic": str, "broker": str, "queue": int, "messages": list},
    "pop_consume_finished": {"consume_id": int, "status": str},
    # the application's ack (or change of invisible time) after that call was refused (a late ack:
    # the proxy answers INVALID_RECEIPT_HANDLE), so the message comes back
    "pop_settle_failed": {"consume_id": int, "msg_id": str, "action": str},
    "stopped": {},
    "error": {"message": str},
}
MESSAGE_FIELDS = {"offset": int, "msg_id": str, "origin_msg_id": str, "reconsume_times": int}
STATUSES = {"CONSUME_SUCCESS", "RECONSUME_LATER", "SUCCESS", "SUSPEND_CURRENT_QUEUE_A_MOMENT", "COMMIT", "ROLLBACK"}
# The observation level of a trace whose client side is a client's reports: its listener calls,
# starts and stops, as the application saw them; the client's internals (ProcessQueues, pulls,
# its offset store) are not observed.
OBSERVED = "client_reports"

_PART = re.compile(r"^client-(?P<client>.+)\.life-(?P<life>\d+)\.proto$")


class ProtocolError(UserError):
    """A client program broke the protocol (exit 2)."""


def _type_name(t) -> str:
    return {int: "an integer", str: "a string", list: "a list", dict: "an object"}[t]


def _is(value, t) -> bool:
    return isinstance(value, t) and not (t is int and isinstance(value, bool))


def read_reports(path: Path, client: str) -> list[tuple[int, dict]]:
    """The checked report lines of one client life: (line number, report)."""
    out = []
    with path.open(encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            text = line.rstrip("\n")
            if not text.strip():
                continue

            def bad(what: str) -> ProtocolError:
                shown = text if len(text) <= 200 else text[:200] + "..."
                return ProtocolError(f"client {client}: {path.name} line {n}: {what}; got {shown!r}")

            try:
                rep = json.loads(text)
            except json.JSONDecodeError:
                raise bad("expected one JSON object per line (docs/driver-protocol.md)") from None
            if not isinstance(rep, dict):
                raise bad("expected a JSON object")
            kind = rep.get("type")
            if kind not in REPORTS:
                raise bad(f"expected 'type' to be one of {', '.join(REPORTS)}")
            if not _is(rep.get("ts_ns"), int) or rep["ts_ns"] <= 0:
                raise bad("expected 'ts_ns', the wall clock in ns, a positive integer")
            for field, t in REPORTS[kind].items():
                if not _is(rep.get(field), t):
                    raise bad(f"{kind}: expected '{field}', {_type_name(t)}")
            if kind in ("consume_started", "pop_consume_started"):
                if not rep["messages"]:
                    raise bad(f"{kind}: expected 'messages' to list the batch (at least one)")
                fields = MESSAGE_FIELDS | ({"handle": str} if kind == "pop_consume_started" else {})
                for i, m in enumerate(rep["messages"]):
                    if not isinstance(m, dict):
                        raise bad(f"{kind}: expected messages[{i}] to be an object")
                    for field, t in fields.items():
                        if not _is(m.get(field), t):
                            raise bad(f"{kind}: expected messages[{i}].{field}, {_type_name(t)}")
            if kind in ("consume_finished", "pop_consume_finished") and rep["status"] not in STATUSES:
                raise bad(f"{kind}: expected 'status' to be one of {', '.join(sorted(STATUSES))}")
            if kind == "consume_finished" and "ack_index" in rep and not (_is(rep["ack_index"], int) and rep["ack_index"] >= -1):
                raise bad("consume_finished: expected 'ack_index', an integer of -1 or more (the last message the "
                          "application declared consumed)")
            if kind == "pop_settle_failed" and rep["action"] not in ("ack", "change"):
                raise bad("pop_settle_failed: expected 'action' to be 'ack' or 'change'")
            if kind == "pop_consume_finished" and "timed_out" in rep and not isinstance(rep["timed_out"], bool):
                raise bad("pop_consume_finished: expected 'timed_out' to be true or false")
            out.append((n, rep))
    return out


def to_events(path: Path, client: str, group: str, start_config: dict) -> tuple[str | None, list[dict]]:
    """One client life's reports as trace events (with `_t`); and the client id it reported."""
    reports = read_reports(path, client)
    events: list[dict] = []
    cid = None
    calls: dict[int, dict] = {}
    last_t = 0

    def emit(t_ns: int, ev: dict) -> None:
        nonlocal last_t
        t_ns = max(t_ns, last_t + 1)    # strictly increasing within a part, as merge_parts expects
        last_t = t_ns
        events.append({"seq": 0, "ts": t_ns // 1_000_000, **ev, "_t": t_ns})

    for n, rep in reports:
        def bad(what: str) -> ProtocolError:
            return ProtocolError(f"client {client}: {path.name} line {n}: {what}")

        kind, t = rep["type"], rep["ts_ns"]
        if kind == "error":
            raise ProtocolError(f"client {client}: {path.name} line {n}: the client reported an error: {rep['message']}")
        if kind == "started":
            if cid is not None:
                raise bad("a second 'started' in one life of the client")
            cid = rep["client_id"]
            config = dict(start_config) | (rep.get("config") if isinstance(rep.get("config"), dict) else {})
            subs = dict(start_config["subscriptions"])
            if config.get("message_model", "CLUSTERING") == "CLUSTERING":
                subs[f"%RETRY%{group}"] = {"type": "TAG", "expr": "*"}
            config.pop("subscriptions", None)
            emit(t, {"kind": "client_started", "client": cid, "group": group,
                     "consume_mode": config.get("consume_mode", "CONCURRENTLY"),
                     "message_model": config.get("message_model", "CLUSTERING"),
                     "subscriptions": dict(sorted(subs.items())), "config": config})
            # the client reports `started` once the library's start returned (docs/driver-protocol.md)
            emit(t, {"kind": "client_start_returned", "client": cid, "group": group})
            continue
        if cid is None:
            raise bad(f"'{kind}' before 'started'")
        base = {"client": cid, "group": group}
        if kind == "consume_started":
            if rep["consume_id"] in calls:
                raise bad(f"consume_started: consume_id {rep['consume_id']} is already started")
            q = {"topic": rep["topic"], "broker": rep["broker"], "queue": rep["queue"]}
            msgs = rep["messages"]
            calls[rep["consume_id"]] = q | {"offsets": [m["offset"] for m in msgs]}
            emit(t, {"kind": "consume_started", **base, **q, "consume_id": rep["consume_id"],
                     "offsets": [m["offset"] for m in msgs], "msg_ids": [m["msg_id"] for m in msgs],
                     "origin_msg_ids": [m["origin_msg_id"] for m in msgs],
                     "reconsume_list": [m["reconsume_times"] for m in msgs]})
        elif kind == "consume_finished":
            call = calls.pop(rep["consume_id"], None)
            if call is None or call.get("pop"):
                raise bad(f"consume_finished: consume_id {rep['consume_id']} was not started (or finished twice)")
            ev = {"kind": "consume_finished", **base, "topic": call["topic"], "broker": call["broker"],
                  "queue": call["queue"], "consume_id": rep["consume_id"], "status": rep["status"],
                  "offsets": call["offsets"]}
            if "ack_index" in rep:
                # a concurrent listener's ackIndex as the application set it: [0..ack_index] consumed,
                # the rest declared failed (processConsumeResult), whatever the library then did
                ev["ack_index"] = min(rep["ack_index"], len(call["offsets"]) - 1)
            emit(t, ev)
        elif kind == "pop_consume_started":
            if rep["consume_id"] in calls:
                raise bad(f"pop_consume_started: consume_id {rep['consume_id']} is already started")
            msgs = rep["messages"]
            calls[rep["consume_id"]] = {"pop": True}
            emit(t, {"kind": "pop_consume_started", **base, "topic": rep["topic"], "broker": rep["broker"],
                     "consume_id": rep["consume_id"], "handles": [m["handle"] for m in msgs],
                     "msg_ids": [m["msg_id"] for m in msgs], "reconsume_list": [m["reconsume_times"] for m in msgs]})
        elif kind == "pop_consume_finished":
            call = calls.pop(rep["consume_id"], None)
            if call is None or not call.get("pop"):
                raise bad(f"pop_consume_finished: consume_id {rep['consume_id']} was not started by a "
                          "pop_consume_started (or finished twice)")
            ev = {"kind": "pop_consume_finished", **base, "consume_id": rep["consume_id"], "status": rep["status"]}
            if "timed_out" in rep:
                ev["timed_out"] = rep["timed_out"]
            emit(t, ev)
        elif kind == "pop_settle_failed":
            # no trace event: what took effect is the broker side's (message_acked); the random
            # runs' oracle reads the refusal from the report itself (conformance/simple_reports.py)
            continue
        elif kind == "stopped":
            emit(t, {"kind": "client_stopped", **base})
    return cid, events


def convert_parts(parts_dir: Path, plan: dict) -> dict[str, str]:
    """Each `.proto` part as a trace part (`.jsonl`), and the driver's own events of those clients
    (crash, pause, resume) renamed to the client id each reported; returns name -> client id."""
    group_of = {st["client"]: st["group"] for st in plan["steps"] if st["action"] == "start"}
    ids: dict[str, str] = {}
    for path in sorted(parts_dir.glob("*.proto")):
        m = _PART.match(path.name)
        if m is None:
            continue
        name = m["client"]
        group = group_of[name]
        g = plan["groups"][group]
        start_config = dict(g["config"]) | plan["client"] | {
            "subscriptions": plan["client_subscriptions"].get(name, g["subscriptions"])}
        cid, events = to_events(path, name, group, start_config)
        if cid is not None:
            ids.setdefault(name, cid)
        with path.with_suffix(".jsonl").open("w") as fh:
            for ev in events:
                fh.write(json.dumps(ev, separators=(",", ":")) + "\n")
    driver = parts_dir / "driver.jsonl"
    if ids and driver.exists():
        # the Java driver names a client "127.0.0.1@NAME", its in-process clients' id
        rename = {f"127.0.0.1@{name}": cid for name, cid in ids.items()}
        lines = []
        for line in driver.read_text().splitlines():
            try:
                ev = json.loads(line)
            except json.JSONDecodeError:
                lines.append(line)
                continue
            if ev.get("client") in rename and ev["kind"] in ("client_crashed", "client_paused", "client_resumed"):
                ev["client"] = rename[ev["client"]]
            lines.append(json.dumps(ev, separators=(",", ":")))
        driver.write_text("\n".join(lines) + "\n")
    return ids
