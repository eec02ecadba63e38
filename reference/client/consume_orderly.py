"""ConsumeMessageOrderlyService and the client side of queue locks (digest sections 2, 3, 6).

What the orderly client does, in the order a message meets it:

* **Locks.** A new queue is only taken by the rebalance if `lock(mq)` gets the broker lock;
  every `client_lock_interval_ms` (20 s, first run after 1 s, CLUSTERING only) `lock_all`
  renews the locks of the ProcessQueues in the table and marks each one locked (with
  `last_lock_ts = now`) or not locked. `unlock_all` runs on shutdown (CLUSTERING only).
  A ProcessQueue's lease is over when `now - last_lock_ts > client_lock_max_live_ms` (30 s,
  strict), well inside the broker's 60 s.
* **Pulling.** A queue is only pulled while its ProcessQueue is locked; the first pull after
  locking re-reads the committed offset from the broker (`previouslyLocked`).
* **Consuming.** A ConsumeRequest runs on one of `consume_thread_max` threads and holds the
  queue's messageQueueLock, so one queue is consumed by at most one thread of the client.
  It checks the lock before the loop and before every batch, stops after 60 s of continuous
  work, and calls the listener while holding the ProcessQueue's consume lock.
* **Removing a queue** the rebalance no longer gives us: as the profile does it (5.x
  `tryRemoveOrderMessageQueue`, or 4.9.x), see `remove_unnecessary_message_queue`.

Modelling choices (docs/orderly.md says more):

* The consume lock (`pq.consumeLock`, a ReadWriteLock in 5.x, a Lock in 4.9.x) is held by a
  listener call. `tryLock(timeout)` from the rebalance is modelled as "succeeds iff no listener
  call is in flight now": the rebalance runs in zero virtual time, so it cannot wait for the
  call to end. The real tryLock would also succeed when the running call ends within 500 ms
  (5.x) / 1000 ms (4.9.x); the model then defers the removal to the next rebalance instead.
* Java's `synchronized` is not fair; the model hands a queue's messageQueueLock to waiting
  requests first come, first served.
* An exception thrown by `ProcessQueue.commit()` (nothing taken) would end the ConsumeRequest
  without resubmitting it; no status path of the service reaches it with an empty map.
"""
from __future__ import annotations

from collections import deque

from rocketspec.rocketmq.retry import retry_delay_level

from ..broker.broker import BrokerUnavailable
from ..message import reset_retry_topic
from .process_queue import NoSuchElement

INT_MAX = 2**31 - 1
LOCK_ALL_INITIAL_DELAY_MS = 1000
TRY_LOCK_DELAY_BEFORE_LOOP_MS = 100
TRY_LOCK_DELAY_IN_LOOP_MS = 10
RESUBMIT_AFTER_LOCK_OK_MS = 10
RESUBMIT_AFTER_LOCK_FAILED_MS = 3000
RESUBMIT_AFTER_CONTINUOUS_LIMIT_MS = 10
SUSPEND_MIN_MS, SUSPEND_MAX_MS = 10, 30000

SUCCESS = "SUCCESS"
SUSPEND = "SUSPEND_CURRENT_QUEUE_A_MOMENT"
COMMIT = "COMMIT"
ROLLBACK = "ROLLBACK"


class ConsumeRequest:
    __slots__ = ("pq", "mq", "begin")

    def __init__(self, pq, mq):
        self.pq = pq
        self.mq = mq
        self.begin = 0


