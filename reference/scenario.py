"""Scenario files: what a simulated run contains (docs/scenarios.md describes the format).

A scenario is TOML or JSON: brokers, topics, consumer groups (settings, subscriptions,
listener behaviour), producers, and a timeline of steps (start, stop, crash or pause a
client, restart a broker, network faults). `load_scenario` checks every field and reports
problems as `ScenarioError` naming the file and the field path.
"""
from __future__ import annotations

import json
import tomllib
from importlib import resources
from pathlib import Path

from . import checks
from .client.listener import check_listener
from .client.push_consumer import ConsumerConfig

_ID = checks.string
_MS = checks.integer(0)


def _props(path: str, table) -> None:
    """Message properties: name = value, or name = [values] to draw from (strings or numbers;
    the broker sees them as strings)."""
    if not isinstance(table, dict):
        raise checks.FieldError(path, f"expected a table of properties, got {table!r}")
    for name, v in table.items():
        values = v if isinstance(v, list) else [v]
        if not values or not all(isinstance(x, (str, int, float)) and not isinstance(x, bool) for x in values):
            raise checks.FieldError(f"{path}.{name}", f"expected a string or number, or a non-empty list of them, got {v!r}")

# The type of each step field (the action decides which fields it needs).
STEP_FIELDS = {
    "client": _ID, "group": _ID, "broker": _ID, "topic": _ID, "duration_ms": checks.integer(1),
    "downtime_ms": _MS, "probability": checks.number(0, 1), "count": checks.integer(0),
    "skip": checks.integer(0), "kind": checks.one_of("timeout", "broker_error"), "queue": checks.integer(0),
    "before": checks.integer(0), "offset": checks.integer(0), "timestamp_ms": _MS,
    "tags": checks.optional(checks.string), "keys": checks.optional(checks.string),
    "props": _props,
    "at_ms": _MS, "action": _ID, "note": checks.string,
}
PRODUCER_FIELDS = {
    "topic": _ID, "count": checks.integer(0), "rate_per_s": checks.number(0, exclusive_lo=True),
    "start_ms": _MS, "tags": checks.list_of(checks.string), "keys": checks.list_of(checks.string),
    "body_size": checks.integer(0), "sharding_keys": checks.integer(1), "props": _props,
}

STEP_ACTIONS = {
    "start": {"client", "group"},
    "shutdown": {"client"},
    "crash": {"client"},
    "pause": {"client", "duration_ms"},
    "restart_broker": {"broker"},
    "oneway_loss": {"probability"},
    "fail_offset_queries": {"client", "count"},
    "delete_messages": {"broker", "topic", "queue", "before"},
    "produce": {"topic", "count"},
    "set_broker_offset": {"broker", "group", "topic", "queue", "offset"},
    "reset_offset": {"group", "topic", "timestamp_ms"},
}
STEP_OPTIONAL = {"restart_broker": {"downtime_ms"}, "produce": {"tags", "keys", "props"},
                 "fail_offset_queries": {"kind", "skip"}}
OFFSET_QUERY_FAILURES = ("timeout", "broker_error")


# Keys of a scenario's `real` table (docs/recorder.md): RocketMQ's timing knobs for real runs.
REAL_KEYS = {
    "client_lock_max_live_ms": "ms (rocketmq.client.rebalance.lockMaxLiveTime)",
    "lock_interval_ms": "ms (rocketmq.client.rebalance.lockInterval)",
    "rebalance_interval_ms": "ms (rocketmq.client.rebalance.waitInterval)",
    "pull_max_idle_ms": "ms (rocketmq.client.pull.pullMaxIdleTime)",
    "unlock_delay_ms": "ms (rocketmq.client.unlockDelayTimeMills)",
    "max_time_consume_continuously_ms": "ms (rocketmq.client.maxTimeConsumeContinuously)",
    "persist_consumer_offset_interval_ms": "ms (consumer persistConsumerOffsetInterval)",
    "heartbeat_broker_interval_ms": "ms (consumer heartbeatBrokerInterval)",
    "poll_name_server_interval_ms": "ms (consumer pollNameServerInterval)",
    "server_channel_max_idle_s": "seconds (broker serverChannelMaxIdleTimeSeconds)",
    "drain_ms": "ms a real run may go on after duration_ms to reach quiescence",
    "attach_broker_after_ms": "ms after the start when the broker recorder attaches (a snapshot begins its part)",
}


class ScenarioError(ValueError):
    def __init__(self, source: str, path: str, message: str):
        self.source, self.path, self.message = source, path, message
        super().__init__(f"{source}: {path}: {message}" if path else f"{source}: {message}")


def builtin_names() -> list[str]:
    d = resources.files("rocketspec.reference").joinpath("scenarios")
    return sorted(p.name.rsplit(".", 1)[0] for p in d.iterdir() if p.name.endswith(".toml"))


