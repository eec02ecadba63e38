"""RocketMQ's queue allocation strategies (digest section 1, `C/consumer/rebalance/`).

Each strategy answers one question: given every queue of a topic and every consumer id of
the group, which queues does *this* consumer take? Every client runs it independently on
the lists it sees, so the answers only partition the queues when all clients see the same
lists in the same order; `RebalanceImpl` sorts both lists first (`sort_mqs`, `sort_cids`).

Strategies (the names are RocketMQ's `getName()`):
- ``AVG``: contiguous blocks, the first ``n % N`` consumers take one extra queue.
- ``AVG_BY_CIRCLE``: queue ``i`` goes to consumer ``i % N``.
- ``CONSISTENT_HASH``: an MD5 ring with ``virtual_node_cnt`` virtual nodes per consumer.
- ``CONFIG``: a fixed, configured list, whatever the inputs (no argument check; may be None).
- ``MACHINE_ROOM``: only queues whose broker name is ``room@broker`` with ``room`` in
  ``consumeridcs``, spread in blocks plus a round-robin remainder.
- `MachineRoomNearby`: a proxy that applies an inner strategy room by room.

Errors: where RocketMQ throws, `AllocationError` is raised, carrying the Java exception
class and RocketMQ's message (kept identical so traces compare). `RebalanceImpl` catches
anything `allocate` throws and keeps the current assignment.

The strategies are the same on the 4.9.x and 5.x branches (the 4.9.x Averagely indexes
``(start + i) % n``, which never wraps), so nothing here takes a profile. One possible
exception is kept as an explicit option rather than a profile switch: copies of
`AllocateMessageQueueByMachineRoom` that predate the shared check (see `ByMachineRoom`).
"""
from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

from .message_queue import MessageQueue, java_sort_key, java_string, java_utf8

__all__ = [
    "STRATEGIES", "AllocationError", "Strategy", "Averagely", "AveragelyByCircle",
    "ConsistentHash", "ByConfig", "ByMachineRoom", "MachineRoomNearby",
    "make_strategy", "allocate", "allocate_all", "md5_hash", "java_split",
]

STRATEGIES: tuple[str, ...] = ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "CONFIG", "MACHINE_ROOM")

DEFAULT_VIRTUAL_NODE_CNT = 10

ILLEGAL_ARGUMENT = "IllegalArgumentException"
NULL_POINTER = "NullPointerException"


class AllocationError(ValueError):
    """Raised where RocketMQ's strategy throws. `java_exception` names the Java class."""

    def __init__(self, message: str, java_exception: str = ILLEGAL_ARGUMENT):
        super().__init__(message)
        self.java_exception = java_exception


Allocation = list[MessageQueue] | None


def _check(current_cid: str | None, mq_all, cid_all) -> bool:
    """The shared argument check. Raises on an empty current id or an empty/None list;
    returns False (the strategy then gives an empty list) when the current id is not in
    `cid_all`, which RocketMQ logs as "[BUG]"."""
    if not current_cid:
        raise AllocationError("currentCID is empty")
    if not mq_all:
        raise AllocationError("mqAll is null or mqAll empty")
    if not cid_all:
        raise AllocationError("cidAll is null or cidAll empty")
    return current_cid in cid_all


class _Positions(list):
    """A list of consumer ids whose `index` and `in` are dict lookups (first position, as
    list.index finds it), and a `memo` for what one allocate_all computes once."""

    def __init__(self, items):
        super().__init__(items)
        self._first: dict[str, int] = {}
        for i, c in enumerate(self):
            self._first.setdefault(c, i)
        self.memo: dict = {}

    def index(self, value, *args):
        if args:
            return super().index(value, *args)
        try:
            return self._first[value]
        except (KeyError, TypeError):
            raise ValueError(f"{value!r} is not in list") from None

    def __contains__(self, value):
        try:
            return value in self._first
        except TypeError:
            return False


