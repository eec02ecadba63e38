"""Observation levels: which rules a trace can be judged on, given the sides it observed.

A trace declares what it observed (`trace_started.observed`, schema v2): the broker side (the
broker's tables and answers), the client's reports (what its application saw: its start and stop,
each listener call; kills, pauses and resumes), the client's internals (ProcessQueues, pulls, its
offset store, send-backs, allocation, lock leases). A whole recording or a reference run observes
all three, and a trace that says nothing is taken as one.

Each rule (an invariant id, or GUARD: the guards of the actions) needs some event kinds: those
whose events set up the state its checks compare the violating event against. Without them a
check sees an empty table where the real one held something, and reports what only the missing
events would have explained (a listener call "from a queue it has no ProcessQueue for"). So a rule
is judged only when every side its needed kinds belong to is observed; otherwise its findings are
not reported, and `check` lists it as not judged, with the side it lacks.

NEEDS is read from the actions (spec/actions/): for each rule, the kinds whose handlers write the
state its checks read. A kind where a rule is only *reported* and that sets up nothing it reads is
not a need: leaving it out can hide a violation, not invent one. tests/test_observation_levels.py
holds the table to the real recordings: a level's cut never reports an error the whole recording
does not have.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..traces.kinds import KINDS
from ..traces.schema import OBSERVED_SIDES
from . import invariants as _inv

BROKER, REPORTS, INTERNALS = OBSERVED_SIDES
ALL = frozenset(OBSERVED_SIDES)

# What a client's application sees: the driver protocol's reports (docs/driver-protocol.md), and
# the kill, pause and resume whoever drives the client writes
REPORT_KINDS = frozenset({"client_started", "client_start_returned", "client_stopped", "client_crashed", "client_paused", "client_resumed",
                          "consume_started", "consume_finished"})
# Kinds whose registry actor is not the side that observes them: a pull answer is the client's
# processing of it (PullCallback), written by whoever watches the client
_SIDE_OVERRIDES = {"pull_answered": INTERNALS}
META_KINDS = frozenset({"trace_started", "trace_ended"})
_SIDE_BY_ACTOR = {"broker": BROKER, "client": INTERNALS, "operator": BROKER, "recorder": BROKER, "network": BROKER}


def side_of(ev: dict) -> str | None:
    """The side an event belongs to (None: trace_started and trace_ended, on every level). An
    offset store's flush, erase or load is the broker's when its `store` is the broker's."""
    kind = ev["kind"]
    if kind in META_KINDS:
        return None
    if kind in REPORT_KINDS:
        return REPORTS
    if kind in _SIDE_OVERRIDES:
        return _SIDE_OVERRIDES[kind]
    actor = KINDS[kind].actor if kind in KINDS else "client"
    if actor == "broker or client":
        return BROKER if ev.get("store") == "broker" else INTERNALS
    return _SIDE_BY_ACTOR.get(actor, INTERNALS)


def kind_side(kind: str) -> str | None:
    """The side of a kind (the broker's for the offset-store kinds of either side)."""
    return side_of({"kind": kind, "store": "broker"})


# The kinds each rule needs (see the module's docstring). Grouped by the state they set up:
_PQ = ("pq_created", "pq_dropped", "pq_removed")              # the client's ProcessQueue table
_PULLS = ("pull_issued", "pull_answered", "pull_failed")      # a ProcessQueue's messages and next offset
_CALLS = ("consume_started", "consume_finished")              # listener calls in flight
_LOCKS = ("lock_requested", "lock_acquired", "lock_rejected", "lock_released", "lock_release_ignored")
_SENDBACK = ("send_back_requested", "message_sent_back")      # a retry chain's open send-back
_STORE = ("message_stored",)                                  # the broker's queues
_COMMITS = ("offset_committed",)                              # the broker's offset table
_CLIENTS = ("client_started", "client_stopped", "client_crashed", "client_paused", "client_resumed")

_POP = ("message_stored", "message_popped", "message_acked", "invisible_time_changed", "message_revived",
        "pop_dead_lettered")
