"""Scenario files: what a simulated run contains (docs/scenarios.md describes the format).

A scenario is TOML or JSON: brokers, topics, consumer groups (settings, subscriptions,
listener behaviour), producers, and a timeline of steps (start, stop, crash or pause a
client, restart a broker, network faults). `load_scenario` checks every field and reports
problems as `ScenarioError` naming the file and the field path.
"""
from __future__ import annotations

from rocketspec.config_files import short as _short_value

import tomllib
from importlib import resources
from pathlib import Path

from rocketspec.config_files import path_key as _key
from rocketspec.errors import UserError

from . import checks
from .client.listener import check_listener
from .client.push_consumer import ConsumerConfig

_ID = checks.string
_MS = checks.integer(0, checks.MAX_RUN_MS)

# Sanity bounds: a run costs time in proportion to its queues, clients, messages and simulated
# time, so each is capped far above the built-in scenarios, and the message names the bound.
MAX_BROKERS, MAX_TOPICS, MAX_GROUPS, MAX_CLIENTS, MAX_STEPS = 16, 64, 64, 64, 10_000
MAX_QUEUES = 1024                 # per topic, and over all topics and brokers together
MAX_MESSAGES = 10_000_000         # producers and produce steps together
MAX_QUEUE_DAYS = 256              # queues x simulated days (duration_ms + drain_limit_ms): ~13M events at most
MAX_LATENCY_MS = 60_000
MAX_BODY_SIZE = 4 * 1024 * 1024   # the broker's default maxMessageSize
MIN_RATE_PER_S = 0.001
DAY_MS = 24 * 3600 * 1000


# MessageConst.STRING_HASH_SET (4.9.8): Message.putUserProperty refuses these names.
SYSTEM_PROPERTIES = frozenset(
    "TRACE_ON MSG_REGION KEYS TAGS WAIT DELAY RETRY_TOPIC REAL_TOPIC REAL_QID TRAN_MSG PGROUP MIN_OFFSET "
    "MAX_OFFSET BUYER_ID ORIGIN_MESSAGE_ID TRANSFER_FLAG CORRECTION_FLAG MQ2_FLAG RECONSUME_TIME UNIQ_KEY "
    "MAX_RECONSUME_TIMES CONSUME_START_TIME INSTANCE_ID CORRELATION_ID REPLY_TO_CLIENT TTL ARRIVE_TIME "
    "PUSH_REPLY_TIME CLUSTER MSG_TYPE INNER_MULTI_QUEUE_OFFSET".split())


def _props(path: str, table) -> None:
    """Message properties: name = value, or name = [values] to draw from (strings or numbers;
    the broker sees them as strings). As Message.putUserProperty: no system property name,
    no blank name or value."""
    if not isinstance(table, dict):
        raise checks.FieldError(path, f"expected a table of properties, got {_short_value(table)}")
    for name, v in table.items():
        values = v if isinstance(v, list) else [v]
        if not values or not all(isinstance(x, (str, int, float)) and not isinstance(x, bool) for x in values):
            raise checks.FieldError(f"{path}.{_key(name)}", f"expected a string or number, or a non-empty list of them, got {_short_value(v)}")
        if name in SYSTEM_PROPERTIES:
            raise checks.FieldError(f"{path}.{_key(name)}", "a system property: RocketMQ's putUserProperty refuses it "
                                    "(\"The Property<%s> is used by system\")" % name)
        if not name.strip() or any(isinstance(x, str) and not x.strip() for x in values):
            raise checks.FieldError(f"{path}.{_key(name)}", "a blank property name or value: RocketMQ's putUserProperty "
                                    "refuses it")


def _one_or_list(path: str, v) -> None:
    """A produce step's tags: one tag for every message, or a list taken round-robin, message
    by message ("" in the list: untagged)."""
    if isinstance(v, list):
        checks.list_of(checks.string, 1)(path, v)
    else:
        checks.optional(checks.string)(path, v)


