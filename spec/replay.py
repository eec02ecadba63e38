"""Trace validation: replay a recorded trace through the spec, streaming.

`check_trace(path, profile=None)` reads the trace one event at a time (JSON Lines or Parquet),
routes each event to the action of its kind (`spec.actions.HANDLERS`), and collects findings:
errors (a guard or invariant that failed), and warnings (allowed anomalies, counted). Memory
grows with the live keys (queues, clients, retry chains, messages not yet consumed by every
group), not with the trace length: messages every group has handled are pruned periodically.

Bad input (malformed line, missing field, unknown kind, events out of order, unknown profile)
raises `TraceInputError` with the file and line.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from functools import lru_cache

from ..traces.io import TraceInputError, out_of_order, read_events
from ..traces.schema import validate_event
from . import invariants as _inv
from . import observation
from .actions import HANDLERS, JUDGED_ENDS, MECHANISMS
from .limits import BadConfig
from rocketspec.rocketmq.profiles import Profile, UnknownProfile, get_profile
from .state import SpecState, compact_chain, compact_queue

PRUNE_EVERY = 1 << 16
LIVE = object()     # a finding's state: the snapshot of the live state (else the one given)


@dataclass
class Finding:
    inv: str
    severity: str
    message: str
    key: tuple | None
    seq: int | None
    line: int | None
    kind: str | None
    event: dict | None = None
    state: dict | None = None

    def key_dict(self):
        k = self.key
        if k is None:
            return None
        if len(k) == 4:
            return {"group": k[0], "topic": k[1], "broker": k[2], "queue": k[3]}
        if len(k) == 2:
            return {"group": k[0], "origin_msg_id": k[1]}
        if len(k) == 3 and isinstance(k[2], int):
            return {"topic": k[0], "broker": k[1], "queue": k[2]}
        if len(k) == 3:
            return {"group": k[0], "topic": k[1], "view": k[2]}
        return {"key": list(k)}

    def to_dict(self):
        inv = _inv.BY_ID.get(self.inv)
        return {"invariant": self.inv, "title": inv.title if inv else "guard of the action",
                "guarantee": (inv.guarantee or None) if inv else None,
                "severity": self.severity, "message": self.message, "key": self.key_dict(),
                "seq": self.seq, "line": self.line, "event_kind": self.kind,
                "action": MECHANISMS.get(self.kind) if self.kind else None,
                "event": self.event, "last_state": self.state}


class Findings:
    """Sink of an action's reports. `errors` keeps up to `max_listed` errors with their context;
    every finding is counted in `counts` by invariant id; warnings keep a few examples."""

    def __init__(self, st: SpecState, max_listed: int = 50, warn_examples: int = 3):
        self.st = st
        self.errors: list[Finding] = []
        self.warnings: list[Finding] = []
        self.counts: dict[str, int] = {}
        self.error_count = 0
        self.max_listed = max_listed
        self.warn_examples = warn_examples
        self.ev = None
        self.line = None
        self.level = observation.WHOLE      # the trace's observation level, set at its trace_started
        self.unjudged: dict[str, int] = {}  # findings of rules the level cannot judge, not reported
        # (rule, part, why) -> clients: a part of a judged rule this trace cannot judge for them
        self.parts_not_judged: dict[tuple, set] = {}

    def report(self, inv: str, message: str, key=None, state=LIVE) -> None:
        if inv in self.level.not_judged:
            self.unjudged[inv] = self.unjudged.get(inv, 0) + 1
            return
        self._record(inv, message, key, state)

    def report_part(self, inv: str, part: str, message: str, key=None, state=LIVE) -> None:
        """A finding of `part` of rule `inv` (observation.PART_NEEDS), reported where the level
        judges the part, or the whole rule."""
        if inv in self.level.not_judged and (inv, part) not in self.level.parts:
            self.unjudged[inv] = self.unjudged.get(inv, 0) + 1
            return
        self._record(inv, message, key, state)

    def _record(self, inv: str, message: str, key, state) -> None:
        sev = _inv.severity(inv)
        self.counts[inv] = self.counts.get(inv, 0) + 1
        if sev == "error":
            self.error_count += 1
            if len(self.errors) >= self.max_listed:
                return
        elif self.counts[inv] > self.warn_examples:
            return
        ev = self.ev
        f = Finding(inv, sev, message, key, ev.get("seq") if ev else None, self.line,
                    ev.get("kind") if ev else None, dict(ev) if ev else None,
                    self._snapshot(key) if state is LIVE else state)
        (self.errors if sev == "error" else self.warnings).append(f)

    def part_not_judged(self, inv: str, part: str, why: str, who: str) -> None:
        """Part of rule `inv` could not be judged for `who` (the trace lacks what it needs)."""
        if inv not in self.level.not_judged:
            self.parts_not_judged.setdefault((inv, part, why), set()).add(who)

    def example(self, inv: str, message: str, key=None, state=LIVE) -> None:
        """Keep an example of a warning counted elsewhere (st.counts), up to `warn_examples`."""
        if inv in self.level.not_judged:
            return
        if sum(1 for w in self.warnings if w.inv == inv) >= self.warn_examples:
            return
        ev = self.ev
        self.warnings.append(Finding(inv, _inv.severity(inv), message, key, ev.get("seq") if ev else None, self.line,
                                     ev.get("kind") if ev else None, dict(ev) if ev else None,
                                     self._snapshot(key) if state is LIVE else state))

    def _snapshot(self, key):
        st = self.st
        if key is None:
            return None
        if len(key) == 4:
            return compact_queue(st.queues.get(key))
        if len(key) == 2:
            return compact_chain(st.chains.get(key))
        if len(key) == 3 and key in st.views:
            v = st.views[key]
            return {"mqs": [list(m) for m in v.mqs], "cids": list(v.cids),
                    "allocations": {c: sorted(list(m) for m in a) for c, a in v.alloc.items()}}
        if len(key) == 3 and key in st.stored:
            sq = st.stored[key]
            return {"max_offset": sq.next}
        return None


@dataclass
class Report:
    path: str
    profile: str
    events: int = 0
    ended: str | None = None
    findings: Findings | None = None
    seconds: float = 0.0
    live_keys: dict = field(default_factory=dict)
    position: str = "line"      # what a finding's `line` counts: "line" (JSON Lines) or "row" (Parquet)

    @property
    def ok(self) -> bool:
        return self.findings.error_count == 0

    @property
    def level(self) -> observation.Level:
        return self.findings.level

    @property
    def nothing_judged(self) -> bool:
        """The trace's observation level leaves no rule to judge: its verdict is incomplete."""
        return not self.level.judged

    @property
    def liveness_not_judged(self) -> str | None:
        """Why the end-of-trace invariants (form "end": liveness) were not judged, or None when
        they were. They are judged only at a trace_ended that says nothing is left to do; a trace
        cut short (a crash of its writer, a cap) may look clean only because its end is missing."""
        if self.ended is None:
            return "the trace has no trace_ended"
        if self.ended not in JUDGED_ENDS:
            return f"the trace ended by {self.ended}, not at quiescence or a horizon"
        return None

    def to_dict(self):
        f = self.findings
        return {"path": self.path, "profile": self.profile, "events": self.events, "ended": self.ended,
                "verdict": "holds" if self.ok else "violated",
                "judged": "safety" if self.liveness_not_judged else "safety and liveness",
                "liveness_not_judged": self.liveness_not_judged,
                "liveness_invariants": [i.id for i in _inv.CATALOGUE if i.form == "end"],
                "position": self.position, "errors": f.error_count,
                "counts": dict(sorted(f.counts.items())),
                "violations": [e.to_dict() for e in f.errors],
                "warnings": [w.to_dict() for w in f.warnings],
                "seconds": round(self.seconds, 3), "live_keys": self.live_keys, **self.level.to_dict(),
                "parts_not_judged": [{"rule": r, "part": p, "why": w, "clients": sorted(c)}
                                     for (r, p, w), c in sorted(f.parts_not_judged.items())]}


