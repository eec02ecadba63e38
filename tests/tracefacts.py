"""Facts read off a reference trace, computed directly from events (independently of the spec),
so the reference's tests do not lean on the checker they feed."""
from __future__ import annotations

from collections import defaultdict

from rocketspec.reference.broker.schedule import parse_delay_levels


def successes_by_group(events):
    """group -> set of origin_msg_ids whose consumption succeeded at least once (ack covered)."""
    started = {}
    ok = defaultdict(set)
    for e in events:
        if e["kind"] == "consume_started":
            started[(e["client"], e["consume_id"])] = e
        elif e["kind"] == "consume_finished" and e["status"] in ("CONSUME_SUCCESS", "SUCCESS", "COMMIT"):
            s = started[(e["client"], e["consume_id"])]
            ack = e.get("ack_index", len(s["offsets"]) - 1)
            ok[e["group"]].update(s["origin_msg_ids"][: ack + 1])
    return ok


def dead_lettered_by_group(events):
    out = defaultdict(set)
    for e in events:
        if e["kind"] == "message_dead_lettered":
            out[e["group"]].add(e["origin_msg_id"])
    return out


def producer_messages(events):
    return [e for e in events if e["kind"] == "message_stored" and e["source"] == "producer"]


def subscriptions(events):
    """group -> {topic: (type, expr)} from client_started (the last one wins)."""
    subs = {}
    for e in events:
        if e["kind"] == "client_started":
            subs[e["group"]] = {t: (s["type"], s["expr"]) for t, s in e["subscriptions"].items()}
    return subs


def message_models(events):
    return {e["group"]: e["message_model"] for e in events if e["kind"] == "client_started"}


def exact_tag_match(expr: str, tags):
    if expr.strip() == "*" or expr == "":
        return True
    wanted = {t.strip() for t in expr.split("||") if t.strip()}
    return tags is not None and tags in wanted


def unaccounted(events):
    """Producer messages a clustering group subscribed to (by exact tag) that were neither
    consumed successfully nor dead-lettered."""
    ok, dlq = successes_by_group(events), dead_lettered_by_group(events)
    subs, models = subscriptions(events), message_models(events)
    deleted = {}
    for e in events:
        if e["kind"] == "messages_deleted":
            deleted[(e["topic"], e["broker"], e["queue"])] = e["min_offset"]
    missing = []
    for group, topics in subs.items():
        if models[group] != "CLUSTERING":
            continue
        for m in producer_messages(events):
            sub = topics.get(m["topic"])
            if sub is None or sub[0] != "TAG" or not exact_tag_match(sub[1], m.get("tags")):
                continue
            if m["offset"] < deleted.get((m["topic"], m["broker"], m["queue"]), 0):
                continue  # removed by retention: unreachable, not lost by the consumer
            if m["msg_id"] not in ok[group] and m["msg_id"] not in dlq[group]:
                missing.append((group, m["msg_id"]))
    return missing


def schedule_violations(events, delay_levels: str):
    delays = parse_delay_levels(delay_levels)
    bad = []
    scheduled = {}
    for e in events:
        if e["kind"] == "message_scheduled":
            if e["deliver_ts"] - e["ts"] != delays[e["delay_level"] - 1]:
                bad.append(("wrong delay", e))
            scheduled[e["msg_id"]] = e
        elif e["kind"] == "schedule_delivered":
            s = scheduled.get(e["msg_id"])
            if s is None or e["ts"] < s["deliver_ts"]:
                bad.append(("early or unknown delivery", e))
        elif e["kind"] == "message_sent_back" and e["outcome"] == "retry" and e["via"] == "consumer_send_back":
            if e["delay_level"] != 3 + e["reconsume_times"]:
                bad.append(("level is not 3 + reconsume_times", e))
    return bad


def increase_only_violations(events):
    held = {}
    bad = []
    for e in events:
        key = (e.get("client"), e.get("group"), e.get("topic"), e.get("broker"), e.get("queue"))
        if e["kind"] == "offset_removed":
            held.pop(key, None)
        elif e["kind"] == "offset_updated":
            prev = held.get(key)
            if e["increase_only"] and prev is not None and e["stored"] < prev:
                bad.append(e)
            if e["increase_only"] and prev is not None and e["stored"] != max(prev, e["offset"]) and not e.get("frozen"):
                bad.append(e)
            held[key] = e["stored"]
    return bad
