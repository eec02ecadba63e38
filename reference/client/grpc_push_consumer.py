"""The gRPC PushConsumer (rocketmq-client-java 5.2.0) through the proxy: client_type GRPC_PUSH.

Every 5 s it asks the proxy for its assignment (queue -1 of each broker of the topic: all queues)
and keeps a process queue per assigned queue (ProcessQueueImpl). Each process queue receives in a
loop: a receive asks for up to 32 messages (fewer when the cache is near full), under an attempt
id, with the long poll the proxy gives it (20 s by default) and a deadline 3 s after. An answered receive is cached and handed to the
consume service, and the next receive, under a new attempt id, goes out at once. A receive that
failed waits 1 s; after DEADLINE_EXCEEDED it is retried with the same attempt id, so the broker
can give an orderly queue's held batch back to the attempt that popped it.

The proxy pops with its own invisible time (60 s: the PushConsumer asks for auto-renew), filters
the answer as for a SimpleConsumer (a message at max attempts to the DLQ, a tag that does not
match acked) and keeps each handle it wrote for renewal (reference.client.proxy_handles). The
answer may be lost on its way to the client (the explorer's fault pop_response_lost, a scenario's
lose_pop_responses step): the proxy has written it and renews its handles; the client's receive
fails at its deadline.

Consumption (ConsumeService): CONCURRENTLY, each message is its own listener call; success acks
it, failure changes its invisible time to the retry policy's delay for its delivery attempt (the
proxy dead-letters it at max attempts on a later receive). ORDERLY (FifoConsumeService), a batch's
messages are consumed one after the other, each after the last one's ack or dead letter returned;
a failure is retried in the client after the retry policy's delay until max attempts, then the
message is forwarded to the DLQ. A failed ack, change or forward is sent again 1 s later.
"""
from __future__ import annotations

from functools import partial

from rocketspec.rocketmq.grpc_push import (ACK_FAILURE_BACKOFF_MS, NACK_INVISIBLE_MS, PROXY_DEFAULT_INVISIBLE_MS, RECEIVE_BATCH_SIZE,
                                           RECEIVING_BACKOFF_WHEN_CACHE_FULL_MS, RECEIVING_FAILURE_BACKOFF_MS,
                                           next_attempt_delay_ms, receive_timeout_ms, retried_attempt_id)
from rocketspec.rocketmq.pop import parse_handle, proxy_dead_letters, proxy_max_attempts

from .pop_consumer import PopConsumer
from .proxy_handles import proxy_of

# PushConsumerImpl.startUp: scanAssignments 1 s after the start, then every 5 s
ASSIGNMENT_SCAN_FIRST_MS = 1_000
ASSIGNMENT_SCAN_MS = 5_000


class ProcessQueueImpl:
    __slots__ = ("mq", "dropped", "cached", "last_pop_ts", "wait_ack")

    def __init__(self, mq, now):
        self.mq, self.dropped, self.cached, self.last_pop_ts = mq, False, 0, now
        self.wait_ack = 0       # messages handed to the consume service, not yet erased