def prune(st: SpecState) -> None:
    """Forget stored messages that every consumer unit has handled and no committed offset
    points below (they can only come back as duplicates, whose content was checked already)."""
    low: dict[tuple, int] = {}
    for key, qs in st.queues.items():
        tkey = (key[1], key[2], key[3])
        m = low.get(tkey)
        for p in qs.units.values():
            m = p.wm if m is None else min(m, p.wm)
        if qs.committed is not None:
            m = qs.committed if m is None else min(m, qs.committed)
        for pq in qs.pqs.values():
            m = pq.next_pull if m is None else min(m, pq.next_pull)
        if m is not None:
            low[tkey] = m
    for tkey, sq in st.stored.items():
        m = low.get(tkey)
        if m is None:
            m = sq.next - 100000
        if sq.msgs and min(sq.msgs) < m:
            sq.msgs = {o: v for o, v in sq.msgs.items() if o >= m}


def resolve_profile(name, first_event, path) -> Profile:
    if name is None and first_event is not None:
        name = first_event.get("profile")
    try:
        return get_profile(name)
    except UnknownProfile as exc:
        raise TraceInputError(path, 1 if name == (first_event or {}).get("profile") else None, str(exc)) from None


def check_events(events, profile: Profile, path: str = "<events>", max_listed: int = 50,
                 validate=None, findings=None) -> Report:
    """Replay (line, event) pairs. With `validate` (a FastValidator), check each event's schema
    and the envelope order on the way (TraceInputError on bad input); otherwise the events must
    be valid already. `findings`: the class of the findings' sink (Findings, or a subclass that
    also aggregates them, as replay's violations dataset does)."""
    import time

    t0 = time.perf_counter()
    st = SpecState(profile)
    out = (findings or Findings)(st, max_listed=max_listed)
    handlers = HANDLERS
    n = 0
    last_seq = last_ts = None
    for line, ev in events:
        if validate is not None:
            problem = validate(ev)
            if problem:
                raise TraceInputError(path, line, problem)
            seq, ts = ev["seq"], ev["ts"]
            if last_seq is not None and (seq <= last_seq or ts < last_ts):
                raise TraceInputError(path, line, out_of_order(seq, ts, last_seq, last_ts))
            last_seq, last_ts = seq, ts
        out.ev = ev
        out.line = line
        if not n and ev["kind"] == "trace_started":
            out.level = observation.level(observation.declared(ev))
        try:
            handlers[ev["kind"]](st, ev, out)
        except BadConfig as exc:
            raise TraceInputError(path, line, f"{ev['kind']}.config.{exc}") from None
        n += 1
        if not n & (PRUNE_EVERY - 1):
            prune(st)
    rep = Report(path=str(path), profile=profile.name, events=n, ended=st.ended, findings=out)
    rep.seconds = time.perf_counter() - t0
    rep.live_keys = {"queues": len(st.queues), "stored_queues": len(st.stored), "chains": len(st.chains),
                     "views": len(st.views), "messages_kept": sum(len(s.msgs) for s in st.stored.values())}
    for k, v in st.counts.items():
        if k in out.level.not_judged:
            out.unjudged[k] = out.unjudged.get(k, 0) + v
        else:
            out.counts[k] = out.counts.get(k, 0) + v
    return rep


