"""Counterexample minimization for histories: shrink a history that `rocketspec history`
rejects to a short one it still rejects with the same guarantee, the black-box level of the
spec (spec/history) as the oracle.

A history is minimized at the level of its source's own records, so the result is written in
the input's format and read back by the same adapter: the events of a trace (`trace`), the
records of RocketMQ's message-trace bodies (`msgtrace`: Pub, SubBefore, SubAfter,
EndTransaction), the lines of an OpenChaos history (`openchaos`). A candidate is a subset of
the records, in their order; it is kept when the adapter reads it, the target guarantee is
*violated* (not merely suspect) with a finding of the same kind (the same guarantee, the same
message once the values of its key and its numbers are left out; `match="invariant"`: the id
alone), and no guarantee is violated that the current history did not violate.

The search, deterministic (the shared loop of traces.minimize.ddmin):
1. trace sources only: drop, in one go, every event the history does not read (pulls, locks,
   rebalances...);
2. remove whole units, coarse to fine, each kind by delta debugging, until a round removes
   nothing: groups, consumers, queues (or sharding keys), a message's whole life (its send,
   every delivery and retry, its dead letter), listener calls (a SubBefore with its SubAfter;
   a consume_started with its consume_finished), then single records;
3. for each remaining record, leave it out once more and say what changes (the reason it
   stays): every remaining record is needed, but a trace's trace_started (the header).
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import UserError
from ...spec.history import FORMATS, check_history
from ...spec.history.guarantees import BY_ID
from . import ddmin

MATCHES = ("guard", "invariant")
MAX_ROUNDS = 20
# Unit kinds, coarse to fine; "record" is a single record.
KINDS = ("group", "client", "queue", "message", "call", "record")


class NotMinimizable(UserError):
    """The history holds under the guarantees (nothing to minimize), or does not violate the
    guarantee asked for."""


@dataclass
class Record:
    """One record of the source: its line in the input, what is written back (a trace event, a
    message-trace record's fields, an OpenChaos line), and the units it belongs to."""
    line: int
    raw: object
    units: dict = field(default_factory=dict)      # kind -> [label]


@dataclass(frozen=True)
class Removal:
    kind: str
    unit: str
    records: int

    def to_dict(self):
        return {"kind": self.kind, "unit": self.unit, "records": self.records}


@dataclass(frozen=True)
class Reason:
    line: int               # the record's line in the minimized output, from 1
    source_line: int        # and in the input
    role: str               # header | violation | needed
    text: str

    def to_dict(self):
        return {"line": self.line, "source_line": self.source_line, "role": self.role, "text": self.text}


@dataclass
class HMinimized:
    records: list
    format: str
    guarantee: str
    key: dict | None
    message: str
    complete: bool
    original_records: int
    removed: list = field(default_factory=list)
    reasons: list = field(default_factory=list)
    tests: int = 0
    seconds: float = 0.0
    others: list = field(default_factory=list)     # other guarantees the result violates too

    def lines(self) -> list[str]:
        """The minimized history in the input's format, one record a line."""
        return [render(self.format, r.raw) for r in self.records]

    def removed_by_kind(self) -> dict:
        out: dict[str, dict] = {}
        for r in self.removed:
            d = out.setdefault(r.kind, {"units": 0, "records": 0})
            d["units"] += 1
            d["records"] += r.records
        return out

    def to_dict(self):
        return {"level": "history", "format": self.format, "guarantee": self.guarantee,
                "title": BY_ID[self.guarantee].title, "key": self.key, "message": self.message,
                "complete": self.complete, "original_records": self.original_records, "records": len(self.records),
                "ratio": round(len(self.records) / max(1, self.original_records), 6),
                "removed": [r.to_dict() for r in self.removed], "removed_by_kind": self.removed_by_kind(),
                "reasons": [r.to_dict() for r in self.reasons], "tests": self.tests,
                "seconds": round(self.seconds, 3), "others": self.others}


# ------------------------------------------------------------------ the kind of a finding

_TOKEN_WITH_DIGIT = re.compile(r"[\w.%/:-]*\d[\w.%/:-]*")
_RUN = re.compile(r"#(, #)+")


def finding_kind(f) -> str:
    """A finding's message with the values of its key and every number-bearing token left out:
    what says which way the guarantee failed (e.g. H-DELIVER-1 "never reached" against "every
    call failed"), whichever message, queue or consumer it names."""
    msg = f.message
    for v in sorted({str(v) for v in (f.key or {}).values()}, key=len, reverse=True):
        msg = msg.replace(v, "<>")
    return _RUN.sub("#", _TOKEN_WITH_DIGIT.sub("#", msg))


# ------------------------------------------------------------------ sources: records and units

_TRACE_READ = frozenset({
    "trace_started", "trace_ended", "message_stored", "consume_started", "consume_finished",
    "message_dead_lettered", "client_started", "client_stopped", "client_crashed", "client_paused",
    "client_resumed", "broker_restarted", "consumer_unregistered", "oneway_lost", "offset_committed",
    "pq_dropped", "messages_deleted", "queue_snapshot"})
"""The trace kinds traces.history.from_trace reads (anything else is internals to a history)."""


def _trace_reads(ev) -> bool:
    k = ev["kind"]
    if k == "offset_committed":
        return ev.get("source") == "reset"
    if k == "pq_dropped":
        return ev.get("reason") == "reset"
    return k in _TRACE_READ


def read_records(path, fmt: str) -> list[Record]:
    if fmt == "trace":
        from ..io import read_events

        return [Record(line, ev) for line, ev in read_events(path)]
    if fmt == "msgtrace":
        from ..history.msgtrace import records

        from ..history.text import Unreadable

        # a record that cannot be read cannot be written back: it is left out
        return [Record(line, f) for line, f in records(path) if not isinstance(f, Unreadable)]
    if fmt == "openchaos":
        from ..history.openchaos import lines

        from ..history.text import Unreadable

        return [Record(line, text) for line, text in lines(path) if not isinstance(text, Unreadable)]
    raise UserError(f"unknown history format {fmt!r}: expected {', '.join(FORMATS)}", field="--format")


def render(fmt: str, raw) -> str:
    if fmt == "trace":
        import orjson

        return orjson.dumps(raw).decode()
    if fmt == "msgtrace":
        from ..history.msgtrace import CONTENT, FIELD, Fields

        if isinstance(raw, Fields):     # read from an export: keep the consumer (bornHost) it named
            import orjson

            return orjson.dumps({"body": CONTENT.join(raw) + FIELD, "bornHost": raw.host}).decode()
        return CONTENT.join(raw) + FIELD
    return raw


def parse(fmt: str, records: list[Record], source: str, groups=None, complete=None):
    """The history of `records` as the adapter reads it (as `rocketspec history` would: groups
    declared, completeness declared or settled)."""
    from ...spec.history import _settle
    from ..history.sources import declare_groups, new_history

    h = new_history(source, fmt)
    h.declared_complete = complete
    if groups:
        declare_groups(h, groups, source)
    pairs = [(r.line, r.raw) for r in records]
    if fmt == "trace":
        from ..history.from_trace import stream_events

        recs = stream_events(h, pairs)
    elif fmt == "msgtrace":
        from ..history.msgtrace import stream_msgtrace

        recs = stream_msgtrace(source, h, pairs)
    else:
        from ..history.openchaos import stream_openchaos

        recs = stream_openchaos(source, h, pairs)
    for rec in recs:
        h.keep(rec)
    _settle(h)
    return h


def _label_trace(records: list[Record]) -> None:
    origin: dict[str, str] = {}
    calls: dict[tuple, list] = {}
    for r in records:
        ev, u = r.raw, r.units
        k = ev["kind"]
        if ev.get("group") is not None:
            u["group"] = [ev["group"]]
        if ev.get("client") is not None:
            u["client"] = [ev["client"]]
        if all(ev.get(f) is not None for f in ("topic", "broker", "queue")) and k != "client_started":
            u["queue"] = [f"{ev['topic']}/{ev['broker']}/{ev['queue']}"]
        if k == "message_stored":
            origin[ev["msg_id"]] = ev.get("origin_msg_id") or ev["msg_id"]
            u["message"] = [origin[ev["msg_id"]]]
        elif k == "message_dead_lettered":
            u["message"] = [ev["origin_msg_id"]]
        elif k == "consume_started":
            ids = ev.get("origin_msg_ids") or [origin.get(m, m) for m in ev["msg_ids"]]
            u["message"] = list(dict.fromkeys(ids))
            call = f"{ev['client']}/{ev['consume_id']}"
            u["call"] = [call]
            calls[(ev["client"], ev["consume_id"])] = u["message"]
        elif k == "consume_finished":
            # a call's result goes with its start: the messages it was called with
            u["call"] = [f"{ev['client']}/{ev['consume_id']}"]
            u["message"] = calls.get((ev["client"], ev["consume_id"]), [])


def _label_msgtrace(records: list[Record]) -> None:
    for r in records:
        f, u = r.raw, r.units
        kind = f[0] if f else ""
        try:
            if kind == "Pub":
                u["message"], u["queue"] = [f[5]], [f"topic {f[4]}"]
            elif kind == "SubBefore":
                u["group"], u["call"], u["message"] = [f[3]], [f[4]], [f[5]]
            elif kind == "SubAfter":
                u["call"], u["message"] = [f[1]], [f[2]]
                if len(f) >= 9:
                    u["group"] = [f[8]]
            elif kind == "EndTransaction":
                u["message"] = [f[5]]
        except IndexError:
            pass        # an unreadable record: a single record, nothing else


def _label_openchaos(records: list[Record]) -> None:
    from ..history.openchaos import _RECV, _SEND, DEFAULT_GROUP

    for r in records:
        f, u = r.raw.split("\t"), r.units
        if f[0] == "fault" or len(f) < 3:
            continue
        u["client"] = [f"client{f[0]}"]
        if f[2] == "REQUEST" and len(f) >= 5:
            if f[3] != "null":
                u["message"] = [f[3]]
            if f[4] != "null":
                u["queue"] = [f"sharding key {f[4]}"]
        elif f[2] == "RESPONSE" and len(f) >= 9:
            if f[4] != "null":
                u["message"] = [f[4]]
            if f[5] != "null":
                u["queue"] = [f"sharding key {f[5]}"]
            m = _SEND.search(f[8]) or _RECV.search(f[8])
            if m is not None:
                u.setdefault("queue", []).append(f"{m['topic']}/{m['queue']}")
            if f[1] == "dequeue":
                u["group"] = [m["group"] if m is not None and "group" in m.groupdict() else DEFAULT_GROUP]


_LABEL = {"trace": _label_trace, "msgtrace": _label_msgtrace, "openchaos": _label_openchaos}


# ------------------------------------------------------------------ the search

def minimize_history(path, fmt: str, *, guarantee: str | None = None, complete: bool | None = None,
                     groups: dict | None = None, default_max: int | None = None, match: str = "guard",
                     progress=None) -> HMinimized:
    """Minimize the failing history at `path` (format `fmt`). `complete`, `groups`: as for
    `rocketspec history` (spec.history.load_history); `guarantee`: the H- id to keep
    (default: the first violated). Raises NotMinimizable when the history holds or does not
    violate `guarantee`; UserError on bad input."""
    from ...spec.history import load_history

    t0 = time.perf_counter()
    if fmt not in FORMATS:
        raise UserError(f"unknown history format {fmt!r}: expected {', '.join(FORMATS)}", field="--format")
    if guarantee is not None and guarantee not in BY_ID:
        raise UserError(f"unknown guarantee {guarantee!r} (known: {', '.join(BY_ID)})", field="--invariant")
    if match not in MATCHES:
        raise UserError(f"unknown match {match!r} (expected one of {', '.join(MATCHES)})", field="match")
    if default_max is None:
        from rocketspec.rocketmq.profiles import DEFAULT_PROFILE, get_profile

        default_max = get_profile(DEFAULT_PROFILE).default_max_reconsume_times
    h = load_history(path, fmt, complete, groups)       # as `rocketspec history` reads it
    records = read_records(path, fmt)
    _LABEL[fmt](records)
    m = _Search(records, fmt, str(path), complete, groups, default_max, match, progress)
    res = m.run(check_history(h, default_max), guarantee)
    res.seconds = time.perf_counter() - t0
    return res


class _Search:
    def __init__(self, records, fmt, source, complete, groups, default_max, match, progress):
        self.records = records
        self.fmt, self.source, self.complete, self.groups = fmt, source, complete, groups
        self.default_max, self.match, self.progress = default_max, match, progress
        self.tests = 0
        self.removed: list[Removal] = []
        self.phase = "check"
        self.target = self.signature = None
        self.allowed: set = set()

    # the oracle
    def judge(self, records):
        """The report on `records`, or None when the adapter cannot read them (no record left)."""
        try:
            h = parse(self.fmt, records, self.source, self.groups, self.complete)
        except UserError:
            return None
        return check_history(h, self.default_max)

    def hit(self, rep):
        """The target's finding of the same kind in `rep`, or None."""
        v = next(v for v in rep.verdicts if v.id == self.target)
        if v.status != "violated":
            return None
        return next((f for f in v.findings if self.match == "invariant" or finding_kind(f) == self.signature), None)

    def interesting(self, records) -> bool:
        self.tests += 1
        if self.progress is not None and not self.tests & 15:
            self.progress(self.phase, len(self.records), self.tests)
        rep = self.judge(records)
        if rep is None or self.hit(rep) is None:
            return False
        others = set(rep.violated()) - {self.target}
        if not others <= self.allowed:
            return False
        self.allowed = others
        self.records = records
        return True

    def run(self, rep, guarantee) -> HMinimized:
        original = len(self.records)
        violated = rep.violated()
        if not violated:
            suspect = [v.id for v in rep.verdicts if v.status == "suspect"]
            raise NotMinimizable(
                "the history holds: nothing to minimize (minimize needs a history that `rocketspec history` "
                "rejects)" + (f"; {', '.join(suspect)} only suspect: a lossy history cannot confirm it (give "
                              "--complete if every record is there)" if suspect else ""), file=self.source)
        self.target = guarantee or violated[0]
        if self.target not in violated:
            st = next(v.status for v in rep.verdicts if v.id == self.target)
            raise NotMinimizable(f"the history does not violate {self.target} (it is {st}; the history violates "
                                 f"{', '.join(violated)})", file=self.source)
        first = next(v for v in rep.verdicts if v.id == self.target).findings[0]
        self.signature = finding_kind(first)
        self.allowed = set(violated) - {self.target}
        # the records as read here must fail as the file does (they are the same records)
        if not self.interesting(list(self.records)):
            raise UserError("the history's records, read one by one, do not fail as the file does (records the "
                            "minimizer cannot write back, e.g. an unterminated last message-trace record?)",
                            file=self.source)
        if self.fmt == "trace":
            self.phase = "internals"
            keep = [r for i, r in enumerate(self.records) if i == 0 or _trace_reads(r.raw)]
            n = len(self.records)
            if len(keep) < n and self.interesting(keep):
                self.removed.append(Removal("internals", "trace events a history does not read", n - len(keep)))
        for _ in range(MAX_ROUNDS):
            before = len(self.records)
            for kind in KINDS:
                self._shrink(kind)
            if len(self.records) >= before:
                break
        rep = self.judge(self.records)
        last = self.hit(rep)
        self.phase = "reasons"
        return HMinimized(self.records, self.fmt, self.target, last.key, last.message, rep.history.complete, original,
                          self.removed, self._reasons(), self.tests, others=sorted(self.allowed))

    def _units(self, kind) -> dict:
        table: dict = {}
        fixed = 0 if self.fmt == "trace" else -1        # a trace's trace_started stays
        for i, r in enumerate(self.records):
            if i == fixed:
                continue
            labels = [i] if kind == "record" else r.units.get(kind, ())
            for lab in labels:
                table.setdefault(lab, []).append(i)
        return table

    def _shrink(self, kind):
        self.phase = kind

        def try_remove(part, table):
            drop = set()
            for lab in part:
                drop.update(table[lab])
            before = len(self.records)
            cand = [r for i, r in enumerate(self.records) if i not in drop]
            if not drop or not self.interesting(cand):
                return False
            if kind == "record":
                self.removed.append(Removal("record", f"{len(part)} single record{'s' * (len(part) != 1)}",
                                            before - len(cand)))
            else:
                counted: set = set()        # a record of two units of the chunk counts once
                for lab in part:
                    mine = set(table[lab]) - counted
                    counted |= mine
                    self.removed.append(Removal(kind, str(lab), len(mine)))
            return True

        ddmin.remove_units(lambda: self._units(kind), try_remove)

    def _reasons(self) -> list[Reason]:
        out = []
        for i, r in enumerate(self.records):
            if i == 0 and self.fmt == "trace":
                out.append(Reason(1, r.line, "header", "the trace's first event (trace_started)"))
                continue
            rep = self.judge(self.records[:i] + self.records[i + 1:])
            self.tests += 1
            if rep is None:
                text = "without it the adapter reads no record"
            elif self.hit(rep) is None:
                v = next(v for v in rep.verdicts if v.id == self.target)
                text = (f"without it {self.target} {v.status}" if v.status != "violated" else
                        f"without it {self.target} fails another way: {v.findings[0].message}")
            else:
                extra = sorted(set(rep.violated()) - {self.target} - self.allowed)
                text = f"without it {', '.join(extra)} is violated too"
            out.append(Reason(i + 1, r.line, "needed", text))
        return out


def write_history(out, res: HMinimized) -> None:
    """The minimized history in the input's format ("-": standard output)."""
    text = "\n".join(res.lines()) + "\n"
    if out == "-":
        import sys

        sys.stdout.write(text)
        return
    from rocketspec.outputs import write_bytes

    write_bytes(out, text.encode("utf-8"))   # whole or not at all


def default_output(path: str, fmt: str) -> str:
    """h.history -> h.min.history; a trace: TRACE.min.jsonl."""
    p = Path(path)
    if fmt == "trace":
        from .minimize import default_output as trace_output

        return trace_output(path)
    return str(p.with_name(p.stem + ".min" + p.suffix)) if p.suffix else str(p) + ".min"


__all__ = ["minimize_history", "HMinimized", "NotMinimizable", "finding_kind", "write_history", "KINDS"]
