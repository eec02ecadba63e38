"""The broker's POP path (RocketMQ 5.x PopMessageProcessor, AckMessageProcessor,
ChangeInvisibleTimeProcessor, PopBufferMergeService without buffer merge, the default).

A pop reads messages for a group from a queue (or from every queue of the topic, queue -1) and
hands each out under a handle (the ExtraInfo of PROPERTY_POP_CK): a concurrent pop writes a
checkpoint to the revive log naming the popped offsets, its pop time and invisible time, and
moves the group's pop offset past them at once (the offset commit follows the stored
checkpoint); nobody else gets those messages until the checkpoint revives them
(reference.broker.revive) or they are acked. An ack writes an ack record for the checkpoint
(matched in the revive scan by topic, group, queue, start offset and pop time; an ack for a
checkpoint already revived matches nothing). changeInvisibleTime writes a new checkpoint for
the one message, popped now, and acks the old one: the old handle goes stale.

An orderly pop (reference.broker.order_info) keeps no checkpoint: it reads from the committed
offset, records the batch in the order info and blocks the queue for every other attempt until
each message is acked (commitAndNext) or its invisible time ends. After each orderly pop, ack and
change the queue's lock-free time is armed on the broker's wheel timer; when it fires, the
group's held pops of the topic run again (QueueLevelConsumerOrderInfoLockManager), so a blocked
attempt gets the queue when the block ends, not when its poll time does.

A pop takes its pop time when the request starts (processRequest: System.currentTimeMillis) and
reads the queues after (popMsgFromQueue, an asynchronous store read). The reference reads at
once unless the read is made late (the explorer's fault pop_read_late, a scenario's
delay_pop_reads step): then the queues are read POP_READ_LATE_MS after the pop time, and a message
stored in between is handed out under a pop time earlier than its store time (#7914's way in).

With the broker's RocksDB POP path on (reference.broker.pop_kv) concurrent pops, acks and changes
keep records keyed by deadline instead of checkpoints in the revive log, and every pop holds its
group@topic lock (PopConsumerLockService) from its start until its read completes. A pop that finds
the lock taken reads nothing and is held as an empty pop is (popAsync fails fast). In 5.5.1 an
orderly pop whose attempt id the order info holds waits for the lock instead
(PopConsumerService.tryLockForPop): a client's retried receive is not left empty (#10827; profile
switch pop_kv_lock_fails_same_attempt).
"""
from __future__ import annotations

from rocketspec.rocketmq.pop import (POP_FROM_RETRY_PROBABILITY, POP_ORDER_REVIVE_QUEUE,
                                     RETRY_FLAG_NORMAL, RETRY_FLAG_V1, REVIVE_QUEUE_NUM, build_handle,
                                     deadline, dlq_topic, is_orderly_handle, order_reconsume_times, parse_handle,
                                     pop_retry_topic, proxy_fifo_reconsume_times, wheel_fire_time)

from ..message import Message
from ..sim import Timer
from .message_filter import pull_filter
from .order_info import ConsumerOrderInfoManager
from .pop_kv import PopConsumerKv

# PopLongPollingService: a held pop runs again this long after a message arrives for it
POP_HOLD_WAKE_MS = 1
# how long after its pop time a late pop reads the queues (store reads are asynchronous; the
# retry topic may be read first; a GC pause): long enough for a send to land in between
POP_READ_LATE_MS = 10


