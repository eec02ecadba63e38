"""RebalanceLockManager: the broker's orderly-queue lock table (digest section 4).

One entry per (group, queue): the holder and the time it last locked. An entry is expired
when now - last_update > lifetime (strict). A lock by the holder, or `is_locked` by the
holder, refreshes it; anyone may take over an expired entry; unlock removes an entry only
for its holder and never looks at expiry. No unlock on disconnect: locks only expire.
"""
from __future__ import annotations


class LockEntry:
    __slots__ = ("client", "last_update")

    def __init__(self, client: str, last_update: int):
        self.client = client
        self.last_update = last_update


class RebalanceLockManager:
    def __init__(self, broker, lifetime_ms: int):
        self.broker = broker
        self.lifetime_ms = lifetime_ms
        self.table: dict[str, dict[tuple[str, int], LockEntry]] = {}

    def _expired(self, entry: LockEntry, now: int) -> bool:
        return now - entry.last_update > self.lifetime_ms

    def _emit(self, kind, group, mq, **fields):
        self.broker.sim.emit(kind, broker=self.broker.name, group=group, topic=mq[0], queue=mq[1], **fields)

    def is_locked(self, group: str, mq: tuple[str, int], client: str) -> bool:
        """Holder check; refreshes the entry when true (the fast path of tryLock)."""
        now = self.broker.sim.now
        entry = self.table.get(group, {}).get(mq)
        if entry is not None and entry.client == client and not self._expired(entry, now):
            entry.last_update = now
            return True
        return False

    def try_lock(self, group: str, mq: tuple[str, int], client: str) -> bool:
        now = self.broker.sim.now
        if self.is_locked(group, mq, client):
            self._emit("lock_acquired", group, mq, client=client, reason="renewed",
                       expires_at=now + self.lifetime_ms, previous_holder=client)
            return True
        entries = self.table.setdefault(group, {})
        entry = entries.get(mq)
        if entry is None:
            entries[mq] = LockEntry(client, now)
            self._emit("lock_acquired", group, mq, client=client, reason="new", expires_at=now + self.lifetime_ms)
            return True
        if entry.client == client:  # held by us but expired: refresh
            entry.last_update = now
            self._emit("lock_acquired", group, mq, client=client, reason="renewed",
                       expires_at=now + self.lifetime_ms, previous_holder=client)
            return True
        if self._expired(entry, now):
            previous = entry.client
            self._emit("lock_expired", group, mq, holder=previous)
            entry.client, entry.last_update = client, now
            self._emit("lock_acquired", group, mq, client=client, reason="takeover",
                       expires_at=now + self.lifetime_ms, previous_holder=previous)
            return True
        self._emit("lock_rejected", group, mq, client=client, holder=entry.client)
        return False

    def try_lock_batch(self, group: str, mqs: list[tuple[str, int]], client: str) -> set:
        return {mq for mq in mqs if self.try_lock(group, mq, client)}

    def unlock_batch(self, group: str, mqs: list[tuple[str, int]], client: str) -> None:
        entries = self.table.get(group, {})
        for mq in mqs:
            entry = entries.get(mq)
            if entry is None:
                continue
            if entry.client == client:
                del entries[mq]
                self._emit("lock_released", group, mq, client=client)
            else:
                self._emit("lock_release_ignored", group, mq, client=client, holder=entry.client)

    def is_lock_all_expired(self, group: str) -> bool:
        now = self.broker.sim.now
        return all(self._expired(e, now) for e in self.table.get(group, {}).values())

    def clear(self) -> None:
        self.table.clear()
