"""DefaultMQPushConsumer: lifecycle, the pull loop with flow control, and send-back.

One consumer instance per client id. Its periodic work (rebalance, offset persist,
heartbeat, expired-message cleaning) and every pull callback run as tasks owned by its
process, so a pause freezes all of it and a crash ends all of it.
"""
from __future__ import annotations

from functools import partial

from rocketspec.rocketmq import filter as filter_language
from rocketspec.rocketmq.filter import build_subscription, client_tag_match
from rocketspec.rocketmq.pop import MAX_POP_INVISIBLE_TIME, MIN_POP_INVISIBLE_TIME
from rocketspec.rocketmq.profiles import CLIENT_TIMING_KEYS
from rocketspec.rocketmq.retry import retry_delay_level

from .. import checks
from ..allocation import STRATEGIES
from ..footprint import footprint
from ..broker.broker import BrokerUnavailable, PullRequestData
from ..message import retry_topic
from ..sim import Process
from .consume_concurrently import ConsumeMessageConcurrentlyService
from .listener import ListenerSpec
from .offset_store import LocalFileOffsetStore, RemoteBrokerOffsetStore
from .rebalance import RebalanceImpl

MIB = 1024 * 1024


MAX_QUEUE_ID = 1024     # queue ids per topic and broker (reference.scenario.MAX_QUEUES)


# ConsumeFromWhere: where a queue with no committed offset starts (computePullFromWhere)
CONSUME_FROM_WHERE = ("CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_FIRST_OFFSET", "CONSUME_FROM_TIMESTAMP")


# the POP client's settings (ConsumerConfig): a PUSH client's trace does not carry them
POP_SETTINGS = frozenset(("client_type", "pop_invisible_time", "pop_batch_nums", "pop_threshold_for_queue",
                          "retry_invisible_ms", "max_cache_message_count", "long_polling_timeout_ms"))