# How a client crash looks to the broker (docs/scenarios.md). silent, the default: a host cut
# off or frozen, its channel stays until the broker's channel expiry. kill: the process dies, the
# OS closes its sockets and the broker unregisters it at once (ClientHousekeepingService.onChannelClose).
CRASH_MODES = ("silent", "kill")

# The type of each step field (the action decides which fields it needs).
STEP_FIELDS = {
    "client": _ID, "group": _ID, "broker": _ID, "topic": _ID, "duration_ms": checks.integer(1, checks.MAX_RUN_MS),
    "downtime_ms": _MS, "probability": checks.number(0, 1), "count": checks.integer(0, MAX_MESSAGES),
    "skip": checks.integer(0, MAX_MESSAGES), "kind": checks.one_of("timeout", "broker_error"),
    "queue": checks.integer(0, MAX_QUEUES - 1),
    "before": checks.integer(0), "offset": checks.integer(0), "timestamp_ms": _MS,
    "tags": lambda path, v: _one_or_list(path, v), "keys": checks.optional(checks.string),
    "props": _props,
    "at_ms": _MS, "action": _ID, "note": checks.string,
    "mode": checks.one_of(*CRASH_MODES),
    "subscriptions": lambda path, v: None,      # checked against the topics below (_step_subscriptions)
    "delay_ms": checks.integer(1, checks.MAX_RUN_MS),
    # a produce step's first queue: the turn of the producer's rotation over the topic's route
    "turn": checks.integer(0, MAX_MESSAGES),
}
PRODUCER_FIELDS = {
    "topic": _ID, "count": checks.integer(0, MAX_MESSAGES), "rate_per_s": checks.number(MIN_RATE_PER_S),
    "start_ms": _MS, "tags": checks.list_of(checks.string), "keys": checks.list_of(checks.string),
    "body_size": checks.integer(0, MAX_BODY_SIZE), "sharding_keys": checks.integer(1, 1_000_000), "props": _props,
}

STEP_ACTIONS = {
    "start": {"client", "group"},
    "shutdown": {"client"},
    "crash": {"client"},
    "pause": {"client", "duration_ms"},
    "restart_broker": {"broker"},
    "oneway_loss": {"probability"},
    "fail_offset_queries": {"client", "count"},
    "fail_revive_reads": {"broker", "count"},     # POP: the broker's next revive reads fail (#10985)
    "delay_pop_reads": {"broker", "count"},       # POP: the broker's next pops read the queues late (#7914)
    "lose_pop_responses": {"client", "count"},    # POP: a gRPC client's next receive answers are lost (#10827)
    "slow_store_reads": {"broker", "delay_ms"},   # POP: a pop reading message data (of `queue`) completes delay_ms later
    "expire_commit_log": {"broker", "count"},     # the commit log's oldest messages lose their data (#7724)
    "delete_messages": {"broker", "topic", "queue", "before"},
    "produce": {"topic", "count"},
    "set_broker_offset": {"broker", "group", "topic", "queue", "offset"},
    "reset_offset": {"group", "topic", "timestamp_ms"},
}
STEP_OPTIONAL = {"restart_broker": {"downtime_ms"}, "crash": {"mode"}, "produce": {"tags", "keys", "props", "turn"},
                 "slow_store_reads": {"queue"},
                 "fail_offset_queries": {"kind", "skip"},
                 # this client's subscriptions in place of its group's (a group whose consumers
                 # subscribe differently: the broker keeps one per group, the last heartbeat's)
                 "start": {"subscriptions"}}
OFFSET_QUERY_FAILURES = ("timeout", "broker_error")


# Keys of a scenario's `real` table (docs/recorder.md): RocketMQ's timing knobs. Real runs set them
# all; the reference runs with the ones it models (reference.runner.KNOB_TO_PROFILE).
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



def _delay_levels(path, v):
    from rocketspec.rocketmq.delays import parse_delay_levels

    checks.string(path, v)
    try:
        levels = parse_delay_levels(v)
    except ValueError as exc:
        raise checks.FieldError(path, str(exc)) from None
    if not levels or any(d > checks.MAX_RUN_MS for d in levels):
        raise checks.FieldError(path, f"expected 1 or more delay levels, each at most {checks.MAX_RUN_MS} ms")