class Strategy(ABC):
    """One allocation strategy. `allocate` answers for one consumer, `allocate_all` for
    every distinct consumer id of `cid_all` (in list order)."""

    name: str = ""

    def allocate(self, current_cid: str, mq_all: Sequence[MessageQueue] | None,
                 cid_all: Sequence[str] | None) -> Allocation:
        if current_cid:
            current_cid = java_string(current_cid)
        if cid_all:
            cid_all = [java_string(c) for c in cid_all]
        if not _check(current_cid, mq_all, cid_all):
            return []
        return self._allocate(current_cid, list(mq_all), list(cid_all))

    @abstractmethod
    def _allocate(self, current_cid: str, mq_all: list[MessageQueue], cid_all: list[str]) -> Allocation:
        """Runs only after the check passed and `current_cid` is in `cid_all`."""

    def allocate_all(self, mq_all: Sequence[MessageQueue] | None,
                     cid_all: Sequence[str] | None) -> dict[str, Allocation]:
        """`allocate` for each distinct id of `cid_all`. With no consumer at all there is
        nobody to ask, so this raises what every call would raise (the check on `cid_all`).

        The lists are converted once and the ids' positions looked up in a dict, so the cost
        is linear in the ids, not quadratic (each `allocate` alone copies and searches them)."""
        if not cid_all:
            raise AllocationError("cidAll is null or cidAll empty")
        if type(self).allocate is not Strategy.allocate:  # a strategy with its own entry checks
            return {cid: self.allocate(cid, mq_all, cid_all) for cid in dict.fromkeys(cid_all)}
        cids = _Positions(java_string(c) for c in cid_all)
        mqs = None if mq_all is None else list(mq_all)
        out = {}
        for cid in dict.fromkeys(cid_all):
            current = java_string(cid) if cid else cid
            out[cid] = self._allocate(current, mqs, cids) if _check(current, mqs, cids) else []
        return out

    def __repr__(self):
        return f"{type(self).__name__}()"


class Averagely(Strategy):
    """``AVG``: consumer ``index`` takes a contiguous block; with ``n`` queues and ``N``
    consumers the first ``n % N`` blocks are one longer. With ``n < N`` consumers at
    ``index >= n`` get nothing."""

    name = "AVG"

    def _allocate(self, current_cid, mq_all, cid_all):
        n, consumers = len(mq_all), len(cid_all)
        index = cid_all.index(current_cid)
        mod = n % consumers
        longer = mod > 0 and index < mod
        size = 1 if n <= consumers else n // consumers + longer
        start = index * size + (0 if longer else mod)
        return mq_all[start:min(start + size, n)]


class AveragelyByCircle(Strategy):
    """``AVG_BY_CIRCLE``: deal the queues out like cards, queue ``i`` to consumer ``i % N``."""

    name = "AVG_BY_CIRCLE"

    def _allocate(self, current_cid, mq_all, cid_all):
        return mq_all[cid_all.index(current_cid)::len(cid_all)]


# ---- consistent hash ---------------------------------------------------------------------

def md5_hash(key: str) -> int:
    """The ring's hash: the first four bytes of MD5(key) as an unsigned big-endian int.

    RocketMQ 5.x hashes the UTF-8 bytes; 4.9.x calls `getBytes()` with the platform
    default charset. We treat both as UTF-8 (the default on the platforms RocketMQ runs on;
    they differ only for non-ASCII ids or topics on a non-UTF-8 JVM)."""
    return int.from_bytes(hashlib.md5(java_utf8(key)).digest()[:4], "big")


class _Ring:
    """`ConsistentHashRouter` with the default MD5 hash, built from scratch for one call.

    Consumers are added in list order; each gets `cnt` virtual nodes named ``cid-i``. When
    a consumer id appears twice, the second addition numbers its nodes after the nodes of
    that id still on the ring (RocketMQ counts the survivors). A later node whose hash
    collides with an earlier one replaces it."""

    def __init__(self, cids: Iterable[str], cnt: int):
        owner: dict[int, str] = {}
        on_ring: Counter[str] = Counter()
        for cid in cids:
            first = on_ring[cid]
            for replica in range(first, first + cnt):
                h = md5_hash(f"{cid}-{replica}")
                previous = owner.get(h)
                if previous is not None:
                    on_ring[previous] -= 1
                owner[h] = cid
                on_ring[cid] += 1
        self.hashes = sorted(owner)
        self.owners = [owner[h] for h in self.hashes]

    def route(self, key: str) -> str | None:
        """The owner of the first node at or after hash(key), wrapping round; None when the
        ring is empty (``virtual_node_cnt == 0``)."""
        if not self.hashes:
            return None
        i = bisect_left(self.hashes, md5_hash(key))
        return self.owners[i % len(self.hashes)]


@lru_cache(maxsize=64)
def _ring(cids: tuple[str, ...], cnt: int) -> _Ring:
    return _Ring(cids, cnt)


