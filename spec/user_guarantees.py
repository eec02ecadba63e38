"""The user guarantees: what a RocketMQ consumer group's user is promised, each with a stable id.

Stated here once. The spec checks each at two levels, and both refer to it by id:
- the white-box invariants (spec/invariants.py): an invariant that protects a guarantee names it
  (`Invariant.protects`); its reports say which guarantee a violation loses (`statement`);
- the black-box history guarantees (spec/history/guarantees.py, H-...): each is the check of one
  user guarantee from produce and consume records alone (`Guarantee.user_guarantee`).

SPEC.md's table of them, with the invariants and history guarantees that check each, is generated
from here (`spec/docgen.py`). Ids are stable; add new ones, never reuse.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class UserGuarantee:
    id: str
    statement: str      # the user-facing sentence reports print as the guarantee lost


CATALOGUE: tuple[UserGuarantee, ...] = (
    UserGuarantee("G-DELIVER", "at-least-once: every message a subscribed group should consume is consumed"),
    UserGuarantee("G-RETRY-LIMIT", "a failing message is retried at most maxReconsumeTimes times before the DLQ"),
    UserGuarantee("G-ONE-RETRY", "a failed delivery yields one retry copy"),
    UserGuarantee("G-DLQ", "a message whose retries are exhausted lands in the DLQ at once"),
    UserGuarantee("G-ORDER-EXCLUSIVE", "orderly: one consumer at a time inside a queue"),
    UserGuarantee("G-ORDER", "orderly: messages of one queue (or sharding key) are delivered in order"),
    UserGuarantee("G-ORDER-PROGRESS", "orderly: a queue's next messages go to the consumer that asks for them, not "
                  "held for a receive that never reached it"),
    UserGuarantee("G-ORDER-NO-REPLAY", "orderly: a consumed and committed message is not consumed again"),
    UserGuarantee("G-NO-DUP-WITHOUT-CAUSE", "a consumed message comes again only for a reason (a fault, a "
                  "membership change, an operator reset)"),
)

BY_ID: dict[str, UserGuarantee] = {g.id: g for g in CATALOGUE}


def statement(gid: str) -> str:
    """The statement of guarantee `gid` (a KeyError names a stale id)."""
    return BY_ID[gid].statement