def load_scenario(name_or_file: str) -> dict:
    p = Path(name_or_file)
    if p.suffix in (".toml", ".json") and p.exists():
        text, source = p.read_text(), str(p)
        fmt = p.suffix
    elif name_or_file in builtin_names():
        source = f"builtin:{name_or_file}"
        text = resources.files("rocketspec.reference").joinpath("scenarios", f"{name_or_file}.toml").read_text()
        fmt = ".toml"
    elif p.suffix in (".toml", ".json"):
        raise ScenarioError(name_or_file, "", "no such file")
    else:
        raise ScenarioError(name_or_file, "", f"not a built-in scenario ({', '.join(builtin_names())}) "
                                              "nor a .toml/.json file")
    try:
        raw = tomllib.loads(text) if fmt == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ScenarioError(source, "", f"not valid {fmt[1:].upper()}: {exc}") from None
    return validate(raw, source)


def _expect(source, path, value, types, what):
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,))):
        raise ScenarioError(source, path, f"expected {what}, got {value!r}")
    return value


def _check_subscription(source: str, path: str, expr) -> None:
    """A subscription must parse as RocketMQ's FilterAPI and, for SQL92, compile."""
    from rocketspec.spec.filter import FilterCompileError, SubscriptionError, build_subscription, compile_sql92

    if isinstance(expr, dict):
        bad = set(expr) - {"type", "expr"}
        if bad or not isinstance(expr.get("expr"), str) or expr.get("type", "TAG") not in ("TAG", "SQL92"):
            raise ScenarioError(source, path, 'expected a tag expression or {type = "TAG"|"SQL92", expr = "..."}')
        kind, text = expr.get("type", "TAG"), expr["expr"]
    else:
        kind, text = "TAG", expr
    try:
        build_subscription(text, kind)
        if kind == "SQL92":
            compile_sql92(text)
    except (SubscriptionError, FilterCompileError) as exc:
        raise ScenarioError(source, path, f"{kind} subscription {text!r} is rejected: {exc}") from None


