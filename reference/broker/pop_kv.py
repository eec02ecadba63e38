"""The broker's RocksDB POP path (RocketMQ 5.5 PopConsumerService with popConsumerKVServiceInit and
popConsumerKVServiceEnable on; off by default: the profile's pop_consumer_kv_service, or a
scenario's broker_config of that name).

A concurrent pop reads the queues as on the revive-log path (reference.broker.pop) but keeps no
checkpoint: it writes one record per popped message, keyed by its deadline
(rocketspec.rocketmq.pop_kv.record_key), moves the group's pull offset past them and commits the
consume offset where the pop started (handleGetMessageResult, no buffer). An ack deletes the key
its handle names (a key no record has changes nothing). A change of invisible time writes a
record under the new deadline, then deletes the old key: when the deadlines are equal the keys
are, and 5.5.0 deletes the record it has just written (#10276; the profile's
pop_kv_change_deletes_same_key); 5.5.1 skips that delete. Every 500 ms the revive scans the keys
whose deadline lies in [last scan's end - 3 s, now - 50 ms) and puts each message back into the
group's pop retry topic (reviveRetry), then deletes the records it read. Orderly pops keep the
order info, as on the revive-log path. Records are RocksDB's and outlive a restart; the pull
offsets are kept with them (their flush is not modelled).
"""
from __future__ import annotations

from rocketspec.rocketmq.pop_kv import (KV_REVIVE_INTERVAL, KV_REVIVE_START, change_deletes_new_record,
                                        record_key, revive_window)

from ..footprint import footprint
from .revive import put_back


class PopConsumerRecord:
    """PopConsumerRecord: one popped message under one handle."""

    __slots__ = ("group", "topic", "queue", "offset", "pop_time", "invisible_ms", "suspend")

    def __init__(self, group, topic, queue, offset, pop_time, invisible_ms, suspend=False):
        self.group, self.topic, self.queue, self.offset = group, topic, queue, offset
        self.pop_time, self.invisible_ms, self.suspend = pop_time, invisible_ms, suspend

    @property
    def key(self) -> tuple:
        return record_key(self.pop_time, self.invisible_ms, self.group, self.topic, self.queue, self.offset)


class PopConsumerKv:
    """One broker's PopConsumerService: its records (the RocksDB store) and pull offsets."""

    def __init__(self, broker):
        self.b = broker
        self.sim = broker.sim
        self.records: dict[tuple, PopConsumerRecord] = {}
        self.pull_offsets: dict[tuple, int] = {}      # ConsumerOffsetManager's pull offset table
        self.scan_end = KV_REVIVE_START               # PopConsumerService.currentTime

    def start(self) -> None:
        self.sim.every(KV_REVIVE_INTERVAL, KV_REVIVE_INTERVAL, self.revive, owner=self.b.proc)

    def restarted(self) -> None:
        """The service's scan position is memory; the records are RocksDB's."""
        self.scan_end = KV_REVIVE_START

    def pop_offset(self, group: str, topic: str, queue: int) -> int:
        """getPopOffset of a concurrent pop: the pull offset (-1: none yet)."""
        return self.pull_offsets.get((group, topic, queue), -1)

    # ------------------------------------------------------------------ pop, ack, change
    def read(self, group, topic, queue, offset, next_begin, client) -> None:
        """handleGetMessageResult of a concurrent pop's read of a queue, found or not: the pull
        offset to where the read ended, the consume offset to where it started (so the next read
        commits this one's end)."""
        self.pull_offsets[(group, topic, queue)] = next_begin
        self.b.offsets.commit(group, topic, queue, offset, client=client, source="pop")

    def write_popped(self, group, topic, queue, offsets, pop_time, invisible_ms) -> None:
        """popAsync: a record per message popped (writeRecords)."""
        for off in offsets:
            self._write(PopConsumerRecord(group, topic, queue, off, pop_time, invisible_ms), "pop")

    def ack(self, group, topic, queue, offset, pop_time, invisible_ms) -> str:
        """ackAsync: delete the handle's key; acked if a record had it, else stale."""
        key = record_key(pop_time, invisible_ms, group, topic, queue, offset)
        return "acked" if self.records.pop(key, None) is not None else "stale"

    def change(self, group, topic, queue, offset, pop_time, invisible_ms, new_invisible_ms, suspend=False) -> None:
        """changeInvisibilityDuration: the new record (popped now), then the delete of the old key,
        which 5.5.0 makes even when it is the new record's (#10276)."""
        new = PopConsumerRecord(group, topic, queue, offset, self.sim.now, new_invisible_ms, suspend)
        old = record_key(pop_time, invisible_ms, group, topic, queue, offset)
        self._write(new, "change_invisible")
        if new.key != old or change_deletes_new_record(old[0], new.key[0],
                                                        self.b.profile.pop_kv_change_deletes_same_key):
            self.records.pop(old, None)

    def _write(self, rec: PopConsumerRecord, cause: str) -> None:
        self.records[rec.key] = rec
        self.sim.emit("pop_checkpoint_written", group=rec.group, topic=rec.topic, broker=self.b.name,
                      queue=rec.queue, ck_offset=rec.offset, offsets=[rec.offset], pop_time=rec.pop_time,
                      invisible_time=rec.invisible_ms, revive_qid=0, cause=cause, store="kv")

    # ------------------------------------------------------------------ revive
    # with no record the scan only moves its window's end
    @footprint(lambda self: ({("pop", self.b.name, "kv")}, {("pop", self.b.name, "kv_scan")})
               if not self.records else None)
    def revive(self) -> None:
        """PopConsumerService.revive: the records due in the scan window, in key order, each put
        back (reviveRetry); then every record read is deleted."""
        if not self.records:
            self.scan_end = revive_window(self.scan_end, self.sim.now)[1]
            return
        lower, upper = revive_window(self.scan_end, self.sim.now)
        due = sorted(k for k in self.records if lower <= k[0] < upper)
        for k in due:
            self._revive_one(self.records[k])
        for k in due:
            del self.records[k]
        self.scan_end = due[-1][0] if due else upper

    def _revive_one(self, rec: PopConsumerRecord) -> None:
        """revive(record) and reviveRetry: the message read from its queue and copied into the
        group's pop retry topic (queue 0), one more reconsumption unless the record is a suspend's."""
        b, sim = self.b, self.sim
        cq = b.store.consume_queue(rec.topic, rec.queue, create=False)
        stored = cq.messages[rec.offset] if cq is not None and cq.min_offset <= rec.offset < cq.max_offset else None
        if stored is None:
            # the message is gone from the store: "revive no need retry"
            sim.emit("message_revived", group=rec.group, topic=rec.topic, broker=b.name, queue=rec.queue,
                     offset=rec.offset, msg_id="", pop_time=rec.pop_time, outcome="skipped")
            return
        put_back(b, rec.group, rec.topic, rec.queue, rec.offset, rec.pop_time, stored, rec.suspend)
