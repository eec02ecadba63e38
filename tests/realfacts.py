"""Facts of real RocketMQ runs, read from recorded traces (not from the checker's verdict).

Each function returns a list of problems (empty when the fact holds), so tests can show them.
"""
from __future__ import annotations

import json
from collections import Counter, defaultdict


def load(path) -> list[dict]:
    import gzip
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def kinds(events) -> Counter:
    return Counter(e["kind"] for e in events)


def well_formed(events) -> list[str]:
    out = []
    # the recorder wrote schema version 2 (POP kinds: 3 while they were new) until the start()-
    # returned mark (4); fixtures keep the version they were recorded with
    if not events or events[0]["kind"] != "trace_started" or events[0].get("schema_version") not in (2, 3, 4):
        out.append("the trace does not begin with trace_started of schema version 2, 3 or 4")
    if events and events[-1]["kind"] != "trace_ended":
        out.append("the trace does not end with trace_ended")
    for i, e in enumerate(events):
        if e["seq"] != i:
            out.append(f"event {i}: seq {e['seq']}")
            break
        if i and e["ts"] < events[i - 1]["ts"]:
            out.append(f"event {i}: ts goes back")
            break
    return out


def produced(events) -> list[dict]:
    return [e for e in events if e["kind"] == "message_stored" and e["source"] == "producer"]


def consumed_origins(events, group=None) -> set[str]:
    out = set()
    for e in events:
        if e["kind"] == "consume_started" and (group is None or e["group"] == group):
            out.update(e.get("origin_msg_ids") or e["msg_ids"])
    return out


def every_message_consumed(events, group=None, topic=None) -> list[str]:
    seen = consumed_origins(events, group)
    return [f"{m['topic']}/{m['queue']}@{m['offset']} {m['msg_id']} never consumed"
            for m in produced(events) if (topic is None or m["topic"] == topic) and m["msg_id"] not in seen]


def stored_before_pulled(events) -> list[str]:
    stored = set()
    out = []
    for e in events:
        if e["kind"] == "message_stored":
            stored.add(e["msg_id"])
        elif e["kind"] == "pull_answered":
            for mid in e.get("msg_ids") or []:
                if mid not in stored:
                    out.append(f"seq {e['seq']}: pull_answered lists {mid} before its message_stored")
    return out


def deliveries(events, group=None) -> Counter:
    """origin_msg_id -> listener calls that received a copy of it."""
    c = Counter()
    for e in events:
        if e["kind"] == "consume_started" and (group is None or e["group"] == group):
            c.update(e.get("origin_msg_ids") or e["msg_ids"])
    return c


def pulls_end(events) -> list[str]:
    """Every pull issued is answered or failed by the time the next one for the queue goes out.
    A ProcessQueue dropped and created again starts afresh: the dropped one's pull may still be
    held by the broker while the new one's goes out (real: seen after an offset reset)."""
    open_ = {}
    out = []
    ends = {"pull_answered", "pull_failed"}
    for e in events:
        key = (e.get("client"), e.get("group"), e.get("topic"), e.get("queue"))
        if e["kind"] == "pull_issued":
            prev = open_.get(key)
            if prev is not None:
                out.append(f"seq {e['seq']}: pull {e['pull_id']} issued while pull {prev} has no observed end")
            open_[key] = e["pull_id"]
        elif e["kind"] in ends and open_.get(key) == e["pull_id"]:
            del open_[key]
        elif e["kind"] in ("pq_dropped", "pq_created"):
            open_.pop(key, None)
    return out


def by_kind(events, kind, **match) -> list[dict]:
    return [e for e in events if e["kind"] == kind and all(e.get(k) == v for k, v in match.items())]


def groups_of(events) -> dict:
    g = defaultdict(set)
    for e in by_kind(events, "client_started"):
        g[e["group"]].add(e["client"])
    return g