BROKER_FIELDS = {"message_delay_level": _delay_levels, "enable_property_filter": checks.boolean,
                 "filter_support_retry": checks.boolean, "long_polling_enable": checks.boolean,
                 "retry_queue_nums": checks.integer(0, MAX_QUEUES), "retry_max_times": checks.integer(0, 2**31 - 1),
                 "lock_max_live_ms": checks.integer(1, checks.MAX_RUN_MS),
                 # the RocksDB POP path (popConsumerKVServiceInit + popConsumerKVServiceEnable; 5.x)
                 "pop_consumer_kv_service": checks.boolean}


class ScenarioError(UserError, ValueError):
    """A bad scenario: `source` the file (or builtin:NAME), `path` the field path, and what was expected."""

    def __init__(self, source: str, path: str, message: str, line: int | None = None):
        super().__init__(message, file=source, line=line, field=path or None)
        self.source, self.path = source, path


def builtin_names() -> list[str]:
    d = resources.files("rocketspec.reference").joinpath("scenarios")
    return sorted(p.name.rsplit(".", 1)[0] for p in d.iterdir() if p.name.endswith(".toml"))


# Known bug -> the built-in scenario that shows it. Scenarios whose name mentions the issue
# number (e.g. "bug-4215") are found automatically; this table adds the ones named otherwise.
BUG_SCENARIOS = {"#6163": "orderly-dlq"}


def bug_scenario(known_bug: str) -> str | None:
    """The built-in scenario that shows a known bug ("#4215"), or None."""
    num = known_bug.lstrip("#")
    named = [n for n in builtin_names() if num in n]
    return named[0] if named else BUG_SCENARIOS.get(known_bug)


def load_scenario(name_or_file: str, known_ids=None) -> dict:
    """A built-in scenario by name, or a scenario file (.toml or .json); ScenarioError otherwise.
    `known_ids`: see validate (conformance.verdicts.load_checked_scenario gives them)."""
    from rocketspec.config_files import parse, read_text

    p = Path(name_or_file)
    if p.suffix.lower() in (".yaml", ".yml"):
        raise ScenarioError(name_or_file, "", "a scenario file is TOML (.toml) or JSON (.json), not YAML "
                                              "(see docs/scenarios.md)")
    if p.suffix in (".toml", ".json") or (p.exists() and name_or_file not in builtin_names()):
        source = str(p)
        try:
            raw = parse(read_text(p, "scenario file (.toml or .json)"), "json" if p.suffix == ".json" else "toml",
                        source, what="scenario (topics, groups, steps: docs/scenarios.md)")
        except UserError as exc:
            raise ScenarioError(source, exc.field or "", exc.message, line=exc.line) from None
    elif name_or_file in builtin_names():
        source = f"builtin:{name_or_file}"
        text = resources.files("rocketspec.reference").joinpath("scenarios", f"{name_or_file}.toml").read_text()
        raw = tomllib.loads(text)
    else:
        raise ScenarioError(name_or_file, "", f"not a built-in scenario ({', '.join(builtin_names())}) "
                                              "nor a .toml/.json file")
    return validate(raw, source, known_ids)


def _expect(source, path, value, types, what):
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,))):
        raise ScenarioError(source, path, f"expected {what}, got {_short_value(value)}")
    return value


def _check_subscription(source: str, path: str, expr) -> None:
    """A subscription must parse as RocketMQ's FilterAPI and, for SQL92, compile."""
    from rocketspec.rocketmq.filter import FilterCompileError, SubscriptionError, build_subscription, compile_sql92

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


_EXPECT_HELP = ('"holds", or a table {fails = "INV-..." or [ids]}, optionally with per-profile overrides '
                '{profiles = {"rocketmq-4.9.8" = "holds" or {fails = ...}}}')


