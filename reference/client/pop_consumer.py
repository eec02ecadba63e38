"""POP consumers (RocketMQ 5.x): the push consumer in POP mode and the SimpleConsumer.

`POP_PUSH` is DefaultMQPushConsumer with message-level load balancing (clientRebalance off, the
group's message request mode POP): every rebalance it asks a broker for its assignment
(QueryAssignmentProcessor.allocate4Pop with popShareQueueNum -1: every member gets queue -1 of
the topic on every broker, i.e. all queues), keeps a PopProcessQueue per assigned queue, pops
(popInvisibleTime, popBatchNums, a 15 s long poll) and consumes as
ConsumeMessagePopConcurrentlyService does: a batch whose invisible time has run out before or
after the listener call is left to revive; success acks each message; failure changes the
invisible time to popDelayLevel[reconsumeTimes]; at maxReconsumeTimes checkNeedAckOrDelay
(ack, i.e. drop, only for a message older than twice the last delay level); a popped message
already past maxReconsumeTimes is acked unconsumed (processPopResult, 5.3.1+; up to 5.3.0 it
reaches the listener: profile switch pop_push_acks_past_limit, #8332). It never dead-letters.

`SIMPLE` is the gRPC SimpleConsumer through the proxy: the application receives (a pop of
queue -1, the broker chosen round-robin, its own invisible duration), handles each message with
the listener and acks it on success; on failure it changes the invisible duration
(`retry_invisible_ms`) or leaves the message to come back when its invisible time ends. The
proxy's PopMessageResultFilter dead-letters (consumerSendMsgBack, delay level -1) and acks a
popped message whose reconsume times reached the group's max attempts (maxReconsumeTimes + 1).
An ORDERLY (FIFO) group pops orderly with a fresh attempt id per receive and stops a batch at
its first failure: the rest stays un-acked and the broker keeps the queue blocked until they
come back.
"""
from __future__ import annotations

from functools import partial

from rocketspec.rocketmq import filter as filter_language
from rocketspec.rocketmq.filter import build_subscription

from rocketspec.rocketmq.pop import (ALL_QUEUES, DEFAULT_POP_SHARE_QUEUE_NUM, POP_DELAY_LEVEL_S, client_invisible_time,
                                     max_reconsume_times, parse_handle, pop_delay_ms, pop_shares_all, pop_timed_out,
                                     proxy_dead_letters, proxy_max_attempts, push_pop_at_limit,
                                     push_pop_past_limit)

from ..broker.broker import BrokerUnavailable
from ..broker.pop import PopRequest
from ..sim import Process
from .listener import ListenerSpec

BROKER_SUSPEND_MAX_TIME_MS = 15000          # the pop's poll time (long polling)
CONSUMER_TIMEOUT_WHEN_SUSPEND_MS = 30000    # the pop request's timeout beyond its poll time
PULL_DELAY_WHEN_CACHE_FLOW_CONTROL_MS = 50
PULL_DELAY_WHEN_SUSPEND_MS = 1000
SUCCESS_STATUSES = ("CONSUME_SUCCESS", "SUCCESS", "COMMIT")
CLIENT_TYPES = ("PUSH", "POP_PUSH", "SIMPLE", "GRPC_PUSH")


class PopProcessQueue:
    """PopProcessQueue: what waits for an ack, and whether the queue is still assigned."""

    __slots__ = ("mq", "wait_ack", "dropped", "last_pop_ts")

    def __init__(self, mq, now):
        self.mq, self.wait_ack, self.dropped, self.last_pop_ts = mq, 0, False, now


class _Rebalance:
    """What the network and the runner reach through `consumer.rebalance`."""

    def __init__(self, consumer):
        self.c = consumer
        self.pq_table: dict = {}

    def rebalance_immediately(self) -> None:
        self.c.rebalance_now()