class GrpcPushConsumer(PopConsumer):
    def __init__(self, sim, net, profile, client_id, group, config, subscriptions, listener):
        super().__init__(sim, net, profile, client_id, group, config, subscriptions, listener)
        self.poll_ms = self.config["long_polling_timeout_ms"]
        self.pop_timeout_ms = receive_timeout_ms(self.poll_ms)
        self.invisible_ms = PROXY_DEFAULT_INVISIBLE_MS
        self.max_cache = self.config["max_cache_message_count"]
        self.max_attempts = proxy_max_attempts(self.max_reconsume())
        self.proxy = proxy_of(sim, net)
        self.proxy_mode = True
        self.deadline_exceeded_at = None    # when a receive last failed with DEADLINE_EXCEEDED

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """PushConsumerImpl.startUp: heartbeats, and the assignment scan from 1 s on."""
        self.running = True
        self.net.clients[self.client_id] = self
        self._emit_started()
        p = self.profile
        self.sim.every(p.heartbeat_interval_ms, p.heartbeat_interval_ms, self.heartbeat, owner=self.proc)
        self.heartbeat()
        self.sim.every(ASSIGNMENT_SCAN_FIRST_MS, ASSIGNMENT_SCAN_MS, self.rebalance_now, owner=self.proc)
        self.sim.emit("client_start_returned", client=self.client_id, group=self.group)

    def forget(self) -> None:
        super().forget()
        self.deadline_exceeded_at = None

    def _queue_added(self, mq):
        """ProcessQueueImpl of a newly assigned queue: its receive loop starts at once."""
        pq = ProcessQueueImpl(mq, self.sim.now)
        self.sim.schedule(0, self.receive_pq, pq, None, owner=self.proc)
        return pq

    # ------------------------------------------------------------------ receive
    def _threshold(self) -> int:
        """cacheMessageCountThresholdPerQueue: the cache shared by the process queues."""
        return max(1, self.max_cache // max(1, len(self.rebalance.pq_table)))

    def _new_attempt(self) -> str:
        self._attempts += 1
        return f"{self.client_id}-{self.proc.incarnation}-{self._attempts}"

    def receive_pq(self, pq: ProcessQueueImpl, attempt_id) -> None:
        """ProcessQueueImpl.receiveMessage(attemptId)."""
        if pq.dropped or not self.running:
            return
        pq.last_pop_ts = self.sim.now
        if pq.cached >= self._threshold():
            self.sim.schedule(RECEIVING_BACKOFF_WHEN_CACHE_FULL_MS, self.receive_pq, pq, attempt_id, owner=self.proc)
            return
        attempt = attempt_id or self._new_attempt()
        batch = min(max(self._threshold() - pq.cached, 1), RECEIVE_BATCH_SIZE)
        self._send_pop(pq.mq, self.orderly, attempt, partial(self._received, pq, attempt), max_nums=batch)

    def _proxy_writes(self, mq, found, open_stream: bool):
        """The proxy's side of an answer, before it goes on the wire: PopMessageResultFilterImpl,
        then the handles of what it writes are kept for renewal (handleAutoRenew). A stream the
        client's deadline closed fails the write: each message is nacked to come back in 1 s
        (ReceiveMessageResponseStreamWriter.processThrowableWhenWriteMessage), none is kept."""
        kept = []
        data, _ = self.subscriptions[mq[0]]
        for m, h in found:
            if data.tags_set and (m.tags is None or m.tags not in data.tags_set):
                self._proxy_call(m, h, "ack", "no_match")
            elif proxy_dead_letters(m.reconsume_times, self.max_attempts):
                self._proxy_call(m, h, "dead_letter", m.reconsume_times)
            else:
                kept.append((m, h))
        for m, h in kept:
            if open_stream:
                self.proxy.add(self, m.msg_id, m.topic, h, m.reconsume_times)
            else:
                self._proxy_call(m, h, "change_invisible_time", NACK_INVISIBLE_MS)
        return kept

    def _received(self, pq, attempt, mq, found, failure=None) -> None:
        if found is None:
            if failure == "deadline_exceeded":
                self.deadline_exceeded_at = self.sim.now
            nxt = retried_attempt_id(attempt, failure == "deadline_exceeded")
            self.sim.schedule(RECEIVING_FAILURE_BACKOFF_MS, self.receive_pq, pq, nxt, owner=self.proc)
            return
        if found:
            pq.cached += len(found)
            pq.wait_ack += len(found)
            if self.orderly:
                self._fifo_next(pq, list(found), 0)
            else:
                for m, h in found:
                    self._call(pq, m, h, m.reconsume_times + 1, None)
        self.sim.schedule(0, self.receive_pq, pq, None, owner=self.proc)

    # ------------------------------------------------------------------ consume
    def _call(self, pq, m, h, delivery_attempt: int, chain, delay: int = 0) -> None:
        """ConsumeService.consume: the listener runs on a consumption thread (after `delay`).
        `chain`: ORDERLY, the batch and the message's place in it."""
        if delay:
            self.sim.schedule(delay, self._call, pq, m, h, delivery_attempt, chain, owner=self.proc)
            return
        if self.running_calls >= self.threads:
            self.waiting_batches.append((pq, m, h, delivery_attempt, chain))
            return
        # the listener sees the message view's delivery attempt (a FIFO retry in the client counts one more)
        seen = m
        if delivery_attempt - 1 != m.reconsume_times:
            seen = m.clone()
            seen.reconsume_times = delivery_attempt - 1
        status, duration = self.listener.decide(self.sim, [seen])
        self._consume_ids += 1
        cid = self._consume_ids
        self.running_calls += 1
        self.sim.last_call = self.sim.now
        self._emit("pop_consume_started", topic=m.topic, broker=parse_handle(h)["broker"], consume_id=cid,
                   handles=[h], msg_ids=[m.msg_id], reconsume_list=[seen.reconsume_times])
        self.sim.schedule(duration, self._called, pq, m, h, delivery_attempt, chain, cid, status, owner=self.proc)

    def _called(self, pq, m, h, delivery_attempt, chain, cid, status) -> None:
        self.running_calls -= 1
        self._emit("pop_consume_finished", consume_id=cid, status=status, timed_out=self._pop_timeout([(m, h)]))
        self._next_call()
        ok = status in ("CONSUME_SUCCESS", "SUCCESS", "COMMIT")
        if chain is not None:
            self._erase_fifo(pq, m, h, delivery_attempt, chain, ok)
        elif ok:
            self._request(pq, m, h, "ack", None, None)
        else:
            self._request(pq, m, h, "change_invisible_time", next_attempt_delay_ms(delivery_attempt), None)

    def _next_call(self) -> None:
        while self.waiting_batches and self.running_calls < self.threads:
            self._call(*self.waiting_batches.pop(0))

    def _fifo_next(self, pq, batch, i: int) -> None:
        """FifoConsumeService.consumeIteratively: the batch's next message once the last is erased."""
        if i < len(batch):
            m, h = batch[i]
            self._call(pq, m, h, m.reconsume_times + 1, (batch, i))

    def _erase_fifo(self, pq, m, h, delivery_attempt: int, chain, ok: bool) -> None:
        """ProcessQueueImpl.eraseFifoMessage: retry in the client until max attempts, then ack or
        forward to the DLQ; the batch goes on when that request has returned."""
        if not ok and delivery_attempt < self.max_attempts:
            self._call(pq, m, h, delivery_attempt + 1, chain, next_attempt_delay_ms(delivery_attempt))
            return
        self._request(pq, m, h, "ack" if ok else "dead_letter", None if ok else m.reconsume_times, chain)

    # ------------------------------------------------------------------ requests through the proxy
    def _request(self, pq, m, h, what: str, arg, chain) -> None:
        """ackMessage, changeInvisibleDuration (nack) or forwardToDeadLetterQueue: sent a latency
        later; the proxy swaps in its latest handle; a request that finds no broker is sent again
        1 s later."""
        self.acks_in_flight += 1
        self.sim.schedule(self.net.latency_ms, self._request_arrives, pq, m, h, what, arg, chain, owner=self.proc)

    def _request_arrives(self, pq, m, h, what, arg, chain) -> None:
        b = self.net.brokers.get(parse_handle(h)["broker"])
        if b is None or not b.up:
            self.sim.schedule(ACK_FAILURE_BACKOFF_MS, self._request_arrives, pq, m, h, what, arg, chain,
                              owner=self.proc)
            return
        self._proxy_call(m, self.proxy.take(self, m.msg_id, h), what, arg)
        self.sim.schedule(self.net.latency_ms, self._request_returned, pq, chain, owner=self.proc)

    def _proxy_call(self, m, h, what: str, arg) -> None:
        """The proxy's call of the broker (in its JVM: no latency)."""
        b = self.net.brokers[parse_handle(h)["broker"]]
        if what == "ack":
            b.pop.ack(self.group, m.topic, h, self.client_id, arg or "consumed")
        elif what == "change_invisible_time":
            b.pop.change_invisible_time(self.group, m.topic, h, arg, self.client_id)
        elif b.pop.dead_letter(self.group, m.topic, h, m.msg_id, arg, self.max_attempts, self.client_id):
            b.pop.ack(self.group, m.topic, h, self.client_id, "dead_lettered")

    def _request_returned(self, pq, chain) -> None:
        self.acks_in_flight = max(0, self.acks_in_flight - 1)
        pq.cached = max(0, pq.cached - 1)       # evictCache
        pq.wait_ack = max(0, pq.wait_ack - 1)
        if chain is not None:
            self._fifo_next(pq, chain[0], chain[1] + 1)