class Checkpoint:
    """PopCheckPoint: one pop of one queue (or one changeInvisibleTime), its offsets and acks."""

    __slots__ = ("group", "topic", "queue", "start_offset", "pop_time", "invisible_ms", "offsets", "acked",
                 "revive_qid", "suspend", "client", "reput_times")

    def __init__(self, group, topic, queue, start_offset, pop_time, invisible_ms, offsets, revive_qid, client,
                 suspend=False, reput_times=0):
        self.group, self.topic, self.queue = group, topic, queue
        self.start_offset, self.pop_time, self.invisible_ms = start_offset, pop_time, invisible_ms
        self.offsets = list(offsets)
        self.acked: set[int] = set()
        self.revive_qid, self.client, self.suspend = revive_qid, client, suspend
        self.reput_times = reput_times      # rePutCK's count (PopCheckPoint.rePutTimes)

    @property
    def key(self):
        """The revive scan's merge key (topic + group + queue + startOffset + popTime + broker)."""
        return (self.topic, self.group, self.queue, self.start_offset, self.pop_time)

    @property
    def revive_time(self) -> int:
        return deadline(self.pop_time, self.invisible_ms)


class PopRequest:
    """PopMessageRequestHeader and the subscription it carries."""

    __slots__ = ("client", "group", "topic", "queue", "max_nums", "invisible_ms", "orderly", "attempt_id",
                 "subscription", "sql", "expr_type", "init_min", "poll_ms", "pop_id", "respond", "via_proxy",
                 "born", "held_until", "read_ends")

    def __init__(self, *, client, group, topic, queue, max_nums, invisible_ms, orderly, attempt_id, subscription,
                 sql, expr_type, init_min, poll_ms, pop_id, respond, via_proxy=False):
        self.client, self.group, self.topic, self.queue = client, group, topic, queue
        self.max_nums, self.invisible_ms, self.orderly, self.attempt_id = max_nums, invisible_ms, orderly, attempt_id
        self.subscription, self.sql, self.expr_type = subscription, sql, expr_type
        self.init_min, self.poll_ms, self.pop_id, self.respond = init_min, poll_ms, pop_id, respond
        # a gRPC client's pop, made by the proxy in local mode (LocalMessageService, in the broker's JVM)
        self.via_proxy = via_proxy
        # the request's born time (processRequest sets it on its first run) and the end of its hold
        # (PopLongPollingService: born time + poll time; None until it is first held)
        self.born = None
        self.held_until = None
        # a slow store read: each queue's end when the read was issued, what it returns (None: at once)
        self.read_ends = None