def _parse_verdict(source, path, v, known_ids):
    """'holds' -> frozenset(); {fails = id | [ids]} -> frozenset(ids). With `known_ids` (the
    invariant catalogue, which the layers above give), an id outside it is refused."""
    if v == "holds":
        return frozenset()
    if isinstance(v, dict) and "fails" in v and not set(v) - {"fails", "profiles"}:
        ids = v["fails"]
        ids = [ids] if isinstance(ids, str) else ids
        if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
            raise ScenarioError(source, f"{path}.fails", "an invariant id or a non-empty list of ids")
        unknown = [] if known_ids is None else [i for i in ids if i not in known_ids]
        if unknown:
            raise ScenarioError(source, f"{path}.fails", f"unknown invariant ids {unknown} (see `rocketspec "
                                "schema` / spec/SPEC.md)")
        return frozenset(ids)
    raise ScenarioError(source, path, f"expected {_EXPECT_HELP}, got {_short_value(v)}")


def _parse_expect(source, raw, known_ids=None):
    """The scenario's expected verdict under the release profiles: {"default": ids, "profiles":
    {name: ids}, "may_also": ids}; an empty id set means the trace holds. `may_also`: ids another
    seed may fail with too, where the seed decides which of two real outcomes a run takes (e.g.
    where a SIGSTOP lands: between calls or inside one). None when the scenario declares none.
    `known_ids`: see _parse_verdict."""
    if raw is None:
        return None
    may_also = frozenset()
    if isinstance(raw, dict) and "may_also" in raw:
        ids = raw["may_also"]
        if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
            raise ScenarioError(source, "expect.may_also", "a non-empty list of invariant ids")
        unknown = [] if known_ids is None else [i for i in ids if i not in known_ids]
        if unknown:
            raise ScenarioError(source, "expect.may_also", f"unknown invariant ids {unknown}")
        may_also = frozenset(ids)
        raw = {k: v for k, v in raw.items() if k != "may_also"} or "holds"
        if raw == {"holds": True}:
            raw = "holds"
    profiles = {}
    if isinstance(raw, dict) and "profiles" in raw:
        pt = raw["profiles"]
        if not isinstance(pt, dict):
            raise ScenarioError(source, "expect.profiles", "a table of profile name -> verdict")
        for name, v in pt.items():
            profiles[name] = _parse_verdict(source, f"expect.profiles.{_key(name)}", v, known_ids)
        raw = {k: v for k, v in raw.items() if k != "profiles"} or "holds"
        if raw == {"holds": True}:
            raw = "holds"
    return {"default": _parse_verdict(source, "expect", raw, known_ids), "profiles": profiles, "may_also": may_also}


# Assumptions a scenario breaks on purpose (docs/scenarios.md, "Random scenarios"): what the break
# is, and the invariants it may make fail. Documentation of the run: the runner does not read it.
BREAK_KINDS = ("pause_past_lease", "lock_shorter_than_lease", "overlong_call", "subscriptions_differ")


def _parse_breaks(source, raw, known_ids=None) -> list:
    """`breaks`: a list of {kind, target, expect = [invariant ids that may fail], note?}."""
    _expect(source, "breaks", raw, list, "a list of {kind, target, expect, note}")
    for i, b in enumerate(raw):
        path = f"breaks[{i}]"
        _expect(source, path, b, dict, "a table with kind, target and expect")
        extra = set(b) - {"kind", "target", "expect", "note"}
        if extra:
            raise ScenarioError(source, f"{path}.{_key(sorted(extra)[0])}", "unknown key; a break has kind, target, "
                                "expect and note")
        if b.get("kind") not in BREAK_KINDS:
            raise ScenarioError(source, f"{path}.kind", f"expected one of {list(BREAK_KINDS)}, got "
                                f"{_short_value(b.get('kind'))}")
        _expect(source, f"{path}.target", b.get("target"), str, "what the break is done to (a client, group or "
                "the broker)")
        ids = b.get("expect")
        if not isinstance(ids, list) or not ids or not all(isinstance(x, str) for x in ids):
            raise ScenarioError(source, f"{path}.expect", "a non-empty list of the invariant ids that may fail")
        unknown = [] if known_ids is None else [x for x in ids if x not in known_ids]
        if unknown:
            raise ScenarioError(source, f"{path}.expect", f"unknown invariant ids {unknown} (see `rocketspec schema` "
                                "/ spec/SPEC.md)")
        _expect(source, f"{path}.note", b.get("note", ""), str, "a string")
    return raw


