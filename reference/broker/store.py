"""The broker's message store: consume queues with min/max offsets, and getMessage.

`get_message` returns the store status (GetMessageStatus) and the corrected next offset
exactly as DefaultMessageStore.getMessage does (digest section 10), including the pre-4.9.4
OFFSET_OVERFLOW_BADLY correction to minOffset (#4215) when the profile asks for it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

CQ_UNIT_SIZE = 20
MAX_FILTER_MESSAGE_SIZE = 16000          # bytes of consume-queue units scanned per pull
MAX_TRANSFER_COUNT_ON_MESSAGE_IN_MEMORY = 32


class ConsumeQueue:
    __slots__ = ("topic", "queue", "messages", "min_offset")

    def __init__(self, topic: str, queue: int):
        self.topic = topic
        self.queue = queue
        self.messages = []   # index = offset; entries below min_offset are None (deleted)
        self.min_offset = 0

    @property
    def max_offset(self) -> int:
        return len(self.messages)


@dataclass
class GetResult:
    status: str
    next_begin: int
    min_offset: int
    max_offset: int
    messages: list = field(default_factory=list)
    filtered: list = field(default_factory=list)   # offsets scanned and not matched


class MessageStore:
    def __init__(self, profile):
        self.profile = profile
        self.queues: dict[tuple[str, int], ConsumeQueue] = {}

    def consume_queue(self, topic: str, queue: int, create: bool = True) -> ConsumeQueue | None:
        cq = self.queues.get((topic, queue))
        if cq is None and create:
            cq = self.queues[(topic, queue)] = ConsumeQueue(topic, queue)
        return cq

    def append(self, msg) -> int:
        cq = self.consume_queue(msg.topic, msg.queue)
        msg.offset = cq.max_offset
        cq.messages.append(msg)
        return msg.offset

    def min_offset(self, topic, queue) -> int:
        cq = self.queues.get((topic, queue))
        return cq.min_offset if cq else 0

    def max_offset(self, topic, queue) -> int:
        cq = self.queues.get((topic, queue))
        return cq.max_offset if cq else 0

    def delete_before(self, topic, queue, offset) -> int:
        """Retention: messages below offset are gone (commit log files expired). Returns the new min."""
        cq = self.consume_queue(topic, queue)
        offset = min(offset, cq.max_offset)
        for i in range(cq.min_offset, offset):
            cq.messages[i] = None
        cq.min_offset = max(cq.min_offset, offset)
        return cq.min_offset

    def get_message(self, topic: str, queue: int, offset: int, max_nums: int, matches,
                    limit: int | None = None) -> GetResult:
        """matches(msg) -> bool is the broker's subscription filter (tags hash or SQL92).
        `limit`: the queue's end as a read that started earlier saw it (a slow read returns what
        the consume queue held when it was issued)."""
        cq = self.queues.get((topic, queue))
        if cq is None:
            return GetResult("NO_MATCHED_LOGIC_QUEUE", 0, 0, 0)
        lo, hi = cq.min_offset, cq.max_offset
        if limit is not None:
            hi = min(hi, limit)
        if hi == 0:
            return GetResult("NO_MESSAGE_IN_QUEUE", 0, lo, hi)
        if offset < lo:
            return GetResult("OFFSET_TOO_SMALL", lo, lo, hi)
        if offset == hi:
            return GetResult("OFFSET_OVERFLOW_ONE", offset, lo, hi)
        if offset > hi:
            nxt = lo if (self.profile.overflow_badly_min_if_zero and lo == 0) else hi
            return GetResult("OFFSET_OVERFLOW_BADLY", nxt, lo, hi)
        found, filtered = [], []
        max_units = MAX_FILTER_MESSAGE_SIZE // CQ_UNIT_SIZE
        cap = min(max_nums, MAX_TRANSFER_COUNT_ON_MESSAGE_IN_MEMORY)
        i = offset
        end = min(hi, offset + max_units)
        msgs = cq.messages
        while i < end and len(found) < cap:
            m = msgs[i]
            i += 1
            if m is None:
                continue
            if matches(m):
                found.append(m)
            else:
                filtered.append(m.offset)
        if found:
            status = "FOUND"
        else:
            status = "NO_MATCHED_MESSAGE"
        return GetResult(status, i, lo, hi, found, filtered)


# GetMessageStatus -> pull response code (PullMessageProcessor on a master).
def response_code(status: str, request_offset: int) -> str:
    if status == "FOUND":
        return "SUCCESS"
    if status in ("NO_MATCHED_MESSAGE", "MESSAGE_WAS_REMOVING"):
        return "PULL_RETRY_IMMEDIATELY"
    if status in ("NO_MATCHED_LOGIC_QUEUE", "NO_MESSAGE_IN_QUEUE"):
        return "PULL_OFFSET_MOVED" if request_offset != 0 else "PULL_NOT_FOUND"
    if status in ("OFFSET_FOUND_NULL", "OFFSET_OVERFLOW_ONE"):
        return "PULL_NOT_FOUND"
    return "PULL_OFFSET_MOVED"  # OFFSET_OVERFLOW_BADLY, OFFSET_TOO_SMALL


# Pull response code -> PullStatus as the client sees it (MQClientAPIImpl.processPullResponse).
PULL_STATUS = {
    "SUCCESS": "FOUND",
    "PULL_NOT_FOUND": "NO_NEW_MSG",
    "PULL_RETRY_IMMEDIATELY": "NO_MATCHED_MSG",
    "PULL_OFFSET_MOVED": "OFFSET_ILLEGAL",
}