class PopService:
    """One broker's POP state: pop offsets in the offset buffer, checkpoints not yet revived, the
    orderly order info, held pops."""

    kv = None       # the RocksDB POP path (PopConsumerKv) when the broker has it on

    def __init__(self, broker):
        self.b = broker
        self.sim = broker.sim
        self.buffer_offsets: dict[tuple, int] = {}     # PopBufferMergeService.commitOffsets' latest offset
        self.checkpoints: dict[tuple, Checkpoint] = {}
        self.order = ConsumerOrderInfoManager()
        self.held: list[PopRequest] = []
        self.ck_number = 0
        self.late_reads = 0             # pops still to read late (a scenario's delay_pop_reads step)
        self.late_read_rate = 0.0       # choice point pop_read_late (the explorer's fault; 0: never asked)
        self.late_read_ms = POP_READ_LATE_MS
        # a slow store (a scenario's slow_store_reads step): a pop that reads message data completes
        # its read this long after it starts (cold or tiered reads); 0: at once
        self.store_read_ms = 0
        self.store_read_queues = None   # the slow step's queue numbers (None: every queue)
        self.reading = 0                # pops past their pop time whose late read has not run yet
        self.lock_free: dict[tuple, Timer] = {}     # (topic, group, queue): the armed lock-free wake
        self.wheel_started = None       # when the lock-free timer's wheel started (its first task)
        # the KV path's group@topic locks (PopConsumerLockService): (group, topic) -> pops waiting for it
        self.kv_locks: dict[tuple, list] = {}
        # the RocksDB POP path (PopConsumerService), when the broker has it on
        self.kv = PopConsumerKv(broker) if broker.pop_kv_service else None

    def clear(self) -> None:
        """A restart: the buffer and held pops are memory; checkpoints are in the revive log (kept)."""
        self.buffer_offsets.clear()
        self.held.clear()
        self.reading = 0                # a late read in flight dies with the broker
        self.lock_free.clear()          # the wheel's tasks die with the broker
        self.wheel_started = None
        self.kv_locks.clear()           # the lock table and its spinning pops are memory
        if self.kv is not None:
            self.kv.restarted()
        # the order info is reloaded from its file (recover): queues still blocked are armed again
        for (topic, group, queue), info in list(self.order.table.items()):
            if (info.lock_free_at(self.sim.now) or 0) > self.sim.now:
                self._arm_lock_free(topic, group, queue)

    def pending(self) -> bool:
        """A checkpoint waits on the clock for its revive, or an orderly queue holds an un-acked
        message its group's next attempt gets once the message's invisible time ends, while it
        is invisible or a consumer of the group is registered to make that attempt; with none
        left the message waits for the next consumer, not on the clock."""
        now = self.sim.now
        return bool(self.checkpoints) or bool(self.kv is not None and self.kv.records) or any(
            o not in i.acked and (now < i.next_visible.get(o, i.pop_time + i.invisible_ms) or self.b.consumers.get(k[1]))
            for k, i in self.order.table.items() for o in i.offsets)

    def group_settled(self, group: str) -> bool:
        """Nothing of the group is out under a handle."""
        return (not any(ck.group == group for ck in self.checkpoints.values())
                and not (self.kv is not None and any(k[1] == group for k in self.kv.records))
                and not self.order.unacked_any(group))

    # ------------------------------------------------------------------ pop
    def pop(self, req: PopRequest, may_hold: bool = True) -> None:
        """PopMessageProcessor.processRequest (the revive-log path: popConsumerKVServiceEnable off)."""
        b, sim = self.b, self.sim
        b._check_up()
        b.channels.io(req.client)
        if req.born is None:
            req.born = sim.now
        retry_topic = pop_retry_topic(req.group, req.topic)
        has_retry = retry_topic in b.topics and not req.orderly
        need_retry = has_retry and sim.chooser.chance("pop_retry_first", POP_FROM_RETRY_PROBABILITY / 100)
        if req.orderly:
            revive_qid = POP_ORDER_REVIVE_QUEUE
        elif self.kv is not None:
            revive_qid = 0      # the KV path's answer (PopMessageProcessor: reviveQid 0)
        else:
            revive_qid = self.ck_number % REVIVE_QUEUE_NUM
            self.ck_number += 1
        args = (req, may_hold, sim.now, retry_topic, has_retry, need_retry, revive_qid)
        if self.kv is not None and not self._kv_lock(args):
            return
        self._start_read(args)

    def _start_read(self, args) -> None:
        req = args[0]
        req.read_ends = None
        late = self._read_late()
        if not late and self.store_read_ms and self._reads_data(req):
            late = self.store_read_ms
            store = self.b.store
            req.read_ends = {k: cq.max_offset for k, cq in store.queues.items()
                             if k[0] in (req.topic, pop_retry_topic(req.group, req.topic))}
        if late:
            self.reading += 1
            self.sim.schedule(late, self._read_late_now, *args, owner=self.b.proc)
            return
        self._read(*args)

    def _kv_lock(self, args) -> bool:
        """PopConsumerService.popAsync's tryLock of group@topic (tryLockForPop in 5.5.1). False:
        the pop does not read now, either failed fast (found nothing, held or answered) or
        waiting for the lock (its pop time already taken)."""
        req, may_hold = args[0], args[1]
        key = (req.group, req.topic)
        waiting = self.kv_locks.get(key)
        if waiting is None:
            self.kv_locks[key] = []
            return True
        if (req.orderly and req.attempt_id and not self.b.profile.pop_kv_lock_fails_same_attempt
                and self.order.attempt_matched(req.attempt_id, req.topic, req.group)):
            waiting.append(args)        # spins until the holder's read completes
            return False
        self._found_nothing(req, may_hold, False)
        return False

    def _kv_unlock(self, req: PopRequest) -> None:
        """The pop's read completed: the lock is free, and a spinning pop takes it."""
        key = (req.group, req.topic)
        waiting = self.kv_locks.pop(key, None)
        if waiting:
            self.kv_locks[key] = waiting
            self._start_read(waiting.pop(0))

    def _read_late(self) -> int:
        """How long after its pop time this pop reads the queues (0: at once)."""
        if self.late_reads > 0:
            self.late_reads -= 1
            return self.late_read_ms
        if self.late_read_rate and self.sim.chooser.chance("pop_read_late", self.late_read_rate):
            return self.late_read_ms
        return 0

    def _reads_data(self, req: PopRequest) -> bool:
        """The pop has message data to read on a slow queue: a queue it reads (not blocked for its
        attempt) has a message past the offset it reads from."""
        b = self.b
        queues = range(b.topics.get(req.topic, 0)) if req.queue < 0 else (req.queue,)
        kv = self.kv is not None and not req.orderly
        for q in queues:
            if self.store_read_queues is not None and q not in self.store_read_queues:
                continue
            if req.orderly and self.order.check_block(req.attempt_id, req.topic, req.group, q, self.sim.now):
                continue
            if self._pop_offset(req.group, req.topic, q, req.init_min, kv) < b.store.max_offset(req.topic, q):
                return True
        return False

    def _read_late_now(self, req, *args) -> None:
        self.reading -= 1
        if self.b.up:
            self._read(req, *args)

    def _read(self, req, may_hold, pop_time, retry_topic, has_retry, need_retry, revive_qid) -> None:
        """popMsgFromTopic / popMsgFromQueue under the request's pop time, and the answer."""
        b, sim = self.b, self.sim
        found: list[tuple[Message, str]] = []
        blocked = [False]
        matcher = pull_filter(b, req)
        if need_retry:
            self._pop_topic(req, retry_topic, revive_qid, found, blocked, pop_time)
        queues = b.topics.get(req.topic, 0)
        if req.queue < 0:
            # popMsgFromTopic starts at a random queue (randomQ % readQueueNums)
            start = sim.chooser.pick_index("pop_start_queue", queues) if queues > 1 else 0
            for i in range(queues):
                self._pop_queue(req, req.topic, (start + i) % queues, revive_qid, found, matcher, blocked, pop_time)
        else:
            self._pop_queue(req, req.topic, req.queue, revive_qid, found, matcher, blocked, pop_time)
        if not need_retry and has_retry and len(found) < req.max_nums:
            self._pop_topic(req, retry_topic, revive_qid, found, blocked, pop_time)
        if found:
            self._answer(req, found, "FOUND", blocked[0])
        else:
            self._found_nothing(req, may_hold, blocked[0])
        if self.kv is not None:
            # after the answer: a pop spinning for the lock reads what this one left
            self._kv_unlock(req)

    def _found_nothing(self, req: PopRequest, may_hold: bool, blocked: bool) -> None:
        """An empty pop: PopLongPollingService.polling holds it until a message arrives or its
        poll time, counted from its born time, ends; a pop woken early that finds nothing is
        held again (polling: not timed out); the run at its timeout is answered."""
        if req.held_until is None:
            req.held_until = req.born + req.poll_ms
            if may_hold and self.sim.now < req.held_until:
                self.sim.schedule(req.held_until - self.sim.now, self._hold_timeout, req, owner=self.b.proc)
        if not may_hold or self.sim.now >= req.held_until:
            self._answer(req, [], "POLLING_NOT_FOUND", blocked)
            return
        self.held.append(req)

    def _pop_topic(self, req, topic, revive_qid, found, blocked, pop_time) -> None:
        for q in range(self.b.topics.get(topic, 0)):
            self._pop_queue(req, topic, q, revive_qid, found, _match_all, blocked, pop_time)

    def _pop_offset(self, group: str, topic: str, queue: int, init_min: bool, kv: bool = False) -> int:
        """getPopOffset: the committed offset (or the initial one), and the buffer's latest
        offset when it is ahead; a concurrent pop on the KV path: the pull offset, no buffer. getInitOffset: a retry topic or ConsumeInitMode.MIN starts at the
        queue's min offset; MAX at 0 while offset 0 is in the store (initPopOffsetByCheckMsgInMem),
        else at the last message."""
        b = self.b
        off = self.kv.pop_offset(group, topic, queue) if kv else b.offsets.query(group, topic, queue)
        if off < 0:
            if init_min or topic.startswith("%RETRY%"):
                off = b.store.min_offset(topic, queue)
            elif b.store.min_offset(topic, queue) <= 0 and b.store.max_offset(topic, queue) > 0:
                off = 0
            else:
                off = max(0, b.store.max_offset(topic, queue) - 1)
        if kv:
            return off
        buf = self.buffer_offsets.get((group, topic, queue), -1)
        return max(buf, off)

    def _pop_queue(self, req, topic, queue, revive_qid, found, matcher, blocked, pop_time) -> None:
        """popMsgFromQueue, under the request's pop time."""
        room = req.max_nums - len(found)
        if room <= 0:
            return
        b, sim = self.b, self.sim
        group = req.group
        if req.orderly and self.order.check_block(req.attempt_id, topic, group, queue, sim.now):
            blocked[0] = True
            return
        kv = self.kv is not None and not req.orderly
        offset = self._pop_offset(group, topic, queue, req.init_min, kv)
        limit = None if req.read_ends is None else req.read_ends.get((topic, queue), 0)
        if limit is not None and offset >= limit:
            return      # nothing past the offset when the read was issued
        result = b.store.get_message(topic, queue, offset, room, matcher, limit)
        if result.status in ("OFFSET_TOO_SMALL", "OFFSET_OVERFLOW_BADLY", "OFFSET_FOUND_NULL"):
            # the stored offset is not right: commit the corrected one and read again
            b.offsets.commit(group, topic, queue, result.next_begin, client=req.client, source="pop")
            offset = result.next_begin
            result = b.store.get_message(topic, queue, offset, room, matcher, limit)
        flag = RETRY_FLAG_V1 if topic.startswith("%RETRY%") else RETRY_FLAG_NORMAL
        if kv:
            self.kv.read(group, topic, queue, offset, result.next_begin, req.client)
        if result.messages:
            offsets = [m.offset for m in result.messages]
            if req.orderly:
                counts = self.order.update(req.attempt_id, topic, group, queue, pop_time, req.invisible_ms, offsets)
                self._arm_lock_free(topic, group, queue)
                b.offsets.commit(group, topic, queue, offset, client=req.client, source="pop")
            elif kv:
                self.kv.write_popped(group, topic, queue, offsets, pop_time, req.invisible_ms)
                counts = None
            else:
                ck = Checkpoint(group, topic, queue, offset, pop_time, req.invisible_ms, offsets, revive_qid,
                                req.client)
                self.checkpoints[ck.key] = ck
                sim.emit("pop_checkpoint_written", group=group, topic=topic, broker=b.name, queue=queue,
                         ck_offset=offset, offsets=offsets, pop_time=pop_time, invisible_time=req.invisible_ms,
                         revive_qid=revive_qid, cause="pop", store="revive_log")
                self.buffer_offsets[(group, topic, queue)] = result.next_begin
                # scanCommitOffset commits the buffer's offset once the checkpoint is stored
                b.offsets.commit(group, topic, queue, result.next_begin, client=req.client, source="pop")
                counts = None
            for m in result.messages:
                copy = m.clone()
                if counts is not None:
                    copy.reconsume_times = self._order_reading(req, counts, m)
                h = build_handle(offset, pop_time, req.invisible_ms, revive_qid, flag, b.name, queue, m.offset)
                found.append((copy, h))
        elif not kv and result.status in ("NO_MATCHED_MESSAGE", "OFFSET_FOUND_NULL", "MESSAGE_WAS_REMOVING",
                                          "NO_MATCHED_LOGIC_QUEUE") and result.next_begin > offset:
            # nothing the group wants: move past it (orderly: commit; else addCkMock's offset entry)
            if not req.orderly:
                self.buffer_offsets[(group, topic, queue)] = result.next_begin
            b.offsets.commit(group, topic, queue, result.next_begin, client=req.client, source="pop")

    def _order_reading(self, req: PopRequest, counts: dict, m) -> int:
        """The reconsume times an orderly pop's reader gives a message, from the order info's
        counts of the pop (offset -> earlier attempts): the remoting client reads the offset's own
        (MQClientAPIImpl.processPopResponse), the proxy the queue's minimum
        (proxy_fifo_reconsume_times) unless the profile's proxy reads per offset. A count of 0
        leaves the message's own."""
        if req.via_proxy and not self.b.profile.proxy_fifo_count_per_offset:
            return proxy_fifo_reconsume_times(list(counts.values()), m.reconsume_times)
        return order_reconsume_times(counts.get(m.offset, 0), m.reconsume_times)

    def _answer(self, req: PopRequest, found, status: str, blocked: bool) -> None:
        b, sim = self.b, self.sim
        for m, h in found:
            hd = parse_handle(h)
            sim.emit("message_popped", client=req.client, group=req.group, topic=m.topic, broker=b.name,
                     queue=m.queue, offset=m.offset, msg_id=m.msg_id, pop_id=req.pop_id, handle=h,
                     pop_time=hd["pop_time"], invisible_time=hd["invisible_time"], reconsume_times=m.reconsume_times,
                     order=req.orderly, origin_msg_id=m.origin_msg_id, attempt_id=req.attempt_id,
                     revive_qid=hd["revive_qid"], ck_offset=hd["ck_offset"])
        sim.emit("pop_answered", client=req.client, group=req.group, topic=req.topic, broker=b.name,
                 pop_id=req.pop_id, status=status, count=len(found),
                 reason="order_blocked" if blocked and not found else None)
        req.respond(found, status)

    def _hold_timeout(self, req: PopRequest) -> None:
        if req in self.held:
            self.held.remove(req)
            self.pop(req, may_hold=False)

    def notify_arriving(self, topic: str, group: str | None = None) -> None:
        """notifyMessageArriving: held pops of the topic (or of its pop retry topic) run again;
        of one group only when `group` is given."""
        for req in self.held:
            if (topic == req.topic or topic == pop_retry_topic(req.group, req.topic)) and group in (None, req.group):
                self.sim.schedule(POP_HOLD_WAKE_MS, self._wake, req, owner=self.b.proc)

    def _arm_lock_free(self, topic: str, group: str, queue: int) -> None:
        """updateLockFreeTimestamp: the queue's wake re-armed at its lock-free time (the one armed
        before is cancelled)."""
        info = self.order.table.get((topic, group, queue))
        now = self.sim.now
        due = info.lock_free_at(now) if info is not None else None
        if due is None:
            return
        if self.wheel_started is None:
            self.wheel_started = now
        key = (topic, group, queue)
        old = self.lock_free.get(key)
        if old is not None:
            old.cancel()
        timer = Timer()
        self.lock_free[key] = timer
        self.sim.schedule(wheel_fire_time(self.wheel_started, due) - now, self._lock_is_free, key, timer,
                          owner=self.b.proc, timer=timer)

    def _lock_is_free(self, key: tuple, timer: Timer) -> None:
        """NotifyLockFreeTimerTask: notifyLongPollingRequestIfNeed of the queue, for its group."""
        if self.lock_free.get(key) is timer:
            del self.lock_free[key]
        topic, group, queue = key
        b = self.b
        consumed = max(self.buffer_offsets.get((group, topic, queue), -1), b.offsets.query(group, topic, queue))
        if b.store.max_offset(topic, queue) > consumed:
            self.notify_arriving(topic, group)

    def _wake(self, req: PopRequest) -> None:
        if req in self.held:
            self.held.remove(req)
            self.pop(req)

    def drop_held(self, client: str) -> None:
        self.held = [r for r in self.held if r.client != client]

    # ------------------------------------------------------------------ ack
    def ack(self, group: str, topic: str, handle: str, client: str, reason: str = "consumed") -> str:
        """AckMessageProcessor: appendAck (an ack record; revive matches it to its checkpoint by
        topic, group, queue, start offset and pop time, so one whose checkpoint no longer waits,
        revived or acked by a changeInvisibleTime, changes nothing) or ackOrderly. The result:
        acked, stale, or rejected (the offset is outside the queue: NO_MESSAGE)."""
        b = self.b
        b._check_up()
        b.channels.io(client)
        h = parse_handle(handle)
        queue, offset = h["queue"], h["offset"]
        order = is_orderly_handle(h["revive_qid"])
        code = None
        if offset < b.store.min_offset(topic, queue) or offset > b.store.max_offset(topic, queue):
            result, code = "rejected", "NO_MESSAGE"
        elif order:
            result = self._ack_orderly(group, topic, queue, offset, h["pop_time"], client)
            if result == "rejected":
                code = "MESSAGE_ILLEGAL"
        elif self.kv is not None:
            result = self.kv.ack(group, topic, queue, offset, h["pop_time"], h["invisible_time"])
        else:
            result = self._ack_ck(group, topic, queue, h["ck_offset"], h["pop_time"], offset)
        self.sim.emit("message_acked", client=client, group=group, topic=topic, broker=b.name, queue=queue,
                      offset=offset, handle=handle, pop_time=h["pop_time"], result=result, reason=reason,
                      response_code=code, order=order)
        return result

    def _ack_ck(self, group, topic, queue, ck_offset, pop_time, offset) -> str:
        ck = self.checkpoints.get((topic, group, queue, ck_offset, pop_time))
        if ck is None or offset not in ck.offsets or offset in ck.acked:
            return "stale"
        ck.acked.add(offset)
        if len(ck.acked) == len(ck.offsets):
            del self.checkpoints[ck.key]     # every bit set: the revive scan revives nothing of it
        return "acked"

    def _ack_orderly(self, group, topic, queue, offset, pop_time, client) -> str:
        b = self.b
        if offset < b.offsets.query(group, topic, queue):
            return "stale"
        nxt = self.order.commit_and_next(topic, group, queue, offset, pop_time)
        if nxt >= 0:
            self._arm_lock_free(topic, group, queue)
        if nxt == -1:
            return "rejected"
        if nxt == -2:
            return "stale"      # another pop time than the order info's: an older attempt's handle
        b.offsets.commit(group, topic, queue, nxt, client=client, source="ack")
        if not self.order.check_block(None, topic, group, queue, self.sim.now):
            self.notify_arriving(topic)
        return "acked"

    # ------------------------------------------------------------------ dead letter (the proxy)
    def dead_letter(self, group: str, topic: str, handle: str, msg_id: str, reconsume_times: int, max_attempts: int,
                    client: str) -> bool:
        """The proxy's forwardMessageToDeadLetterQueue (consumerSendMsgBack with delay level -1,
        so the broker puts the popped copy into %DLQ%<group>); the proxy acks the handle next."""
        b, sim = self.b, self.sim
        b._check_up()
        b.channels.io(client)
        stored = b.index.get(msg_id)
        if stored is None:
            return False
        h = parse_handle(handle)
        copy = stored.clone()
        copy.topic, copy.queue, copy.delay_level = dlq_topic(group), 0, 0
        copy.retry_topic = stored.retry_topic or stored.topic
        b.create_topic(copy.topic, 1)
        copy.broker = b.name
        copy.msg_id = b._new_id()
        copy.store_ts = sim.now
        b.index[copy.msg_id] = copy
        b.store.append(copy)
        # stored without a message_stored event: pop_dead_lettered says where the copy went
        sim.emit("pop_dead_lettered", group=group, topic=topic, broker=b.name, queue=h["queue"], offset=h["offset"],
                 msg_id=msg_id, reconsume_times=reconsume_times, max_attempts=max_attempts, handle=handle,
                 origin_msg_id=stored.origin_msg_id, client=client, dlq_offset=copy.offset, dlq_msg_id=copy.msg_id)
        return True

    # ------------------------------------------------------------------ change invisible time
    def change_invisible_time(self, group: str, topic: str, handle: str, invisible_ms: int, client: str) -> str | None:
        """ChangeInvisibleTimeProcessor; the new handle, or None. Concurrent
        (appendCheckPointThenAckOrigin): a checkpoint for the one message popped now, then an ack
        of the old handle's checkpoint; the broker does not check that the old handle was still
        current, so a change after its revive puts the message out twice. Orderly: the order
        info's next visible time of the offset (same pop time; a pop time not the order info's
        changes nothing, and the answer is still success)."""
        b, sim = self.b, self.sim
        b._check_up()
        b.channels.io(client)
        h = parse_handle(handle)
        queue, offset = h["queue"], h["offset"]
        order = is_orderly_handle(h["revive_qid"])
        new = new_pop_time = code = new_invisible = None
        if offset < b.store.min_offset(topic, queue) or offset >= b.store.max_offset(topic, queue):
            result, code = "rejected", "NO_MESSAGE"
        elif order:
            result = "stale"
            if offset >= b.offsets.query(group, topic, queue):
                nvt = sim.now + invisible_ms
                if self.order.update_next_visible_time(topic, group, queue, offset, h["pop_time"], nvt):
                    self._arm_lock_free(topic, group, queue)
                    result = "changed"
                    new_pop_time, new_invisible = h["pop_time"], nvt - h["pop_time"]
                    new = build_handle(h["ck_offset"], new_pop_time, new_invisible, h["revive_qid"], h["retry_flag"],
                                       b.name, queue, offset)
        elif self.kv is not None:
            self.kv.change(group, topic, queue, offset, h["pop_time"], h["invisible_time"], invisible_ms)
            result, new_pop_time, new_invisible = "changed", sim.now, invisible_ms
            new = build_handle(offset, sim.now, invisible_ms, h["revive_qid"], h["retry_flag"], b.name, queue, offset)
        else:
            ck = Checkpoint(group, topic, queue, offset, sim.now, invisible_ms, [offset], h["revive_qid"], client)
            self.checkpoints[ck.key] = ck
            sim.emit("pop_checkpoint_written", group=group, topic=topic, broker=b.name, queue=queue, ck_offset=offset,
                     offsets=[offset], pop_time=sim.now, invisible_time=invisible_ms, revive_qid=h["revive_qid"],
                     cause="change_invisible", store="revive_log")
            self._ack_ck(group, topic, queue, h["ck_offset"], h["pop_time"], offset)
            result, new_pop_time, new_invisible = "changed", sim.now, invisible_ms
            new = build_handle(offset, sim.now, invisible_ms, h["revive_qid"], h["retry_flag"], b.name, queue, offset)
        sim.emit("invisible_time_changed", client=client, group=group, topic=topic, broker=b.name, queue=queue,
                 offset=offset, handle=handle, pop_time=h["pop_time"], result=result, new_handle=new,
                 new_pop_time=new_pop_time, invisible_time=new_invisible if new_invisible is not None else invisible_ms,
                 response_code=code, order=order)
        return new


def _match_all(m) -> bool:
    return True
