"""Counterexample minimization: shrink a failing trace to a short one the spec still rejects with
the same invariant.

`minimize(events, invariant=None, profile=None, progress=None)` takes a trace (a list of event
dicts, trace_started first) and returns a `Minimized` result: `.events` the minimized trace,
`.removed` what went, unit by unit, and `.reasons` why each remaining event stays.

The spec is the oracle (traces.minimize.oracle): a candidate is kept when the first event the spec
rejects is rejected with the target invariant and nothing else, so every other event of the
result is accepted, and the trace ends at its violation. The search, deterministic:
1. cut everything after the first violation of the target invariant;
2. slice by the violation's key (its queue or retry chain, the directory, the group's
   allocations), then by its group; keep the first slice that still fails;
3. if events before the violation are rejected too (with another id): shrink as below while
   the violation happens and no more events are rejected than before, then drop the rejected
   events if the violation stays (else the result says so: `exact` false);
4. remove whole units, coarse to fine (traces.minimize.units: groups, brokers, topics, queues, clients,
   ProcessQueues, messages with their retries, pauses, lock requests, persists, pulls,
   listener calls, single events), each kind by delta debugging over its units, until nothing
   more goes; removing a message renumbers the offsets of its queue (traces.minimize.renumber);
5. compress time: each gap between events is cut as far as the spec still rejects the trace,
   every absolute time mapped consistently; seq renumbered 0, 1, 2, ...;
6. for each remaining event, replay without it and record what fails (the reason it stays).

Every remaining event is needed: removing any single one makes the spec reject another event
first (a guard, with its key), or hold, or fail the invariant another way; except the
introductions of the clients, brokers, topics and messages that later events name, kept so that
the trace reads as a story (units.Cast).
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import UserError
from ...spec import invariants as _inv
from rocketspec.rocketmq.profiles import Profile
from ...spec.replay import FastValidator, Finding, resolve_profile
from ...traces.io import TraceInputError, out_of_order
from . import ddmin, renumber, units
from .oracle import BAD_CONFIG, SPEC_CRASH, Rejection, all_rejections, first_rejection

MAX_ROUNDS = 20
MATCHES = ("guard", "invariant")
REPAIR_ROUNDS = 16


class NotMinimizable(UserError):
    """The trace holds (nothing to minimize), or does not violate the invariant asked for."""


@dataclass(frozen=True)
class Removal:
    """One step of the search that removed something: the unit's kind, the unit in words, and
    how many events went with it."""
    kind: str
    unit: str
    events: int

    def to_dict(self):
        return {"kind": self.kind, "unit": self.unit, "events": self.events}


@dataclass(frozen=True)
class Reason:
    """Why one remaining event stays: what the spec does when the event is left out. `inv` is the
    guard or invariant that then fails first (with `key` and `message`, at the event of `seq` and
    `at_kind`), None when the trace then holds (the event is part of the violation's cause)."""
    seq: int
    kind: str
    role: str                  # "header" | "violation" | "needed" | "cast" | "other-cause"
    inv: str | None
    key: dict | None
    message: str
    at_seq: int | None = None
    at_kind: str | None = None

    def text(self) -> str:
        if self.role in ("header", "cast"):
            return self.message
        if self.role == "violation":
            return f"the violation: {self.inv}{_key_text(self.key)}: {self.message}"
        if self.inv is None:
            return f"without it the trace holds: {self.message}"
        if self.role == "other-cause":
            return (f"without it {self.inv}{_key_text(self.key)} still fails at seq {self.at_seq} ({self.at_kind}), "
                    f"but not the same way: {self.message}")
        return (f"without it {self.inv}{_key_text(self.key)} fails at seq {self.at_seq} ({self.at_kind}): "
                f"{self.message}")

    def to_dict(self):
        return {"seq": self.seq, "kind": self.kind, "role": self.role, "invariant": self.inv, "key": self.key,
                "message": self.message, "at_seq": self.at_seq, "at_kind": self.at_kind, "text": self.text()}


def _key_text(key) -> str:
    if not key:
        return ""
    return " (" + ", ".join(f"{k}={v}" for k, v in key.items()) + ")"


def template(message: str) -> str:
    """A violation message with its numbers and lists left out: what says which guard failed."""
    return _NUMBER.sub("#", _LIST.sub("[]", message))


_LIST = re.compile(r"\[[^\]]*\]")
_NUMBER = re.compile(r"-?\d+")


def _last_event(errors: list[Rejection]) -> list[Rejection]:
    """The errors of the last event that has any."""
    i = len(errors)
    while i > 0 and errors[i - 1].index == errors[-1].index:
        i -= 1
    return errors[i:]


def _noise(rej: list[Rejection], target: str) -> int:
    """What else the spec rejects up to the violation (the last event of `rej`): the distinct
    (event, id) pairs other than the target's own."""
    if not rej:
        return 0
    at = rej[-1].index
    return len({(r.index, r.inv) for r in rej if r.index < at or r.inv != target})


def key_dict(key):
    return Finding("", "", "", key, None, None, None).key_dict()


@dataclass
class Minimized:
    events: list[dict]
    invariant: str
    key: dict | None
    message: str
    profile: str
    original_events: int
    removed: list[Removal] = field(default_factory=list)
    reasons: list[Reason] = field(default_factory=list)
    tests: int = 0
    seconds: float = 0.0
    exact: bool = True          # every event but the last is accepted (else other errors remain)
    spec_crashes: int = 0       # candidates on which an action raised (a bug in the spec)

    def removed_by_kind(self) -> dict[str, dict]:
        """kind -> {"units": n, "events": n}, in the order the kinds were tried."""
        out: dict[str, dict] = {}
        for r in self.removed:
            d = out.setdefault(r.kind, {"units": 0, "events": 0})
            d["units"] += 1
            d["events"] += r.events
        return out

    def to_dict(self):
        return {"invariant": self.invariant, "title": _inv.BY_ID[self.invariant].title
                if self.invariant in _inv.BY_ID else "guard of the action",
                "key": self.key, "message": self.message, "profile": self.profile,
                "original_events": self.original_events, "events": len(self.events),
                "ratio": round(len(self.events) / max(1, self.original_events), 6),
                "removed": [r.to_dict() for r in self.removed], "removed_by_kind": self.removed_by_kind(),
                "reasons": [r.to_dict() for r in self.reasons], "tests": self.tests,
                "seconds": round(self.seconds, 3), "exact": self.exact, "spec_crashes": self.spec_crashes}


class MemoryBound:
    """Minimize holds the whole trace in memory (about 6 bytes per byte of JSON Lines:
    `python -m bench.minimize_memory`), where `check` streams it. Reading stops, as bad input
    naming the line reached, once the events read take more than SHARE of the memory the
    machine had available when reading began: the search needs the rest, and a machine that
    swaps or kills the process would lose the work anyway."""

    SHARE = 0.5
    EVERY = 1 << 14  # events between two looks at the process's resident memory

    def __init__(self, path):
        self.path = path
        self.start = _resident_bytes()
        avail = _available_bytes()
        self.limit = None if self.start is None or avail is None else self.start + int(avail * self.SHARE)

    def check(self, line, events: int) -> None:
        if self.limit is None or not events:
            return
        now = _resident_bytes()
        if now is not None and now > self.limit:
            gb = (self.limit - self.start) / 2**30
            raise UserError(f"too large to minimize here: after {events:,} events the trace takes more than "
                            f"{gb:.1f} GB, half the memory this machine has available, and minimize holds the "
                            "whole trace in memory; minimize a shorter trace that still fails: the first "
                            "violation's line is in `rocketspec check`'s report, and the lines up to it (`head "
                            "-n LINE`) fail the same way", file=self.path, line=line)


def _resident_bytes() -> int | None:
    import os

    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _available_bytes() -> int | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def default_output(path: str) -> str:
    """TRACE.jsonl -> TRACE.min.jsonl next to it (whatever the input's format or compression)."""
    p = Path(path)
    name = p.name
    for suffix in (".gz", ".zst", ".zstd", ".jsonl", ".json", ".parquet"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return str(p.with_name(name + ".min.jsonl"))


def validate_events(events, path="<events>", numbered: bool = False) -> list[dict]:
    """The events as a list, checked as `rocketspec check` checks a file: schema per event,
    trace_started first, seq increasing, ts not decreasing; TraceInputError naming the line.
    `numbered`: `events` are (line, event) pairs (as traces.io.read_events yields them); else
    an event's line is its position, from 1."""
    pairs = events if numbered else enumerate(events, 1)
    out: list[dict] = []
    validate = FastValidator()
    last_seq = last_ts = None
    memory = MemoryBound(path)
    for line, ev in pairs:
        if not len(out) % MemoryBound.EVERY:
            memory.check(line, len(out))
        problem = validate(ev)
        if problem:
            raise TraceInputError(path, line, problem)
        if not out and ev["kind"] != "trace_started":
            raise TraceInputError(path, line, f"the first event must be trace_started, got {ev['kind']!r}")
        seq, ts = ev["seq"], ev["ts"]
        if last_seq is not None and (seq <= last_seq or ts < last_ts):
            raise TraceInputError(path, line, out_of_order(seq, ts, last_seq, last_ts))
        last_seq, last_ts = seq, ts
        out.append(ev)
    if not out:
        raise TraceInputError(path, 1, "empty trace (no event): expected a trace_started event first")
    return out


def minimize(events, *, invariant: str | None = None, profile: str | Profile | None = None,
             progress=None, match: str = "guard", path: str = "<events>", validate: bool = True) -> Minimized:
    """Minimize a failing trace. `invariant`: the id to keep (default: the first error's). Raises
    NotMinimizable (a UserError) when the trace holds or does not violate `invariant`, and
    TraceInputError on bad input. `progress(phase, events, tests)` is called as the search goes.
    `match`: "guard" (default) keeps the violation's guard too (same invariant, same kind of
    rejected event, same message but for its numbers), so that the result fails for the same
    reason, not merely under the same id; "invariant" asks for the id alone."""
    t0 = time.perf_counter()
    events = validate_events(events, path) if validate else list(events)
    prof = profile if isinstance(profile, Profile) else resolve_profile(profile, events[0], path)
    if invariant is not None and invariant not in _inv.BY_ID and invariant != _inv.GUARD:
        raise UserError(f"unknown invariant {invariant!r} (known: {', '.join(sorted(_inv.BY_ID))}, "
                        f"{_inv.GUARD})", field="--invariant")
    if invariant is not None and _inv.severity(invariant) != "error":
        raise UserError(f"{invariant} is an allowed anomaly (a warning), not a violation: minimize keeps a "
                        "violation (an error-level invariant or GUARD)", field="--invariant")
    if match not in MATCHES:
        raise UserError(f"unknown match {match!r} (expected one of {', '.join(MATCHES)})", field="match")
    m = _Minimizer(events, prof, invariant, progress, path, match)
    res = m.run()
    res.seconds = time.perf_counter() - t0
    return res


class _Minimizer:
    def __init__(self, events, profile, invariant, progress, path, match="guard"):
        self.match = match
        self.signature = None
        self.events = events
        self.profile = profile
        self.target = invariant
        self.progress = progress
        self.path = path
        self.tests = 0
        self.crashes = 0
        self.removed: list[Removal] = []
        self.strict = True
        self.noise = 0
        self._slices: dict = {}      # (level, length of the cut trace) -> its key slice
        self.phase = "check"
        self.cast = units.Cast(events)

    # ------------------------------------------------------------------ the oracle
    def _tick(self):
        if self.progress is not None:
            self.progress(self.phase, len(self.events), self.tests)

    def _interesting(self, cand, cast: bool = True) -> bool:
        """Strict: the first rejection of `cand` is the target's alone. Weak (on the way to a
        strict one, when other events are rejected too): the target's violation happens at
        all. When true, `cand` becomes the current trace, cut after its violation. `cast`: whether
        the candidate may have lost a character's introduction (see units.Cast)."""
        if cast and not self.cast.introduced(cand):
            return False
        self.tests += 1
        if not self.tests & 15:
            self._tick()
        if self.strict:
            rej = first_rejection(cand, self.profile)
            if rej and rej[0].inv == SPEC_CRASH:
                self.crashes += 1
            ok = self._is_target(rej, cand)
        else:
            rej = all_rejections(cand, self.profile, until=self._hit)
            if rej and rej[-1].inv == SPEC_CRASH:
                self.crashes += 1
            ok = bool(rej) and self._hit(rej, cand[rej[-1].index])
            if ok:
                noise = _noise(rej, self.target)
                ok = noise <= self.noise
                if ok:
                    self.noise = noise
        if ok:
            self.events = cand[:rej[-1].index + 1]
        return ok

    def _hit(self, errors, ev) -> bool:
        """Among the errors of the event just replayed (the last ones), the target's violation."""
        i = errors[-1].index
        for r in reversed(errors):
            if r.index != i:
                break
            if r.inv == self.target and (self.match == "invariant" or (ev["kind"], template(r.message)) == self.signature):
                return True
        return False

    def _is_target(self, rej, cand) -> bool:
        """The errors of one event are the target's: its id only, and (match "guard") one of
        them fails the same guard as the original violation, on the same kind of event."""
        if not rej or any(r.inv != self.target for r in rej):
            return False
        if self.match == "invariant":
            return True
        kind = cand[rej[0].index]["kind"]
        return any((kind, template(r.message)) == self.signature for r in rej)

    # ------------------------------------------------------------------ the search
    def run(self) -> Minimized:
        original = len(self.events)
        self._tick()
        # replay up to the first violation of the target (of anything, without one)
        want = self.target
        rej = all_rejections(self.events, self.profile,
                             until=lambda errs, ev: want is None or any(r.inv == want for r in _last_event(errs)))
        if not rej:
            raise NotMinimizable(f"the trace holds under profile {self.profile.name}: nothing to minimize "
                                 "(minimize needs a trace that `rocketspec check` rejects)", file=self.path)
        if self.target is None:
            self.target = rej[0].inv
        first = next((r for r in rej if r.inv == self.target), None)
        if first is None:
            ids = list(dict.fromkeys(r.inv for r in rej))
            raise NotMinimizable(f"the trace does not violate {self.target} under profile {self.profile.name} "
                                 f"(it violates {', '.join(ids)})", file=self.path)
        if self.target in (BAD_CONFIG, SPEC_CRASH):
            raise NotMinimizable(f"the trace cannot be replayed: {first.message}", file=self.path, line=first.index + 1)
        self.signature = (self.events[first.index]["kind"], template(first.message))
        # 1. nothing after the violation matters: the replay is a stream
        self.phase = "cut"
        cut = len(self.events) - first.index - 1
        self.events = self.events[:first.index + 1]
        if cut:
            self.removed.append(Removal("after", "events after the violation", cut))
        # 2-3. slice by key, then make the violation the first rejection
        self.strict = True
        if not self._slice_or_whole(first):
            # other events are rejected before it and cannot simply go: shrink while the
            # violation happens and no more events are rejected before it than now, then drop
            # the rejected ones if the violation stays
            self.strict = False
            self.noise = _noise([r for r in rej if r.index <= first.index], self.target)
            self._slice(first)
            self._shrink_units()
            self.strict = True
            if not (self._interesting(list(self.events)) or self._repair(list(self.events))):
                self.strict = False
                self.noise = self._noise(self.events)
        # 4. units, coarse to fine, until nothing more goes
        self._shrink_units()
        # 5. time, then a last pass over single events (a shorter time line can free one)
        self.phase = "time"
        self._compress_time()
        while True:         # until no single event goes: then each one is needed
            n = len(self.events)
            self._shrink("event")
            if len(self.events) == n:
                break
        self.events = renumber.renumber_seq(self.events)
        final = all_rejections(self.events, self.profile, until=self._hit)
        at = final[-1].index
        hits = [r for r in final if r.index == at]
        exact = at == len(self.events) - 1 and all(r.index == at for r in final) and self._is_target(hits, self.events)
        last = next(r for r in hits if r.inv == self.target)
        # 6. why each event stays
        self.phase = "reasons"
        self._tick()
        reasons = self._reasons(last, final)
        return Minimized(events=self.events, invariant=self.target, key=key_dict(last.key), message=last.message,
                         profile=self.profile.name, original_events=original, removed=self.removed,
                         reasons=reasons, tests=self.tests, exact=exact, spec_crashes=self.crashes)

    def _noise(self, events) -> int:
        return _noise(all_rejections(events, self.profile, until=self._hit), self.target)

    def _slice_or_whole(self, first: Rejection) -> bool:
        return self._slice(first) or self._interesting(list(self.events), cast=False)

    def _slice(self, first: Rejection) -> bool:
        """Keep the first slice around the violation's key that still fails (strict: after a
        repair if needed)."""
        self.phase = "slice"
        n = len(self.events)
        for level in (1, 2):
            if (level, len(self.events)) not in self._slices:
                self._slices = {**self._slices, (level, len(self.events)): units.key_slice(self.events, first.key, level)}
            keep = self._slices[(level, len(self.events))]
            if keep is None or len(keep) >= len(self.events):
                continue
            cand = [self.events[i] for i in keep]
            if self._interesting(cand, cast=False):      # slices keep the directory
                self.removed.append(Removal("slice", f"events off the violation's key (slice {level}: "
                                            f"{'its queues, chain and directory' if level == 1 else 'its group'})",
                                            n - len(cand)))
                return True
        return False

    def _repair(self, cand) -> bool:
        """Drop the events rejected with another id before the violation, as long as it stays
        (a rejected event changed nothing the spec relies on, or its removal shows what did)."""
        phase, self.phase = self.phase, "repair"
        dropped = 0
        try:
            for _ in range(REPAIR_ROUNDS):
                rej = all_rejections(cand, self.profile, until=self._hit)
                self.tests += 1
                self._tick()
                if not rej or not self._hit(rej, cand[rej[-1].index]):
                    return False
                at = rej[-1].index
                bad = {r.index for r in rej if r.index < at}
                if not bad:
                    if not self._is_target([r for r in rej if r.index == at], cand):
                        return False
                    if not self.cast.introduced(cand[:at + 1]):
                        return False
                    self.events = cand[:at + 1]
                    if dropped:
                        self.removed.append(Removal("rejected", "events the spec rejected with another id", dropped))
                    return True
                cand = [ev for i, ev in enumerate(cand[:at + 1]) if i not in bad]
                dropped += len(bad)
            return False
        finally:
            self.phase = phase

    def _shrink_units(self):
        for _ in range(MAX_ROUNDS):
            before = len(self.events)
            for kind in units.KINDS:
                self._shrink(kind)
            if len(self.events) >= before:
                break

    def _candidate(self, kind, labels, table):
        idx = set()
        for lab in labels:
            idx.update(table[lab])
        idx.discard(0)
        if not idx:
            return None, False
        # a message unit takes every event that names the message with it
        intro = kind != "message" and any(self.events[i]["kind"] in units.Cast.INTRO for i in idx)
        if kind == "message":
            pos = units.message_positions(self.events, sorted(idx))
            rest = [ev for i, ev in enumerate(self.events) if i not in idx]
            return renumber.fix_previous(renumber.drop_messages(rest, pos)), intro
        return renumber.fix_previous([ev for i, ev in enumerate(self.events) if i not in idx]), intro

    def _shrink(self, kind):
        """Delta debugging over the units of `kind` (traces.minimize.ddmin); the unit holding the
        violation stays."""
        self.phase = kind

        def table():
            t = units.units(kind, self.events)
            last = len(self.events) - 1
            return {lab: idx for lab, idx in t.items() if last not in idx}

        def try_remove(part, t):
            before = len(self.events)
            cand, intro = self._candidate(kind, part, t)
            if cand is not None and len(cand) < before and self._interesting(cand, intro):
                self._note(kind, part, before - len(self.events))
                return True
            return False

        ddmin.remove_units(table, try_remove)

    def _note(self, kind, part, gone):
        """Record a removal: one entry per unit (the events shared out among them; a removal
        that moved the violation earlier also cut what followed it)."""
        if kind == "event":
            self.removed.append(Removal("event", f"{len(part)} single event{'s' * (len(part) != 1)}", gone))
            return
        per = [gone // len(part)] * len(part)
        per[-1] += gone - sum(per)
        for lab, n in zip(part, per):
            self.removed.append(Removal(kind, units.describe(kind, lab), n))

    # ------------------------------------------------------------------ time
    def _compress_time(self):
        """Cut each gap between consecutive times as far as the violation stays (binary search),
        from the first gap to the last; the first event's time moves to 0 if it can."""
        i = 0
        while i < len(self.events):
            ts = [ev["ts"] for ev in self.events]
            if i == 0:
                lo_t, gap = 0, ts[0]
            else:
                lo_t, gap = ts[i - 1], ts[i] - ts[i - 1]
            if gap > 0:
                end = lo_t + gap
                if not self._try_cut(end, gap):
                    lo, hi = 0, gap     # lo: a cut that works, hi: one that does not
                    while hi - lo > 1:
                        mid = (lo + hi) // 2
                        if self._try_cut(end, mid):
                            lo = mid
                        else:
                            hi = mid
            i += 1

    def _try_cut(self, end, length) -> bool:
        if length <= 0:
            return True
        cand = renumber.compress_time(self.events, [(end - length, length)])
        n = len(self.events)
        ok = self._interesting(cand, cast=False)
        if ok and len(self.events) < n:
            self.removed.append(Removal("event", f"{n - len(self.events)} events after a time cut", n - len(self.events)))
        return ok

    # ------------------------------------------------------------------ reasons
    def _reasons(self, last: Rejection, final: list[Rejection]) -> list[Reason]:
        """Leave each event out once more: the first rejection that the trace did not have (by
        event and id) is what fails without it; else the violation is lost, or changes."""
        evs = self.events
        known = {(evs[r.index]["seq"], r.inv) for r in final if r.index < last.index}
        out = []
        for i, ev in enumerate(evs):
            if i == 0:
                out.append(Reason(ev["seq"], ev["kind"], "header", None, None,
                                  f"the trace's first event: profile {ev['profile']}"))
                continue
            if i == len(evs) - 1:
                out.append(Reason(ev["seq"], ev["kind"], "violation", last.inv, key_dict(last.key), last.message))
                continue
            cand = evs[:i] + evs[i + 1:]
            rej = all_rejections(cand, self.profile, until=self._hit)
            self.tests += 1
            new = [r for r in rej if (cand[r.index]["seq"], r.inv) not in known]
            hit = bool(rej) and self._hit(rej, cand[rej[-1].index])
            if hit and (not new or new[0].index == rej[-1].index and new[0].inv == self.target):
                out.append(Reason(ev["seq"], ev["kind"], "cast", None, None, self.cast.introduces(ev)))
                continue
            if not new:
                out.append(Reason(ev["seq"], ev["kind"], "needed", None, None, f"{self.target} no longer fails"))
                continue
            r = new[0]
            at = cand[r.index]
            role = "other-cause" if r.inv == self.target and not hit else "needed"
            out.append(Reason(ev["seq"], ev["kind"], role, r.inv, key_dict(r.key), r.message, at.get("seq"),
                              at["kind"]))
        return out


__all__ = ["minimize", "Minimized", "Removal", "Reason", "NotMinimizable", "validate_events"]