class ConsumerConfig:
    """DefaultMQPushConsumer settings with RocketMQ's defaults (digest section 3)."""

    DEFAULTS = {
        "consume_mode": "CONCURRENTLY", "message_model": "CLUSTERING", "strategy": "AVG",
        "consume_from_where": "CONSUME_FROM_LAST_OFFSET", "consume_timestamp": None,
        "max_reconsume_times": -1, "consume_message_batch_max_size": 1, "pull_batch_size": 32,
        "pull_interval": 0, "consume_thread_max": 20, "pull_threshold_for_queue": 1000,
        "pull_threshold_size_for_queue": 100, "pull_threshold_for_topic": -1, "pull_threshold_size_for_topic": -1,
        "consume_concurrently_max_span": 2000,
        "suspend_current_queue_time_millis": 1000, "consume_timeout": 15, "virtual_node_cnt": 10,
        "config_mqs": None, "consumeridcs": None,
        # POP (5.x; reference.client.pop_consumer): the client type and its POP settings
        "client_type": "PUSH", "pop_invisible_time": 60000, "pop_batch_nums": 32, "pop_threshold_for_queue": 96,
        "retry_invisible_ms": None,
        # GRPC_PUSH (reference.client.grpc_push_consumer): PushConsumerBuilder.maxCacheMessageCount,
        # and the long-polling timeout the proxy gives it (grpcClientConsumerMaxLongPollingTimeoutMillis)
        "max_cache_message_count": 1024, "long_polling_timeout_ms": 20000,
    }

    # What each setting accepts (DefaultMQPushConsumer.checkConfig's ranges where it has them).
    CHECKS = {
        "consume_mode": checks.one_of("CONCURRENTLY", "ORDERLY"),
        "message_model": checks.one_of("CLUSTERING", "BROADCASTING"),
        "strategy": checks.one_of(*STRATEGIES),
        "consume_from_where": checks.one_of(*CONSUME_FROM_WHERE),
        "consume_timestamp": checks.optional(checks.integer(0)),
        "max_reconsume_times": checks.integer(-1),
        "consume_message_batch_max_size": checks.integer(1, 1024),
        "pull_batch_size": checks.integer(1, 1024),
        "pull_interval": checks.integer(0, 65535),
        "consume_thread_max": checks.integer(1, 1000),
        "pull_threshold_for_queue": checks.integer(1, 65535),
        "pull_threshold_size_for_queue": checks.integer(1, 1024),
        "pull_threshold_for_topic": checks.integer(-1),
        "pull_threshold_size_for_topic": checks.integer(-1),
        "consume_concurrently_max_span": checks.integer(1, 65535),
        "suspend_current_queue_time_millis": checks.integer(0, checks.MAX_RUN_MS),
        "consume_timeout": checks.integer(1, checks.MAX_RUN_MS // 60000),  # minutes, as in RocketMQ
        "virtual_node_cnt": checks.integer(0, 100000),
        "config_mqs": checks.optional(checks.list_of(checks.queue_triple)),
        "consumeridcs": checks.optional(checks.list_of(checks.string)),
        "client_type": checks.one_of("PUSH", "POP_PUSH", "SIMPLE", "GRPC_PUSH"),
        # a SimpleConsumer's own duration; a push consumer's is bounded in resolve (checkConfig)
        "pop_invisible_time": checks.integer(1000, checks.MAX_RUN_MS),
        "pop_batch_nums": checks.integer(1, 32),
        "pop_threshold_for_queue": checks.integer(1, 65535),
        "retry_invisible_ms": checks.optional(checks.integer(1000, checks.MAX_RUN_MS)),
        "max_cache_message_count": checks.integer(1, 1 << 20),
        # the proxy clamps a receive's poll time to at least grpcClientConsumerMinLongPollingTimeoutMillis
        "long_polling_timeout_ms": checks.integer(5000, checks.MAX_RUN_MS),
    }

    @classmethod
    def resolve(cls, given: dict) -> dict:
        """The settings with defaults filled in; checks.FieldError for a bad one."""
        checks.check_table(given, cls.CHECKS, allow_extra=("subscriptions", "listener", "name"))
        out = dict(cls.DEFAULTS)
        out.update({k: v for k, v in given.items() if k in cls.DEFAULTS})
        if out["client_type"] != "PUSH":
            if out["message_model"] != "CLUSTERING":
                raise checks.FieldError("message_model", f"a {out['client_type']} client consumes by POP, which "
                                        "is clustering only")
            if out["client_type"] == "POP_PUSH" and not (
                    MIN_POP_INVISIBLE_TIME <= out["pop_invisible_time"] <= MAX_POP_INVISIBLE_TIME):
                raise checks.FieldError("pop_invisible_time", f"{out['pop_invisible_time']} ms: the push consumer "
                                        f"in POP mode refuses to start outside [{MIN_POP_INVISIBLE_TIME}, "
                                        f"{MAX_POP_INVISIBLE_TIME}] (DefaultMQPushConsumerImpl.checkConfig)")
            if out["client_type"] == "POP_PUSH" and out["consume_mode"] == "ORDERLY":
                raise checks.FieldError("consume_mode", "ORDERLY with POP_PUSH: 5.5.0's "
                                        "ConsumeMessagePopOrderlyService consumes nothing (its ConsumeRequest.run "
                                        "only takes a lock); use client_type SIMPLE for FIFO POP")
        return out


class PushConsumer:
    def __init__(self, sim, net, profile, client_id: str, group: str, config: dict, subscriptions: dict,
                 listener: dict | None, local_disk: dict):
        self.sim = sim
        self.net = net
        self.profile = profile
        self.client_id = client_id
        self.group = group
        self.faults = net.faults
        cfg = ConsumerConfig.resolve(config)
        self.config = cfg
        self.orderly = cfg["consume_mode"] == "ORDERLY"
        self.broadcasting = cfg["message_model"] == "BROADCASTING"
        self.strategy = cfg["strategy"]
        self.consume_from_where = cfg["consume_from_where"]
        self.consume_timestamp = cfg["consume_timestamp"]
        self.virtual_node_cnt = cfg["virtual_node_cnt"]
        self.config_mqs = cfg["config_mqs"]
        self.consumeridcs = cfg["consumeridcs"]
        self.batch_size = cfg["consume_message_batch_max_size"]
        self.pull_batch_size = cfg["pull_batch_size"]
        self.consume_threads = cfg["consume_thread_max"]
        self.consume_timeout_min = cfg["consume_timeout"]
        self.max_reconsume_times = cfg["max_reconsume_times"]
        self.listener = ListenerSpec(listener, self.orderly)
        self.proc = Process(f"client:{client_id}")
        # pull and consume ids number each queue's pulls and listener calls (a trace correlates
        # them per client and queue): a counter per queue, so that the ids one queue gets do not
        # depend on how its tasks interleave with other queues' (the explorer compares worlds)
        self._consume_ids: dict = {}
        self._mq_keys: dict = {}
        self._pull_ids: dict = {}
        # subscriptionInner: topic -> (SubscriptionData, compiled SQL or None); clustering adds %RETRY%group with "*".
        self.subscriptions: dict[str, tuple] = {}
        for topic, sub in subscriptions.items():
            expr_type, expr = ("TAG", sub) if isinstance(sub, str) else (sub.get("type", "TAG"), sub["expr"])
            data = build_subscription(expr, expr_type)
            sql = filter_language.compile_sql92(expr, profile) if expr_type == "SQL92" else None
            self.subscriptions[topic] = (data, sql)
        if not self.broadcasting:
            self.subscriptions[retry_topic(group)] = (build_subscription("*"), None)
        self.offset_store = (LocalFileOffsetStore(self, local_disk) if self.broadcasting
                             else RemoteBrokerOffsetStore(self))
        self.rebalance = RebalanceImpl(self)
        self.pull_service = PullService(self)
        if self.orderly:
            from .consume_orderly import ConsumeMessageOrderlyService
            self.consume_service = ConsumeMessageOrderlyService(self)
        else:
            self.consume_service = ConsumeMessageConcurrentlyService(self)
        self.running = False
        self.paused = False          # DefaultMQPushConsumer.suspend(): no pull, no rebalance
        self._resetting = False
        self._resets_waiting: list = []

    # ------------------------------------------------------------------ helpers
    def emit_pq(self, kind: str, mq, **fields) -> None:
        keys = self._mq_keys.get(mq)
        if keys is None:
            keys = self._mq_keys[mq] = {"client": self.client_id, "group": self.group, "topic": mq[0],
                                        "broker": mq[1], "queue": mq[2]}
        sim = self.sim   # inlined Simulator.emit: this is the hottest emitter
        ev = {"seq": sim.seq, "ts": sim.now, "kind": kind, **keys, **fields}
        sim.seq += 1
        sim._sink(ev)

    def next_consume_id(self, mq) -> int:
        n = self._consume_ids[mq] = self._consume_ids.get(mq, 0) + 1
        return self._client_unique(mq, n)

    def _client_unique(self, mq, n: int) -> int:
        """The n-th id of a queue as an id unique in the client (traces correlate ids per
        client): the queue's slot among (subscribed topic, broker, queue id), plus n - 1 strides.
        A counter per queue, so the ids a queue gets do not depend on how its tasks interleave
        with other queues' (the explorer compares worlds reached by different interleavings)."""
        topics = sorted(self.subscriptions)
        brokers = sorted(self.net.brokers)
        stride = max(1, len(topics)) * max(1, len(brokers)) * MAX_QUEUE_ID
        ti = topics.index(mq[0]) if mq[0] in topics else 0
        bi = brokers.index(mq[1]) if mq[1] in brokers else 0
        return (n - 1) * stride + (ti * len(brokers) + bi) * MAX_QUEUE_ID + mq[2] + 1

    def max_reconsume(self) -> int:
        """getMaxReconsumeTimes: -1 means 16 for concurrent consumers (orderly: Integer.MAX_VALUE)."""
        if self.max_reconsume_times == -1:
            return 2**31 - 1 if self.orderly else self.profile.default_max_reconsume_times
        return self.max_reconsume_times

    def _timing_config(self) -> dict:
        """The client timings this consumer runs with, under the trace's config keys (spec.limits)."""
        return {key: getattr(self.profile, field) for key, field in CLIENT_TIMING_KEYS.items()}

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self.running = True
        self.net.clients[self.client_id] = self
        subs = {t: {"type": d.expression_type, "expr": d.sub_string} for t, (d, _) in self.subscriptions.items()}
        self.sim.emit("client_started", client=self.client_id, group=self.group,
                      consume_mode=self.config["consume_mode"], message_model=self.config["message_model"],
                      subscriptions=subs, config={k: v for k, v in self.config.items()
                                                  if v is not None and k not in POP_SETTINGS}
                      | {"max_reconsume_resolved": self.max_reconsume()} | self._timing_config())
        p = self.profile
        self.consume_service.start()
        self.sim.every(p.persist_offset_initial_delay_ms, p.persist_offset_interval_ms, self.persist_all_offsets,
                       owner=self.proc)
        self.sim.every(p.heartbeat_interval_ms, p.heartbeat_interval_ms, self.heartbeat, owner=self.proc)
        self.heartbeat()
        self.rebalance.start()
        if p.last_offset_at_start:
            self.rebalance.take_start_ends()
        # rebalanceImmediately only wakes the RebalanceService: the first rebalance, and the
        # maxOffset a first start at LAST reads in it (#9281), come after start() returned
        self.rebalance.rebalance_immediately()
        self.sim.emit("client_start_returned", client=self.client_id, group=self.group)

    def heartbeat_footprint(self):
        """What a heartbeat touches at each broker up: the client's own timestamp in the group's
        member list, or, for a client the broker does not list, the list itself and the
        notification of its members (their liveness read); the retry topic, created on a
        clustering client's first heartbeat; each subscription the broker does not hold yet."""
        reads, writes = {("up",)}, set()
        for name, b in self.net.brokers.items():
            if not b.up:
                continue
            if self.client_id in b.consumers.get(self.group, {}):
                # the time now, which every heartbeat of this millisecond writes alike: only the
                # channel scan (it writes the whole table) is ordered against it
                reads.add(("consumers", name, self.group, "seen", self.client_id))
            else:
                reads.add(("clients",))
                writes.add(("consumers", name, self.group))
            if not self.broadcasting and b.topics.get(retry_topic(self.group)) != b.retry_queue_nums:
                writes |= {("topics",), ("route",), ("store", name, retry_topic(self.group))}
            for topic, (data, _) in self.subscriptions.items():
                if b.subscriptions.get((self.group, topic)) != data:
                    writes.add(("subscriptions", name, self.group, topic))
        return reads, writes

    @footprint(lambda self: self.heartbeat_footprint())
    def heartbeat(self) -> None:
        for name in sorted(self.net.brokers):
            try:
                b = self.net.broker(name)
                b.heartbeat(self.client_id, self.group, clustering=not self.broadcasting)
                for topic, (data, _) in self.subscriptions.items():
                    b.register_subscription(self.group, topic, data)
            except BrokerUnavailable:
                continue

    def heartbeat_on_connect(self, broker_name: str) -> None:
        """MQClientInstance's onChannelActive (5.1.4+): sendHeartbeatToBroker to the broker the new
        channel leads to, and rebalanceImmediately when it succeeded."""
        if not self.running:
            return
        try:
            b = self.net.broker(broker_name)
            b.heartbeat(self.client_id, self.group, clustering=not self.broadcasting)
            for topic, (data, _) in self.subscriptions.items():
                b.register_subscription(self.group, topic, data)
        except BrokerUnavailable:
            return
        self.rebalance.rebalance_immediately()

    # the client's own table, and one-way updates on their way (the broker reads them later)
    @footprint(lambda self: persist_footprint(self))
    def persist_all_offsets(self) -> None:
        mqs = set(self.rebalance.pq_table)
        if mqs:
            self.offset_store.persist_all(mqs)

    def shutdown(self) -> None:
        """Graceful: stop consuming, persist offsets, unregister, drop every ProcessQueue."""
        if not self.running:
            return
        self.running = False
        self.consume_service.shutdown() if hasattr(self.consume_service, "shutdown") else None
        self.persist_all_offsets()
        for name in sorted(self.net.brokers):
            try:
                self.net.broker(name).unregister(self.client_id, self.group)
            except BrokerUnavailable:
                continue
        self.rebalance.destroy("shutdown")
        self.sim.emit("client_stopped", client=self.client_id, group=self.group)
        self.proc.kill()

    def crash(self, mode: str = "silent") -> None:
        """The process dies. `kill`: the OS closes its sockets, so each broker it was connected to
        sees the channel close at once. `silent`: a host cut off or frozen; its channels stay until
        the broker's channel expiry."""
        self.running = False
        self.sim.emit("client_crashed", client=self.client_id, group=self.group)
        self.proc.kill()
        if mode == "kill":
            for name in sorted(self.net.brokers):
                self.sim.schedule(self.net.latency_ms, self.net.brokers[name].channel_closed, self.client_id)

    def forget(self) -> None:
        """Erase what a dead process held (its queues, offsets, batches, counters). Nothing reads
        it again: its tasks never run, and a restart is a new PushConsumer (what outlives the
        process, a broadcasting client's offset file, is the run's `local_disks`). A search of the
        reference calls it (model_checks/world.py) so that runs differing only in what a dead
        client held meet."""
        if self.proc.alive:
            raise RuntimeError(f"{self.client_id} is alive: its state is still read")
        self.rebalance.pq_table.clear()
        self.rebalance._timer = self.rebalance._last_run = None
        self.offset_store.table.clear()
        for d in (self._consume_ids, self._pull_ids, self._mq_keys):
            d.clear()
        self.consume_service.forget()
        self.paused = self._resetting = False
        self._resets_waiting.clear()
        self.proc.paused_until = 0

    def pause(self, duration: int) -> None:
        self.sim.emit("client_paused", client=self.client_id, group=self.group, duration=duration)
        self.proc.paused_until = max(self.proc.paused_until, self.sim.now + duration)
        self.sim.schedule(duration, self._resumed)

    # it ends the pause in the trace; the client's own first act past the pause says as much
    @footprint(lambda self: ({("alive", self.client_id), ("paused", self.client_id)}, ()))
    def _resumed(self) -> None:
        if self.proc.alive and self.sim.now >= self.proc.paused_until:
            self.sim.emit("client_resumed", client=self.client_id, group=self.group)

    # ------------------------------------------------------------------ resetOffset
    def reset_offset(self, topic: str, table: dict) -> None:
        """MQClientInstance.resetOffset, asked by the broker for an operator's offset reset:
        suspend, drop and clear the topic's ProcessQueues, wait 10 s, set each offset and
        remove the queues now in the table, resume (DefaultMQPushConsumerImpl.resume rebalances
        at once, so the queues are created again there). Since 4.9.0 (#2449) resets are
        serialized; before, two resets could interleave: the first one's resume created a queue
        again, and the second removed it without dropping it, leaving two pull loops on one
        queue once the second one's resume created it a third time."""
        if self._resetting and not self.profile.reset_offset_duplicates_pull:
            self._resets_waiting.append((topic, table))   # synchronized: wait for the running reset
            return
        self._resetting = True
        self.paused = True
        for mq, pq in list(self.rebalance.pq_table.items()):
            if mq[0] == topic and mq in table:
                # setDropped(true) on every one, also on a queue dropped before and still in
                # the table (an orderly one whose call held the consume lock): the call is made
                pq.dropped = True
                self.emit_pq("pq_dropped", mq, reason="reset")
                pq.clear()
        self.sim.schedule(self.profile.reset_offset_wait_ms, self._reset_finish, topic, table, owner=self.proc)

    def _reset_finish(self, topic: str, table: dict) -> None:
        pqs = self.rebalance.pq_table
        for mq in list(pqs):
            offset = table.get(mq)
            if mq[0] != topic or offset is None:
                continue
            self.offset_store.update_offset(mq, offset, increase_only=False)
            self.remove_unnecessary_message_queue(mq, pqs[mq])
            del pqs[mq]
            self.emit_pq("pq_removed", mq)
        self.paused = False
        self._resetting = False
        if self.running:                   # (a shut-down client's factory answers nothing)
            self.rebalance.do_rebalance()  # resume(): doRebalance() on the resetting thread
        if self._resets_waiting:
            self.reset_offset(*self._resets_waiting.pop(0))

    # ------------------------------------------------------------------ rebalance hooks
    def message_queue_changed(self, topic: str) -> None:
        """A topic's assignment changed: spread the per-topic pull thresholds over the queues
        now held (at least 1 each), then heartbeat so brokers see the new subscription version."""
        cfg = self.config
        held = sum(1 for mq in self.rebalance.pq_table if mq[0] == topic)
        if cfg["pull_threshold_for_topic"] != -1 and held:
            cfg["pull_threshold_for_queue"] = max(1, cfg["pull_threshold_for_topic"] // held)
        if cfg["pull_threshold_size_for_topic"] != -1 and held:
            cfg["pull_threshold_size_for_queue"] = max(1, cfg["pull_threshold_size_for_topic"] // held)
        self.heartbeat()

    def remove_unnecessary_message_queue(self, mq, pq) -> bool:
        if self.orderly and not self.broadcasting:
            return self.consume_service.remove_unnecessary_message_queue(mq, pq)
        self.offset_store.persist(mq, "remove_queue")
        self.offset_store.remove_offset(mq)
        return True

    def lock(self, mq) -> bool:
        return self.consume_service.lock(mq)

    # ------------------------------------------------------------------ send back
    def send_message_back(self, msg, delay_level: int, mq) -> bool:
        """consumerSendMessageBack, falling back to a producer send to %RETRY%group."""
        self.sim.emit("send_back_requested", client=self.client_id, group=self.group, msg_id=msg.msg_id,
                      origin_msg_id=msg.origin_msg_id, reconsume_times=msg.reconsume_times, delay_level=delay_level,
                      topic=mq[0], broker=mq[1], queue=mq[2], offset=msg.offset, via="consumer_send_back")
        if self.sim.chooser.chance("send_back_fails", self.net.faults.send_back_failure):
            # the broker cannot be reached for the send-back nor for the producer fallback
            self.sim.emit("send_back_failed", client=self.client_id, group=self.group, msg_id=msg.msg_id,
                          origin_msg_id=msg.origin_msg_id, reason="broker_unavailable")
            return False
        try:
            if not self.sim.chooser.chance("send_back_throws", self.net.faults.send_back_throw):
                self.net.broker(msg.broker).consumer_send_msg_back(self.group, msg.msg_id, delay_level,
                                                                   self.max_reconsume(), self.client_id)
                return True
        except BrokerUnavailable:
            pass
        level = retry_delay_level(msg.reconsume_times)      # #3731: the context's level is not passed on
        if self.profile.fallback_uses_context_delay and delay_level > 0:
            level = delay_level
        return self.send_to_retry_topic(msg, msg.reconsume_times + 1, level, "fallback_producer")

    def send_to_retry_topic(self, msg, reconsume_times: int, delay_level: int, via: str) -> bool:
        """A normal producer send to %RETRY%group, to any live broker that hosts it."""
        topic = retry_topic(self.group)
        for name in sorted(self.net.brokers):
            b = self.net.brokers[name]
            if not b.up or topic not in b.topics:
                continue
            try:
                b.send_to_retry_topic(self.group, msg, reconsume_times, self.max_reconsume(), delay_level, via,
                                      self.client_id)
                return True
            except BrokerUnavailable:
                continue
        self.sim.emit("send_back_failed", client=self.client_id, group=self.group, msg_id=msg.msg_id,
                      origin_msg_id=msg.origin_msg_id, reason="no broker accepted the message")
        return False


def pull_footprint(c, mq):
    """A pull of queue mq (PullService.pull_message): the queue's pull state in the client
    (last pull time, pull ids) and the pull on its way; it reads the queue's ProcessQueue and
    offset entry and the client's settings (paused, thresholds, subscriptions). No promise for
    an orderly client (ready_to_pull may lock at the broker) or for pull delays of 0 (a task
    this same ms)."""
    p = c.profile
    if c.orderly or min(p.pull_delay_when_exception_ms, p.pull_delay_when_flow_control_ms,
                        p.pull_delay_when_suspend_ms) <= 0:
        return None
    cid = c.client_id
    return ({("up", mq[1]), ("client", cid, "settings"), ("client", cid, mq, "pq"), ("client", cid, mq, "offset")},
            {("client", cid, mq, "pull"), ("pull", mq[1], cid, mq)})


def pull_answer_footprint(c, mq):
    """The client handles a pull's answer (PullService.on_pull_result): the queue's messages
    read from the broker's answer, all the client holds for the queue, the consume service
    (client-wide: its threads and queue of batches; with a batch queued no thread is free, so a
    new batch starts only its own queue's), and the next pull, which may be at once (covered
    here). No promise where pull_footprint makes none, or for a listener call of 0 ms (a batch
    would end, and perhaps be sent back, in this same millisecond)."""
    fp = pull_footprint(c, mq)
    if fp is None or c.listener.min_duration() <= 0:
        return None
    reads, writes = fp
    return (reads | {("store", mq[1], mq[0], mq[2])},
            writes | {("client", c.client_id, mq), ("client", c.client_id, "consume")})


def persist_footprint(c):
    """persistAll: each held queue's offset entry sent one way (a later millisecond), the
    entries of queues not held dropped."""
    cid = c.client_id
    held = set(c.rebalance.pq_table)
    reads = {("up",), ("client", cid, "table")} | {("client", cid, mq, "offset") for mq in held}
    writes = {("persist", cid)} | {("client", cid, mq, "offset") for mq in c.offset_store.table if mq not in held}
    return reads, writes


class PullService:
    """PullMessageService plus DefaultMQPushConsumerImpl.pullMessage and its callback."""

    def __init__(self, consumer: PushConsumer):
        self.c = consumer
        self.sim = consumer.sim

    def execute_later(self, req, delay: int) -> None:
        self.sim.schedule(delay, self.pull_message, req, owner=self.c.proc)

    def _flow(self, req, reason: str, delay: int) -> None:
        self.c.emit_pq("pull_flow_controlled", req.mq, reason=reason, delay=delay)
        self.execute_later(req, delay)

    # the client's own state, and a pull on its way to the broker. Not declared for an orderly
    # client (ready_to_pull may lock at the broker) or for pull delays of 0 (a task this same ms)
    @footprint(lambda self, req: pull_footprint(self.c, req.mq))
    def pull_message(self, req) -> None:
        c, pq, p = self.c, req.pq, self.c.profile
        if pq.dropped:
            return
        pq.last_pull_ts = self.sim.now
        if c.paused:
            return self._flow(req, "paused", p.pull_delay_when_suspend_ms)
        if pq.msg_count > c.config["pull_threshold_for_queue"]:
            return self._flow(req, "count", p.pull_delay_when_flow_control_ms)
        if pq.msg_size // MIB > c.config["pull_threshold_size_for_queue"]:
            return self._flow(req, "size", p.pull_delay_when_flow_control_ms)
        if not c.orderly:
            if pq.max_span() > c.config["consume_concurrently_max_span"]:
                return self._flow(req, "span", p.pull_delay_when_flow_control_ms)
        elif not c.consume_service.ready_to_pull(req):
            return
        topic = req.mq[0]
        sub = c.subscriptions.get(topic)
        if sub is None:
            return self._flow(req, "no_subscription", p.pull_delay_when_exception_ms)
        data, sql = sub
        commit = -1
        if not c.broadcasting:
            mem = c.offset_store.read_memory(req.mq)
            commit = mem if mem > 0 else -1
        mq = req.mq
        n = c._pull_ids[mq] = c._pull_ids.get(mq, 0) + 1
        pull_id = c._client_unique(mq, n)
        c.emit_pq("pull_issued", mq, offset=req.next_offset, pull_id=pull_id, max_nums=c.pull_batch_size,
                  commit_offset=commit, expr=data.sub_string, expr_type=data.expression_type)
        data_req = PullRequestData(client=c.client_id, group=c.group, topic=topic, queue=mq[2], offset=req.next_offset,
                                   max_nums=c.pull_batch_size, subscription=data, sql=sql,
                                   commit_offset=commit if commit > 0 else None, pull_id=pull_id, suspend=True,
                                   expr_type=data.expression_type, respond=None)

        # callbacks as bound methods with their arguments (data), not closures: a held pull
        # stays part of a world the explorer can copy and compare
        data_req.respond = partial(self._respond, req, pull_id)
        c.net.pull_async(c, mq[1], data_req, partial(self._pull_failed, req, pull_id, "exception"))

    def _respond(self, req, pull_id: int, result, status) -> None:
        """The broker's answer travels back to the client."""
        c = self.c
        self.sim.schedule(c.net.latency_ms, self.on_pull_result, req, pull_id, result, status, owner=c.proc)

    def _pull_failed(self, req, pull_id: int, reason: str, response_code: int | None = None) -> None:
        """The pull ended without messages (PullCallback.onException, or the exception pullKernelImpl
        throws when the broker cannot be reached): the same PullRequest is pulled again later."""
        extra = {} if response_code is None else {"response_code": response_code}
        self.c.emit_pq("pull_failed", req.mq, pull_id=pull_id, reason=reason, **extra)
        self._flow(req, "exception", self.c.profile.pull_delay_when_exception_ms)

    @footprint(lambda self, req, pull_id, result, status: pull_answer_footprint(self.c, req.mq))
    def on_pull_result(self, req, pull_id, result, status) -> None:
        c, pq, mq = self.c, req.pq, req.mq
        p = c.profile
        if result is None:  # SYSTEM_ERROR (e.g. SQL92 without enablePropertyFilter): the client throws
            return self._pull_failed(req, pull_id, "rejected", response_code=1)
        requested = req.next_offset
        base = dict(pull_id=pull_id, offset=requested, get_status=result.status, status=status,
                    next_offset=result.next_begin, min_offset=result.min_offset, max_offset=result.max_offset)
        if status == "FOUND":
            data, _ = c.subscriptions.get(mq[0], (None, None))
            kept, dropped_ids = [], []
            for m in result.messages:
                if data is None or client_tag_match(data, m.tags):
                    kept.append(m.clone())
                else:
                    dropped_ids.append(m.offset)
            req.next_offset = result.next_begin
            if result.filtered:
                base["broker_filtered"] = result.filtered
            if dropped_ids:
                base["client_filtered"] = dropped_ids
            c.emit_pq("pull_answered", mq, **base, offsets=[m.offset for m in kept], msg_ids=[m.msg_id for m in kept])
            if not kept:
                return self.execute_later(req, 0)
            dispatch = pq.put_messages(kept)
            c.consume_service.submit(kept, pq, mq, dispatch)
            return self.execute_later(req, c.config["pull_interval"])
        if result.filtered:
            base["broker_filtered"] = result.filtered
        c.emit_pq("pull_answered", mq, **base)
        if status in ("NO_NEW_MSG", "NO_MATCHED_MSG"):
            req.next_offset = result.next_begin
            if pq.msg_count == 0 and not pq.dropped:   # correctTagsOffset
                c.offset_store.update_offset(mq, req.next_offset, increase_only=True)
            return self.execute_later(req, 0)
        # OFFSET_ILLEGAL
        req.next_offset = result.next_begin
        if not pq.dropped:
            pq.dropped = True
            c.emit_pq("pq_dropped", mq, reason="offset_illegal")
        self.sim.schedule(p.offset_illegal_delay_ms, self._fix_illegal_offset, mq, req.next_offset, owner=c.proc)

    def _fix_illegal_offset(self, mq, next_offset: int) -> None:
        c = self.c
        if c.profile.controllable_offset:
            c.offset_store.update_and_freeze(mq, next_offset)
        else:
            c.offset_store.update_offset(mq, next_offset, increase_only=False)
        c.offset_store.persist(mq, "offset_illegal")
        c.rebalance.remove_process_queue(mq)
        if c.profile.controllable_offset:
            c.rebalance.rebalance_immediately()