NEEDS: dict[str, tuple[str, ...]] = {
    "INV-OWNER-1": ("allocation_computed",),
    "INV-ALLOC-1": ("allocation_computed",),
    "INV-ALLOC-2": ("allocation_computed", *_PQ),
    "INV-LOCK-1": _LOCKS,                       # a grant is judged against the request the client sent
    "INV-OWNER-2": (*_CALLS, *_PQ, "pq_lock_changed", *_LOCKS),
    "INV-ORDER-1": (*_CALLS, *_PQ, *_CLIENTS),  # a call without its ProcessQueue is refused, not registered
    "INV-ORDER-2": (*_CALLS, *_PQ, *_PULLS),
    "INV-ORDER-3": (*_COMMITS, "offset_updated", "offset_persisted", *_CALLS, *_PQ),
    "INV-PQ-1": (*_PQ, *_PULLS, *_CALLS),
    "INV-OFFSET-1": ("offset_updated", "offset_persisted", *_COMMITS, *_PQ, *_PULLS, *_CALLS),
    "INV-OFFSET-2": ("offset_updated", *_PQ),
    "INV-OFFSET-3": ("offset_updated", *_COMMITS, *_STORE, *_PQ, *_PULLS, *_CALLS, *_SENDBACK),
    "INV-START-1": ("offset_read", *_COMMITS, *_PQ, "pull_issued"),
    "INV-PULL-1": (*_PQ, *_PULLS),
    "INV-PULL-2": ("pull_answered", *_STORE, "queue_snapshot"),
    "INV-FILTER-1": ("pull_answered", *_STORE, "client_started"),
    "INV-DROP-1": (*_PQ, *_CALLS, "offset_updated"),
    "INV-RETRY-1": (*_SENDBACK, *_STORE, "consume_started", "client_started"),
    "INV-RETRY-2": (*_SENDBACK, "message_scheduled", "schedule_delivered", *_STORE),
    "INV-RETRY-3": (*_SENDBACK, *_CALLS),
    "INV-DLQ-1": (*_STORE, "message_scheduled", "message_sent_back", "message_dead_lettered"),
    "INV-BCAST-1": ("client_started", *_COMMITS, *_LOCKS, "message_sent_back", "offset_persisted"),
    "INV-CLIENT-1": _CLIENTS,
    "INV-LIVE-1": (*_STORE, *_CALLS, *_PQ, *_SENDBACK, "message_scheduled", "schedule_delivered",
                   "message_dead_lettered", *_COMMITS, *_CLIENTS),
    "INV-LOSS-1": (*_STORE, *_COMMITS, "offset_read", *_PQ, *_PULLS, *_CALLS, "client_start_returned"),
    "INV-SUB-1": ("pull_answered", "client_started"),
    "ANOM-DUP-1": (*_CALLS, *_PQ, *_COMMITS),
    "ANOM-OFFSET-BACK": _COMMITS,
    "ANOM-RETENTION": ("messages_deleted", "pull_answered", *_STORE),
    "ANOM-LOCK-GAP": (*_CALLS, "pq_lock_changed", *_LOCKS),
    "ANOM-RESET-SKIP": (*_COMMITS, *_PQ, *_PULLS),
    "ANOM-DISCARD": (*_SENDBACK, "client_started"),
    # POP (spec/actions/pop.py): the copies' handles and statuses, the orderly queue's attempt
    "INV-POP-HANDLE-1": _POP,
    "INV-POP-ACK-1": _POP,
    "INV-POP-LOSS-1": (*_POP, "client_started"),   # a client's maxReconsumeTimes
    "INV-POP-DLQ-1": _POP,
    "INV-POP-ORDER-1": _POP,
    # an orderly pop's attempt id and room (its request) against its answer and the queue's attempt
    "INV-POP-ORDER-2": (*_POP, "pop_requested", "pop_answered"),
    "INV-POP-STALE-1": _POP,
    "INV-POP-LIVE-1": (*_POP, *_CLIENTS),           # a revived copy is owed while its group has a live client
    # the actions' own guards: a call finished that never started, a commit whose previous value
    # the table did not hold, a lease past its lock, a send-back of no failure: every side's state
    "GUARD": (*_CALLS, *_PQ, *_PULLS, *_COMMITS, "offset_flushed", *_LOCKS, "pq_lock_changed", *_SENDBACK,
              "message_scheduled", "schedule_delivered", *_POP),
}

def _with_settings(kinds: tuple[str, ...]) -> tuple[str, ...]:
    """A rule that reads a side's state also reads the settings that side's start carries: the
    broker's (broker_started: delay levels, lock lifetime) and the client's (client_started:
    consume mode, message model, maxReconsumeTimes, timing), which also say which client acts."""
    sides = {kind_side(k) for k in kinds}
    extra = (("broker_started",) if BROKER in sides else ()) + \
            (("client_started",) if sides & {REPORTS, INTERNALS} else ())
    return tuple(dict.fromkeys(kinds + extra))


NEEDS = {rule: _with_settings(kinds) for rule, kinds in NEEDS.items()}
RULES = tuple(NEEDS)