class FastValidator:
    """Schema validation compiled per event kind: one generated function per kind checks the
    field set with a C-level subset test and each field's type with `type(v) is T`. Anything
    that does not pass goes through `validate_event` (the reference), which produces the message
    (and accepts what the fast path was too strict for, e.g. a null optional field)."""

    _PY = {"int": "int", "str": "str", "bool": "bool", "int_list": "list", "str_list": "list"}

    def __init__(self):
        from ..traces.schema import JSON_SHAPES, OBS_VALUES, _kind_rules, fields, kinds

        self.funcs = {}
        fd = fields()
        for kind, kd in kinds().items():
            if kind == "trace_started":
                continue        # once per trace, and its schema_version is judged: the full check
            allowed = frozenset(_kind_rules(kind)[1])     # the schema's fields of the kind, envelope included
            lines = ["def f(ev, _allowed=_allowed, _obs=_obs):",
                     "    if not ev.keys() <= _allowed: return False",
                     "    try:",
                     "        if type(ev['seq']) is not int or type(ev['ts']) is not int: return False"]
            for n in kd["required"]:
                t = fd[n]["type"]
                if t in self._PY:
                    lines.append(f"        if type(ev[{n!r}]) is not {self._PY[t]}: return False")
                else:
                    lines.append(f"        if ev[{n!r}] is None: return False")
            lines.append("    except KeyError: return False")
            for n in kd["optional"]:
                t = fd[n]["type"]
                if t in self._PY:
                    lines.append(f"    v = ev.get({n!r})")
                    lines.append(f"    if v is not None and type(v) is not {self._PY[t]}: return False")
            for n in (*kd["required"], *kd["optional"]):
                t = fd[n]["type"]
                if t in ("int_list", "str_list"):
                    et = "int" if t == "int_list" else "str"
                    lines.append(f"    v = ev.get({n!r})")
                    lines.append("    if v:")
                    lines.append("        for x in v:")
                    lines.append(f"            if type(x) is not {et}: return False")
            shapes = {}
            for n in (*kd["required"], *kd["optional"]):
                if n in JSON_SHAPES:      # the contents the spec reads (traces.schema.JSON_SHAPES)
                    shapes[f"_shape_{n}"] = JSON_SHAPES[n][1]
                    lines.append(f"    v = ev.get({n!r})")
                    lines.append(f"    if v is not None and not _shape_{n}(v): return False")
            lines.append("    o = ev.get('obs')")
            lines.append("    if o is not None and o not in _obs: return False")
            lines.append("    return True")
            ns = {"_allowed": allowed, "_obs": OBS_VALUES, **shapes}
            exec("\n".join(lines), ns)
            self.funcs[kind] = ns["f"]

    def __call__(self, ev):
        if type(ev) is dict:
            kind = ev.get("kind")
            # a kind that is not a string (a list, an object) is for validate_event to refuse
            f = self.funcs.get(kind) if type(kind) is str else None
            if f is not None and f(ev):
                return None
        return validate_event(ev)