def validate(raw: dict, source: str = "<scenario>") -> dict:
    if not isinstance(raw, dict):
        raise ScenarioError(source, "", "a scenario is a table/object")
    known = {"name", "description", "duration_ms", "drain_limit_ms", "latency_ms", "brokers", "broker_config",
             "topics", "groups", "consumers", "producers", "steps", "real"}
    unknown = set(raw) - known
    if unknown:
        raise ScenarioError(source, "", f"unknown top-level keys: {', '.join(sorted(unknown))}")
    sc = {
        "name": str(raw.get("name", Path(source).stem)),
        "description": str(raw.get("description", "")),
        "duration_ms": _expect(source, "duration_ms", raw.get("duration_ms", 60000), int, "milliseconds"),
        "drain_limit_ms": _expect(source, "drain_limit_ms", raw.get("drain_limit_ms", 6 * 3600 * 1000), int, "milliseconds"),
        "latency_ms": _expect(source, "latency_ms", raw.get("latency_ms", 1), int, "milliseconds"),
        "brokers": _expect(source, "brokers", raw.get("brokers", ["broker-a"]), list, "a list of broker names"),
        "broker_config": _expect(source, "broker_config", raw.get("broker_config", {}), dict, "a table"),
    }
    # `real`: settings only `rocketspec record` uses (timing knobs of a real run); simulate ignores it.
    sc["real"] = _expect(source, "real", raw.get("real", {}), dict, "a table")
    bad = set(sc["real"]) - set(REAL_KEYS)
    if bad:
        raise ScenarioError(source, "real", f"unknown keys {sorted(bad)}; known: {sorted(REAL_KEYS)}")
    for key, value in sc["real"].items():
        _expect(source, f"real.{key}", value, int, REAL_KEYS[key])
    broker_keys = {"message_delay_level", "enable_property_filter", "filter_support_retry", "retry_queue_nums",
                   "retry_max_times", "long_polling_enable", "lock_max_live_ms"}
    bad = set(sc["broker_config"]) - broker_keys
    if bad:
        raise ScenarioError(source, "broker_config", f"unknown keys {sorted(bad)}; known: {sorted(broker_keys)}")
    topics = _expect(source, "topics", raw.get("topics", []), list, "a list of topics")
    sc["topics"] = []
    for i, t in enumerate(topics):
        path = f"topics[{i}]"
        _expect(source, path, t, dict, "a table with name and queues")
        name = _expect(source, f"{path}.name", t.get("name"), str, "a topic name")
        queues = _expect(source, f"{path}.queues", t.get("queues", 4), int, "a queue count")
        brokers = _expect(source, f"{path}.brokers", t.get("brokers", sc["brokers"]), list, "broker names")
        for b in brokers:
            if b not in sc["brokers"]:
                raise ScenarioError(source, f"{path}.brokers", f"unknown broker {b!r}")
        sc["topics"].append({"name": name, "queues": queues, "brokers": brokers})
    topic_names = {t["name"] for t in sc["topics"]}
    groups = _expect(source, "groups", raw.get("groups", []), list, "a list of consumer groups")
    sc["groups"] = {}
    for i, g in enumerate(groups):
        path = f"groups[{i}]"
        _expect(source, path, g, dict, "a table")
        name = _expect(source, f"{path}.name", g.get("name"), str, "a group name")
        subs = _expect(source, f"{path}.subscriptions", g.get("subscriptions"), dict, "a table topic = expression")
        for topic, expr in subs.items():
            if topic not in topic_names:
                raise ScenarioError(source, f"{path}.subscriptions.{topic}", "topic is not declared in [[topics]]")
            if not isinstance(expr, (str, dict)):
                raise ScenarioError(source, f"{path}.subscriptions.{topic}", "expected a tag expression or {type, expr}")
        try:
            cfg = ConsumerConfig.resolve(g)
            check_listener(g.get("listener"), cfg["consume_mode"] == "ORDERLY", "listener")
        except checks.FieldError as exc:
            raise ScenarioError(source, f"{path}.{exc.path}" if exc.path else path, str(exc)) from None
        for topic, expr in subs.items():
            _check_subscription(source, f"{path}.subscriptions.{topic}", expr)
        sc["groups"][name] = g
    producers = _expect(source, "producers", raw.get("producers", []), list, "a list of producers")
    sc["producers"] = []
    for i, pr in enumerate(producers):
        path = f"producers[{i}]"
        _expect(source, path, pr, dict, "a table")
        if pr.get("topic") not in topic_names:
            raise ScenarioError(source, f"{path}.topic", f"unknown topic {pr.get('topic')!r}")
        try:
            checks.check_table(pr, PRODUCER_FIELDS)
        except checks.FieldError as exc:
            raise ScenarioError(source, f"{path}.{exc.path}", str(exc)) from None
        sc["producers"].append(pr)
    steps = _expect(source, "steps", raw.get("steps", []), list, "a list of steps")
    sc["steps"] = []
    for i, st in enumerate(steps):
        path = f"steps[{i}]"
        _expect(source, path, st, dict, "a table with at_ms and action")
        at = _expect(source, f"{path}.at_ms", st.get("at_ms"), int, "a time in milliseconds")
        action = st.get("action")
        if action not in STEP_ACTIONS:
            raise ScenarioError(source, f"{path}.action", f"unknown action {action!r}; known: {sorted(STEP_ACTIONS)}")
        need = STEP_ACTIONS[action]
        missing = need - set(st)
        if missing:
            raise ScenarioError(source, path, f"{action} needs {sorted(missing)}")
        extra = set(st) - need - STEP_OPTIONAL.get(action, set()) - {"at_ms", "action", "note"}
        if extra:
            raise ScenarioError(source, path, f"{action} does not take {sorted(extra)}")
        for key, value in st.items():
            try:
                STEP_FIELDS[key](f"{path}.{key}", value)
            except checks.FieldError as exc:
                raise ScenarioError(source, exc.path, str(exc)) from None
        if action == "start" and st["group"] not in sc["groups"]:
            raise ScenarioError(source, f"{path}.group", f"unknown group {st['group']!r}")
        if "broker" in st and st["broker"] not in sc["brokers"]:
            raise ScenarioError(source, f"{path}.broker", f"unknown broker {st['broker']!r}")
        if at < 0:
            raise ScenarioError(source, f"{path}.at_ms", "must be >= 0")
        if action == "fail_offset_queries" and st.get("kind", "timeout") not in OFFSET_QUERY_FAILURES:
            raise ScenarioError(source, f"{path}.kind", f"expected one of {list(OFFSET_QUERY_FAILURES)}")
        if "group" in st and action != "start" and st["group"] not in sc["groups"]:
            raise ScenarioError(source, f"{path}.group", f"unknown group {st['group']!r}")
        sc["steps"].append(st)
    started = set()
    ever_started = {st["client"] for st in sc["steps"] if st["action"] == "start"}
    for i, st in enumerate(sc["steps"]):
        if st["action"] == "start":
            started.add(st["client"])
        elif st["action"] == "fail_offset_queries":
            if st["client"] not in ever_started:   # a fault may be armed before the client starts
                raise ScenarioError(source, f"steps[{i}].client", f"client {st['client']!r} is never started")
        elif "client" in st and st["client"] not in started:
            raise ScenarioError(source, f"steps[{i}].client", f"client {st['client']!r} is not started by an earlier step")
    return sc
