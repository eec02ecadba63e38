"""The spec as an online monitor: judge a trace event by event while it is being produced.

`TraceMonitor` is a sink for trace events (`monitor(event)`): each event is checked against the
schema and the envelope order, and replayed through the spec's actions exactly as
`rocketspec check` replays a file (spec.replay), so a state machine can stop at the step that
broke a rule and a finding here is the finding `check` reports on the written trace. It is
what `conformance.statemachine` runs the reference against, and what a user's own state
machine runs their client against.
"""
from __future__ import annotations

from pathlib import Path

import orjson

from ..spec.actions import HANDLERS
from ..spec.limits import BadConfig
from rocketspec.rocketmq.profiles import Profile, get_profile
from ..spec.replay import Findings, Finding, fast_validator
from ..spec.state import SpecState
from ..traces.io import out_of_order


class SpecViolation(AssertionError):
    """A trace broke the spec. `finding` is the first error (its `.inv` the invariant id; "SCHEMA"
    for an event the schema refuses), `trace_path` the trace written, if any."""

    def __init__(self, message: str, finding: Finding, trace_path: str | None = None):
        super().__init__(message)
        self.finding = finding
        self.trace_path = trace_path


class TraceMonitor:
    """Feed events with `monitor(event)` (or `feed`); `first_error` is the first spec error or
    None; `assert_holds()` raises SpecViolation. `lines` keeps the trace as JSON Lines bytes
    (each event serialized when it arrives), for `write`."""

    def __init__(self, profile: str | Profile):
        self.profile = profile if isinstance(profile, Profile) else get_profile(profile)
        self.state = SpecState(self.profile)
        self.findings = Findings(self.state, max_listed=10)
        self.lines: list[bytes] = []
        self._validate = fast_validator()
        self._last = None      # (seq, ts) of the last event
        self.schema_error: Finding | None = None

    def __call__(self, ev: dict) -> None:
        self.feed(ev)

    def feed(self, ev: dict) -> None:
        self.lines.append(orjson.dumps(ev))
        if self.schema_error is not None:
            return      # the trace is unreadable from here on: `check` would stop at that line
        line = len(self.lines)
        problem = self._validate(ev)
        if problem is None and self._last is not None:
            problem = out_of_order(ev["seq"], ev["ts"], *self._last)
        if problem is None and not self.lines[1:] and ev.get("kind") != "trace_started":
            problem = f"the first event must be trace_started, got {ev.get('kind')!r}"
        if problem is not None:
            self.schema_error = Finding("SCHEMA", "error", problem, None, ev.get("seq"), line, ev.get("kind"), ev)
            return
        self._last = (ev["seq"], ev["ts"])
        out = self.findings
        out.ev, out.line = ev, line
        try:
            HANDLERS[ev["kind"]](self.state, ev, out)
        except BadConfig as exc:
            self.schema_error = Finding("SCHEMA", "error", f"{ev['kind']}.config.{exc}", None, ev.get("seq"), line,
                                        ev.get("kind"), ev)

    @property
    def first_error(self) -> Finding | None:
        if self.schema_error is not None:
            return self.schema_error
        return self.findings.errors[0] if self.findings.errors else None

    def write(self, path) -> str:
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"\n".join(self.lines) + b"\n")
        return str(p)

    def assert_holds(self, trace_path=None, context: str = "") -> None:
        """Raise SpecViolation on the first error; write the trace to `trace_path` first."""
        f = self.first_error
        if f is None:
            return
        written = self.write(trace_path) if trace_path is not None else None
        msg = f"{f.inv} at seq {f.seq} ({f.kind}): {f.message}"
        if context:
            msg += f"\n{context}"
        if written:
            msg += (f"\ntrace written to {written}\n"
                    f"  rocketspec check {written} --profile {self.profile.name}")
        raise SpecViolation(msg, f, written)
