"""A trace judged against the verdict it declares.

A trace declares its expected verdict the way a scenario does (docs/scenarios.md, `expect`):
`trace_started.config.expect` is "holds", or {fails = "INV-..." or [ids]}, optionally with
per-profile overrides {profiles = {"rocketmq-4.9.8" = ...}}; a bare list of ids is short for
{fails = [ids]}. The scenario parser reads it (reference.scenario), so the two never differ. A
trace that declares nothing must hold.

The ids a verdict names must be the spec's invariants. The reference cannot check that (it does
not import the spec), so the catalogue is given from here: `load_checked_scenario` and
`validate_checked` are how the layers above read a scenario.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..reference.scenario import _parse_expect, expected_failures, load_scenario, validate


class _Catalogue:
    """The spec's invariant ids, imported on the first membership test: only a scenario that
    declares failures needs them."""

    def __contains__(self, inv_id) -> bool:
        from ..spec.invariants import BY_ID

        return inv_id in BY_ID


INVARIANT_IDS = _Catalogue()


def load_checked_scenario(name_or_file: str) -> dict:
    """reference.scenario.load_scenario, with the ids of its `expect` checked against the spec's
    invariants (ScenarioError at `expect.fails` or `expect.profiles.<p>.fails`)."""
    return load_scenario(name_or_file, INVARIANT_IDS)


def validate_checked(raw: dict, source: str = "<scenario>") -> dict:
    """reference.scenario.validate, with the ids of its `expect` checked as load_checked_scenario does."""
    return validate(raw, source, INVARIANT_IDS)


@dataclass
class Judgement:
    path: str
    profile: str
    got: frozenset            # error ids the spec reported
    want: frozenset           # error ids the trace declares (empty: it must hold)
    declared: bool            # whether the trace declares a verdict
    report: object            # spec.replay.Report

    @property
    def ok(self) -> bool:
        return self.got == self.want

    def describe(self) -> str:
        got = ", ".join(sorted(self.got)) or "holds"
        want = ", ".join(sorted(self.want)) or "holds"
        how = "declared" if self.declared else "no declared verdict: it must hold"
        return f"{self.path}: {got} under {self.profile}; expected {want} ({how})"


def declared_verdict(first_event: dict, profile: str, source: str):
    """The error ids a trace declares for `profile` (empty: holds), or None when it declares none.
    ScenarioError (a UserError naming the trace and field) when the declaration is malformed."""
    cfg = first_event.get("config") if isinstance(first_event, dict) else None
    if not isinstance(cfg, dict) or "expect" not in cfg:
        return None
    raw = cfg["expect"]
    if isinstance(raw, list):
        raw = {"fails": raw}
    parsed = _parse_expect(f"{source} (trace_started.config)", raw, INVARIANT_IDS)
    return expected_failures({"expect": parsed}, profile)


def judge_trace(path, profile: str | None = None) -> Judgement:
    """Replay the trace at `path` through the spec and compare with its declared verdict.
    TraceInputError / UserError on bad input."""
    from ..spec.replay import check_trace
    from ..traces.io import read_events

    rep = check_trace(path, profile)
    it = read_events(path, validate=False)
    try:
        first = next(it, (None, None))[1]
    finally:
        it.close()
    want = declared_verdict(first, rep.profile, str(path))
    from ..spec.invariants import severity

    got = frozenset(f.inv for f in rep.findings.errors) | frozenset(
        k for k, n in rep.findings.counts.items() if n and severity(k) == "error")
    return Judgement(str(path), rep.profile, got, frozenset(want or ()), want is not None, rep)