def uses_pop(sc: dict) -> bool:
    """A group of the scenario consumes by POP (client_type POP_PUSH or SIMPLE): RocketMQ 5.x only."""
    return any(g.get("client_type", "PUSH") != "PUSH" for g in sc["groups"].values())


def runs_under(sc: dict, profile) -> bool:
    """Whether the scenario can run under the profile: a POP scenario needs one whose release has
    POP (switch `pop`); the runner refuses the others (exit 2)."""
    from rocketspec.rocketmq.profiles import get_profile

    return not uses_pop(sc) or get_profile(profile).pop


def tolerated_failures(sc: dict, profile: str):
    """The ids a run of `sc` under `profile` may fail with on any seed: its expected ones and the
    scenario's `may_also` (None when it declares no expectation)."""
    want = expected_failures(sc, profile)
    return None if want is None else frozenset(want) | sc["expect"].get("may_also", frozenset())


def expected_failures(sc: dict, profile: str):
    """The invariant ids a release-profile run of `sc` must fail with (empty: it must hold), or
    None when the scenario declares no expectation. Known-bug profiles expect their own
    `expected_violation` instead (rocketspec.rocketmq.profiles)."""
    e = sc.get("expect")
    if e is None:
        return None
    return e["profiles"].get(profile, e["default"])