class PopConsumer:
    pop = True
    broadcasting = False
    poll_ms = BROKER_SUSPEND_MAX_TIME_MS
    pop_timeout_ms = BROKER_SUSPEND_MAX_TIME_MS + CONSUMER_TIMEOUT_WHEN_SUSPEND_MS
    proxy_mode = False      # the answer passes the proxy on its way (GRPC_PUSH)

    def __init__(self, sim, net, profile, client_id: str, group: str, config: dict, subscriptions: dict,
                 listener: dict | None):
        from .push_consumer import ConsumerConfig

        self.sim, self.net, self.profile = sim, net, profile
        self.client_id, self.group = client_id, group
        cfg = ConsumerConfig.resolve(config)
        self.config = cfg
        self.client_type = cfg["client_type"]
        self.orderly = cfg["consume_mode"] == "ORDERLY"
        # the push consumer sends 60 s for a value outside [5 s, 300 s]; a SimpleConsumer its own
        self.invisible_ms = (client_invisible_time(cfg["pop_invisible_time"]) if self.client_type == "POP_PUSH"
                             else cfg["pop_invisible_time"])
        self.batch_nums = cfg["pop_batch_nums"]
        self.threshold = cfg["pop_threshold_for_queue"]
        self.retry_invisible_ms = cfg["retry_invisible_ms"]
        self.batch_size = cfg["consume_message_batch_max_size"]
        self.threads = cfg["consume_thread_max"]
        self.max_reconsume_times = cfg["max_reconsume_times"]
        self.init_min = cfg["consume_from_where"] == "CONSUME_FROM_FIRST_OFFSET"
        self.listener = ListenerSpec(listener, self.orderly)
        self.proc = Process(f"client:{client_id}")
        self.subscriptions: dict[str, tuple] = {}
        for topic, sub in subscriptions.items():
            expr_type, expr = ("TAG", sub) if isinstance(sub, str) else (sub.get("type", "TAG"), sub["expr"])
            sql = filter_language.compile_sql92(expr, profile) if expr_type == "SQL92" else None
            self.subscriptions[topic] = (build_subscription(expr, expr_type), sql)
        self.rebalance = _Rebalance(self)
        self.running = False
        self.paused = False
        self._pop_ids = 0
        self._consume_ids = 0
        self._attempts = 0
        self.running_calls = 0          # listener calls in flight
        self.waiting_batches: list = []  # batches waiting for a consume thread
        self.acks_in_flight = 0
        self._simple_next = 0            # SIMPLE: the next broker of the rotation
        self._simple_busy = False

    # ------------------------------------------------------------------ helpers
    def max_reconsume(self) -> int:
        """getMaxReconsumeTimes: -1 means 16 (the proxy's max attempts are this plus one)."""
        return max_reconsume_times(self.max_reconsume_times)

    def idle(self) -> bool:
        return (not self.running_calls and not self.waiting_batches and not self.acks_in_flight
                and not any(pq.wait_ack for pq in self.rebalance.pq_table.values()))

    def _emit(self, kind: str, **fields) -> None:
        self.sim.emit(kind, client=self.client_id, group=self.group, **fields)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self.running = True
        self.net.clients[self.client_id] = self
        self._emit_started()
        p = self.profile
        self.sim.every(p.heartbeat_interval_ms, p.heartbeat_interval_ms, self.heartbeat, owner=self.proc)
        self.heartbeat()
        self.sim.every(p.rebalance_interval_ms, p.rebalance_interval_ms, self.rebalance_now, owner=self.proc)
        self.rebalance_now()
        self.sim.emit("client_start_returned", client=self.client_id, group=self.group)

    def _emit_started(self) -> None:
        subs = {t: {"type": d.expression_type, "expr": d.sub_string} for t, (d, _) in self.subscriptions.items()}
        self.sim.emit("client_started", client=self.client_id, group=self.group,
                      consume_mode=self.config["consume_mode"], message_model=self.config["message_model"],
                      subscriptions=subs, config={k: v for k, v in self.config.items() if v is not None}
                      | {"max_reconsume_resolved": self.max_reconsume(),
                         # the group's message request mode (QueryAssignmentProcessor): POP
                         "message_request_mode": "POP"})

    def heartbeat(self) -> None:
        for name in sorted(self.net.brokers):
            try:
                b = self.net.broker(name)
                b.heartbeat(self.client_id, self.group, clustering=True)
                for topic, (data, _) in self.subscriptions.items():
                    b.register_subscription(self.group, topic, data)
            except BrokerUnavailable:
                continue

    def heartbeat_on_connect(self, broker_name: str) -> None:
        if self.running:
            self.heartbeat()
            self.rebalance_now()

    def shutdown(self) -> None:
        if not self.running:
            return
        self.running = False
        for name in sorted(self.net.brokers):
            try:
                self.net.broker(name).unregister(self.client_id, self.group)
            except BrokerUnavailable:
                continue
        for pq in self.rebalance.pq_table.values():
            pq.dropped = True
        self.rebalance.pq_table.clear()
        self.waiting_batches.clear()
        self.sim.emit("client_stopped", client=self.client_id, group=self.group)
        self.proc.kill()

    def crash(self, mode: str = "silent") -> None:
        self.running = False
        self.sim.emit("client_crashed", client=self.client_id, group=self.group)
        self.proc.kill()
        self.rebalance.pq_table.clear()
        self.waiting_batches.clear()
        self.running_calls = self.acks_in_flight = 0
        if mode == "kill":
            for name in sorted(self.net.brokers):
                self.sim.schedule(self.net.latency_ms, self.net.brokers[name].channel_closed, self.client_id)

    def forget(self) -> None:
        """Erase what a dead process held, as PushConsumer.forget (the explorer merges worlds that
        differ only there); its handles stay with the broker, which revives them."""
        if self.proc.alive:
            raise RuntimeError(f"{self.client_id} is alive: its state is still read")
        self.rebalance.pq_table.clear()
        self.waiting_batches.clear()
        self.running_calls = self.acks_in_flight = 0
        self._pop_ids = self._consume_ids = self._attempts = self._simple_next = 0
        self._simple_busy = False
        self.proc.paused_until = 0

    def pause(self, duration: int) -> None:
        self.sim.emit("client_paused", client=self.client_id, group=self.group, duration=duration)
        self.proc.paused_until = max(self.proc.paused_until, self.sim.now + duration)
        self.sim.schedule(duration, self._resumed)

    def _resumed(self) -> None:
        if self.proc.alive and self.sim.now >= self.proc.paused_until:
            self.sim.emit("client_resumed", client=self.client_id, group=self.group)

    # ------------------------------------------------------------------ assignment (rebalance)
    def _assignment(self, topic: str) -> list | None:
        """queryAssignment at a broker of the topic (RebalanceImpl.tryQueryAssignment; the
        SimpleConsumer's proxy reads the route itself): allocate4Pop with popShareQueueNum -1
        (the default) gives every member queue -1 of the topic on each broker of the route."""
        route = self.net.route(topic)
        brokers = sorted({mq[1] for mq in route})
        for name in brokers:
            try:
                b = self.net.broker(name)
                b.channels.io(self.client_id)
            except BrokerUnavailable:
                continue
            cids = sorted(b.consumers.get(self.group, {}))
            if not cids:
                return []
            if not pop_shares_all(DEFAULT_POP_SHARE_QUEUE_NUM, len(cids)):
                raise AssertionError("popShareQueueNum is the default -1")
            mqs = [(topic, bname, ALL_QUEUES) for bname in brokers]
            if self.client_type == "POP_PUSH":
                self.sim.emit("assignment_answered", client=self.client_id, group=self.group, topic=topic,
                              broker=name, mode="POP", allocated=[list(mq) for mq in mqs], cids=cids,
                              pop_share_queue_num=DEFAULT_POP_SHARE_QUEUE_NUM)
            return mqs
        return None     # no broker answered: the assignment stays as it is

    def rebalance_now(self) -> None:
        if not self.running:
            return
        for topic in sorted(self.subscriptions):
            mqs = self._assignment(topic)
            if mqs is None:
                continue
            table = self.rebalance.pq_table
            for mq in [m for m in table if m[0] == topic and m not in mqs]:
                table.pop(mq).dropped = True
            for mq in mqs:
                if mq not in table:
                    table[mq] = self._queue_added(mq)
        if self.client_type == "SIMPLE" and not self._simple_busy and self.rebalance.pq_table:
            self._simple_busy = True
            self.sim.schedule(0, self.receive, owner=self.proc)

    def _queue_added(self, mq):
        """The process queue of a newly assigned queue (a push consumer in POP mode pops it at once)."""
        pq = PopProcessQueue(mq, self.sim.now)
        if self.client_type == "POP_PUSH":
            self.sim.schedule(0, self.pop_message, pq, owner=self.proc)
        return pq

    # ------------------------------------------------------------------ pop
    def _send_pop(self, mq, orderly: bool, attempt_id, on_answer, max_nums: int | None = None) -> None:
        topic, broker_name = mq[0], mq[1]
        data, sql = self.subscriptions[topic]
        self._pop_ids += 1
        pop_id = self._pop_ids
        nums = self.batch_nums if max_nums is None else max_nums
        self._emit("pop_requested", topic=topic, broker=broker_name, queue=mq[2], pop_id=pop_id,
                   invisible_time=self.invisible_ms, max_nums=nums, order=orderly, attempt_id=attempt_id,
                   expr=data.sub_string, expr_type=data.expression_type)
        state = {"answered": False}
        req = PopRequest(client=self.client_id, group=self.group, topic=topic, queue=mq[2], max_nums=nums,
                         invisible_ms=self.invisible_ms, orderly=orderly, attempt_id=attempt_id, subscription=data,
                         sql=sql, expr_type=data.expression_type, init_min=self.init_min,
                         poll_ms=self.poll_ms, pop_id=pop_id,
                         respond=partial(self._pop_respond, mq, pop_id, state, on_answer),
                         via_proxy=self.client_type != "POP_PUSH")
        b = self.net.brokers.get(broker_name)
        if b is None or not b.up:
            self.sim.schedule(self.net.latency_ms, self._pop_failed, mq, pop_id, state, on_answer, "unavailable",
                              owner=self.proc)
            return
        self.sim.schedule(self.net.latency_ms, self._pop_arrives, b, req, owner=b.proc)
        self.sim.schedule(self.pop_timeout_ms, self._pop_failed, mq, pop_id, state, on_answer, "deadline_exceeded",
                          owner=self.proc)

    @staticmethod
    def _pop_arrives(b, req) -> None:
        if b.up:
            b.pop.pop(req)

    def _pop_respond(self, mq, pop_id, state, on_answer, found, status) -> None:
        if self.proxy_mode:
            found = self._proxy_writes(mq, found, not state["answered"])
            if state["answered"] or self.net.lose_pop_response(self, mq, pop_id, bool(found)):
                return      # past the client's deadline, or lost: the receive fails at its deadline
        self.sim.schedule(self.net.latency_ms, self._pop_answered, mq, pop_id, state, on_answer, found, status,
                          owner=self.proc)

    def _proxy_writes(self, mq, found, open_stream: bool):
        return found

    def _pop_answered(self, mq, pop_id, state, on_answer, found, status) -> None:
        if state["answered"]:
            return
        state["answered"] = True
        on_answer(mq, found)

    def _pop_failed(self, mq, pop_id, state, on_answer, failure: str) -> None:
        """PopCallback.onException: the broker is down (unavailable), or no answer came before the
        request's timeout (deadline_exceeded)."""
        if state["answered"]:
            return
        state["answered"] = True
        on_answer(mq, None, failure)

    # ------------------------------------------------------------------ POP_PUSH
    def pop_message(self, pq: PopProcessQueue) -> None:
        """DefaultMQPushConsumerImpl.popMessage."""
        if pq.dropped or not self.running:
            return
        pq.last_pop_ts = self.sim.now
        if self.paused:
            self.sim.schedule(PULL_DELAY_WHEN_SUSPEND_MS, self.pop_message, pq, owner=self.proc)
            return
        if pq.wait_ack > self.threshold:
            self.sim.schedule(PULL_DELAY_WHEN_CACHE_FLOW_CONTROL_MS, self.pop_message, pq, owner=self.proc)
            return
        self._send_pop(pq.mq, False, None, partial(self._on_push_pop, pq))

    def _on_push_pop(self, pq, mq, found, failure=None) -> None:
        if found is None:
            self.sim.schedule(self.profile.pull_delay_when_exception_ms, self.pop_message, pq, owner=self.proc)
            return
        if found:
            data, _ = self.subscriptions[mq[0]]
            kept = []
            for m, h in found:
                # processPopResult: the tags again, then a message past maxReconsumeTimes is acked unconsumed
                if data.tags_set and (m.tags is None or m.tags not in data.tags_set):
                    self.ack(m, h, "no_match")
                elif self.profile.pop_push_acks_past_limit and push_pop_past_limit(
                        m.reconsume_times, self.max_reconsume_times, self.profile.pop_push_limit_resolved):
                    self.ack(m, h, "max_reconsume")
                else:
                    kept.append((m, h))
            if kept:
                pq.wait_ack += len(kept)
                for i in range(0, len(kept), self.batch_size):
                    self._submit(kept[i:i + self.batch_size], pq)
        delay = self.config["pull_interval"]
        self.sim.schedule(delay if found else 0, self.pop_message, pq, owner=self.proc)

    def _submit(self, batch, pq) -> None:
        if self.running_calls < self.threads:
            self._run_batch(batch, pq)
        else:
            self.waiting_batches.append((batch, pq))

    def _pop_timeout(self, batch) -> bool:
        h = parse_handle(batch[0][1])
        return pop_timed_out(self.sim.now, h["pop_time"], h["invisible_time"])

    def _run_batch(self, batch, pq) -> None:
        """ConsumeRequest.run."""
        if pq.dropped:
            return self._next_batch()
        if self._pop_timeout(batch):
            pq.wait_ack -= len(batch)     # skipped: the broker revives it
            return self._next_batch()
        msgs = [m for m, _ in batch]
        status, duration = self.listener.decide(self.sim, msgs)
        self._consume_ids += 1
        cid = self._consume_ids
        self.running_calls += 1
        self.sim.last_call = self.sim.now
        self._emit("pop_consume_started", topic=msgs[0].topic, broker=pq.mq[1], consume_id=cid,
                   handles=[h for _, h in batch], msg_ids=[m.msg_id for m in msgs],
                   reconsume_list=[m.reconsume_times for m in msgs])
        self.sim.schedule(duration, self._batch_done, batch, pq, cid, status, owner=self.proc)

    def _batch_done(self, batch, pq, cid, status) -> None:
        self.running_calls -= 1
        expired = self._pop_timeout(batch)
        self._emit("pop_consume_finished", consume_id=cid, status=status, timed_out=expired)
        if pq.dropped or expired:
            pq.wait_ack -= len(batch)
        else:
            self._process_result(batch, pq, status)
        self._next_batch()

    def _next_batch(self) -> None:
        while self.waiting_batches and self.running_calls < self.threads:
            batch, pq = self.waiting_batches.pop(0)
            self._run_batch(batch, pq)

    def _process_result(self, batch, pq, status) -> None:
        """processConsumeResult: ack up to ackIndex, the rest to a later invisible time."""
        ok = status == "CONSUME_SUCCESS"
        ack_index = len(batch) - 1 if ok else -1
        if ok and self.listener.ack_index is not None:
            ack_index = min(self.listener.ack_index, len(batch) - 1)
        for i, (m, h) in enumerate(batch):
            pq.wait_ack -= 1
            if i <= ack_index:
                self.ack(m, h)
            elif push_pop_at_limit(m.reconsume_times, self.max_reconsume()):
                self._ack_or_delay(m, h)
            else:
                self.change_invisible(m, h, pop_delay_ms(self.listener.delay_level_when_next_consume,
                                                         m.reconsume_times))

    def _ack_or_delay(self, m, h) -> None:
        """checkNeedAckOrDelay: a message older than twice the last delay level is acked (dropped);
        else its invisible time becomes the first delay level at least as long as its age."""
        age = self.sim.now - m.store_ts
        if age > POP_DELAY_LEVEL_S[-1] * 1000 * 2:
            self.ack(m, h, "max_reconsume")
            return
        level = len(POP_DELAY_LEVEL_S) - 1
        while level >= 0:
            if age >= POP_DELAY_LEVEL_S[level] * 1000:
                level += 1
                break
            level -= 1
        if level < 0:
            return      # younger than the first level: popDelayLevel[-1] throws, nothing is sent
        self.change_invisible(m, h, pop_delay_ms(level, m.reconsume_times))

    # ------------------------------------------------------------------ SIMPLE
    def receive(self) -> None:
        """The application's loop: receive from the next broker of the rotation."""
        if not self.running:
            return
        mqs = sorted(self.rebalance.pq_table)
        if not mqs:
            self._simple_busy = False
            return
        mq = mqs[self._simple_next % len(mqs)]
        self._simple_next += 1
        attempt = None
        if self.orderly:
            self._attempts += 1
            # unique across the client's restarts too, as the real client's UUID per receive
            attempt = f"{self.client_id}-{self.proc.incarnation}-{self._attempts}"
        self._send_pop(mq, self.orderly, attempt, self._on_receive)

    def _on_receive(self, mq, found, failure=None) -> None:
        if found is None:
            self.sim.schedule(self.profile.pull_delay_when_exception_ms, self.receive, owner=self.proc)
            return
        batch = []
        for m, h in found:
            # the proxy's PopMessageResultFilter, before the client sees the message
            data, _ = self.subscriptions[mq[0]]
            if data.tags_set and (m.tags is None or m.tags not in data.tags_set):
                self.ack(m, h, "no_match")
            elif proxy_dead_letters(m.reconsume_times, proxy_max_attempts(self.max_reconsume())):
                self._to_dlq(m, h)
            else:
                batch.append((m, h))
        self._handle_next(batch, 0)

    def _to_dlq(self, m, h) -> None:
        """forwardMessageToDeadLetterQueue (consumerSendMsgBack, delay level -1), then the ack.
        The group still works through its messages: the run is not settled (runner.ACTIVE_MS)."""
        self.sim.last_call = self.sim.now
        try:
            b = self.net.broker(parse_handle(h)["broker"])
            done = b.pop.dead_letter(self.group, m.topic, h, m.msg_id, m.reconsume_times,
                                     proxy_max_attempts(self.max_reconsume()), self.client_id)
        except BrokerUnavailable:
            done = False
        if done:
            self.ack(m, h, "dead_lettered")
        # else neither dead-lettered nor acked: it comes back when its invisible time ends

    def _handle_next(self, batch, i: int) -> None:
        if not self.running:
            return
        if i >= len(batch):
            self.sim.schedule(0, self.receive, owner=self.proc)
            return
        m, h = batch[i]
        status, duration = self.listener.decide(self.sim, [m])
        self._consume_ids += 1
        cid = self._consume_ids
        self.running_calls += 1
        self.sim.last_call = self.sim.now
        self._emit("pop_consume_started", topic=m.topic, broker=parse_handle(h)["broker"], consume_id=cid,
                   handles=[h], msg_ids=[m.msg_id], reconsume_list=[m.reconsume_times])
        self.sim.schedule(duration, self._handled, batch, i, cid, status, owner=self.proc)

    def _handled(self, batch, i, cid, status) -> None:
        self.running_calls -= 1
        m, h = batch[i]
        self._emit("pop_consume_finished", consume_id=cid, status=status, timed_out=self._pop_timeout([(m, h)]))
        if status in SUCCESS_STATUSES:
            self.ack(m, h)
            return self._handle_next(batch, i + 1)
        if self.retry_invisible_ms is not None:
            self.change_invisible(m, h, self.retry_invisible_ms)
        if self.orderly:
            # FIFO: the rest of the batch may not be handled before this one
            return self._handle_next([], 0)
        self._handle_next(batch, i + 1)

    # ------------------------------------------------------------------ ack, change invisible time
    def ack(self, m, h, reason: str = "consumed") -> None:
        """ackAsync: the ack reaches the broker a latency later."""
        self._to_broker(h, "ack", m.topic, h, self.client_id, reason)

    def change_invisible(self, m, h, invisible_ms: int) -> None:
        """changePopInvisibleTimeAsync."""
        self._to_broker(h, "change_invisible_time", m.topic, h, invisible_ms, self.client_id)

    def _to_broker(self, h, what: str, *args) -> None:
        b = self.net.brokers.get(parse_handle(h)["broker"])
        if b is None or not b.up:
            return      # the request fails: the message comes back when its invisible time ends
        self.acks_in_flight += 1
        self.sim.schedule(self.net.latency_ms, self._arrives, b, what, self.group, args, owner=b.proc)
        self.sim.schedule(2 * self.net.latency_ms, self._returned, owner=self.proc)

    @staticmethod
    def _arrives(b, what, group, args) -> None:
        if b.up:
            getattr(b.pop, what)(group, *args)

    def _returned(self) -> None:
        self.acks_in_flight = max(0, self.acks_in_flight - 1)