# Parts of rules that a level lacking the whole rule's needs can still judge, with the kinds each
# part reads (spec/actions/listener_results.py). At a level that judges the whole rule the part is
# not run: the whole rule judges the same loss from the client's own steps.
PART_ORDERLY_LIMIT = "orderly listener call past maxReconsumeTimes"
PART_DECLARED_UNCONSUMED = "broker commit past a message a listener call declared not consumed"
PART_NEEDS: dict[tuple[str, str], tuple[str, ...]] = {
    # an orderly clustering call's reconsume counts against the client's maxReconsumeTimes; the
    # client's pauses and the broker's restarts name the failed send-backs that excuse one
    ("INV-RETRY-1", PART_ORDERLY_LIMIT): (*_CALLS, *_CLIENTS, "broker_restarted", *_COMMITS),
    # the calls' results, the broker's accepted send-backs, its commits and an operator's resets
    ("INV-OFFSET-3", PART_DECLARED_UNCONSUMED): (*_CALLS, *_CLIENTS, "message_sent_back", *_COMMITS),
}
PART_NEEDS = {part: _with_settings(kinds) for part, kinds in PART_NEEDS.items()}


def sides_needed(rule: str) -> frozenset[str]:
    return frozenset(s for k in NEEDS[rule] if (s := kind_side(k)) is not None)


def part_sides_needed(part: tuple[str, str]) -> frozenset[str]:
    return frozenset(s for k in PART_NEEDS[part] if (s := kind_side(k)) is not None)


def declared(first: dict | None) -> frozenset[str]:
    """The sides a trace observed, from its trace_started: `observed`; else the driver protocol's
    earlier spelling (`config.client_under_test.observed: "client_reports"`: the broker recorder's
    events and the client's reports); else all three."""
    if first is None:
        return ALL
    obs = first.get("observed")
    if obs:
        return frozenset(obs)
    cut = (first.get("config") or {}).get("client_under_test")
    if isinstance(cut, dict) and cut.get("observed") == REPORTS:
        return frozenset({BROKER, REPORTS})
    return ALL


@dataclass(frozen=True)
class Level:
    """What a trace can be judged on: the sides observed, and for each rule not judged the sides
    it lacks."""
    observed: frozenset
    not_judged: dict            # rule -> tuple of the sides it needs that were not observed
    parts: frozenset = frozenset()  # (rule, part) judged here of a rule not judged whole (PART_NEEDS)

    @property
    def judged(self) -> tuple[str, ...]:
        return tuple(r for r in RULES if r not in self.not_judged)

    def needed_kinds(self) -> frozenset:
        """The kinds the rules and parts this level judges read."""
        return frozenset(k for r in self.judged for k in NEEDS[r]) | \
            frozenset(k for p in self.parts for k in PART_NEEDS[p])

    @property
    def whole(self) -> bool:
        return not self.not_judged

    def why(self, rule: str) -> str:
        lacks = self.not_judged[rule]
        kinds = [k for k in NEEDS[rule] if kind_side(k) in lacks]
        shown = ", ".join(kinds[:4]) + (f" and {len(kinds) - 4} more" if len(kinds) > 4 else "")
        parts = [p for r, p in sorted(self.parts) if r == rule]
        judged = f"; judged in part at this level: {'; '.join(parts)}" if parts else ""
        return f"needs {' and '.join(lacks)} ({shown}), not observed{judged}"

    def to_dict(self) -> dict:
        return {"observed": [s for s in OBSERVED_SIDES if s in self.observed],
                "rules_judged": list(self.judged),
                "rules_not_judged": [{"rule": r, "lacks": list(self.not_judged[r]), "why": self.why(r)}
                                     for r in RULES if r in self.not_judged],
                "rules_judged_in_part": [{"rule": r, "part": p} for r, p in sorted(self.parts)]}


def level(observed) -> Level:
    obs = frozenset(observed)
    missing = {}
    for rule in RULES:
        lacks = sides_needed(rule) - obs
        if lacks:
            missing[rule] = tuple(s for s in OBSERVED_SIDES if s in lacks)
    parts = frozenset(p for p in PART_NEEDS if p[0] in missing and part_sides_needed(p) <= obs)
    return Level(obs, missing, parts)


def judges_part(out, rule: str, part: str) -> bool:
    """Whether the findings' sink `out` is judging a trace whose level judges `part` of `rule`
    (and not the whole rule); a sink without a level (the model checker's, a minimizer's) judges
    whole traces."""
    lv = getattr(out, "level", None)
    return lv is not None and (rule, part) in lv.parts


WHOLE = level(ALL)


def rules_without_needs() -> set[str]:
    """The catalogue's ids NEEDS has no entry for (empty when the table is complete)."""
    return {i.id for i in _inv.CATALOGUE} - set(NEEDS)