def validate(raw: dict, source: str = "<scenario>", known_ids=None) -> dict:
    """The scenario `raw` checked field by field (ScenarioError naming the first bad one). The
    ids its `expect` names are checked against `known_ids` when given (conformance.verdicts
    gives the spec's catalogue: the reference does not import the spec)."""
    if not isinstance(raw, dict):
        raise ScenarioError(source, "", "a scenario is a table/object")
    known = {"name", "description", "duration_ms", "drain_limit_ms", "latency_ms", "brokers", "broker_config",
             "topics", "groups", "consumers", "producers", "steps", "expect", "real", "breaks"}
    unknown = set(raw) - known
    if unknown:
        raise ScenarioError(source, _key(sorted(unknown)[0]), f"unknown top-level key(s) {', '.join(sorted(unknown))}; "
                                                        f"expected only {', '.join(sorted(known))}")
    def field(path, value, check):
        try:
            check(path, value)
        except checks.FieldError as exc:
            raise ScenarioError(source, exc.path, str(exc)) from None
        return value

    sc = {
        "name": field("name", raw.get("name", Path(source).stem), checks.string),
        "description": field("description", raw.get("description", ""), checks.string),
        "duration_ms": field("duration_ms", raw.get("duration_ms", 60000), _MS),
        "drain_limit_ms": field("drain_limit_ms", raw.get("drain_limit_ms", 6 * 3600 * 1000), _MS),
        "latency_ms": field("latency_ms", raw.get("latency_ms", 1), checks.integer(0, MAX_LATENCY_MS)),
        "brokers": _expect(source, "brokers", raw.get("brokers", ["broker-a"]), list, "a list of broker names"),
        "broker_config": _expect(source, "broker_config", raw.get("broker_config", {}), dict, "a table"),
        "expect": _parse_expect(source, raw.get("expect"), known_ids),
        "breaks": _parse_breaks(source, raw.get("breaks", []), known_ids),
    }
    for i, b in enumerate(sc["brokers"]):
        field(f"brokers[{i}]", b, checks.string)
    if not 1 <= len(sc["brokers"]) <= MAX_BROKERS or len(set(sc["brokers"])) != len(sc["brokers"]):
        raise ScenarioError(source, "brokers", f"expected 1 to {MAX_BROKERS} distinct broker names, got "
                                               f"{len(sc['brokers'])} names")
    try:
        checks.check_table(sc["broker_config"], BROKER_FIELDS, "broker_config")
    except checks.FieldError as exc:
        raise ScenarioError(source, exc.path, str(exc)) from None
    # `real`: RocketMQ's timing knobs; the reference applies the ones it models (runner.KNOB_TO_PROFILE).
    sc["real"] = _expect(source, "real", raw.get("real", {}), dict, "a table")
    try:
        checks.check_table(sc["real"], {k: checks.integer(1, checks.MAX_RUN_MS) for k in REAL_KEYS}, "real")
    except checks.FieldError as exc:
        raise ScenarioError(source, exc.path, str(exc)) from None
    topics = _expect(source, "topics", raw.get("topics", []), list, "a list of topics")
    if len(topics) > MAX_TOPICS:
        raise ScenarioError(source, "topics", f"at most {MAX_TOPICS} topics, got {len(topics)}")
    sc["topics"] = []
    for i, t in enumerate(topics):
        path = f"topics[{i}]"
        _expect(source, path, t, dict, "a table with name and queues")
        for k in t:
            if k not in ("name", "queues", "brokers"):
                raise ScenarioError(source, f"{path}.{_key(k)}", "unknown key; a topic has name, queues and brokers")
        name = _expect(source, f"{path}.name", t.get("name"), str, "a topic name")
        queues = field(f"{path}.queues", t.get("queues", 4), checks.integer(1, MAX_QUEUES))
        brokers = _expect(source, f"{path}.brokers", t.get("brokers", sc["brokers"]), list, "broker names")
        for b in brokers:
            if b not in sc["brokers"]:
                raise ScenarioError(source, f"{path}.brokers", f"unknown broker {b!r}")
        sc["topics"].append({"name": name, "queues": queues, "brokers": brokers})
    total_queues = sum(t["queues"] * len(t["brokers"]) for t in sc["topics"])
    if total_queues > MAX_QUEUES:
        raise ScenarioError(source, "topics", f"at most {MAX_QUEUES} queues over all topics and brokers, got "
                                              f"{total_queues}")
    days = (sc["duration_ms"] + sc["drain_limit_ms"]) / DAY_MS
    if total_queues * days > MAX_QUEUE_DAYS:
        raise ScenarioError(source, "duration_ms", f"{total_queues} queues for {days:.1f} simulated days "
                            f"(duration_ms + drain_limit_ms) is more than {MAX_QUEUE_DAYS} queue-days: a run's "
                            "cost grows with both; shorten the run or use fewer queues")
    topic_names = {t["name"] for t in sc["topics"]}
    groups = _expect(source, "groups", raw.get("groups", []), list, "a list of consumer groups")
    if len(groups) > MAX_GROUPS:
        raise ScenarioError(source, "groups", f"at most {MAX_GROUPS} groups, got {len(groups)}")
    sc["groups"] = {}
    for i, g in enumerate(groups):
        path = f"groups[{i}]"
        _expect(source, path, g, dict, "a table")
        name = _expect(source, f"{path}.name", g.get("name"), str, "a group name")
        subs = _expect(source, f"{path}.subscriptions", g.get("subscriptions"), dict, "a table topic = expression")
        for topic, expr in subs.items():
            if topic not in topic_names:
                raise ScenarioError(source, f"{path}.subscriptions.{_key(topic)}", "topic is not declared in [[topics]]")
            if not isinstance(expr, (str, dict)):
                raise ScenarioError(source, f"{path}.subscriptions.{_key(topic)}", "expected a tag expression or {type, expr}")
        try:
            cfg = ConsumerConfig.resolve(g)
            check_listener(g.get("listener"), cfg["consume_mode"] == "ORDERLY", "listener")
        except checks.FieldError as exc:
            raise ScenarioError(source, f"{path}.{exc.path}" if exc.path else path, str(exc)) from None
        for topic, expr in subs.items():
            _check_subscription(source, f"{path}.subscriptions.{_key(topic)}", expr)
        sc["groups"][name] = g
    producers = _expect(source, "producers", raw.get("producers", []), list, "a list of producers")
    sc["producers"] = []
    for i, pr in enumerate(producers):
        path = f"producers[{i}]"
        _expect(source, path, pr, dict, "a table")
        if not isinstance(pr.get("topic"), str) or pr["topic"] not in topic_names:
            raise ScenarioError(source, f"{path}.topic", f"unknown topic {pr.get('topic')!r}")
        try:
            checks.check_table(pr, PRODUCER_FIELDS)
        except checks.FieldError as exc:
            raise ScenarioError(source, f"{path}.{exc.path}" if exc.path else path, str(exc)) from None
        sc["producers"].append(pr)
    steps = _expect(source, "steps", raw.get("steps", []), list, "a list of steps")
    if len(steps) > MAX_STEPS:
        raise ScenarioError(source, "steps", f"at most {MAX_STEPS} steps, got {len(steps)}")
    sc["steps"] = []
    for i, st in enumerate(steps):
        path = f"steps[{i}]"
        _expect(source, path, st, dict, "a table with at_ms and action")
        at = _expect(source, f"{path}.at_ms", st.get("at_ms"), int, "a time in milliseconds")
        action = st.get("action")
        if not isinstance(action, str) or action not in STEP_ACTIONS:
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
        if "subscriptions" in st:
            _step_subscriptions(source, f"{path}.subscriptions", st["subscriptions"], {t["name"] for t in sc["topics"]})
        if "broker" in st and st["broker"] not in sc["brokers"]:
            raise ScenarioError(source, f"{path}.broker", f"unknown broker {st['broker']!r}")
        if at < 0:
            raise ScenarioError(source, f"{path}.at_ms", "must be >= 0")
        if action == "fail_offset_queries" and st.get("kind", "timeout") not in OFFSET_QUERY_FAILURES:
            raise ScenarioError(source, f"{path}.kind", f"expected one of {list(OFFSET_QUERY_FAILURES)}")
        if "group" in st and action != "start" and st["group"] not in sc["groups"]:
            raise ScenarioError(source, f"{path}.group", f"unknown group {st['group']!r}")
        sc["steps"].append(st)
    messages = sum(p.get("count", 0) for p in sc["producers"]) + sum(
        st["count"] for st in sc["steps"] if st["action"] == "produce")
    if messages > MAX_MESSAGES:
        raise ScenarioError(source, "producers", f"at most {MAX_MESSAGES} messages in a run (producers and produce "
                                                 f"steps together), got {messages}")
    clients = {st["client"] for st in sc["steps"] if st["action"] == "start"}
    if len(clients) > MAX_CLIENTS:
        raise ScenarioError(source, "steps", f"at most {MAX_CLIENTS} clients, got {len(clients)}")
    started = set()
    ever_started = {st["client"] for st in sc["steps"] if st["action"] == "start"}
    # the runner takes steps in the order of at_ms (the file's order among equal times)
    for i in sorted(range(len(sc["steps"])), key=lambda i: sc["steps"][i]["at_ms"]):
        st = sc["steps"][i]
        if st["action"] == "start":
            started.add(st["client"])
        elif st["action"] in ("fail_offset_queries", "lose_pop_responses"):
            if st["client"] not in ever_started:   # a fault may be armed before the client starts
                raise ScenarioError(source, f"steps[{i}].client", f"client {st['client']!r} is never started")
        elif "client" in st and st["client"] not in started:
            raise ScenarioError(source, f"steps[{i}].client", f"client {st['client']!r} is not started by an earlier step "
                                                                 f"(at_ms {st['at_ms']})")
    return sc


def _step_subscriptions(source, path: str, subs, topic_names: set) -> None:
    """A start step's own subscriptions: as a group's, a table topic = expression of declared topics."""
    _expect(source, path, subs, dict, "a table topic = expression")
    if not subs:
        raise ScenarioError(source, path, "expected at least one topic = expression")
    for topic, expr in subs.items():
        if topic not in topic_names:
            raise ScenarioError(source, f"{path}.{_key(topic)}", "topic is not declared in [[topics]]")
        if not isinstance(expr, (str, dict)):
            raise ScenarioError(source, f"{path}.{_key(topic)}", "expected a tag expression or {type, expr}")
        _check_subscription(source, f"{path}.{_key(topic)}", expr)
