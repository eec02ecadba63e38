"""Commit-log retention ahead of the consume queues (RocketMQ 5.x DefaultMessageStore).

The commit log's expired files are deleted by CleanCommitLogService (cleanFilesPeriodically, every
cleanResourceInterval, 10 s), and each consume queue's min offset is corrected on another
schedule: ConsumeQueueStore.cleanQueueFilesPeriodically (CleanConsumeQueueService.deleteExpiredFiles
-> ConsumeQueue.deleteExpiredFile -> correctMinOffset), also every 10 s, on its own executor. In
between, a consume queue still lists offsets whose commit-log data is gone, and getMessage at such
an offset skips the entries whose data it cannot read (commitLog.getMessage returns null) and
returns the first later entry whose data exists: a read "at" the offset answers with another
message (#7724's way in for the revive's getBizMessage).

The reference has no commit log: a message's commit-log position is its order of storing on the
broker (the number in its msg id). `expire_oldest` deletes the data of the oldest messages still
held (the explorer's fault commit_log_expired, a scenario's expire_commit_log step): their
consume-queue entries stay, empty, until the correction CLEAN_RESOURCE_INTERVAL_MS later moves each
queue's min offset past them and emits messages_deleted.
"""
from __future__ import annotations

CLEAN_RESOURCE_INTERVAL_MS = 10_000   # MessageStoreConfig.cleanResourceInterval


def _position(msg) -> int:
    return int(msg.msg_id.rsplit(":", 1)[1])


def expire_oldest(broker, count: int) -> int:
    """The commit log loses the data of its `count` oldest messages still held; the consume
    queues are corrected later. Returns how many lost their data."""
    held = []
    for cq in broker.store.queues.values():
        for off in range(cq.min_offset, cq.max_offset):
            m = cq.messages[off]
            if m is not None:
                held.append((_position(m), cq, off))
    held.sort(key=lambda t: t[0])
    gone = held[:max(0, count)]
    for _, cq, off in gone:
        cq.messages[off] = None
    if gone:
        queues = sorted({(cq.topic, cq.queue) for _, cq, _ in gone})
        broker.sim.schedule(CLEAN_RESOURCE_INTERVAL_MS, correct_min_offsets, broker, queues)
    return len(gone)


def correct_min_offsets(broker, queues) -> None:
    """correctMinOffset: each queue's min offset moves to its first entry whose data exists."""
    for topic, queue in queues:
        cq = broker.store.consume_queue(topic, queue, create=False)
        if cq is None:
            continue
        low = cq.min_offset
        while low < cq.max_offset and cq.messages[low] is None:
            low += 1
        if low > cq.min_offset:
            cq.min_offset = low
            broker.sim.emit("messages_deleted", topic=topic, broker=broker.name, queue=queue, min_offset=low)
