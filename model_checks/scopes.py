"""Exploration scopes: the bounds of one exhaustive search.

A scope is a TOML file (see docs/model-checking.md); the named scopes live in
``model_checks/scopes/<name>.toml``. Unknown keys and wrong types are bad input
(`ScopeError`, exit code 2 on the command line).
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path

from rocketspec.errors import UserError

SCOPE_DIR = Path(__file__).with_name("scopes")

FAULT_KINDS = ("crash", "pause", "persist_lost", "query_failure", "reset", "clean_expired", "send_back_failed",
               "route_lost", "reset_by_time", "shutdown", "broker_restart", "revive_read_failed", "send_back_threw",
               "pop_read_late", "commit_log_expired", "pop_response_lost")
# a scope without fault_kinds: every kind but those only a bug's scope asks for by name
DEFAULT_FAULT_KINDS = tuple(k for k in FAULT_KINDS if k not in ("commit_log_expired", "pop_response_lost"))
SUBSCRIPTION_TYPES = ("TAG", "SQL92")


class ScopeError(UserError, ValueError):
    """A bad scope: the file (or <dict>), the key, and what was expected."""

    def __init__(self, origin: str, message: str, key: str | None = None, line: int | None = None):
        super().__init__(message, file=origin, field=key, line=line)


@dataclass(frozen=True)
class Scope:
    name: str = "custom"
    consumers: int = 1                  # clients of the one group
    queues: int = 2                     # queues of the one topic on each broker
    brokers: int = 1                    # brokers hosting the topic (broker-a, broker-b, ...)
    messages: int = 2                   # stored before the run, round-robin over the queues
    mode: str = "CONCURRENTLY"          # CONCURRENTLY | ORDERLY (clustering)
    message_model: str = "CLUSTERING"   # CLUSTERING | BROADCASTING (concurrent consumers only)
    strategy: str = "AVG"
    max_reconsume_times: int = 1        # client config maxReconsumeTimes
    failures: int = 1                   # listener failures (RECONSUME_LATER / SUSPEND) in a run
    faults: int = 0                     # faults in a run
    fault_kinds: tuple = DEFAULT_FAULT_KINDS
    pause_ms: tuple = (31000,)          # client pause durations
    threads: int = 1                    # concurrent batches in flight per ProcessQueue
    pull_batch: int = 32                # messages per pull answer
    consume_batch: int = 1              # messages per listener call (consumeMessageBatchMaxSize)
    consume_ms: tuple = (1,)            # listener call durations the explorer tries (ms)
    crash_modes: tuple = ("silent",)    # how a crash looks to the broker (reference.scenario.CRASH_MODES)
    horizon_ms: int = 300_000           # a run not quiescent by then ends: judged (horizon) when nothing waits on the clock
    start_gap_ms: int = 0               # client i starts at i * start_gap_ms (a late joiner takes queues over)
    produce_at_ms: int = 0              # when the `messages` are stored (the first of them)
    produce_every_ms: int = 0           # > 0: the messages are stored one every this many ms
    produce_queues: tuple = ()          # with produce_every_ms: each message's queue (else round-robin)
    restart_at_ms: int = 0              # > 0: every client starts again then (if a fault stopped it)
    delay_level: int = 0                # the listener's delayLevelWhenNextConsume on a failure (0: the broker's 3 + r)
    consume_from_where: str = "CONSUME_FROM_FIRST_OFFSET"   # where a queue with no committed offset starts
    subscription: str = "*"             # the group's expression for the topic
    subscription_type: str = "TAG"      # TAG | SQL92 (SQL92 turns the broker's property filter on)
    tags: tuple = ()                    # the stored messages' tags, round-robin ("": no tag); () none
    props: tuple = ()                   # the stored messages' user properties (tables), round-robin
    broker_downtime_ms: int = 1000      # how long a broker_restart keeps the broker down
    client_type: str = "PUSH"           # PUSH | POP_PUSH | SIMPLE | GRPC_PUSH (POP, 5.x: reference.client)
    pop_invisible_ms: int = 5000        # a POP client's invisible time
    pop_retry_invisible_ms: int = 0     # SIMPLE: a failed message's new invisible time (0: left to its deadline)
    pop_batch: int = 32                 # a POP client's messages per pop (pop_batch_nums; GRPC_PUSH: its cache)
    pop_read_ms: int = 0                # > 0: a pop that reads message data completes its read this much later
    pop_read_queue: int = -1            # with pop_read_ms: only this queue's data is slow (-1: every queue's)
    long_polling_ms: int = 20000        # GRPC_PUSH: the long poll the proxy gives its clients (>= 5 s)
    pop_kv_service: bool = False        # the broker's RocksDB POP path (broker_config pop_consumer_kv_service)
    max_states: int = 5_000_000         # safety cap on distinct states
    max_depth: int = 10_000             # expand no node this many choices deep (below: a bounded search)

    @property
    def retry(self) -> bool:
        return self.failures > 0 or "clean_expired" in self.fault_kinds and self.faults > 0

    def to_dict(self) -> dict:
        return {f.name: (list(getattr(self, f.name)) if isinstance(getattr(self, f.name), tuple)
                         else getattr(self, f.name)) for f in fields(self)}


_TYPES = {f.name: f.type for f in fields(Scope)}

# Keys of the explorer's own model of RocketMQ (model_checks/generator.py), retired when the
# explorer came to search the reference itself: what a scope file that still has one is told
RETIRED = {
    "symmetry": "the explorer of the reference compares whole worlds; delete the key",
    "sleep_sets": "tasks that commute by their footprints run in one order, always; delete the key",
    "persistent_sets": "tasks that commute by their footprints run in one order, always; delete the key",
    "oneway_delay": "the reference's network delivers one-way calls with its latency; delete the key",
    "adversary": "the semantic mutants of the reference (rocketspec gate --mutants) test the guards; delete the key",
}

# Upper bounds of the integer keys: far above what can be exhausted, low enough that a typo
# (an extra zero or three) is an error with the bound named, not hours of search.
BOUNDS = {"consumers": (1, 4), "queues": (1, 6), "brokers": (1, 3), "messages": (0, 12), "max_reconsume_times": (-1, 16),
          "failures": (0, 8), "faults": (0, 8), "threads": (1, 8), "pull_batch": (1, 1024), "consume_batch": (1, 1024),
          "pop_invisible_ms": (1000, 7 * 24 * 3600 * 1000), "pop_batch": (1, 32), "pop_retry_invisible_ms": (0, 7 * 24 * 3600 * 1000),
          "max_states": (1, 200_000_000), "max_depth": (1, Scope.max_depth), "broker_downtime_ms": (0, 600_000),
          # a scenario's times are at most 7 days; the last of 4 clients starts at 3 gaps
          "horizon_ms": (0, 7 * 24 * 3600 * 1000), "start_gap_ms": (0, 24 * 3600 * 1000),
          "produce_at_ms": (0, 24 * 3600 * 1000), "restart_at_ms": (0, 24 * 3600 * 1000), "delay_level": (-1, 18),
          "produce_every_ms": (0, 3600 * 1000), "pop_read_ms": (0, 600_000), "long_polling_ms": (5000, 600_000),
          "pop_read_queue": (-1, 5)}
MAX_PAUSE_MS = 24 * 3600 * 1000
MAX_CONSUME_MS = 7 * 24 * 3600 * 1000
# The scope key behind each field of the scenario a scope makes (model_checks/world.py), so that
# what only the scenario's validation can judge is still reported under the key the user wrote.
_SCENARIO_FIELD_KEY = (("groups[0].listener", "consume_ms"), ("groups[0].subscriptions", "subscription"),
                       ("groups[0].consume_thread_max", "threads"), ("groups[0].pull_batch_size", "pull_batch"),
                       ("groups[0].consume_message_batch_max_size", "consume_batch"),
                       ("groups[0].max_reconsume_times", "max_reconsume_times"),
                       ("groups[0].consume_from_where", "consume_from_where"), ("groups[0].strategy", "strategy"),
                       ("groups[0].retry_invisible_ms", "pop_retry_invisible_ms"),
                       ("groups[0].pop_batch_nums", "pop_batch"),
                       ("steps[0].tags", "tags"), ("steps[0].props", "props"), ("steps[0].count", "messages"),
                       ("steps", "start_gap_ms"), ("drain_limit_ms", "horizon_ms"), ("topics", "queues"),
                       ("brokers", "brokers"))


def _validate(d: dict, origin: str) -> Scope:
    from rocketspec.config_files import path_key, short

    kw = {}
    for k, v in d.items():
        if k in RETIRED:
            raise ScopeError(origin, f"{k} was a key of the explorer's own model, retired: {RETIRED[k]}", path_key(k))
        if k not in _TYPES:
            raise ScopeError(origin, f"unknown scope key (known: {', '.join(sorted(_TYPES))})", path_key(k))
        t = _TYPES[k]
        if t in ("int", int):
            lo, hi = BOUNDS.get(k, (0, None))
            if not isinstance(v, int) or isinstance(v, bool) or v < lo or (hi is not None and v > hi):
                rng = f"an integer from {lo} to {hi}" if hi is not None else f"an integer >= {lo}"
                raise ScopeError(origin, f"expected {rng}, got {short(v)}", k)
        elif t in ("bool", bool):
            if not isinstance(v, bool):
                raise ScopeError(origin, f"expected true or false, got {short(v)}", k)
        elif t in ("str", str):
            if not isinstance(v, str):
                raise ScopeError(origin, f"expected a string, got {short(v)}", k)
        elif t in ("tuple", tuple):
            if not isinstance(v, (list, tuple)):
                raise ScopeError(origin, f"expected a list, got {short(v)}", k)
            v = tuple(v)
        kw[k] = v
    s = Scope(**kw)
    if s.mode not in ("CONCURRENTLY", "ORDERLY"):
        raise ScopeError(origin, f"expected CONCURRENTLY or ORDERLY, got {short(s.mode)}", "mode")
    if s.message_model not in ("CLUSTERING", "BROADCASTING"):
        raise ScopeError(origin, f"expected CLUSTERING or BROADCASTING, got {short(s.message_model)}",
                         "message_model")
    if s.strategy not in ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH"):
        raise ScopeError(origin, f"expected AVG, AVG_BY_CIRCLE or CONSISTENT_HASH, got {short(s.strategy)}",
                         "strategy")
    from rocketspec.reference.client.push_consumer import CONSUME_FROM_WHERE

    if s.consume_from_where not in CONSUME_FROM_WHERE:
        raise ScopeError(origin, f"expected one of {', '.join(CONSUME_FROM_WHERE)}, got {short(s.consume_from_where)}",
                         "consume_from_where")
    if s.subscription_type not in SUBSCRIPTION_TYPES:
        raise ScopeError(origin, f"expected TAG or SQL92, got {short(s.subscription_type)}", "subscription_type")
    from rocketspec.reference.client.pop_consumer import CLIENT_TYPES

    if s.client_type not in CLIENT_TYPES:
        raise ScopeError(origin, f"expected one of {', '.join(CLIENT_TYPES)}, got {short(s.client_type)}", "client_type")
    if any(not isinstance(t, str) for t in s.tags):
        raise ScopeError(origin, f"expected a list of tag strings, got {short(list(s.tags))}", "tags")
    if any(not isinstance(p, dict) or any(not isinstance(k, str) or not isinstance(v, str) for k, v in p.items())
           for p in s.props):
        raise ScopeError(origin, f"expected a list of tables of string properties, got {short(list(s.props))}", "props")
    if s.props and any(set(t) != set(s.props[0]) for t in s.props):
        # a produce step gives each property a list of values, one per message in turn
        raise ScopeError(origin, f"every table needs the same property names, got {short(list(s.props))}", "props")
    if s.produce_queues and (len(s.produce_queues) != s.messages or not s.produce_every_ms or any(
            not isinstance(q, int) or isinstance(q, bool) or not 0 <= q < s.queues * s.brokers for q in s.produce_queues)):
        raise ScopeError(origin, f"expected one queue number per message (0 to {s.queues * s.brokers - 1}), with "
                         f"produce_every_ms, got {short(list(s.produce_queues))}", "produce_queues")
    bad = [k for k in s.fault_kinds if k not in FAULT_KINDS]
    if bad:
        raise ScopeError(origin, f"unknown fault kinds {short(bad)} (known: {', '.join(FAULT_KINDS)})",
                         "fault_kinds")
    if not s.pause_ms or any(not isinstance(p, int) or isinstance(p, bool) or not 0 < p <= MAX_PAUSE_MS
                             for p in s.pause_ms) or len(s.pause_ms) > 8:
        raise ScopeError(origin, f"expected a list of 1 to 8 pause lengths in ms, each from 1 to {MAX_PAUSE_MS}, "
                         f"got {short(list(s.pause_ms))}", "pause_ms")
    if not (1 <= len(s.consume_ms) <= 2 and all(isinstance(x, int) and not isinstance(x, bool)
                                                and 0 <= x <= MAX_CONSUME_MS for x in s.consume_ms)
            and list(s.consume_ms) == sorted(s.consume_ms)):
        raise ScopeError(origin, f"expected [ms] or [lo, hi] with 0 <= lo <= hi <= {MAX_CONSUME_MS} (7 days), "
                         f"got {short(list(s.consume_ms))}", "consume_ms")
    from rocketspec.reference.scenario import CRASH_MODES

    if not s.crash_modes or any(m not in CRASH_MODES for m in s.crash_modes):
        raise ScopeError(origin, f"expected a non-empty list of {', '.join(CRASH_MODES)}, got {short(list(s.crash_modes))}",
                         "crash_modes")
    _scenario_of(s, origin)
    return s


def _scenario_of(s: Scope, origin: str) -> None:
    """Build the scope's scenario now, so that what its validation refuses is bad input of the
    scope file, under the scope key that made it."""
    from rocketspec.errors import UserError
    from rocketspec.model_checks.world import scenario

    try:
        scenario(s)
    except UserError as exc:
        field = exc.field or ""
        key = next((k for prefix, k in _SCENARIO_FIELD_KEY if field.startswith(prefix)), None)
        raise ScopeError(origin, f"{exc.message} (in the scenario this scope makes: {field or 'its top level'})",
                         key) from None


# Known bug -> the scope (and overrides) in which the explorer (model_checks/refexplore.py) finds
# it on the reference: a variant of `tiny` with the fewest queues, messages, fault kinds and
# failures that show it (docs/model-checking.md). The explorer's tests, the mutation benchmark
# and the counterexample catalogue (docs/catalogue/) read it.
BUG_SCOPES = {
    "#4215": ("tiny", {"queues": 1, "messages": 1, "faults": 1, "failures": 0, "fault_kinds": ["reset"]}),
    "#2708": ("tiny", {"queues": 1, "messages": 1, "faults": 2, "failures": 0,
                       "fault_kinds": ["reset", "query_failure"]}),
    "#1825": ("tiny", {"mode": "ORDERLY", "queues": 1, "messages": 1, "faults": 1, "failures": 0,
                       "fault_kinds": ["query_failure"]}),
    # one pull per message, so the pull after the first one commits an offset (commitOffset) and
    # the group can be reset while the run goes on
    "#2449": ("tiny", {"queues": 1, "messages": 2, "pull_batch": 1, "faults": 2, "failures": 0,
                       "fault_kinds": ["reset_by_time"]}),
    "#2724": ("tiny", {"faults": 0, "failures": 1, "max_reconsume_times": 0}),
    "#5481": ("tiny", {"faults": 1, "failures": 1, "fault_kinds": ["clean_expired"]}),
    "#6163": ("tiny", {"mode": "ORDERLY", "queues": 1, "messages": 1, "faults": 0, "failures": 2}),
    "#4016": ("tiny", {"message_model": "BROADCASTING", "faults": 1, "failures": 0, "fault_kinds": ["route_lost"]}),
    # an orderly broadcasting client at LAST on an empty queue, stopped (the one fault, at any
    # moment) and started again at 10 s; the message is stored at 5 s: a stop before the client's
    # offset table has the queue (its first pull is held by long polling) persists nothing, and the
    # restart starts past the message (every release); a stop after the message reached it does not
    "#10955": ("tiny", {"mode": "ORDERLY", "message_model": "BROADCASTING", "consume_from_where": "CONSUME_FROM_LAST_OFFSET",
                        "queues": 1, "messages": 1, "produce_at_ms": 5000, "restart_at_ms": 10000,
                        "faults": 1, "failures": 0, "fault_kinds": ["shutdown"]}),
    # a failed call whose context asks for delay level 1, and a consumerSendMsgBack that throws
    # (its answer never comes): the fallback producer sends the copy to %RETRY% at 3 + r (every
    # release), not at the context's level
    "#3731": ("tiny", {"queues": 1, "messages": 1, "failures": 1, "max_reconsume_times": 2,
                       "delay_level": 1, "faults": 1, "fault_kinds": ["send_back_threw"]}),
    # a broadcasting client's first start at LAST on an empty queue, and one message stored at the
    # same millisecond: stored between start()'s return and the first rebalance (which start() only
    # wakes) it is skipped (every release); stored before start() returned it is skipped by design
    "#9281": ("tiny", {"message_model": "BROADCASTING", "consume_from_where": "CONSUME_FROM_LAST_OFFSET",
                       "queues": 1, "messages": 1, "produce_at_ms": 0, "faults": 0, "failures": 0}),
}

# POP bugs of issue 45 (docs/notes/pop-bugs.md), in variants of tiny-pop (5.x only).
# #10985 (open): one SimpleConsumer, one message whose first call fails and is left to revive, and
# a revive read that may fail: every release never revives it (INV-POP-LIVE-1 at the end)
BUG_SCOPES["#10985"] = ("tiny-pop", {"consumers": 1, "messages": 1, "failures": 1, "faults": 1,
                                     "fault_kinds": ["revive_read_failed"]})
# #8490 (develop only): one push consumer in POP mode at the default maxReconsumeTimes -1 (16
# retries), one message whose first call may fail: compared with the raw -1, processPopResult acks
# every popped copy before the listener (INV-POP-LOSS-1); every release compares with 16
BUG_SCOPES["#8490"] = ("tiny-pop", {"client_type": "POP_PUSH", "consumers": 1, "messages": 1, "failures": 1,
                                    "faults": 0, "max_reconsume_times": -1})
# #8332 (<= 5.3.0): one push consumer in POP mode with maxReconsumeTimes 0 (no retry), one message
# whose first call may fail: at the limit checkNeedAckOrDelay delays it, its revive counts 1, and
# with no past-limit check in processPopResult the listener gets it again (INV-POP-DLQ-1); every
# release acks the revived copy unconsumed
BUG_SCOPES["#8332"] = ("tiny-pop", {"client_type": "POP_PUSH", "consumers": 1, "messages": 1, "failures": 1,
                                    "faults": 0, "max_reconsume_times": 0})
# #10276 (5.5.0): the broker's RocksDB POP path, one SimpleConsumer, one message whose call takes
# 2997 or 2998 ms and may fail; a failure changes the invisible time to 2 s. The change reaches the
# broker 2 ms after the call's pop time plus its duration: after 2998 ms its new deadline is the
# old one, and 5.5.0 deletes the record it has just written (INV-POP-LIVE-1); 5.5.1 revives it
BUG_SCOPES["#10276"] = ("tiny-pop", {"consumers": 1, "messages": 1, "failures": 1, "faults": 0,
                                     "consume_ms": [2997, 2998], "pop_retry_invisible_ms": 2000,
                                     "pop_kv_service": True})
# #7914 (<= 5.2.0): one SimpleConsumer whose first pop (pop time 1 ms) may read the queue late
# (10 ms on), one message stored at 5 ms whose first call may fail and is left to revive: read
# late, the pop hands it out with a store time after its pop time, and the revive of 5.0.0 to
# 5.2.0 skips it ("skip ck from last epoch"): never revived (INV-POP-LIVE-1); 5.3.0+ revive it
BUG_SCOPES["#7914"] = ("tiny-pop", {"consumers": 1, "messages": 1, "produce_at_ms": 5, "failures": 1, "faults": 1,
                                    "fault_kinds": ["pop_read_late"]})
# #7724 (open): one SimpleConsumer pops both messages of one queue in one checkpoint; the call on
# one may fail and leave it to revive, and retention may delete the commit log's oldest message's
# data before the consume queue is corrected: the revive's read at that offset returns the next
# message, which every release puts back in its place (INV-POP-ACK-1 when it was acked)
BUG_SCOPES["#7724"] = ("tiny-pop", {"consumers": 1, "messages": 2, "failures": 1, "faults": 1,
                                    "fault_kinds": ["commit_log_expired"]})
# #10827 (5.3.3 to 5.5.0, the RocksDB POP path): two FIFO gRPC PushConsumers whose proxy gives them a
# 5 s long poll (its minimum; a receive's deadline is 3 s more), the second started 300 ms after the
# first (two clients in step double every order to search); one message on queue 0 at the start, one
# on queue 1 at 8.9 s, whose data is cold: a pop that reads it holds the group@topic lock for 6 s. One
# receive answer may be lost. When the first client's answer is lost, its retry under the same attempt
# id comes at 9 s, during the other client's read of queue 1, which lasts past the end of the retry's
# poll: 5.3.3 to 5.5.0 answer it empty, and its next receive, under a new attempt id, is blocked by the
# lost batch (INV-POP-ORDER-2). On 5.5.1 the retry waits for the lock and gets its batch back
BUG_SCOPES["#10827"] = ("tiny-pop", {"client_type": "GRPC_PUSH", "mode": "ORDERLY", "consumers": 2, "queues": 2,
                                     "messages": 2, "produce_at_ms": 0, "produce_every_ms": 8900,
                                     "produce_queues": [0, 1], "pop_read_ms": 6000, "pop_read_queue": 1,
                                     "long_polling_ms": 5000, "failures": 0, "faults": 1,
                                     "fault_kinds": ["pop_response_lost"], "pop_kv_service": True,
                                     "horizon_ms": 20000, "start_gap_ms": 300})

# The invariant the reference's shortest trace of a bug breaks, where that is not the profile's
# expected_violation. #2449: the second reset removes the ProcessQueue that the first one's
# resume created without dropping it (INV-PQ-1); its pull loop goes on, and the second puller
# (INV-PULL-1) follows in the same millisecond, one step further on the path.
BUG_FIRST = {"#2449": "INV-PQ-1"}

# The liveness bugs (rocketmq.profiles.LIVENESS_BUG_PROFILES): an orderly broadcasting group of
# one queue and one message, no fault, no failure, and a horizon of 30 s (SETTLE_MS). A
# broadcasting client owns every queue from its first rebalance, at start, and takes no broker
# lock (RebalanceImpl since 5.3.2; ConsumeMessageOrderlyService consumes a broadcasting queue
# unlocked): with nothing waiting on the clock it consumes a stored message well within one 20 s
# rebalance interval, so a run still owing one at 30 s never settled (INV-LIVE-1; the fixed
# releases quiesce within a second). #5465: one client, whose ProcessQueue is never locked: it
# never pulls. #8772: two clients; the second is refused the broker lock the first took and never
# renews, and waits until it expires (60 s) and its own next rebalance runs.
SETTLE_MS = 30_000
LIVENESS_BUG_SCOPES = {
    "#5465": ("tiny", {"mode": "ORDERLY", "message_model": "BROADCASTING", "consumers": 1, "queues": 1,
                       "messages": 1, "faults": 0, "failures": 0, "horizon_ms": SETTLE_MS}),
    "#8772": ("tiny", {"mode": "ORDERLY", "message_model": "BROADCASTING", "consumers": 2, "queues": 1,
                       "messages": 1, "faults": 0, "failures": 0, "horizon_ms": SETTLE_MS}),
}
BUG_SCOPES.update(LIVENESS_BUG_SCOPES)


def named_scopes() -> list[str]:
    return sorted(p.stem for p in SCOPE_DIR.glob("*.toml"))


def load_scope(name_or_path: str, **overrides) -> Scope:
    """A named scope (`tiny`, `small`, `medium`, ...) or a TOML file path."""
    from rocketspec.config_files import parse, read_text

    p = Path(name_or_path)
    if not (p.suffix or p.exists()):
        p = SCOPE_DIR / f"{name_or_path}.toml"
        if not p.exists():
            raise ScopeError(name_or_path, f"unknown scope: not a named scope ({', '.join(named_scopes())}) nor a scope file "
                                           "(.toml)")
    elif p.suffix in (".yaml", ".yml", ".json"):
        raise ScopeError(str(p), f"a scope file is TOML (.toml), not {p.suffix[1:].upper()} "
                                 "(see docs/model-checking.md)")
    data = parse(read_text(p, "scope file (TOML)"), "toml", str(p), what="scope (docs/model-checking.md)")
    data.setdefault("name", p.stem)
    data.update(overrides)
    return _validate(data, str(p))


def scope_from_dict(d: dict) -> Scope:
    return _validate(dict(d), "<dict>")


__all__ = ["Scope", "ScopeError", "load_scope", "BUG_SCOPES", "BUG_FIRST", "LIVENESS_BUG_SCOPES", "SETTLE_MS", "scope_from_dict", "named_scopes", "FAULT_KINDS", "field"]
