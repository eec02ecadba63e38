"""RebalanceLockManager: the broker's orderly-queue lock table (digest section 4).

One entry per (group, queue): the holder and the time it was last locked or renewed. An
entry is expired when now - last_update > lifetime (strict: at exactly `lifetime` ms it is
still held). A lock by the holder, or `is_locked` by the holder, refreshes the entry; anyone
may take over an expired entry; unlock removes an entry only for its holder and never looks
at expiry. There is no unlock when a client's channel closes: locks only expire.

Batch locking works as in the broker: first a pass that only renews the caller's own live
entries, then, for the rest, create / renew / take over / reject one queue at a time. The
result is the set of queues the caller now holds; queues held by others are simply left out.

Events (broker view): `lock_acquired{reason new|renewed|takeover}`, `lock_rejected`,
`lock_expired` (an entry found expired when someone locks it, emitted just before the
`lock_acquired` that replaces it: takeover by another client, or re-lock by the same client,
which is then reported as `renewed`), `lock_released`, `lock_release_ignored` (unlock by a
non-owner, or of a queue that has no entry: `holder` is then absent).
`lockInStrictMode` (5.x quorum locking across replicas) is not modelled: one broker, one table.
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

    # ------------------------------------------------------------------ predicates
    def _expired(self, entry: LockEntry, now: int) -> bool:
        return now - entry.last_update > self.lifetime_ms

    def _held_by(self, entry: LockEntry, client: str, now: int) -> bool:
        return entry.client == client and not self._expired(entry, now)

    def _emit(self, kind, group, mq, **fields):
        self.broker.sim.emit(kind, broker=self.broker.name, group=group, topic=mq[0], queue=mq[1], **fields)

    def holder(self, group: str, mq: tuple[str, int]) -> str | None:
        """The client whose entry is live now, or None (for tests and teaching; no refresh)."""
        entry = self.table.get(group, {}).get(mq)
        if entry is None or self._expired(entry, self.broker.sim.now):
            return None
        return entry.client

    def is_locked(self, group: str, mq: tuple[str, int], client: str) -> bool:
        """Holder check; refreshes the entry when true (the fast path of tryLock)."""
        now = self.broker.sim.now
        entry = self.table.get(group, {}).get(mq)
        if entry is not None and self._held_by(entry, client, now):
            entry.last_update = now
            return True
        return False

    # ------------------------------------------------------------------ locking
    def _renewed(self, group, mq, client) -> None:
        now = self.broker.sim.now
        self._emit("lock_acquired", group, mq, client=client, reason="renewed",
                   expires_at=now + self.lifetime_ms, previous_holder=client)

    def _lock_slow(self, group: str, mq: tuple[str, int], client: str) -> bool:
        """The part of tryLock that runs under the manager's global lock."""
        now = self.broker.sim.now
        entries = self.table.setdefault(group, {})
        entry = entries.get(mq)
        if entry is None:
            entries[mq] = LockEntry(client, now)
            self._emit("lock_acquired", group, mq, client=client, reason="new", expires_at=now + self.lifetime_ms)
            return True
        if self._held_by(entry, client, now):
            entry.last_update = now
            self._renewed(group, mq, client)
            return True
        if self._expired(entry, now):
            previous = entry.client
            self._emit("lock_expired", group, mq, holder=previous)
            entry.client, entry.last_update = client, now
            if previous == client:
                self._renewed(group, mq, client)
            else:
                self._emit("lock_acquired", group, mq, client=client, reason="takeover",
                           expires_at=now + self.lifetime_ms, previous_holder=previous)
            return True
        self._emit("lock_rejected", group, mq, client=client, holder=entry.client)
        return False

    def try_lock(self, group: str, mq: tuple[str, int], client: str) -> bool:
        if self.is_locked(group, mq, client):
            self._renewed(group, mq, client)
            return True
        return self._lock_slow(group, mq, client)

    def try_lock_batch(self, group: str, mqs: list[tuple[str, int]], client: str) -> set:
        locked, rest = set(), []
        for mq in dict.fromkeys(mqs):     # the request carries a Set<MessageQueue>
            if self.is_locked(group, mq, client):
                self._renewed(group, mq, client)
                locked.add(mq)
            else:
                rest.append(mq)
        for mq in rest:
            if self._lock_slow(group, mq, client):
                locked.add(mq)
        return locked

    def unlock_batch(self, group: str, mqs: list[tuple[str, int]], client: str) -> None:
        entries = self.table.get(group, {})
        for mq in dict.fromkeys(mqs):     # a Set<MessageQueue>, as in the request
            entry = entries.get(mq)
            if entry is None:
                self._emit("lock_release_ignored", group, mq, client=client)
            elif entry.client == client:
                del entries[mq]
                self._emit("lock_released", group, mq, client=client)
            else:
                self._emit("lock_release_ignored", group, mq, client=client, holder=entry.client)

    def is_lock_all_expired(self, group: str) -> bool:
        """5.x: true when the group has no entry or every entry is expired (no refresh)."""
        now = self.broker.sim.now
        return all(self._expired(e, now) for e in self.table.get(group, {}).values())

    def clear(self) -> None:
        self.table.clear()
