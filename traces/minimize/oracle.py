"""The spec as an oracle for trace reduction: replay a list of events and say where it is first
rejected, and with what.

`first_rejection(events, profile)` replays through the spec's actions (`spec.actions.HANDLERS`,
the same ones `rocketspec check` runs) and stops after the first event that reports an error:
every event before it was accepted. `all_rejections` keeps going and lists every error with the
index of its event (light: no state snapshots, unlike `check`'s report).
"""
from __future__ import annotations

from dataclasses import dataclass

from ...spec import invariants as _inv
from ...spec.actions import HANDLERS
from ...spec.limits import BadConfig
from ...spec.replay import PRUNE_EVERY, prune
from ...spec.state import SpecState

# Not invariants: what the oracle reports when an event cannot be replayed at all.
BAD_CONFIG = "BAD-CONFIG"     # a component's configuration the spec refuses (bad input)
SPEC_CRASH = "SPEC-CRASH"     # an action raised: a bug in the spec (counted by the minimizer)


@dataclass(frozen=True)
class Rejection:
    """One error reported while replaying event `index`: invariant (or GUARD) id, key, message."""
    index: int
    inv: str
    key: tuple | None
    message: str


class _Sink:
    """Stands in for spec.replay.Findings: keeps the errors an action reports, drops warnings."""

    __slots__ = ("st", "ev", "line", "errors", "index")

    def __init__(self, st):
        self.st = st
        self.ev = None
        self.line = None
        self.errors: list[Rejection] = []
        self.index = 0

    def report(self, inv: str, message: str, key=None) -> None:
        if _inv.severity(inv) == "error":
            self.errors.append(Rejection(self.index, inv, key, message))

    def example(self, inv: str, message: str, key=None) -> None:
        pass

    def part_not_judged(self, inv: str, part: str, why: str, who: str) -> None:
        pass


def _replay(events, profile, stop_first: bool, until=None) -> list[Rejection]:
    st = SpecState(profile)
    out = _Sink(st)
    handlers = HANDLERS
    for i, ev in enumerate(events):
        out.ev = ev
        out.index = i
        out.line = i + 1
        try:
            handlers[ev["kind"]](st, ev, out)
        except BadConfig as exc:
            out.errors.append(Rejection(i, BAD_CONFIG, None, str(exc)))
        except Exception as exc:  # noqa: BLE001 - a candidate the spec cannot replay is not a counterexample
            out.errors.append(Rejection(i, SPEC_CRASH, None, f"{type(exc).__name__}: {exc}"))
            return out.errors
        if stop_first and out.errors:
            return out.errors
        if until is not None and out.errors and out.errors[-1].index == i and until(out.errors, ev):
            return out.errors
        if not (i + 1) & (PRUNE_EVERY - 1):
            prune(st)
    return out.errors


def first_rejection(events, profile) -> list[Rejection]:
    """The errors of the first event the spec rejects (all at one index), or [] if it holds."""
    return _replay(events, profile, True)


def all_rejections(events, profile, until=None) -> list[Rejection]:
    """Every error of the replay, in order; with `until(errors, event)`, up to the first event
    for which it is true (it is given the errors so far and the event just replayed)."""
    return _replay(events, profile, False, until)
