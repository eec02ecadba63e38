"""Random scenarios for real RocketMQ: one seeded scenario per seed, in the format `simulate` and
`record` read (docs/scenarios.md), drawn from what the reference and the real recorder both run.

Each scenario is short enough for a real run (seconds of wall time; every delay level 1 or 2 s,
timing knobs in seconds) and draws its mechanisms from the whole space the two support today:
concurrent and orderly groups, clustering and broadcasting, the three allocation strategies real
runs support, joins, graceful shutdowns, SIGKILLs and restarts, pauses shorter and longer than the
orderly lease margin, the broker's idle close of a paused client, every listener outcome, slow calls, batches and ackIndex, maxReconsumeTimes, the
context's delay level, tags and SQL92, several groups on one topic, consume-from-where on a
backlog, flow-control thresholds under a burst, and operator offset resets.

What it never emits, because `rocketspec record` refuses it or the recorder cannot observe it
(docs/scenarios.md, "Random scenarios"): NOT_EMITTED below.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

# Mechanisms left out, each with the reason (the report and the docs list them).
NOT_EMITTED = {
    "restart_broker, oneway_loss, fail_offset_queries, delete_messages, set_broker_offset":
        "steps `rocketspec record` refuses (commands/record.py UNSUPPORTED_STEPS)",
    "several brokers, retry_queue_nums, retry_max_times": "not settable on real runs",
    "CONFIG and MACHINE_ROOM strategies, consume_timestamp": "refused by `rocketspec record`",
    "crash mode silent": "the driver only SIGKILLs (a cut-off host is not driven)",
    "a produce step's tag or property lists": "the driver reads a produce step's tags as one string and draws "
                                              "property values at random, where the reference takes lists "
                                              "round-robin",
    "a call past consume_timeout": "consume_timeout is in minutes: a real run would last minutes",
}

BROKER = "broker-a"
TAGS = ("TagA", "TagB", "TagC")
ONE_S_LEVELS = " ".join(["1s"] * 18)
MIXED_LEVELS = " ".join(["1s", "2s"] * 9)
CLIENT_LEASE_MS = 3000          # real.client_lock_max_live_ms
BROKER_LOCK_MS = 6000           # broker_config.lock_max_live_ms: the lease margin is 3 s
LEASE_MARGIN_MS = BROKER_LOCK_MS - CLIENT_LEASE_MS
MAX_SEPARATE_CLIENTS = 2        # clients a kill or pause targets run in their own JVM (~400 MB each)


def generate(seed: int, small: bool = False, pop: bool = False, simple: bool = False, kv: bool = False) -> dict:
    """The scenario of `seed` (a plain dict, as a scenario file holds it). `small`: fewer clients,
    messages and steps (a short real run, for the default test run). `pop`: a POP scenario
    (generate_pop), for RocketMQ 5.x; with `simple`, of SimpleConsumers (generate_simple), for a
    gRPC client program; with `kv`, on the broker's RocksDB POP path (the same scenario otherwise)."""
    if pop:
        sc = generate_simple(seed, small) if simple else generate_pop(seed, small)
        if kv:
            sc["broker_config"]["pop_consumer_kv_service"] = True
        return sc
    r = random.Random(seed)
    duration = r.choice((4000, 6000, 8000)) if small else r.choice((4000, 6000, 8000, 10000, 12000))
    sc = _base(r, seed, "random", duration, 30000)
    use_sql = r.random() < 0.3
    if use_sql:
        sc["broker_config"]["enable_property_filter"] = True
    if r.random() < 0.15:
        sc["broker_config"]["long_polling_enable"] = False
    topics = ["TopicR"] + (["TopicS"] if not small and r.random() < 0.3 else [])
    for t in topics:
        sc["topics"].append({"name": t, "queues": r.choice((2, 4, 4, 8))})

    n_groups = 1 if small else r.choice((1, 1, 2, 2, 3))
    groups = [_group(r, i, topics, use_sql) for i in range(n_groups)]
    if any(g["consume_mode"] == "ORDERLY" for g in groups):
        sc["broker_config"]["lock_max_live_ms"] = BROKER_LOCK_MS
    sc["groups"] = groups
    # ackIndex on some concurrent groups' batches (drawn from a source of its own, so that the rest
    # of a scenario is what it was without it): the messages past it are sent back
    ra = random.Random(f"ack-{seed}")
    for g in groups:
        size = g["consume_message_batch_max_size"]
        if g["consume_mode"] == "CONCURRENTLY" and size > 1 and ra.random() < 0.4:
            g["listener"]["ack_index"] = ra.randint(-1, size - 1)

    # producers: one per topic; sharding keys when an orderly group reads it
    orderly_topics = {t for g in groups if g["consume_mode"] == "ORDERLY" for t in g["subscriptions"]}
    produced_until = 0
    for t in topics:
        count = r.randint(10, 40) if small else r.randint(20, 120)
        rate = r.choice((10, 20, 40))
        start = r.choice((0, 0, 500, 1500))
        p = {"topic": t, "count": count, "rate_per_s": rate, "start_ms": start,
             "tags": r.sample(TAGS + ("",), r.randint(1, 4)), "body_size": r.choice((64, 128, 1024))}
        if use_sql:
            p["props"] = {"a": list(range(10)), "region": ["eu", "us"]}
        if t in orderly_topics or r.random() < 0.2:
            p["sharding_keys"] = r.choice((4, 8, 16))
        sc["producers"].append(p)
        produced_until = max(produced_until, start + int(1000 * count / rate))

    # a burst under flow control: one produce step of many messages at once
    if not small and r.random() < 0.25:
        sc["steps"].append({"at_ms": r.randrange(0, duration // 2, 100), "action": "produce", "topic": topics[0],
                            "count": r.choice((200, 400, 600)), "tags": r.choice(TAGS),
                            "note": "a burst, against the groups' flow-control thresholds"})

    separate: set = set()
    for i, g in enumerate(groups):
        sc["steps"] += _clients(r, g, i, duration, produced_until, separate, small)

    _idle_close(seed, sc)

    # an operator's offset reset of a clustering group while one of its clients is online. 4.9.8's
    # Broker2Client.resetOffset may refuse it ("consumer group not exist": a queue of the topic has
    # no committed offset of the group yet) before it changes anything; the driver records the
    # refusal (run/refused-steps.json) and the run goes on as one without the step.
    at = r.randrange(duration // 2, duration, 100)
    choices = [(g, t) for g in groups for t in sorted(g["subscriptions"]) if reset_online(sc, g, at)]
    if choices and r.random() < (0.2 if small else 0.35):
        g, topic = r.choice(choices)
        sc["steps"].append({"at_ms": at, "action": "reset_offset", "group": g["name"],
                            "topic": topic, "timestamp_ms": r.choice((0, at // 2)),
                            "note": "an operator resets the group's offsets to a time"})
    if not small:
        _break(seed, sc)
    sc["steps"].sort(key=lambda st: st["at_ms"])
    return sc


def _base(r: random.Random, seed: int, prefix: str, duration: int, drain_ms: int) -> dict:
    """A scenario's frame: name, short delay levels and seconds of timing knobs (docs/scenarios.md)."""
    return {
        "name": f"{prefix}-{seed}",
        "description": f"rocketspec {prefix} scenario, seed {seed} (conformance/random_scenarios.py)",
        "duration_ms": duration,
        "broker_config": {"message_delay_level": r.choice((ONE_S_LEVELS, ONE_S_LEVELS, MIXED_LEVELS))},
        "real": {"persist_consumer_offset_interval_ms": 1000, "heartbeat_broker_interval_ms": 1000,
                 "rebalance_interval_ms": r.choice((1000, 2000)), "lock_interval_ms": 1000,
                 "client_lock_max_live_ms": CLIENT_LEASE_MS, "drain_ms": drain_ms},
        "topics": [], "groups": [], "producers": [], "steps": [],
    }


# POP scenarios (RocketMQ 5.x; docs/pop.md): push consumers in POP mode (client_type POP_PUSH),
# which the recorder runs in-process. What they never emit, and why:
POP_NOT_EMITTED = {
    "SimpleConsumers (client_type SIMPLE), hence orderly (FIFO) POP": "they consume through the gRPC proxy: "
        "`rocketspec record` runs them only with --client (a gRPC client program); the push consumer in POP "
        "mode has no orderly path (the reference refuses POP_PUSH with ORDERLY)",
    "a DLQ": "the remoting push consumer in POP mode has none: at maxReconsumeTimes it acks the message "
             "(checkNeedAckOrDelay), or a copy past the limit unconsumed (processPopResult)",
    "maxReconsumeTimes above 1, delay_level_when_next_consume": "a second failure's invisible time is "
        "popDelayLevel[1] = 30 s (later levels minutes): a real run would last minutes",
    "batches above 1, ackIndex": "a failed batch at the limit throws mid-loop (popDelayLevel[-1] in "
        "checkNeedAckOrDelay) and leaves the rest of the batch to revive",
    "SQL92 subscriptions, broadcasting, reset_offset, the broker's idle close, breaks": "not drawn for POP groups "
        "(POP is clustering only; the rest is the pull path's, drawn by generate)",
}
POP_INVISIBLE_MS = (5000, 5000, 6000, 8000, 10000, 20000)   # the push consumer refuses < 5 s (checkConfig)
POP_LONG_INVISIBLE_MS = 10000   # above it, a group's clients never leave or pause (a held message waits it out)
POP_TOPIC = "TopicP"


def generate_pop(seed: int, small: bool = False) -> dict:
    """The POP scenario of `seed`: 1 to 3 push-consumer groups in POP mode (1 to 3 clients each) on
    one topic, sometimes an ordinary concurrent group beside them, a few messages; listener
    failures, exceptions, null, slow calls (some longer than the invisible time), a poison tag,
    maxReconsumeTimes 0 or 1; joins, graceful shutdowns, SIGKILLs, restarts and pauses shorter or
    longer than the invisible time. Seconds of wall time plus the revives: a failure waits
    popDelayLevel[0] = 10 s, and each revive ackTimeInterval + 1 s more."""
    r = random.Random(f"pop-{seed}")
    duration = r.choice((8000, 10000)) if small else r.choice((10000, 12000, 15000, 20000))
    sc = _base(r, seed, "random-pop", duration, 60000)
    sc["topics"].append({"name": POP_TOPIC, "queues": r.choice((1, 2, 4))})
    n_pop = 1 if small else r.choice((1, 1, 2, 3))
    groups = [_pop_group(r, i) for i in range(n_pop)]
    if not small and r.random() < 0.3:
        # an ordinary (pull) group beside them on the same topic
        g = _group(r, n_pop, [POP_TOPIC], False, concurrent_only=True)
        g["message_model"] = "CLUSTERING"
        groups.append(g)
    sc["groups"] = groups
    count = r.randint(5, 20) if small else r.randint(10, 40)
    rate = r.choice((10, 20))
    start = r.choice((0, 0, 500, 1500))
    sc["producers"].append({"topic": POP_TOPIC, "count": count, "rate_per_s": rate, "start_ms": start,
                            "tags": r.sample(TAGS + ("",), r.randint(1, 4)), "body_size": r.choice((64, 1024))})
    produced_until = start + int(1000 * count / rate)
    separate: set = set()
    for i, g in enumerate(groups):
        inv = g.get("pop_invisible_time")
        pause = None if inv is None else (lambda rr, c, st, d, inv=inv: _pop_pause(rr, c, st, d, inv))
        steps = _clients(r, g, i, duration, produced_until, separate, small, pause)
        clients = {x["client"] for x in steps}
        if inv is not None and inv > POP_LONG_INVISIBLE_MS and any(
                x["action"] in ("shutdown", "crash", "pause") and x["client"] in clients for x in steps):
            g["pop_invisible_time"] = r.choice((5000, 8000))
            steps = [x if x["action"] != "pause" else _pop_pause(r, x["client"], x["at_ms"] - 1000, duration,
                                                                 g["pop_invisible_time"]) for x in steps]
        sc["steps"] += steps
    sc["steps"].sort(key=lambda st: st["at_ms"])
    return sc


def _pop_group(r: random.Random, i: int) -> dict:
    g: dict = {"name": f"GID_p{i}", "client_type": "POP_PUSH", "consume_mode": "CONCURRENTLY",
               "message_model": "CLUSTERING", "pop_invisible_time": r.choice(POP_INVISIBLE_MS),
               "pop_batch_nums": r.choice((1, 4, 16, 32))}
    g["subscriptions"] = {POP_TOPIC: "*" if r.random() < 0.7 else " || ".join(sorted(r.sample(TAGS, r.randint(1, 2))))}
    g["consume_from_where"] = r.choice(("CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_FIRST_OFFSET"))
    g["max_reconsume_times"] = r.choice((0, 0, 1))
    if r.random() < 0.2:
        g["pop_threshold_for_queue"] = r.choice((2, 8))
    if r.random() < 0.25:
        g["consume_thread_max"] = r.choice((1, 4))
    lst: dict = {"duration_ms": r.choice(([1, 10], [1, 30], [5, 60]))}
    # a second failure waits 30 s (popDelayLevel[1]): rarer where it can happen
    if r.random() < 0.7:
        lst["fail_rate"] = r.choice((0.05, 0.1, 0.2, 0.3) if g["max_reconsume_times"] == 0 else (0.05, 0.1))
    if r.random() < 0.3:
        lst["null_rate"] = r.choice((0.02, 0.05))
    if r.random() < 0.3:
        lst["exception_rate"] = r.choice((0.02, 0.05))
    rules = []
    if r.random() < 0.3:   # a poison tag: past the limit, or recovering on its first retry
        rule = {"tags": [r.choice(TAGS)], "status": "RECONSUME_LATER"}
        if g["max_reconsume_times"] > 0:
            rule["until_reconsume_times"] = 1
        rules.append(rule)
    inv = g["pop_invisible_time"]
    if r.random() < 0.35:   # slow calls on one tag; some outlive the invisible time (#8332)
        over = 5000 <= inv <= POP_LONG_INVISIBLE_MS and r.random() < 0.5
        slow = {"tags": [r.choice(TAGS)], "duration_ms": [inv + 1000, inv + 3000] if over else
                r.choice(([100, 300], [300, 1500]))}
        if over:
            slow["until_reconsume_times"] = 1   # the revived copy is quick
        rules.append(slow)
        if over and g.get("consume_thread_max") == 1:
            del g["consume_thread_max"]   # one thread behind a call of seconds: every message waits it out
    if rules:
        lst["rules"] = rules
    g["listener"] = lst
    return g


def _pop_pause(r: random.Random, client: str, start: int, duration: int, invisible: int) -> dict:
    """A SIGSTOP shorter than the group's invisible time, or (when it is short) longer: the frozen
    client's held messages are revived and popped by another."""
    at = r.randrange(start + 1000, duration - 500, 100)
    inv = invisible
    longer = inv <= POP_LONG_INVISIBLE_MS and r.random() < 0.5
    length = r.randrange(inv + 1000, inv + 3000, 100) if longer else r.randrange(300, min(inv, 10000) - 1500, 100)
    kind = "longer" if longer else "shorter"
    return {"at_ms": at, "action": "pause", "client": client, "duration_ms": length,
            "note": f"SIGSTOP {length} ms, {kind} than the POP invisible time ({inv} ms)"}


# SimpleConsumer scenarios (RocketMQ 5.x through the gRPC proxy, docs/notes/real-pop.md): every
# client is the gRPC client program under test (`record --client`), which drives one
# SimpleConsumer per process (clients/grpc-java). What they never emit, and why:
SIMPLE_NOT_EMITTED = {
    "an ordinary push group or a push consumer in POP mode beside them": "with --client every scenario "
        "client is the client program, and the gRPC driver program runs SimpleConsumers only",
    "SQL92 subscriptions, broadcasting, reset_offset, breaks, the broker's idle close": "not drawn for SimpleConsumers "
        "(POP is clustering only; the rest is the remoting path's, drawn by generate)",
    "ackIndex, delay_level_when_next_consume, suspend_ms, batches of listener calls": "a SimpleConsumer's "
        "application acks each message itself: the driver program calls the listener once per message",
    "maxReconsumeTimes above 2": "each retry waits out an invisible time and a revive: a run would last minutes",
}
SIMPLE_INVISIBLE_MS = (4000, 5000, 5000, 8000)   # the recorder lowers the proxy's minimum to 1 s
SIMPLE_RETRY_INVISIBLE_MS = (1000, 2000, 3000)   # changeInvisibleDuration of a failed message
SIMPLE_TOPIC = "TopicG"
MAX_SIMPLE_CLIENTS = 4          # each client is a JVM of its own (the gRPC client program)


def generate_simple(seed: int, small: bool = False) -> dict:
    """The SimpleConsumer scenario of `seed` (client_type SIMPLE, run through the gRPC proxy by a
    client program): 1 or 2 groups (1 to 3 clients each, at most MAX_SIMPLE_CLIENTS in all) on one
    topic, some FIFO (consume_mode ORDERLY on a sharding-keyed producer), a few messages; listener
    failures, exceptions, null, slow calls (some longer than the invisible time), a poison tag,
    maxReconsumeTimes 0 to 2 (then the proxy's DLQ), failed messages left to their invisible time or
    changed to a shorter one (retry_invisible_ms); joins, graceful shutdowns, SIGKILLs, restarts and
    pauses shorter or longer than the invisible time."""
    r = random.Random(f"simple-{seed}")
    duration = r.choice((8000, 10000)) if small else r.choice((10000, 12000, 15000))
    sc = _base(r, seed, "random-simple", duration, 60000)
    del sc["broker_config"]["message_delay_level"]   # POP retries by invisible time, not by delay level
    sc["topics"].append({"name": SIMPLE_TOPIC, "queues": r.choice((1, 2, 4))})
    n_groups = 1 if small else r.choice((1, 1, 2))
    groups = [_simple_group(r, i) for i in range(n_groups)]
    sc["groups"] = groups
    count = r.randint(5, 15) if small else r.randint(10, 30)
    rate = r.choice((10, 20))
    start = r.choice((0, 0, 500, 1500))
    p = {"topic": SIMPLE_TOPIC, "count": count, "rate_per_s": rate, "start_ms": start,
         "tags": r.sample(TAGS + ("",), r.randint(1, 4)), "body_size": r.choice((64, 1024))}
    if any(g["consume_mode"] == "ORDERLY" for g in groups):
        p["sharding_keys"] = r.choice((2, 4, 8))
    sc["producers"].append(p)
    for g in groups:
        # a tag subscription reads at least one tag the producer sends (else the run consumes nothing)
        subscribed = g["subscriptions"][SIMPLE_TOPIC].split(" || ")
        sent = sorted(t for t in p["tags"] if t)
        if "*" not in subscribed and not set(subscribed) & set(sent):
            g["subscriptions"][SIMPLE_TOPIC] = " || ".join(sorted(subscribed[:1] + sent[:1])) if sent else "*"
    produced_until = start + int(1000 * count / rate)
    used = 0
    for i, g in enumerate(groups):
        inv = g["pop_invisible_time"]
        steps = _clients(r, g, i, duration, produced_until, set(), small,
                         lambda rr, c, st, d, inv=inv: _pop_pause(rr, c, st, d, inv))
        steps = _fit(steps, MAX_SIMPLE_CLIENTS - used - (n_groups - 1 - i))
        used += len({x["client"] for x in steps})
        sc["steps"] += steps
    sc["steps"].sort(key=lambda st: st["at_ms"])
    return sc


def _fit(steps: list, most: int) -> list:
    """`steps` of a group's clients, keeping the first `most` clients (each is a JVM of its own)."""
    keep = sorted({x["client"] for x in steps if x["action"] == "start"})[:max(1, most)]
    return [x for x in steps if x["client"] in keep]


def _simple_group(r: random.Random, i: int) -> dict:
    orderly = r.random() < 0.3
    g: dict = {"name": f"GID_s{i}", "client_type": "SIMPLE", "consume_mode": "ORDERLY" if orderly else "CONCURRENTLY",
               "message_model": "CLUSTERING", "pop_invisible_time": r.choice(SIMPLE_INVISIBLE_MS),
               "pop_batch_nums": r.choice((1, 4, 16, 32))}
    g["subscriptions"] = {SIMPLE_TOPIC: "*" if r.random() < 0.7 else
                          " || ".join(sorted(r.sample(TAGS, r.randint(1, 2))))}
    # no consume_from_where: a SimpleConsumer has none (the proxy pops with init mode MAX, which a
    # new group on a fresh store reads from offset 0)
    g["max_reconsume_times"] = r.choice((0, 1, 1, 2))
    if r.random() < 0.4:
        g["retry_invisible_ms"] = r.choice(SIMPLE_RETRY_INVISIBLE_MS)
    inv = g["pop_invisible_time"]
    lst: dict = {"duration_ms": r.choice(([1, 10], [1, 30], [5, 60]))}
    if r.random() < 0.7:
        lst["fail_rate"] = r.choice((0.05, 0.1, 0.2))
    if r.random() < 0.3:
        lst["null_rate"] = r.choice((0.02, 0.05))
    if r.random() < 0.3:
        lst["exception_rate"] = r.choice((0.02, 0.05))
    fail = "SUSPEND_CURRENT_QUEUE_A_MOMENT" if orderly else "RECONSUME_LATER"
    rules = []
    if r.random() < 0.3:   # a poison tag: to the DLQ, or recovering on its first retry
        rule = {"tags": [r.choice(TAGS)], "status": fail}
        if g["max_reconsume_times"] > 0 and r.random() < 0.5:
            rule["until_reconsume_times"] = 1
        rules.append(rule)
    if r.random() < 0.35:   # slow calls on one tag; some outlive the invisible time (#8332)
        over = r.random() < 0.5
        slow = {"tags": [r.choice(TAGS)], "duration_ms": [inv + 1000, inv + 3000] if over else
                r.choice(([100, 300], [300, 1500]))}
        if over:
            slow["until_reconsume_times"] = 1   # the revived copy is quick
        rules.append(slow)
    if rules:
        lst["rules"] = rules
    g["listener"] = lst
    return g


# The broker's side of an offset reset past its offset check: 4.9.8's Broker2Client.resetOffset
# answers CONSUMER_NOT_ONLINE when the group has no channel (each client's start registers one, a
# shutdown or a kill removes it), which the driver does not take as a refusal.
ONLINE_MS = 1000                # from a client's start step to its first heartbeat
OWN_JVM_START_MS = 3000         # a client in its own JVM registers this long after its start step
IDLE_MARGIN_MS = 2000           # a thawed client's new channel and heartbeat


IDLE_CLOSE_S = (3, 4, 5)         # real.server_channel_max_idle_s when drawn
IDLE_CLOSE_RATE = 0.4           # of the scenarios with a pause that can outlast one of them
IDLE_PAST_MS = 1000             # a pause this much longer than the idle time surely loses the channel
IDLE_SHORT_MS = 1500            # one this much shorter surely keeps it (a heartbeat each second before)


def _idle_close(seed: int, sc: dict) -> None:
    """On some seeds with a paused client, the broker's idle close: real.server_channel_max_idle_s
    low enough that a pause outlasts it (the frozen client's channel is closed, it leaves its
    groups and reconnects after the thaw), and every other pause clearly shorter, so none is
    left to the race between the close and the thaw. Clients that are not frozen keep their
    channels: each heartbeats every second. Drawn from a source of its own."""
    ri = random.Random(f"idle-{seed}")
    pauses = [x["duration_ms"] for x in sc["steps"] if x["action"] == "pause"]
    fits = [s for s in IDLE_CLOSE_S if any(d >= s * 1000 + IDLE_PAST_MS for d in pauses)
            and all(d >= s * 1000 + IDLE_PAST_MS or d <= s * 1000 - IDLE_SHORT_MS for d in pauses)]
    if fits and ri.random() < IDLE_CLOSE_RATE:
        sc["real"]["server_channel_max_idle_s"] = ri.choice(fits)


def reset_online(sc: dict, g: dict, at: int) -> bool:
    """Whether group `g` is clustering (a broadcasting group commits no offset to the broker, which
    always refuses its reset) and certainly has a client registered with the broker at `at` (ms):
    one started ONLINE_MS before (more in its own JVM), neither shut down nor killed since, and
    not paused past the broker's idle close (real.server_channel_max_idle_s, which closes its
    channel) in a way that covers `at`."""
    if g.get("message_model") != "CLUSTERING":
        return False
    idle = sc["real"].get("server_channel_max_idle_s")
    own_jvm = {x["client"] for x in sc["steps"] if x["action"] in ("crash", "pause")}
    steps = sorted(sc["steps"], key=lambda x: x["at_ms"])
    for x in steps:
        if x["action"] != "start" or x["group"] != g["name"]:
            continue
        c = x["client"]
        if x["at_ms"] + ONLINE_MS + (OWN_JVM_START_MS if c in own_jvm else 0) > at:
            continue
        if any(y.get("client") == c and y["action"] in ("shutdown", "crash") and x["at_ms"] <= y["at_ms"] <= at
               for y in steps):
            continue
        if idle is not None and any(
                y.get("client") == c and y["action"] == "pause" and y["duration_ms"] > idle * 1000 - IDLE_MARGIN_MS
                and y["at_ms"] <= at <= y["at_ms"] + y["duration_ms"] + IDLE_MARGIN_MS for y in steps):
            continue
        return True
    return False


def _group(r: random.Random, i: int, topics: list, use_sql: bool, concurrent_only: bool = False) -> dict:
    orderly = r.random() < 0.35 and not concurrent_only
    g: dict = {"name": f"GID_r{i}", "consume_mode": "ORDERLY" if orderly else "CONCURRENTLY",
               "message_model": "BROADCASTING" if r.random() < 0.2 else "CLUSTERING",
               "strategy": r.choice(("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH"))}
    subs = {}
    for t in topics:
        if t != topics[0] and r.random() < 0.5:
            continue
        kind = r.random()
        if use_sql and kind < 0.5:
            subs[t] = {"type": "SQL92", "expr": r.choice(("a > 5", "a > 3 AND region = 'eu'", "a < 7 OR region = 'us'"))}
        elif kind < 0.75:
            subs[t] = "*"
        else:
            subs[t] = " || ".join(sorted(r.sample(TAGS, r.randint(1, 2))))
    g["subscriptions"] = subs
    g["consume_from_where"] = r.choice(("CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_FIRST_OFFSET",
                                        "CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_TIMESTAMP"))
    g["max_reconsume_times"] = r.choice((1, 2, 3) if orderly else (-1, 0, 1, 2, 3))
    g["consume_message_batch_max_size"] = r.choice((1, 1, 2, 4))
    g["pull_batch_size"] = r.choice((8, 16, 32))
    if r.random() < 0.3:   # flow control
        g["pull_threshold_for_queue"] = r.choice((8, 16, 64))
    if r.random() < 0.15:
        g["pull_threshold_for_topic"] = r.choice((32, 128))
    if not orderly and r.random() < 0.2:
        g["consume_concurrently_max_span"] = r.choice((16, 64))
    if r.random() < 0.2:
        g["consume_thread_max"] = r.choice((1, 4))
    if orderly:
        g["suspend_current_queue_time_millis"] = r.choice((200, 500, 1000))
    g["listener"] = _listener(r, orderly)
    return g


def _listener(r: random.Random, orderly: bool) -> dict:
    lst: dict = {"duration_ms": r.choice(([1, 10], [1, 30], [5, 60]))}
    if r.random() < 0.7:
        lst["fail_rate"] = r.choice((0.05, 0.1, 0.2, 0.3))
    if r.random() < 0.3:
        lst["null_rate"] = r.choice((0.02, 0.05))
    if r.random() < 0.3:
        lst["exception_rate"] = r.choice((0.02, 0.05))
    fail = "SUSPEND_CURRENT_QUEUE_A_MOMENT" if orderly else "RECONSUME_LATER"
    rules = []
    if r.random() < 0.3:   # a poison tag: to the DLQ, or recovering after some retries
        rule = {"tags": [r.choice(TAGS)], "status": fail}
        if r.random() < 0.5:
            rule["until_reconsume_times"] = r.randint(1, 3)
        rules.append(rule)
    if r.random() < 0.3:   # slow calls on one tag
        rules.append({"tags": [r.choice(TAGS)], "duration_ms": r.choice(([100, 300], [300, 800]))})
    if rules:
        lst["rules"] = rules
    if orderly:
        if r.random() < 0.2:
            lst["suspend_ms"] = r.choice((100, 500))
    elif r.random() < 0.25:
        lst["delay_level_when_next_consume"] = r.choice((0, -1, 1, 2))
    return lst


def _clients(r: random.Random, g: dict, gi: int, duration: int, produced_until: int, separate: set,
             small: bool, pause=None) -> list:
    """Start steps and each client's life: one survivor keeps the group consuming to the end.
    `pause(r, client, start, duration)`: a pause step of the client (default: _pause)."""
    pause = pause or _pause
    steps = []
    n = r.randint(1, 2) if small else r.randint(1, 3)
    late = r.random() < 0.2   # the whole group starts on a backlog
    first = min(duration - 1000, produced_until + 500) if late else 0
    for j in range(n):
        client = f"g{gi}c{j + 1}"
        start = first if j == 0 else r.choice((first, r.randrange(first, max(first + 1, duration - 1000), 100)))
        steps.append({"at_ms": start, "action": "start", "client": client, "group": g["name"]})
        if j == 0:
            # the survivor: never leaves; may be paused when it runs in its own JVM
            if len(separate) < MAX_SEPARATE_CLIENTS and r.random() < 0.25 and start + 1000 < duration - 500:
                steps.append(pause(r, client, start, duration))
                separate.add(client)
            continue
        fate = r.choice(("stays", "shutdown", "kill", "pause", "shutdown"))
        if fate in ("kill", "pause") and len(separate) >= MAX_SEPARATE_CLIENTS:
            fate = "shutdown"
        if start + 1000 >= duration - 500:
            fate = "stays"
        if fate == "stays":
            continue
        if fate == "pause":
            separate.add(client)
            steps.append(pause(r, client, start, duration))
            continue
        at = r.randrange(start + 1000, duration - 500, 100)
        if fate == "kill":
            separate.add(client)
            steps.append({"at_ms": at, "action": "crash", "client": client, "mode": "kill", "note": "SIGKILL"})
        else:
            steps.append({"at_ms": at, "action": "shutdown", "client": client})
        # a restart after a graceful shutdown or a kill (each JVM life of a killed client writes its
        # own trace part)
        if fate in ("shutdown", "kill") and at + 1000 < duration and r.random() < 0.5:
            steps.append({"at_ms": r.randrange(at + 1000, duration, 100), "action": "start", "client": client,
                          "group": g["name"], "note": "the same client starts again"})
    return steps


def _pause(r: random.Random, client: str, start: int, duration: int) -> dict:
    at = r.randrange(start + 1000, duration - 500, 100)
    longer = r.random() < 0.5
    length = r.randrange(LEASE_MARGIN_MS + 1000, LEASE_MARGIN_MS + 6000, 100) if longer else \
        r.randrange(300, LEASE_MARGIN_MS - 500, 100)
    kind = "longer" if longer else "shorter"
    return {"at_ms": at, "action": "pause", "client": client, "duration_ms": length,
            "note": f"SIGSTOP {length} ms, {kind} than the orderly lease margin ({LEASE_MARGIN_MS} ms)"}


# Assumptions broken on purpose (top-level "breaks", docs/scenarios.md): the invariants each break
# may make fail; `record --random` takes a failure of these, naming the break's cause, as an
# expected loss (conformance.real_random).
ORDERLY_BREAK_EXPECT = ["INV-ORDER-1", "INV-ORDER-3", "INV-OWNER-2"]
BREAK_RATE = 0.2                # of the scenarios that have an orderly clustering group
SHORT_LOCK_MS = 1500            # broker_config.lock_max_live_ms of lock_shorter_than_lease (< CLIENT_LEASE_MS)
OVERLONG_CALL_MS = [LEASE_MARGIN_MS + 500, LEASE_MARGIN_MS + 2000]


def _break(seed: int, sc: dict) -> None:
    """Mark the pauses past the lease margin of orderly clients (pause_past_lease), and on some
    seeds break one more assumption in an orderly clustering group: its broker lock shorter
    than its client lease, with a pause between the two and a join during it
    (lock_shorter_than_lease), or a listener call longer than the lease margin with a join
    while it runs (overlong_call). Drawn from a source of its own, so that the rest of a
    scenario is what it is without breaks."""
    breaks = []
    orderly = [g for g in sc["groups"] if g["consume_mode"] == "ORDERLY" and g["message_model"] == "CLUSTERING"]
    group_of = {x["client"]: x["group"] for x in sc["steps"] if x["action"] == "start"}
    names = {g["name"] for g in orderly}
    for x in sc["steps"]:
        if x["action"] == "pause" and group_of[x["client"]] in names and x["duration_ms"] > LEASE_MARGIN_MS:
            breaks.append({"kind": "pause_past_lease", "target": x["client"], "expect": ORDERLY_BREAK_EXPECT,
                           "note": f"{x['client']} of orderly {group_of[x['client']]} paused {x['duration_ms']} ms "
                                   f"at {x['at_ms']} ms, past the lease margin ({LEASE_MARGIN_MS} ms)"})
    rb = random.Random(f"break-{seed}")
    if orderly and rb.random() < BREAK_RATE:
        g = rb.choice(orderly)
        # (lock_shorter_than_lease: not on a group with a reset, whose survivor it would move to a
        # JVM of its own, registered later than reset_online counted)
        kind = rb.choice(("lock_shorter_than_lease", "overlong_call"))
        clients = sorted({x["client"] for x in sc["steps"] if x["action"] == "start" and x["group"] == g["name"]})
        own_jvm = {x["client"] for x in sc["steps"] if x["action"] in ("crash", "pause")}
        survivor = next(x["client"] for x in sc["steps"] if x["action"] == "start" and x["group"] == g["name"])
        start = min(x["at_ms"] for x in sc["steps"] if x["action"] == "start" and x["group"] == g["name"])
        gi = sc["groups"].index(g)
        joiner = f"g{gi}c9"
        if kind == "lock_shorter_than_lease" and (survivor in own_jvm or len(own_jvm) < MAX_SEPARATE_CLIENTS) \
                and not any(x["action"] == "pause" and x["client"] == survivor for x in sc["steps"]) \
                and "server_channel_max_idle_s" not in sc["real"] \
                and not any(x["action"] == "reset_offset" and x["group"] == g["name"] for x in sc["steps"]) \
                and start + 1000 < sc["duration_ms"] - 4000:
            # the broker frees the lock after 2 s without a renewal, the client trusts its lease
            # for 3 s: a pause between the two, and a client joining while it lasts, whose
            # rebalance takes the queues it is allotted from the frozen one
            sc["broker_config"]["lock_max_live_ms"] = SHORT_LOCK_MS
            at = rb.randrange(start + 1000, sc["duration_ms"] - 4000, 100)
            # renewed every lock_interval_ms (1 s) until `at`: at the thaw the lease is still valid
            # for a renewal up to 3000 - length ms before, and the broker lock expired 1.5 s after it
            length = rb.randrange(SHORT_LOCK_MS + 700, SHORT_LOCK_MS + 1100, 100)
            sc["steps"].append({"at_ms": at, "action": "pause", "client": survivor, "duration_ms": length,
                                "note": f"SIGSTOP {length} ms: longer than the broker lock ({SHORT_LOCK_MS} ms), "
                                        f"shorter than the client lease ({CLIENT_LEASE_MS} ms)"})
            sc["steps"].append({"at_ms": at + SHORT_LOCK_MS, "action": "start", "client": joiner,
                                "group": g["name"], "note": "joins while the first client is frozen"})
            breaks.append({"kind": kind, "target": BROKER, "expect": ORDERLY_BREAK_EXPECT,
                           "note": f"broker lock_max_live_ms {SHORT_LOCK_MS} below client_lock_max_live_ms "
                                   f"{CLIENT_LEASE_MS}; {survivor} paused {length} ms at {at} ms, {joiner} joins"})
        elif kind == "overlong_call" and start + 1000 < sc["duration_ms"] - 1000:
            # calls longer than the lease margin, on one sharding key (a few messages), and a
            # client joining while they run
            producer = next(p for p in sc["producers"] if p["topic"] in g["subscriptions"])
            key = f"order-{rb.randrange(producer['sharding_keys'])}"
            g["listener"].setdefault("rules", []).insert(0, {"keys": [key], "duration_ms": OVERLONG_CALL_MS})
            g.pop("consume_thread_max", None)
            at = rb.randrange(start + 1000, sc["duration_ms"] - 1000, 100)
            if not any(x.get("client") == joiner for x in sc["steps"]):
                sc["steps"].append({"at_ms": at, "action": "start", "client": joiner, "group": g["name"],
                                    "note": "joins while long calls may run"})
            breaks.append({"kind": kind, "target": g["name"], "expect": ORDERLY_BREAK_EXPECT,
                           "note": f"listener calls of {OVERLONG_CALL_MS[0]}-{OVERLONG_CALL_MS[1]} ms on key {key} "
                                   f"(lease margin {LEASE_MARGIN_MS} ms); {joiner} joins at {at} ms"})
    breaks += _subscriptions_differ(seed, sc)
    if breaks:
        sc["breaks"] = breaks


SUBS_BREAK_RATE = 0.15          # of the scenarios with a clustering group reading a topic with '*'
SUBS_BREAK_EXPECT = ["INV-SUB-1"]


def _subscriptions_differ(seed: int, sc: dict) -> list:
    """On some seeds, a client joins a clustering group that reads a topic with '*', subscribing
    that topic to one tag (its start step's own subscriptions). 4.9.8's broker keeps one
    subscription per group and topic, the newest subVersion's (ConsumerGroupInfo.updateSubscription:
    the joiner's, subscribed last), and filters every member's pulls with it: the other members'
    queues lose the messages of other tags, which they subscribe (INV-SUB-1)."""
    rs = random.Random(f"subs-{seed}")
    if rs.random() >= SUBS_BREAK_RATE:
        return []
    eligible = [(g, t) for g in sc["groups"] if g["message_model"] == "CLUSTERING"
                for t in sorted(g["subscriptions"]) if g["subscriptions"][t] == "*"]
    if not eligible:
        return []
    g, topic = rs.choice(eligible)
    starts = [x["at_ms"] for x in sc["steps"] if x["action"] == "start" and x["group"] == g["name"]]
    # the join comes while the topic's producer still sends (a heartbeat later: the broker's filter)
    p = next(p for p in sc["producers"] if p["topic"] == topic)
    last = min(sc["duration_ms"] - 2000, p["start_ms"] + int(1000 * p["count"] / p["rate_per_s"]) - 1500)
    if min(starts) + 1000 >= last:
        return []
    at = rs.randrange(min(starts) + 1000, last, 100)
    # a tag other than some the producer sends ('' is a message without tags)
    tag = rs.choice([t for t in TAGS if set(p["tags"]) - {t}])
    joiner = f"g{sc['groups'].index(g)}c8"
    sc["steps"].append({"at_ms": at, "action": "start", "client": joiner, "group": g["name"],
                        "subscriptions": dict(g["subscriptions"]) | {topic: tag},
                        "note": f"joins subscribing {topic} to {tag} only, where the group reads all of it"})
    return [{"kind": "subscriptions_differ", "target": g["name"], "expect": SUBS_BREAK_EXPECT,
             "note": f"{joiner} subscribes {topic} with {tag!r}, the group with '*'; the broker filters the "
                     f"group's pulls with the newest subscription"}]


def write(sc: dict, path) -> Path:
    """Write `sc` as a JSON scenario file (the format `simulate --scenario` and `record --scenario` read)."""
    path = Path(path)
    path.write_text(json.dumps(sc, indent=1) + "\n")
    return path


def history_groups(sc: dict) -> dict:
    """What a message-trace history does not carry, per group (`rocketspec history --groups`)."""
    out = {}
    for g in sc["groups"]:
        out[g["name"]] = {"consume_mode": g.get("consume_mode", "CONCURRENTLY"),
                          "message_model": g.get("message_model", "CLUSTERING"),
                          "max_reconsume_times": g.get("max_reconsume_times", -1),
                          "subscriptions": g["subscriptions"]}
    return out
