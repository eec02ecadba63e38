"""rocketspec.spec: the executable model of RocketMQ consumer semantics.

The model, TLA-style
--------------------
- **State** (`spec.state.SpecState`): variables decomposed by key: ``queues[(group, topic,
  broker, queue)]`` (broker offset, lock entry, each client's ProcessQueue and offset-store view,
  the group's progress), ``stored[(topic, broker, queue)]``, ``chains[(group, origin_msg_id)]``,
  ``views[(group, topic, view)]`` and a small ``dir`` (clients, groups, brokers, topics).
- **Actions** (`spec.actions.HANDLERS`): one per trace event kind, named after the RocketMQ
  mechanism (`spec.actions.MECHANISMS`). An event *is* an action instance: its fields are the
  action's parameters. Each action function checks its guard (reporting the invariant a failed
  check protects), then applies its effect in place.
- **Invariants** (`spec.invariants.CATALOGUE`): stable ids, statements, mechanisms,
  assumptions, severity, allowed-anomaly flag, and form: "state" predicates
  (`STATE_PREDICATES`, evaluated by `check_state`), "step" properties (guards), "end"
  (quiescence, `check_end`).
- **Lifecycles** (`spec.lifecycles`): python-statemachine classes for ProcessQueue, queue lock
  and message, compiled to transition tables the actions consult; diagrams via `mermaid()`.
- **Profiles** (`rocketspec.rocketmq.profiles`): version switches. The spec honours switches that are
  legitimate version differences (lock lifetimes, DLQ comparison, pq locked on create, ...) and
  deliberately *ignores* known-bug switches: it states the intended behaviour, so a known-bug
  profile's trace is flagged with its `expected_violation`.

API for the model checker (issue 6)
-----------------------------------
    st = initial_state(profile)
    findings = step(st, event)          # in place; list of Finding (errors and warnings)
    reason = guard(st, event)           # None if enabled, else the first error Finding (st untouched)
    st2 = apply(st, event)              # successor state (a copy), or raise Disabled
    errs = check_state(st)              # every state predicate over the whole state
    errs = check_end(st)                # liveness at quiescence (INV-LIVE-1)
    h = freeze(st)                      # hashable canonical value for the visited set

An explorer enumerates candidate events per kind from the state (the parameters come from
`st.dir` (clients, topics), `st.queues[...].pqs` (ProcessQueues and their trees),
`st.stored` (offsets), `st.chains` (retry copies in flight)) and keeps those whose `guard`
returns None: the guard is the enabling condition. Events need only the fields the schema
requires for their kind plus `seq` and `ts`. `ts` is the model's clock: lock expiry and
lease checks read it, so time steps are events too (any event with a larger ts).

Trace validation (streaming): `spec.replay.check_trace(path, profile=None)`.
"""
from __future__ import annotations

from rocketspec.rocketmq.profiles import DEFAULT_PROFILE, PROFILES, Profile, get_profile  # noqa: F401


class Disabled(Exception):
    """`apply` was asked to take a step whose guard fails."""

    def __init__(self, finding):
        self.finding = finding
        super().__init__(f"{finding.inv}: {finding.message}")


def initial_state(profile=None):
    from .state import SpecState

    return SpecState(get_profile(profile))


def _sink(st, max_listed=1000):
    from .replay import Findings

    return Findings(st, max_listed=max_listed)


def step(st, event: dict, line=None) -> list:
    """Take the action of `event` in place; return its findings (errors first)."""
    from .actions import HANDLERS

    out = _sink(st)
    out.ev, out.line = event, line
    HANDLERS[event["kind"]](st, event, out)
    return out.errors + out.warnings


def guard(st, event: dict):
    """None if the action of `event` is enabled in `st`, else the first error Finding.
    `st` is not modified."""
    from .state import copy_state

    errs = [f for f in step(copy_state(st), event) if f.severity == "error"]
    return errs[0] if errs else None


def apply(st, event: dict):
    """The successor state of `st` under `event` (a new state); raises Disabled if the guard
    fails."""
    from .state import copy_state

    nxt = copy_state(st)
    errs = [f for f in step(nxt, event) if f.severity == "error"]
    if errs:
        raise Disabled(errs[0])
    return nxt


def check_state(st) -> list:
    """Evaluate every state predicate of the catalogue over the whole state."""
    from .invariants import STATE_PREDICATES

    out = []
    for inv_id, pred in STATE_PREDICATES.items():
        for key, msg in pred(st):
            out.append((inv_id, key, msg))
    return out


def check_end(st) -> list:
    """INV-LIVE-1 as if the trace ended quiescent now."""
    from .actions import check_quiescent

    out = _sink(st)
    check_quiescent(st, out)
    return out.errors


def freeze(st):
    from .state import freeze as _freeze

    return _freeze(st)


__all__ = ["Disabled", "initial_state", "step", "guard", "apply", "check_state", "check_end", "freeze",
           "get_profile", "PROFILES", "Profile", "DEFAULT_PROFILE"]