class ConsistentHash(Strategy):
    """``CONSISTENT_HASH``: each queue goes to the consumer owning the first ring node at or
    after MD5(queue's Java ``toString()``). Adding or removing a consumer moves only the
    queues that consumer gains or loses."""

    name = "CONSISTENT_HASH"

    def __init__(self, virtual_node_cnt: int = DEFAULT_VIRTUAL_NODE_CNT):
        # RocketMQ rejects this in the strategy's constructor, before any rebalance.
        if virtual_node_cnt < 0:
            raise AllocationError(f"illegal virtualNodeCnt :{virtual_node_cnt}")
        self.virtual_node_cnt = virtual_node_cnt

    def owners(self, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]) -> list[str | None]:
        """The owner of each queue of `mq_all`, in order (None: nobody, on an empty ring)."""
        ring = _ring(tuple(java_string(c) for c in cid_all), self.virtual_node_cnt)
        return [ring.route(mq.java_str()) for mq in mq_all]

    def _allocate(self, current_cid, mq_all, cid_all):
        if isinstance(cid_all, _Positions):  # allocate_all: route every queue once, for every id
            mine = cid_all.memo.get("by_owner")
            if mine is None:
                mine = cid_all.memo["by_owner"] = {}
                for mq, owner in zip(mq_all, self.owners(mq_all, cid_all)):
                    mine.setdefault(owner, []).append(mq)
            return list(mine.get(current_cid, ()))
        return [mq for mq, owner in zip(mq_all, self.owners(mq_all, cid_all)) if owner == current_cid]

    def __repr__(self):
        return f"ConsistentHash(virtual_node_cnt={self.virtual_node_cnt})"


# ---- configured list ---------------------------------------------------------------------

class ByConfig(Strategy):
    """``CONFIG``: returns the configured list itself (possibly None), with no check of
    the arguments and no regard for `mq_all` or `cid_all`."""

    name = "CONFIG"

    def __init__(self, message_queues: list[MessageQueue] | None = None):
        self.message_queues = message_queues

    def allocate(self, current_cid, mq_all, cid_all) -> Allocation:
        return self.message_queues

    def allocate_all(self, mq_all, cid_all) -> dict[str, Allocation]:
        return {cid: self.message_queues for cid in dict.fromkeys(cid_all or ())}

    def _allocate(self, current_cid, mq_all, cid_all):  # never reached
        return self.message_queues

    def __repr__(self):
        return f"ByConfig({self.message_queues!r})"


# ---- machine room ------------------------------------------------------------------------

def java_split(s: str, sep: str) -> list[str]:
    """Java's ``s.split(sep)`` for a literal one-character separator: trailing empty
    strings are dropped (so ``"a@b@"`` has two parts and ``"@"`` none), but a string with
    no separator is returned whole, even when empty."""
    if sep not in s:
        return [s]
    parts = s.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


class ByMachineRoom(Strategy):
    """``MACHINE_ROOM``: keep the queues whose broker name splits on ``@`` into exactly two
    parts with the first in `consumeridcs`; with ``m`` kept queues and ``N`` consumers,
    consumer ``k`` takes ``kept[k*(m//N) : (k+1)*(m//N)]`` plus ``kept[k + (m//N)*N]`` when
    ``k < m % N``. Queues not kept go to nobody.

    RocketMQ holds `consumeridcs` in a field that may be unset: it then fails with a
    NullPointerException, but only on the first queue whose name has two parts.

    `check_args=False` skips the shared argument check (only a missing current id then
    yields an empty list). The stored 5.x source calls the check; older copies of this
    class (before the check was factored into a base class, apache/rocketmq#3940) did not.
    """

    name = "MACHINE_ROOM"

    def __init__(self, consumeridcs: Iterable[str] | None = None, *, check_args: bool = True):
        self.consumeridcs = None if consumeridcs is None else frozenset(map(java_string, consumeridcs))
        self.check_args = check_args

    def allocate(self, current_cid, mq_all, cid_all) -> Allocation:
        if self.check_args:
            return super().allocate(current_cid, mq_all, cid_all)
        if cid_all is None:
            raise AllocationError("cidAll is null", NULL_POINTER)
        cids = [java_string(c) for c in cid_all]
        if current_cid is None or java_string(current_cid) not in cids:
            return []
        if mq_all is None:
            raise AllocationError("mqAll is null", NULL_POINTER)
        return self._allocate(java_string(current_cid), list(mq_all), cids)

    def _in_my_rooms(self, mq: MessageQueue) -> bool:
        parts = java_split(mq.broker_name, "@")
        if len(parts) != 2:
            return False
        if self.consumeridcs is None:
            raise AllocationError("consumeridcs is null", NULL_POINTER)
        return parts[0] in self.consumeridcs

    def _allocate(self, current_cid, mq_all, cid_all):
        index = cid_all.index(current_cid)
        kept = [mq for mq in mq_all if self._in_my_rooms(mq)]
        per, rem = divmod(len(kept), len(cid_all))
        result = kept[index * per:(index + 1) * per]
        if index < rem:
            result.append(kept[index + per * len(cid_all)])
        return result

    def __repr__(self):
        idcs = None if self.consumeridcs is None else sorted(self.consumeridcs)
        return f"ByMachineRoom({idcs!r}, check_args={self.check_args})"


