"""The allocation strategies as the spec states them (digest section 1), independent of the
reference's implementation so that INV-ALLOC-1 compares two readings of the source.

A queue is a tuple (topic, broker, queue_id); a view is (mqs, cids) in the order given to the
strategy. Functions return the list of queues allocated to `cid`, or None when the spec does
not fix the result (CONFIG, MACHINE_ROOM and unknown strategies).
"""
from __future__ import annotations

import bisect
import hashlib
from functools import lru_cache

TOTAL_STRATEGIES = frozenset({"AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH"})


def java_string_key(s: str) -> bytes:
    """Sort key equal to Java String.compareTo (UTF-16 code units)."""
    return s.encode("utf-16-be", "surrogatepass")


def mq_sort_key(mq) -> tuple:
    return (java_string_key(mq[0]), java_string_key(mq[1]), mq[2])


def is_sorted_view(mqs, cids) -> bool:
    keys = [mq_sort_key(m) for m in mqs]
    ck = [java_string_key(c) for c in cids]
    return keys == sorted(keys) and ck == sorted(ck)


def averagely(mqs, cids, cid):
    if cid not in cids:
        return []
    n, N = len(mqs), len(cids)
    index = cids.index(cid)
    mod = n % N
    if n <= N:
        average = 1
    elif mod > 0 and index < mod:
        average = n // N + 1
    else:
        average = n // N
    start = index * average if (mod > 0 and index < mod) else index * average + mod
    rng = min(average, n - start)
    return [mqs[(start + i) % n] for i in range(max(rng, 0))]


def averagely_by_circle(mqs, cids, cid):
    if cid not in cids:
        return []
    index, N = cids.index(cid), len(cids)
    return [mq for i, mq in enumerate(mqs) if i % N == index]


def _md5_32(s: str) -> int:
    d = hashlib.md5(s.encode("utf-8")).digest()
    return int.from_bytes(d[:4], "big")


@lru_cache(maxsize=256)
def _ring(cids: tuple, virtual_nodes: int):
    """ConsistentHashRouter's ring: each id in list order adds its virtual nodes `id-k`, k counted
    on from the nodes of that id already on the ring (addNode's getExistingReplicas), so an id the
    broker lists twice (one per channel) holds twice the nodes; a later node on an equal hash
    replaces the earlier (TreeMap.put)."""
    ring: dict[int, str] = {}
    for c in cids:
        first = sum(1 for owner in ring.values() if owner == c)
        for i in range(first, first + virtual_nodes):
            ring[_md5_32(f"{c}-{i}")] = c
    keys = sorted(ring)
    return keys, [ring[k] for k in keys]


def mq_to_string(mq) -> str:
    return f"MessageQueue [topic={mq[0]}, brokerName={mq[1]}, queueId={mq[2]}]"


def consistent_hash(mqs, cids, cid, virtual_nodes: int = 10):
    if cid not in cids:
        return []
    keys, owners = _ring(tuple(cids), virtual_nodes)
    if not keys:
        return []
    out = []
    for mq in mqs:
        i = bisect.bisect_left(keys, _md5_32(mq_to_string(mq)))
        if owners[i if i < len(keys) else 0] == cid:
            out.append(mq)
    return out


STRATEGIES = {"AVG": averagely, "AVG_BY_CIRCLE": averagely_by_circle, "CONSISTENT_HASH": consistent_hash}


def expected_allocation(strategy: str, mqs, cids, cid):
    fn = STRATEGIES.get(strategy)
    if fn is None or not mqs or not cids:
        return None
    return fn(mqs, cids, cid)
