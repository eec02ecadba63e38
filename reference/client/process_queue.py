"""ProcessQueue: the client's buffer of pulled, not yet consumed messages of one queue.

The results of put/remove/take/commit are exactly RocketMQ's (digest section 3): the
concurrent offset to commit is the minimum offset still in the tree, or queueOffsetMax + 1
when the tree empties, where queueOffsetMax is the last *new* offset put (input order).
"""
from __future__ import annotations

from sortedcontainers import SortedDict

from rocketspec.rocketmq.retry import CLEAN_EXPIRED_DELAY_LEVEL


class NoSuchElement(Exception):
    """ProcessQueue.commit with nothing taken: RocketMQ's uncaught NoSuchElementException."""


class IllegalCapacity(ValueError):
    """takeMessages with a negative batch: ``new ArrayList(batchSize)`` throws
    IllegalArgumentException("Illegal Capacity: n") before anything changes."""


class NumberFormat(ValueError):
    """A MAX_OFFSET property that Long.parseLong refuses: putMessage throws
    NumberFormatException after the messages are in the tree (only msgAccCnt stays)."""


LONG_MIN, LONG_MAX = -2**63, 2**63 - 1


def java_parse_long(text: str) -> int:
    """Long.parseLong(text) in radix 10: an optional sign, then digits, within the long
    range. Java also takes Unicode decimal digits (Character.digit); Python's int() would
    further take spaces, underscores and unbounded values, which Java refuses."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not body.isdecimal():
        raise NumberFormat(f'For input string: "{text}"')
    value = int(text)   # sign and decimal digits only, as checked
    if not LONG_MIN <= value <= LONG_MAX:
        raise NumberFormat(f'For input string: "{text}"')
    return value


class ProcessQueue:
    __slots__ = ("msg_tree", "consuming_tree", "msg_count", "msg_size", "queue_offset_max", "dropped", "locked",
                 "last_lock_ts", "last_pull_ts", "last_consume_ts", "consuming", "msg_acc_cnt",
                 "try_unlock_times", "consume_lock_holder", "orderly_busy")

    def __init__(self, now: int = 0):
        self.msg_tree = SortedDict()         # offset -> message
        self.consuming_tree = SortedDict()   # orderly: taken, being consumed
        self.msg_count = 0
        self.msg_size = 0
        self.queue_offset_max = 0
        self.dropped = False
        self.locked = False
        self.last_lock_ts = now
        self.last_pull_ts = now
        self.last_consume_ts = now
        self.consuming = False
        self.msg_acc_cnt = 0
        self.try_unlock_times = 0
        self.consume_lock_holder = None      # who holds pq.consumeLock (orderly listener call)
        self.orderly_busy = False            # a ConsumeRequest for this queue is running (messageQueueLock)

    # ------------------------------------------------------------------ time predicates
    def is_lock_expired(self, now: int, max_live_ms: int) -> bool:
        return now - self.last_lock_ts > max_live_ms

    def is_pull_expired(self, now: int, max_idle_ms: int) -> bool:
        return now - self.last_pull_ts > max_idle_ms

    # ------------------------------------------------------------------ concurrent and orderly
    def put_messages(self, msgs) -> bool:
        """Returns dispatchToConsume: the tree is non-empty and nobody was consuming."""
        tree = self.msg_tree
        for m in msgs:
            # TreeMap.put: the new object replaces a present one, which is not counted
            # again (msgSize keeps the old body's size; later removals subtract the new one's).
            new = m.offset not in tree
            tree[m.offset] = m
            if new:
                self.msg_count += 1
                self.msg_size += m.body_size
                self.queue_offset_max = m.offset
        dispatch = False
        if tree and not self.consuming:
            dispatch = True
            self.consuming = True
        if msgs:
            last = msgs[-1]
            max_prop = last.props.get("MAX_OFFSET") if last.props else None
            if max_prop is not None:
                # long arithmetic: MIN_VALUE - 1 wraps round to a large positive count
                acc = (java_parse_long(max_prop) - last.offset + 2**63) % 2**64 - 2**63
                if acc > 0:
                    self.msg_acc_cnt = acc
        return dispatch

    def remove_messages(self, msgs, now: int) -> int:
        """Concurrent: remove consumed messages; the offset that may be committed, or -1."""
        self.last_consume_ts = now
        tree = self.msg_tree
        if not tree:
            return -1
        result = self.queue_offset_max + 1
        for m in msgs:
            prev = tree.pop(m.offset, None)
            if prev is not None:
                self.msg_count -= 1
                self.msg_size -= m.body_size
        if self.msg_count == 0:
            self.msg_size = 0
        if tree:
            result = tree.keys()[0]
        return result

    def clear(self) -> None:
        """Forget every buffered message (resetOffset)."""
        self.msg_tree.clear()
        self.consuming_tree.clear()
        self.msg_count = 0
        self.msg_size = 0
        self.queue_offset_max = 0

    def contains(self, msg) -> bool:
        return msg.offset in self.msg_tree

    def has_temp_message(self) -> bool:
        return bool(self.msg_tree)

    def max_span(self) -> int:
        if not self.msg_tree:
            return 0
        keys = self.msg_tree.keys()
        return keys[-1] - keys[0]

    def first_offset(self) -> int | None:
        return self.msg_tree.keys()[0] if self.msg_tree else None

    def clean_expired_msg(self, now: int, timeout_ms: int, orderly: bool, send_back, removed=None) -> None:
        """cleanExpiredMsg: up to min(16, size) times, the first message, if its listener call
        started more than consumeTimeout ago, is sent back at delay level 3 and then removed
        if it is still first (no offset update). No dropped check: a dropped ProcessQueue
        still in the table is cleaned too. ``send_back(msg, delay_level)`` returns False where
        sendMessageBack throws; RocketMQ logs that and goes round the loop again, so the same
        message is tried again. ``removed(msg, offset)`` is told of each removeMessage."""
        if orderly:
            return
        tree = self.msg_tree
        for _ in range(min(16, len(tree))):
            if not tree:
                break
            first = tree.values()[0]
            if first.consume_start_ts is None or now - first.consume_start_ts <= timeout_ms:
                break
            if not send_back(first, CLEAN_EXPIRED_DELAY_LEVEL):
                continue
            if tree and tree.keys()[0] == first.offset:
                off = self.remove_messages([first], now)
                if removed is not None:
                    removed(first, off)

    # ------------------------------------------------------------------ orderly
    def take_messages(self, batch: int, now: int) -> list:
        if batch < 0:
            raise IllegalCapacity(f"Illegal Capacity: {batch}")
        self.last_consume_ts = now
        out = []
        tree = self.msg_tree
        for _ in range(batch):
            if not tree:
                break
            off, m = tree.popitem(0)
            out.append(m)
            self.consuming_tree[off] = m
        if not out:
            self.consuming = False
        return out

    def commit(self) -> int:
        if not self.consuming_tree:
            raise NoSuchElement("ProcessQueue.commit with an empty consuming map")
        offset = self.consuming_tree.keys()[-1]
        self.msg_count -= len(self.consuming_tree)
        for m in self.consuming_tree.values():
            self.msg_size -= m.body_size
        if self.msg_count == 0:
            self.msg_size = 0
        self.consuming_tree.clear()
        return offset + 1

    def rollback(self) -> list:
        back = list(self.consuming_tree.values())
        self.msg_tree.update(self.consuming_tree)
        self.consuming_tree.clear()
        return back

    def make_message_to_consume_again(self, msgs) -> None:
        for m in msgs:
            self.consuming_tree.pop(m.offset, None)
            self.msg_tree[m.offset] = m
