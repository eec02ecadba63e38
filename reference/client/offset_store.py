"""Client offset stores (digest section 8).

RemoteBrokerOffsetStore (clustering): an in-memory table per queue, raised only on
consumption (increaseOnly) or set (orderly commit, reset), persisted to the broker by
one-way calls. In 5.x an entry can be frozen (updateAndFreeze on OFFSET_ILLEGAL) until it is
removed. LocalFileOffsetStore (broadcasting): the same table, persisted to a file that
outlives the process.
"""
from __future__ import annotations

from ..broker.broker import BrokerUnavailable

READ_FROM_MEMORY = "memory"
READ_FROM_STORE = "store"
MEMORY_FIRST_THEN_STORE = "memory_first"


class OffsetQueryError(Exception):
    """A queryConsumerOffset that failed for another reason than 'not found'."""


class _Entry:
    __slots__ = ("value", "frozen")

    def __init__(self, value: int):
        self.value = value
        self.frozen = False


class OffsetStore:
    kind = "remote"

    def __init__(self, consumer):
        self.consumer = consumer
        self.sim = consumer.sim
        self.profile = consumer.profile
        self.table: dict = {}    # mq -> _Entry

    def _emit(self, kind, mq, **fields):
        self.consumer.emit_pq(kind, mq, **fields)

    def update_offset(self, mq, offset: int, increase_only: bool) -> None:
        entry = self.table.get(mq)
        if entry is None:
            entry = self.table[mq] = _Entry(offset)
        elif not entry.frozen:
            if increase_only:
                if offset > entry.value:
                    entry.value = offset
            else:
                entry.value = offset
        if entry.frozen:
            self._emit("offset_updated", mq, offset=offset, increase_only=increase_only, stored=entry.value,
                       frozen=True, store=self.kind)
        else:
            self._emit("offset_updated", mq, offset=offset, increase_only=increase_only, stored=entry.value,
                       store=self.kind)

    def update_and_freeze(self, mq, offset: int) -> None:
        """5.x ControllableOffset: set and ignore further updates until removeOffset."""
        entry = self.table.setdefault(mq, _Entry(offset))
        entry.value = offset
        entry.frozen = True
        self._emit("offset_updated", mq, offset=offset, increase_only=False, stored=offset, frozen=True,
                   store=self.kind)

    def read_memory(self, mq) -> int:
        entry = self.table.get(mq)
        return entry.value if entry is not None else -1

    def remove_offset(self, mq) -> None:
        if self.table.pop(mq, None) is not None:
            self._emit("offset_removed", mq, store=self.kind)

    def read_offset(self, mq, source: str) -> int:
        if source == READ_FROM_MEMORY:
            value = self.read_memory(mq)
        elif source == MEMORY_FIRST_THEN_STORE and mq in self.table:
            value = self.read_memory(mq)
        else:
            value = self._read_store(mq)
            source = READ_FROM_STORE
        self._emit("offset_read", mq, offset=value, source=source)
        return value


class RemoteBrokerOffsetStore(OffsetStore):
    kind = "remote"

    def _read_store(self, mq) -> int:
        """-1: the broker has no offset (QUERY_NOT_FOUND); -2: the query failed otherwise."""
        topic, broker, queue = mq
        p = self.profile
        failure = self.consumer.faults.take_offset_query_failure(self.consumer.client_id, self.consumer.sim.chooser)
        try:
            if failure is not None:
                raise OffsetQueryError(f"queryConsumerOffset failed ({failure})")
            self.consumer.net.deliver_persists(self.consumer, broker)   # same channel: they arrive first
            value = self.consumer.net.request(self.consumer, broker).query_consumer_offset(self.consumer.group, topic, queue)
        except (OffsetQueryError, BrokerUnavailable):
            if p.offset_query_failure_as_not_found:
                return -1        # before 4.9.1 (#2708): any failure reads as "no offset"
            if failure == "broker_error" and p.read_offset_broker_exception_is_not_found:
                return -1        # 4.9.x residual: any MQBrokerException reads as "no offset"
            return -2
        if value is None:
            return -1
        self.update_offset(mq, value, increase_only=False)
        return value

    def persist(self, mq, reason: str = "persist") -> None:
        entry = self.table.get(mq)
        if entry is None:
            return
        self.consumer.net.oneway_update_offset(self.consumer, mq, entry.value, reason)

    def persist_all(self, mqs) -> None:
        """Persist every queue in mqs; entries for other queues are dropped from the table."""
        for mq in sorted(self.table):
            if mq in mqs:
                self.persist(mq, "persist_all")
        for mq in [m for m in self.table if m not in mqs]:
            self.remove_offset(mq)


class LocalFileOffsetStore(OffsetStore):
    """Broadcasting: offsets in ~/.rocketmq_offsets/<clientId>/<group>/offsets.json.

    `disk` is that file's content, owned by the run so that it outlives a crash or restart."""

    kind = "local"

    def __init__(self, consumer, disk: dict):
        super().__init__(consumer)
        self.disk = disk

    def _read_store(self, mq) -> int:
        value = self.disk.get(mq)
        if value is None:
            return -1
        self.update_offset(mq, value, increase_only=False)
        return value

    def persist(self, mq, reason: str = "persist") -> None:
        # Before #7740 persist(mq) was an empty method: only persistAll wrote the file, so a queue
        # removed by rebalance left its last offset unwritten. Since, it merges the entry in.
        if not self.profile.local_offset_persist_merges:
            return
        entry = self.table.get(mq)
        if entry is not None:
            self._write(mq, entry.value)

    def _write(self, mq, value) -> None:
        if self.disk.get(mq) != value:
            self.disk[mq] = value
            topic, broker, queue = mq
            self.sim.emit("offset_flushed", group=self.consumer.group, topic=topic, broker=broker, queue=queue,
                          offset=value, store="local", client=self.consumer.client_id)

    def persist_all(self, mqs) -> None:
        """Write the entries of the queues in mqs. Since #7740 they are merged into the file;
        before, the file was rewritten with those entries only (the others erased)."""
        for mq in sorted(self.table):
            if mq in mqs:
                self._write(mq, self.table[mq].value)
        if not self.profile.local_offset_persist_merges:
            for mq in sorted(m for m in self.disk if m not in mqs):
                del self.disk[mq]
                topic, broker, queue = mq
                self.sim.emit("offset_erased", group=self.consumer.group, topic=topic, broker=broker, queue=queue,
                              store="local", client=self.consumer.client_id)