class MachineRoomNearby(Strategy):
    """`AllocateMachineRoomNearby`: a proxy around an inner strategy.

    `broker_room(mq)` and `consumer_room(cid)` name the room of a queue and of a consumer
    (an empty or None answer is an error). The current consumer takes the inner strategy's
    answer for (the queues of its own room, the consumers of its own room); then, for each
    room that has queues but no consumer (rooms in Java String order), the inner answer for
    (that room's queues, all consumers)."""

    def __init__(self, inner: Strategy, broker_room: Callable[[MessageQueue], str | None],
                 consumer_room: Callable[[str], str | None]):
        if inner is None:
            raise TypeError("inner strategy is None")
        if broker_room is None or consumer_room is None:
            raise TypeError("machine room resolver is None")
        self.inner = inner
        self.broker_room = broker_room
        self.consumer_room = consumer_room

    @property
    def name(self) -> str:
        return f"MACHINE_ROOM_NEARBY-{self.inner.name}"

    def _allocate(self, current_cid, mq_all, cid_all):
        queues_by_room: dict[str, list[MessageQueue]] = {}
        for mq in mq_all:
            room = self.broker_room(mq)
            if not room:
                raise AllocationError(f"Machine room is null for mq {mq.java_str()}")
            queues_by_room.setdefault(room, []).append(mq)
        consumers_by_room: dict[str, list[str]] = {}
        for cid in cid_all:
            room = self.consumer_room(cid)
            if not room:
                raise AllocationError(f"Machine room is null for consumer id {cid}")
            consumers_by_room.setdefault(room, []).append(cid)

        result: list[MessageQueue] = []

        def take(queues, consumers):
            got = self.inner.allocate(current_cid, queues, consumers)
            if got is None:  # Java's addAll(null)
                raise AllocationError("inner strategy returned null", NULL_POINTER)
            result.extend(got)

        my_room = self.consumer_room(current_cid)
        mine = queues_by_room.pop(my_room, None)
        if mine:
            take(mine, consumers_by_room.get(my_room))
        for room in sorted(queues_by_room, key=java_sort_key):
            if room not in consumers_by_room:
                take(queues_by_room[room], cid_all)
        return result

    def __repr__(self):
        return f"MachineRoomNearby({self.inner!r})"


# ---- the entry point ---------------------------------------------------------------------

def make_strategy(strategy: str, *, virtual_node_cnt: int = DEFAULT_VIRTUAL_NODE_CNT,
                  config_mqs: list[MessageQueue] | None = None,
                  consumeridcs: Iterable[str] | None = None) -> Strategy:
    """The strategy named `strategy` (one of `STRATEGIES`), configured by the keyword
    arguments that apply to it (the others are ignored). Raises `AllocationError` for a
    negative `virtual_node_cnt` with CONSISTENT_HASH, ValueError for an unknown name."""
    if strategy == "AVG":
        return Averagely()
    if strategy == "AVG_BY_CIRCLE":
        return AveragelyByCircle()
    if strategy == "CONSISTENT_HASH":
        return ConsistentHash(virtual_node_cnt)
    if strategy == "CONFIG":
        return ByConfig(config_mqs)
    if strategy == "MACHINE_ROOM":
        return ByMachineRoom(consumeridcs)
    raise ValueError(f"unknown allocation strategy {strategy!r}; known: {', '.join(STRATEGIES)}")


def allocate(strategy: str, current_cid: str, mq_all: list[MessageQueue], cid_all: list[str], *,
             virtual_node_cnt: int = DEFAULT_VIRTUAL_NODE_CNT, config_mqs=None,
             consumeridcs=None) -> list[MessageQueue] | None:
    """The queues `current_cid` takes under `strategy`, from `mq_all` and `cid_all` as given
    (sort them first with `sort_mqs`/`sort_cids` to match `RebalanceImpl`).

    Raises `AllocationError` where RocketMQ throws: empty current id, None or empty lists
    (not CONFIG), negative `virtual_node_cnt`, MACHINE_ROOM without `consumeridcs`. Returns
    [] when `current_cid` is not in `cid_all`; CONFIG returns `config_mqs` itself."""
    return make_strategy(strategy, virtual_node_cnt=virtual_node_cnt, config_mqs=config_mqs,
                         consumeridcs=consumeridcs).allocate(current_cid, mq_all, cid_all)


def allocate_all(strategy: str, mq_all: list[MessageQueue], cid_all: list[str], *,
                 virtual_node_cnt: int = DEFAULT_VIRTUAL_NODE_CNT, config_mqs=None,
                 consumeridcs=None) -> dict[str, list[MessageQueue] | None]:
    """`allocate` for every distinct consumer id of `cid_all`, keyed by id in list order."""
    return make_strategy(strategy, virtual_node_cnt=virtual_node_cnt, config_mqs=config_mqs,
                         consumeridcs=consumeridcs).allocate_all(mq_all, cid_all)
