"""The broker's order info for orderly POP (RocketMQ 5.x QueueLevelConsumerManager, the
ConsumerOrderInfoManager of a queue-level orderly group).

Per (topic, group, queue): the offsets of the last orderly pop, its attempt id, pop time and
invisible time, which of them are acked (commitOffsetBit), per-offset next visible times
(changeInvisibleTime) and how often each offset was handed out (offsetConsumedCount, the
reconsume times an orderly pop reports). A pop of another attempt is blocked while a message of
the last pop is un-acked and still invisible (needBlock); the same attempt id is never blocked
(a client's retried receive gets the same messages).
"""
from __future__ import annotations

from rocketspec.rocketmq.pop import order_lock_free_time


class OrderInfo:
    __slots__ = ("attempt_id", "pop_time", "invisible_ms", "offsets", "acked", "next_visible", "consumed")

    def __init__(self, attempt_id, pop_time, invisible_ms, offsets):
        self.attempt_id, self.pop_time, self.invisible_ms = attempt_id, pop_time, invisible_ms
        self.offsets = list(offsets)
        self.acked: set[int] = set()
        self.next_visible: dict[int, int] = {}
        self.consumed: dict[int, int] = {}

    def need_block(self, attempt_id, now: int) -> bool:
        if not self.offsets:
            return False
        if self.attempt_id is not None and self.attempt_id == attempt_id:
            return False
        for off in self.offsets:
            if off not in self.acked and now < self.next_visible.get(off, self.pop_time + self.invisible_ms):
                return True
        return False

    def lock_free_at(self, now: int):
        """getLockFreeTimestamp: when the block of this pop ends (now if it has; None: never armed)."""
        return order_lock_free_time(self.offsets, self.acked, self.pop_time, self.invisible_ms, self.next_visible, now)

    def next_offset(self) -> int:
        for off in self.offsets:
            if off not in self.acked:
                return off
        return self.offsets[-1] + 1


class ConsumerOrderInfoManager:
    def __init__(self):
        self.table: dict[tuple, OrderInfo] = {}

    def check_block(self, attempt_id, topic, group, queue, now: int) -> bool:
        info = self.table.get((topic, group, queue))
        return info is not None and info.need_block(attempt_id, now)

    def attempt_matched(self, attempt_id, topic, group) -> bool:
        """isAttemptIdMatched: a queue of the topic has the attempt's pop in its order info."""
        return attempt_id is not None and any(
            k[0] == topic and k[1] == group and i.attempt_id == attempt_id for k, i in self.table.items())

    def unacked_any(self, group: str) -> bool:
        """An orderly pop of the group holds un-acked messages (blocked or not: they are owed)."""
        return any(k[1] == group and any(o not in i.acked for o in i.offsets) for k, i in self.table.items())

    def update(self, attempt_id, topic, group, queue, pop_time, invisible_ms, offsets) -> dict[int, int]:
        """A new orderly pop: the order info is replaced; the consumed count of an offset handed
        out again by another attempt grows by one (mergeOffsetConsumedCount). Returns the counts."""
        key = (topic, group, queue)
        old = self.table.get(key)
        new = OrderInfo(attempt_id, pop_time, invisible_ms, offsets)
        if old is not None:
            if old.attempt_id is not None and old.attempt_id == attempt_id:
                new.consumed = dict(old.consumed)
            else:
                prev = set(old.offsets)
                new.consumed = {o: old.consumed.get(o, 0) + 1 for o in offsets if o in prev}
        self.table[key] = new
        return {o: new.consumed.get(o, 0) for o in offsets}

    def commit_and_next(self, topic, group, queue, offset, pop_time) -> int:
        """commitAndNext: the offset to commit after acking `offset`; -1 illegal, -2 a pop time
        that is not the current order info's (no commit)."""
        info = self.table.get((topic, group, queue))
        if info is None:
            return offset + 1
        if not info.offsets:
            return -1
        if pop_time != info.pop_time:
            return -2
        if offset not in info.offsets:
            return -1
        info.acked.add(offset)
        return info.next_offset()

    def update_next_visible_time(self, topic, group, queue, offset, pop_time, next_visible) -> bool:
        info = self.table.get((topic, group, queue))
        if info is None or pop_time != info.pop_time:
            return False
        info.next_visible[offset] = next_visible
        return True

    def clear_block(self, topic, group, queue) -> None:
        self.table.pop((topic, group, queue), None)
