"""The assumption catalogue: what the spec's guarantees take for granted about the environment.

Each assumption is stated here once, with a stable id (A-...). The invariants that rest on one
cite it (`cite`: its id and statement, in the invariant's assumptions text), a report of the spec
whose cause is a broken assumption names it (`ref`), and the conformance state machine's guards
(`conformance/statemachine.py`, the `_..._allowed` methods) each name the one they keep, so that
with `respect_assumptions` a finding is a fault of the reference. SPEC.md's table of them is
generated from here (`spec/docgen.py`).

When an assumption breaks, real RocketMQ loses the guarantee: the spec still reports the loss,
as an error whose message names the assumption. Ids are stable; add new ones, never reuse.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# How an assumption's id is written in code and prose: A- and upper-case words.
ID_PATTERN = re.compile(r"(?<![\w-])A-[A-Z]{2,}(?:-[A-Z]{2,})*(?![\w-])")


@dataclass(frozen=True)
class Assumption:
    id: str
    statement: str      # what is taken for granted (the invariants cite it verbatim)
    why: str            # why RocketMQ needs it: the mechanism that relies on it
    without: str        # what breaks when it does not hold
    source: str         # the RocketMQ code or documentation it comes from


CATALOGUE: tuple[Assumption, ...] = (
    Assumption(
        "A-LEASE-MARGIN",
        "every listener call (including any pause of its client) is shorter than broker lock lifetime - "
        "client lease (60 s - 30 s by default; each from the trace's configuration)",
        "An orderly client checks its lease only between batches: a client whose lease expired stops before "
        "the next batch, and the broker lets nobody else take the lock until its own, longer, lifetime has "
        "passed. The difference of the two is the time a running batch has to finish.",
        "A call (or a GC pause, a SIGSTOP) that outlives the margin is still running when another client "
        "locks the queue and consumes it: two consumers inside one orderly queue (INV-ORDER-1), and a stale "
        "persist when the first thaws that moves the committed offset back (INV-ORDER-3).",
        "ConsumeMessageOrderlyService.ConsumeRequest.run (isLockExpired between batches), "
        "ProcessQueue.REBALANCE_LOCK_MAX_LIVE_TIME (30 s), RebalanceLockManager.REBALANCE_LOCK_MAX_LIVE_TIME "
        "(60 s); docs/rocketmq-facts.md sections 4 and 6."),
    Assumption(
        "A-BROKER-LOCKS",
        "the broker did not restart since the client's last lock",
        "The broker's lock table is what keeps a second client off an orderly queue while the first one's "
        "lease is valid; it lives in memory only.",
        "A restart forgets the lock table while the clients' leases stay valid: until the next lockAll "
        "another client can lock the queue and consume it beside the lease holder (INV-OWNER-2, "
        "ANOM-LOCK-GAP).",
        "RebalanceLockManager.mqLockTable (not persisted), RebalanceImpl.lockAll every 20 s; "
        "docs/rocketmq-facts.md section 4."),
    Assumption(
        "A-OFFSET-ENTRY",
        "a unit stops or loses a queue only once its offset table has an entry for it",
        "A consumer persists only the entries of its offset table, and a queue gets an entry only from an "
        "offset update (the first consumed batch, correctTagsOffset when a pull finds nothing new, a store "
        "read, a reset); a restart with no offset is a first start.",
        "A consumer that stops (or gives the queue up) sooner leaves no offset behind; its restart starts at "
        "consumeFromWhere as on a first start and, at LAST, skips what was stored meanwhile (INV-LOSS-1). A "
        "broadcasting consumer is exposed in particular: its offsets file has no broker answering 0 (#334).",
        "RemoteBrokerOffsetStore / LocalFileOffsetStore.persistAll and readOffset, "
        "RebalancePushImpl.computePullFromWhereWithException, DefaultMQPushConsumerImpl.correctTagsOffset."),
    Assumption(
        "A-LAST-FIRST-REBALANCE",
        "a consumer's first start at CONSUME_FROM_LAST_OFFSET is sent what it must get only after its first "
        "rebalance",
        "With no stored offset a queue's first offset is its maxOffset as the first rebalance reads it, and "
        "start() only wakes that rebalance on the RebalanceService thread (every release: apache/rocketmq#9281, "
        "open).",
        "What is stored after start() returned and before that read is skipped: the application started its "
        "consumer and then lost what it produced (INV-LOSS-1 naming #9281).",
        "DefaultMQPushConsumerImpl.start (rebalanceImmediately last), RebalanceService.run, "
        "RebalancePushImpl.computePullFromWhereWithException (4.9.8, 5.5.0)."),
)

BY_ID: dict[str, Assumption] = {a.id: a for a in CATALOGUE}


def ref(aid: str) -> str:
    """The id of assumption `aid`, checked against the catalogue (a KeyError names a stale id)."""
    return BY_ID[aid].id


def ids_in(text: str) -> list[str]:
    """The assumption ids `text` names, in order, each once (unknown ones included)."""
    return list(dict.fromkeys(ID_PATTERN.findall(text)))


def keeps(aid: str):
    """Marks a guard of the conformance state machine as the one that keeps assumption `aid`
    (`guard.keeps`); the guard itself is returned unchanged."""
    a = BY_ID[aid]

    def mark(guard):
        guard.keeps = a.id
        return guard
    return mark


def cite(aid: str) -> str:
    """`aid` with its statement, as an invariant's assumptions text opens with it."""
    return f"{aid}: {BY_ID[aid].statement}"
