"""ConsumeMessageConcurrentlyService (digest section 5).

Batches of consumeMessageBatchMaxSize run on a pool of consumeThreadMax threads. After the
listener returns: the result is ignored if the ProcessQueue was dropped meanwhile; failed
messages are sent back (a failed send-back keeps the message and retries it locally after
5 s); the rest leave the ProcessQueue and the offset moves to its new minimum, raise-only.
"""
from __future__ import annotations

from collections import deque

from ..footprint import footprint
from ..message import reset_retry_topic

CONSUME_START_TIME = "CONSUME_START_TIME"
INT_MAX = 2**31 - 1


def _stays_in_client(c, msgs, status) -> bool:
    """_finish sends nothing back and the batch it may start next ends in a later millisecond."""
    lis = c.listener
    acked = status == "CONSUME_SUCCESS" and (lis.ack_index is None or lis.ack_index >= len(msgs) - 1)
    return (acked or c.broadcasting) and lis.min_duration() > 0


class ConsumeMessageConcurrentlyService:
    def __init__(self, consumer):
        self.c = consumer
        self.sim = consumer.sim
        self.threads = consumer.consume_threads
        self.busy = 0
        self.pending = deque()
        self.in_flight = 0

    def forget(self) -> None:
        """A dead client's batches (PushConsumer.forget)."""
        self.pending.clear()
        self.busy = self.in_flight = 0

    def start(self) -> None:
        period = self.c.consume_timeout_min * 60000
        self.sim.every(period, period, self.clean_expired_messages, owner=self.c.proc)

    def submit(self, msgs, pq, mq, dispatch: bool) -> None:
        n = self.c.batch_size
        for i in range(0, len(msgs), n):
            self.pending.append((msgs[i:i + n], pq, mq))
        self._drain()

    def submit_later(self, msgs, pq, mq, delay: int) -> None:
        self.sim.schedule(delay, self.submit, msgs, pq, mq, True, owner=self.c.proc)

    def _drain(self) -> None:
        while self.pending and self.busy < self.threads:
            msgs, pq, mq = self.pending.popleft()
            if pq.dropped:
                continue
            self.busy += 1
            self._run(msgs, pq, mq)

    def _run(self, msgs, pq, mq) -> None:
        c = self.c
        reset_retry_topic(msgs, c.group)
        for m in msgs:
            m.consume_start_ts = self.sim.now
        cid = c.next_consume_id(mq)
        c.sim.last_call = c.sim.now
        c.emit_pq("consume_started", mq, consume_id=cid, offsets=[m.offset for m in msgs],
                  msg_ids=[m.msg_id for m in msgs], origin_msg_ids=[m.origin_msg_id for m in msgs],
                  reconsume_list=[m.reconsume_times for m in msgs])
        status, duration = c.listener.decide(self.sim, msgs)
        self.in_flight += 1
        self.sim.schedule(duration, self._finish, msgs, pq, mq, cid, status, owner=c.proc)

    # a batch wholly acknowledged stays in the client (a failed one is sent back to the broker);
    # the next batch it starts finishes in a later millisecond
    @footprint(lambda self, msgs, pq, mq, cid, status: ((), {("client", self.c.client_id)})
               if _stays_in_client(self.c, msgs, status) else None)
    def _finish(self, msgs, pq, mq, cid, status) -> None:
        self.in_flight -= 1
        self.busy -= 1
        c = self.c
        if status in ("NULL", "EXCEPTION"):
            status = "RECONSUME_LATER"
        ack_index = c.listener.ack_index if c.listener.ack_index is not None else INT_MAX
        if status == "CONSUME_SUCCESS":
            ack_index = min(ack_index, len(msgs) - 1)
        else:
            ack_index = -1
        c.emit_pq("consume_finished", mq, consume_id=cid, status=status, ack_index=ack_index, dropped=pq.dropped,
                  offsets=[m.offset for m in msgs])
        if not pq.dropped:
            self._process_result(msgs, pq, mq, ack_index)
        self._drain()

    def _process_result(self, msgs, pq, mq, ack_index: int) -> None:
        c = self.c
        remaining = list(msgs)
        if not c.broadcasting:
            failed = []
            for m in msgs[ack_index + 1:]:
                if c.profile.sendback_skips_not_contained and not pq.contains(m):
                    continue  # #5481: already sent back by cleanExpiredMsg
                if not c.send_message_back(m, c.listener.delay_level_when_next_consume, mq):
                    m.reconsume_times += 1
                    failed.append(m)
            if failed:
                ids = {id(m) for m in failed}
                remaining = [m for m in msgs if id(m) not in ids]
                c.emit_pq("consume_resubmitted", mq, offsets=[m.offset for m in failed],
                          delay=c.profile.consume_failed_resubmit_ms)
                self.submit_later(failed, pq, mq, c.profile.consume_failed_resubmit_ms)
        # Broadcasting drops failed messages after logging them: no retry in that mode.
        offset = pq.remove_messages(remaining, self.sim.now)
        c.emit_pq("pq_messages_removed", mq, offsets=[m.offset for m in remaining], offset=offset)
        if offset >= 0 and not pq.dropped:
            c.offset_store.update_offset(mq, offset, increase_only=True)

    def clean_expired_messages(self, timeout: int | None = None) -> None:
        """Every consumeTimeout minutes, ProcessQueue.cleanExpiredMsg on every queue of the
        table, dropped or not (cleanExpireMsg iterates processQueueTable without a check).
        `timeout` overrides consumeTimeout (the explorer's fault clean_expired: 0, a listener
        call slower than consumeTimeout, whatever its length)."""
        c = self.c
        if timeout is None:
            timeout = c.consume_timeout_min * 60000
        for mq, pq in list(c.rebalance.pq_table.items()):
            pq.clean_expired_msg(
                self.sim.now, timeout, False, lambda m, level, mq=mq: c.send_message_back(m, level, mq),
                lambda m, off, mq=mq: c.emit_pq("pq_messages_removed", mq, offsets=[m.offset], offset=off))

    def idle(self) -> bool:
        return self.in_flight == 0 and not self.pending