class ConsumeMessageOrderlyService:
    def __init__(self, consumer):
        self.c = consumer
        self.sim = consumer.sim
        self.profile = consumer.profile
        self.threads = consumer.consume_threads
        self.clustering = not consumer.broadcasting
        self.stopped = False
        self.busy = 0                   # threads taken (running or blocked on a messageQueueLock)
        self.pending = deque()          # requests waiting for a thread
        self.mq_lock_owner: dict = {}   # messageQueueLock: mq -> the request inside it
        self.mq_lock_waiters: dict = {} # mq -> deque of requests blocked on it (each holds a thread)
        self.in_flight = 0              # listener calls running
        self.scheduled = 0              # submitConsumeRequestLater / tryLockLaterAndReconsume pending
        self._lock_all_timer = None

    # ================================================================== lifecycle
    def start(self) -> None:
        if self.clustering:
            self._lock_all_timer = self.sim.every(LOCK_ALL_INITIAL_DELAY_MS, self.profile.client_lock_interval_ms,
                                                  self.lock_mq_periodically, owner=self.c.proc)

    def shutdown(self) -> None:
        self.stopped = True
        if self._lock_all_timer is not None:
            self._lock_all_timer.cancel()
        if self.clustering:
            self.unlock_all(oneway=False)

    def forget(self) -> None:
        """A dead client's requests and queue locks (PushConsumer.forget)."""
        self.pending.clear()
        self.mq_lock_owner.clear()
        self.mq_lock_waiters.clear()
        self.busy = self.in_flight = self.scheduled = 0
        self._lock_all_timer = None

    def idle(self) -> bool:
        return self.busy == 0 and not self.pending and self.in_flight == 0 and self.scheduled == 0

    # ================================================================== locks (RebalanceImpl)
    def _pq_lock_changed(self, mq, pq) -> None:
        self.c.emit_pq("pq_lock_changed", mq, locked=pq.locked, last_lock_ts=pq.last_lock_ts)

    def _lock_batch(self, broker_name: str, mqs: list) -> set | None:
        """lockBatchMQ to the broker's master: the queues locked, or None when the call failed."""
        c = self.c
        self.sim.emit("lock_requested", client=c.client_id, group=c.group, broker=broker_name,
                      queues=[list(mq) for mq in mqs])
        try:
            b = c.net.broker(broker_name)
        except BrokerUnavailable:
            return None
        c.net.deliver_unlocks(c, broker_name)       # same channel: they arrive first
        got = b.lock_batch(c.group, [(mq[0], mq[2]) for mq in mqs], c.client_id)
        return {mq for mq in mqs if (mq[0], mq[2]) in got}

    def lock(self, mq) -> bool:
        """RebalanceImpl.lock: lock one queue; every returned queue with a ProcessQueue is marked locked."""
        locked = self._lock_batch(mq[1], [mq])
        if locked is None:
            return False
        now = self.sim.now
        for m in sorted(locked):
            pq = self.c.rebalance.pq_table.get(m)
            if pq is not None:
                pq.locked = True
                pq.last_lock_ts = now
                self._pq_lock_changed(m, pq)
        return mq in locked

    def lock_one_mq(self, mq) -> bool:
        return False if self.stopped else self.lock(mq)

    def lock_mq_periodically(self) -> None:
        if not self.stopped:
            self.lock_all()

    def _by_broker(self, skip_dropped: bool) -> dict:
        out: dict = {}
        for mq, pq in self.c.rebalance.pq_table.items():
            if skip_dropped and pq.dropped:
                continue
            out.setdefault(mq[1], []).append(mq)
        return {b: sorted(mqs) for b, mqs in sorted(out.items())}

    def lock_all(self) -> None:
        """RebalanceImpl.lockAll: renew per broker; locked -> timestamp now, refused -> not locked."""
        table = self.c.rebalance.pq_table
        for broker_name, mqs in self._by_broker(self.profile.lock_all_skips_dropped).items():
            locked = self._lock_batch(broker_name, mqs)
            if locked is None:
                continue
            now = self.sim.now
            for mq in mqs:
                pq = table.get(mq)
                if pq is None:
                    continue
                if mq in locked:
                    pq.locked = True
                    pq.last_lock_ts = now
                    self._pq_lock_changed(mq, pq)
                elif pq.locked:
                    pq.locked = False
                    self._pq_lock_changed(mq, pq)

    def unlock_all(self, oneway: bool) -> None:
        """RebalanceImpl.unlockAll: unlock per broker, then mark every ProcessQueue not locked."""
        c = self.c
        table = c.rebalance.pq_table
        for broker_name, mqs in self._by_broker(False).items():
            keys = [(mq[0], mq[2]) for mq in mqs]
            if oneway:
                c.net.oneway_unlock(c, broker_name, keys)
            else:
                try:
                    c.net.broker(broker_name).unlock_batch(c.group, keys, c.client_id)
                except BrokerUnavailable:
                    continue
            for mq in mqs:
                pq = table.get(mq)
                if pq is not None and pq.locked:
                    pq.locked = False
                    self._pq_lock_changed(mq, pq)

    def unlock(self, mq, delay: int = 0) -> None:
        """RebalanceImpl.unlock(mq, oneway=true), possibly from a task `delay` ms later (4.9.x unlockDelay)."""
        c = self.c
        if delay <= 0:
            c.net.oneway_unlock(c, mq[1], [(mq[0], mq[2])])
        else:
            self.sim.schedule(delay, c.net.oneway_unlock, c, mq[1], [(mq[0], mq[2])], owner=c.proc)

    # ================================================================== RebalancePushImpl.removeUnnecessaryMessageQueue
    @staticmethod
    def consume_lock_free(pq) -> bool:
        """pq.consumeLock.tryLock(timeout), modelled as: no listener call is in flight."""
        return pq.consume_lock_holder is None

    def remove_unnecessary_message_queue(self, mq, pq) -> bool:
        """Orderly CLUSTERING only. True: the ProcessQueue may leave the table."""
        c, p = self.c, self.profile
        store = c.offset_store
        now = self.sim.now
        if p.orderly_remove_style == "49x":
            store.persist(mq, "remove_queue")
            store.remove_offset(mq)
            if not self.consume_lock_free(pq):
                pq.try_unlock_times += 1
                return False
            # unlockDelay: a queue that still holds messages is unlocked only after UNLOCK_DELAY.
            self.unlock(mq, p.unlock_delay_ms if pq.has_temp_message() else 0)
            return True
        # 5.x: persist now, then tryRemoveOrderMessageQueue (#7644).
        store.persist(mq, "remove_queue")
        force = pq.dropped and now > pq.last_lock_ts + p.unlock_delay_ms
        if force or self.consume_lock_free(pq):
            store.persist(mq, "remove_queue")
            store.remove_offset(mq)
            pq.locked = False
            self._pq_lock_changed(mq, pq)
            self.unlock(mq)
            return True
        pq.try_unlock_times += 1
        return False

    # ================================================================== pull-time check
    def ready_to_pull(self, req) -> bool:
        """DefaultMQPushConsumerImpl.pullMessage, orderly branch: pull only a locked queue; the
        first pull after locking re-reads the committed offset from the broker."""
        c, p, pq, mq = self.c, self.profile, req.pq, req.mq
        if not pq.locked:
            c.emit_pq("pull_flow_controlled", mq, reason="not_locked", delay=p.pull_delay_when_exception_ms)
            c.pull_service.execute_later(req, p.pull_delay_when_exception_ms)
            return False
        if not req.previously_locked:
            offset = c.rebalance.compute_pull_from_where(mq)
            if offset < 0 and not p.orderly_first_pull_recompute_bug:
                c.emit_pq("pull_flow_controlled", mq, reason="exception", delay=p.pull_delay_when_exception_ms)
                c.pull_service.execute_later(req, p.pull_delay_when_exception_ms)
                return False
            req.previously_locked = True
            req.next_offset = offset   # #1825: a -1 here is pulled as is and corrected by the broker
        return True

    # ================================================================== submission and threads
    def submit(self, msgs, pq, mq, dispatch: bool) -> None:
        """submitConsumeRequest: only when putMessage said nobody was consuming the queue."""
        if dispatch:
            self.pending.append(ConsumeRequest(pq, mq))
            self._drain()

    def _drain(self) -> None:
        while self.pending and self.busy < self.threads:
            req = self.pending.popleft()
            self.busy += 1
            self._run(req)

    def _release_thread(self) -> None:
        self.busy -= 1
        self._drain()

    def _later(self, delay: int, fn, *args) -> None:
        self.scheduled += 1
        self.sim.schedule(delay, self._fire_later, fn, args, owner=self.c.proc)

    def _fire_later(self, fn, args) -> None:
        self.scheduled -= 1
        fn(*args)

    def submit_consume_request_later(self, pq, mq, suspend_ms: int, reason: str) -> None:
        t = self.c.config["suspend_current_queue_time_millis"] if suspend_ms == -1 else suspend_ms
        t = min(max(t, SUSPEND_MIN_MS), SUSPEND_MAX_MS)
        self.c.emit_pq("consume_suspended", mq, delay=t, reason=reason)
        self._later(t, self.submit, None, pq, mq, True)

    def try_lock_later_and_reconsume(self, pq, mq, delay: int, reason: str) -> None:
        self.c.emit_pq("consume_suspended", mq, delay=delay, reason=reason)
        self._later(delay, self._lock_retry, pq, mq)

    def _lock_retry(self, pq, mq) -> None:
        ok = self.lock_one_mq(mq)
        self.submit_consume_request_later(pq, mq, RESUBMIT_AFTER_LOCK_OK_MS if ok else RESUBMIT_AFTER_LOCK_FAILED_MS,
                                          "lock_retry")

    # ================================================================== ConsumeRequest.run
    def _lease_ok(self, pq) -> bool:
        return pq.locked and not pq.is_lock_expired(self.sim.now, self.profile.client_lock_max_live_ms)

    def _lease_expired(self, req, delay: int) -> None:
        pq = req.pq
        self.c.emit_pq("lease_expired", req.mq, last_lock_ts=pq.last_lock_ts)
        self.try_lock_later_and_reconsume(pq, req.mq, delay, "lock_missing" if not pq.locked else "lease_expired")

    def _run(self, req: ConsumeRequest) -> None:
        if req.pq.dropped:
            return self._release_thread()
        owner = self.mq_lock_owner.get(req.mq)
        if owner is not None:
            self.mq_lock_waiters.setdefault(req.mq, deque()).append(req)   # blocked in synchronized(objLock)
            return
        self.mq_lock_owner[req.mq] = req
        self._enter(req)

    def _enter(self, req: ConsumeRequest) -> None:
        """Inside messageQueueLock: the check before the loop."""
        if not self.clustering or self._lease_ok(req.pq):
            req.begin = self.sim.now
            return self._loop(req)
        if not req.pq.dropped:
            self._lease_expired(req, TRY_LOCK_DELAY_BEFORE_LOOP_MS)
        self._exit(req)

    def _exit(self, req: ConsumeRequest) -> None:
        """Leave messageQueueLock (the next blocked request of the queue gets it) and free the thread."""
        waiters = self.mq_lock_waiters.get(req.mq)
        if waiters:
            nxt = waiters.popleft()
            self.mq_lock_owner[req.mq] = nxt
            self.sim.schedule(0, self._enter, nxt, owner=self.c.proc)
        else:
            self.mq_lock_owner.pop(req.mq, None)
            self.mq_lock_waiters.pop(req.mq, None)
        self._release_thread()

    def _loop(self, req: ConsumeRequest) -> None:
        c, pq, mq, p = self.c, req.pq, req.mq, self.profile
        now = self.sim.now
        if pq.dropped:
            return self._exit(req)
        if self.clustering and not self._lease_ok(pq):
            self._lease_expired(req, TRY_LOCK_DELAY_IN_LOOP_MS)
            return self._exit(req)
        if now - req.begin > p.max_time_consume_continuously_ms:
            self.submit_consume_request_later(pq, mq, RESUBMIT_AFTER_CONTINUOUS_LIMIT_MS, "continuous_limit")
            return self._exit(req)
        msgs = pq.take_messages(c.batch_size, now)
        if not msgs:
            return self._exit(req)   # takeMessages cleared `consuming`: the next pull dispatches again
        c.emit_pq("messages_taken", mq, offsets=[m.offset for m in msgs])
        reset_retry_topic(msgs, c.group)
        # The consume lock, then the dropped re-check: a queue dropped here keeps its taken
        # messages in the consuming map (no rollback), as RocketMQ does.
        if pq.dropped:
            return self._exit(req)
        cid = c.next_consume_id(mq)
        pq.consume_lock_holder = cid
        for m in msgs:
            m.consume_start_ts = now
        c.sim.last_call = c.sim.now
        c.emit_pq("consume_started", mq, consume_id=cid, offsets=[m.offset for m in msgs],
                  msg_ids=[m.msg_id for m in msgs], origin_msg_ids=[m.origin_msg_id for m in msgs],
                  reconsume_list=[m.reconsume_times for m in msgs])
        status, duration = c.listener.decide(self.sim, msgs)
        self.in_flight += 1
        self.sim.schedule(duration, self._finish, req, msgs, cid, status, owner=c.proc)

    def _finish(self, req: ConsumeRequest, msgs, cid: int, status: str) -> None:
        c, pq, mq = self.c, req.pq, req.mq
        self.in_flight -= 1
        pq.consume_lock_holder = None   # the consume lock is released before the result is processed (#4086)
        if status not in (SUCCESS, SUSPEND, COMMIT, ROLLBACK):
            status = SUSPEND            # null return or exception
        c.emit_pq("consume_finished", mq, consume_id=cid, status=status, dropped=pq.dropped,
                  offsets=[m.offset for m in msgs])
        try:
            go_on = self.process_consume_result(msgs, status, pq, mq)
        except NoSuchElement:
            go_on = False
        if go_on:
            self._loop(req)
        else:
            self._exit(req)

    # ================================================================== results
    def _commit(self, pq, mq) -> int:
        taken = list(pq.consuming_tree.keys())
        offset = pq.commit()
        self.c.emit_pq("pq_committed", mq, offset=offset, offsets=taken)
        return offset

    def _consume_again(self, msgs, pq, mq, suspend_ms) -> None:
        pq.make_message_to_consume_again(msgs)
        self.c.emit_pq("pq_rolled_back", mq, offsets=[m.offset for m in msgs])
        self.submit_consume_request_later(pq, mq, suspend_ms, "suspend")

    def process_consume_result(self, msgs, status: str, pq, mq) -> bool:
        """ConsumeMessageOrderlyService.processConsumeResult; returns continueConsume."""
        c = self.c
        listener = c.listener
        suspend_ms = -1 if listener.suspend_ms is None else int(listener.suspend_ms)
        go_on = True
        commit_offset = -1
        if listener.auto_commit:
            if status in (SUCCESS, COMMIT, ROLLBACK):   # COMMIT/ROLLBACK: logged as illegal, treated as SUCCESS
                commit_offset = self._commit(pq, mq)
            elif status == SUSPEND:
                if self.check_reconsume_times(msgs, mq):
                    self._consume_again(msgs, pq, mq, suspend_ms)
                    go_on = False
                else:
                    commit_offset = self._commit(pq, mq)
        else:
            if status == COMMIT:
                commit_offset = self._commit(pq, mq)
            elif status == ROLLBACK:
                back = pq.rollback()
                c.emit_pq("pq_rolled_back", mq, offsets=[m.offset for m in back])
                self.submit_consume_request_later(pq, mq, suspend_ms, "rollback")
                go_on = False
            elif status == SUSPEND:
                if self.check_reconsume_times(msgs, mq):
                    self._consume_again(msgs, pq, mq, suspend_ms)
                    go_on = False
            # SUCCESS without autoCommit: nothing; the messages stay in the consuming map.
        if commit_offset >= 0 and not pq.dropped:
            c.offset_store.update_offset(mq, commit_offset, increase_only=False)
        return go_on

    def check_reconsume_times(self, msgs, mq) -> bool:
        """True: suspend and consume the batch again. A message whose count reached the maximum
        is sent to %RETRY%<group> by a producer send (the broker dead-letters it). Its DELAY,
        3 + r, is the client's: whether the DLQ copy keeps it is the broker's
        (producer_dlq_keeps_delay)."""
        c, p = self.c, self.profile
        max_times = c.max_reconsume()   # -1 -> Integer.MAX_VALUE for orderly consumers
        suspend = False
        for m in msgs:
            r = m.reconsume_times
            if r >= max_times:
                header = r + 1 if p.orderly_reconsume_time_plus_one else r
                c.sim.emit("send_back_requested", client=c.client_id, group=c.group, msg_id=m.msg_id,
                           origin_msg_id=m.origin_msg_id, reconsume_times=r, delay_level=retry_delay_level(r),
                           topic=mq[0], broker=mq[1], queue=mq[2], offset=m.offset, via="orderly_producer")
                if not c.send_to_retry_topic(m, header, retry_delay_level(r), "orderly_producer"):
                    suspend = True
                    m.reconsume_times = r + 1
            else:
                suspend = True
                m.reconsume_times = r + 1
        return suspend
