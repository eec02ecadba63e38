"""Facts of the broker's RocksDB POP path (RocketMQ 5.5: PopConsumerService, PopConsumerRecord,
PopConsumerRocksdbStore; on with BrokerConfig popConsumerKVServiceInit and
popConsumerKVServiceEnable, both off by default).

Instead of a checkpoint per pop in the revive log, the broker keeps one record per popped
message in RocksDB, keyed by the message's deadline first (PopConsumerRecord.getKeyBytes:
visibility timeout, group, topic, queue, offset), so the revive scans keys in deadline order. An
ack deletes the key its handle names; a change of invisible time writes a record under the new
deadline and deletes the old key (changeInvisibilityDuration).
"""
from __future__ import annotations

from .pop import deadline

# PopConsumerService.run: the revive scan runs again after 500 ms when it read less than a full batch
KV_REVIVE_INTERVAL = 500
# PopConsumerService.revive: it scans keys from (the last scan's end - 3 s) up to (now - 50 ms), exclusive
KV_REVIVE_LOOKBACK = 3_000
KV_REVIVE_LAG = 50
KV_REVIVE_START = 3_000         # the scan's first end (currentTime = new AtomicLong(3 s))


def record_key(pop_time: int, invisible_time: int, group: str, topic: str, queue: int, offset: int) -> tuple:
    """PopConsumerRecord.getKeyBytes: deadline + group + topic + queue + offset. The pop time and
    the invisible time are not in it, only their sum."""
    return (deadline(pop_time, invisible_time), group, topic, queue, offset)


def change_deletes_new_record(old_deadline: int, new_deadline: int, deletes_same_key: bool) -> bool:
    """changeInvisibilityDuration deletes the old key after writing the new record; when the two
    deadlines are equal the keys are too, and the delete removes the record just written (5.5.0,
    #10276). 5.5.1 skips the delete then (PR #10277)."""
    return deletes_same_key and old_deadline == new_deadline


def revive_window(last_end: int, now: int) -> tuple[int, int]:
    """The deadlines a revive scan reads: [last_end - 3 s, now - 50 ms)."""
    return last_end - KV_REVIVE_LOOKBACK, now - KV_REVIVE_LAG
