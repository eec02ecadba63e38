"""ScheduleMessageService: delayed messages per delay level (digest section 7).

A message with delay level L (clamped to the highest level) is stored in
SCHEDULE_TOPIC_XXXX queue L-1 with its due time; one task per level delivers due messages
in order back to their real topic and queue, keeping reconsume_times. Instead of polling
every 100 ms while idle, a level task is woken exactly when its head message is due, which
gives the same delivery times without simulating idle polls.
"""
from __future__ import annotations

from rocketspec.rocketmq.delays import parse_delay_levels

from ..footprint import footprint
from ..message import SCHEDULE_TOPIC, Message

FIRST_DELAY_MS = 1000
FLUSH_DELAY_OFFSET_INTERVAL_MS = 10000

class ScheduleMessageService:
    def __init__(self, broker, delay_levels: str):
        self.broker = broker
        self.delays = parse_delay_levels(delay_levels)
        self.offsets: dict[int, int] = {}          # level -> next schedule-queue offset to deliver
        self.flushed_offsets: dict[int, int] = {}
        self._busy: set[int] = set()
        self.started_at = 0

    @property
    def max_level(self) -> int:
        return len(self.delays)

    def start(self) -> None:
        sim = self.broker.sim
        self.started_at = sim.now
        self._busy.clear()
        sim.every(FLUSH_DELAY_OFFSET_INTERVAL_MS, FLUSH_DELAY_OFFSET_INTERVAL_MS, self._flush, owner=self.broker.proc)
        for level in range(1, self.max_level + 1):
            self._wake(level)

    def restart(self) -> None:
        self.offsets = dict(self.flushed_offsets)  # deliveries after the last flush repeat
        self.start()

    @footprint(lambda self: ({("schedule_offsets", self.broker.name)}, {("schedule_disk", self.broker.name)}))
    def _flush(self) -> None:
        self.flushed_offsets = dict(self.offsets)

    def schedule(self, msg: Message, group: str | None) -> None:
        """Store msg (already carrying delay_level) in the schedule topic instead of its topic."""
        b = self.broker
        level = min(msg.delay_level, self.max_level)
        msg.delay_level = level
        msg.real_topic, msg.real_queue = msg.topic, msg.queue
        msg.topic, msg.queue = SCHEDULE_TOPIC, level - 1
        msg.deliver_ts = b.sim.now + self.delays[level - 1]
        b.store.append(msg)
        b.sim.emit("message_scheduled", broker=b.name, msg_id=msg.msg_id, origin_msg_id=msg.origin_msg_id,
                   delay_level=level, deliver_ts=msg.deliver_ts, real_topic=msg.real_topic,
                   real_queue=msg.real_queue, offset=msg.offset, group=group,
                   reconsume_times=msg.reconsume_times, topic=SCHEDULE_TOPIC, queue=level - 1)
        self._wake(level)

    def pending(self) -> int:
        store = self.broker.store
        return sum(store.max_offset(SCHEDULE_TOPIC, lv - 1) - self.offsets.get(lv, 0)
                   for lv in range(1, self.max_level + 1))

    def _wake(self, level: int) -> None:
        if level in self._busy:
            return
        cq = self.broker.store.consume_queue(SCHEDULE_TOPIC, level - 1, create=False)
        if cq is None:
            return
        nxt = self._skip_gone(level, cq)
        if nxt >= cq.max_offset:
            return
        sim = self.broker.sim
        due = max(cq.messages[nxt].deliver_ts, self.started_at + FIRST_DELAY_MS)
        self._busy.add(level)
        sim.schedule(max(0, due - sim.now), self._run_level, level, owner=self.broker.proc)

    def _run_level(self, level: int) -> None:
        self._busy.discard(level)
        b = self.broker
        cq = b.store.consume_queue(SCHEDULE_TOPIC, level - 1)
        nxt = self._skip_gone(level, cq)
        while nxt < cq.max_offset and cq.messages[nxt].deliver_ts <= b.sim.now:
            self._deliver(cq.messages[nxt])
            nxt += 1
            self.offsets[level] = nxt
            nxt = self._skip_gone(level, cq)
        self._wake(level)

    def _skip_gone(self, level: int, cq) -> int:
        """DeliverDelayedMessageTimerTask skips an entry whose commit-log data is gone (the lookup
        returns null) and goes on with the next; a later entry of one level is due no sooner, so
        skipping it at once delivers nothing earlier. Returns the level's next offset."""
        nxt = self.offsets.get(level, 0)
        while nxt < cq.max_offset and cq.messages[nxt] is None:
            nxt += 1
            self.offsets[level] = nxt
        return nxt

    def _deliver(self, scheduled: Message) -> None:
        """messageTimeUp: back to the real topic and queue, delay cleared, count kept."""
        b = self.broker
        msg = scheduled.clone()
        msg.topic, msg.queue = scheduled.real_topic, scheduled.real_queue
        msg.real_topic = msg.real_queue = msg.deliver_ts = None
        b.sim.emit("schedule_delivered", broker=b.name, msg_id=scheduled.msg_id,
                   origin_msg_id=scheduled.origin_msg_id, delay_level=scheduled.delay_level,
                   real_topic=msg.topic, real_queue=msg.queue, reconsume_times=msg.reconsume_times)
        msg.delay_level = 0
        b.append_and_notify(msg, source="schedule")
