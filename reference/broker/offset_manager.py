"""ConsumerOffsetManager: the broker's committed offsets per (topic@group, queue).

Commits overwrite (a smaller value only logs); the table is flushed to "disk" every
flushConsumerOffsetInterval and a restart reloads the last flush, so commits made after it
are lost (digest section 8).
"""
from __future__ import annotations

from ..footprint import footprint


class ConsumerOffsetManager:
    def __init__(self, broker):
        self.broker = broker
        self.table: dict[tuple[str, str, int], int] = {}      # (group, topic, queue) -> offset
        self.flushed: dict[tuple[str, str, int], int] = {}    # what is on disk

    def commit(self, group: str, topic: str, queue: int, offset: int, *, client=None, source="persist") -> None:
        key = (group, topic, queue)
        previous = self.table.get(key)
        self.table[key] = offset  # overwrite, not max: a late persist can move it back
        self.broker.sim.emit("offset_committed", broker=self.broker.name, group=group, topic=topic, queue=queue,
                             offset=offset, previous=previous, client=client, source=source)

    def query(self, group: str, topic: str, queue: int) -> int:
        return self.table.get((group, topic, queue), -1)

    @footprint(lambda self: ({("offsets", self.broker.name)}, {("offsets_disk", self.broker.name)}))
    def flush(self) -> None:
        emit = self.broker.sim.emit
        for key, off in self.table.items():
            if self.flushed.get(key) != off:
                self.flushed[key] = off
                group, topic, queue = key
                emit("offset_flushed", group=group, topic=topic, broker=self.broker.name, queue=queue,
                     offset=off, store="broker")

    def reload(self) -> None:
        self.table = dict(self.flushed)
        emit = self.broker.sim.emit
        for (group, topic, queue), off in sorted(self.table.items()):
            emit("offset_loaded", group=group, topic=topic, broker=self.broker.name, queue=queue,
                 offset=off, store="broker")