@lru_cache(maxsize=1)
def fast_validator() -> FastValidator:
    """The validator, compiled once per process: the schema does not change while it runs, and
    compiling costs ~15 ms, more than checking a short trace."""
    return FastValidator()


def check_trace(path, profile: str | Profile | None = None, max_listed: int = 50, progress=None,
                keep: list | None = None, findings=None) -> Report:
    """Validate the trace at `path` against the spec. Raises TraceInputError on bad input.
    The trace is read by traces.io (any format it reads; `progress` as in `read_events`).
    With `keep` (a list), every event is also appended to it, for a caller that needs the
    events after the verdict (explain) without reading the file twice. `findings`: the class of
    the findings' sink, as for check_events."""
    from ..traces.parquet_trust import TrustingValidator

    validate = fast_validator()
    # a Parquet file's batches tell which kinds need no check per event (traces.parquet_trust);
    # JSON Lines has no batches, and keeps the validator itself
    trust = TrustingValidator(validate)
    it = read_events(path, validate=False, progress=progress, on_batch=trust.batch)
    first = next(it, None)
    if first is None:
        # no event at all: what is missing is the first one, at line (row) 1
        raise TraceInputError(path, 1, "empty trace (no event): expected a trace_started event first")
    line, ev = first
    problem = validate(ev)
    if problem:
        raise TraceInputError(path, line, problem)
    if ev["kind"] != "trace_started":
        raise TraceInputError(path, line, f"the first event must be trace_started, got {ev['kind']!r}")
    prof = profile if isinstance(profile, Profile) else resolve_profile(profile, ev, path)
    if trust.batches:
        validate = trust

    chained = itertools.chain((first,), it)

    def kept():
        for pair in chained:
            keep.append(pair[1])
            yield pair

    # The spec state holds no reference cycles worth collecting; the cyclic GC only costs time
    # on millions of short-lived event dicts. Disabled for the replay, restored afterwards.
    import gc

    was = gc.isenabled()
    gc.disable()
    try:
        rep = check_events(chained if keep is None else kept(), prof, path, max_listed=max_listed,
                           validate=validate, findings=findings)
        if trust.batches:
            rep.position = "row"
        return rep
    finally:
        if was:
            gc.enable()
