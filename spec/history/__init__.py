"""rocketspec.spec.history: the black-box level of the spec.

A *history* (`model.History`) holds only what a user of RocketMQ sees: produce and consume
records, dead letters, and, where the source has them, disruptions (faults, consumers joining
and leaving), offset resets and retention. The guarantees (`guarantees.GUARANTEES`) are checked
from it alone; each declares the fields it needs and is skipped, with the reason, where a
history lacks them.

Sources (`load_history`): a full trace (`from_trace`: the two levels compared on one run), the
RocketMQ message-trace topic's bodies (`msgtrace`), an OpenChaos history file (`openchaos`).

    rep = check_path(path, fmt=None)       # streamed: memory in proportion to live keys
    h = load_history(path, fmt=None)       # or whole, in memory (tests, the minimizer)
    rep = check_history(h)                 # HistoryReport: per guarantee holds/violated/skipped

The rules are in `guarantees`; `judge.Judge` streams a history through them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import UserError
from .guarantees import GUARANTEES, missing
from .judge import WINDOW_MS, Judge
from ...traces.history.model import Consume, DeadLetter, Disruption, Expired, History, Produce, Reset

FORMATS = ("trace", "msgtrace", "openchaos")


@dataclass
class Verdict:
    id: str
    title: str
    status: str                 # holds | violated | suspect | skipped
    missing: list = field(default_factory=list)
    findings: list = field(default_factory=list)    # the first ones (Judge.max_kept)
    counts: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    n_findings: int = 0
    not_judged: dict = field(default_factory=dict)  # group -> why this guarantee could not be judged for it
    unjudged_messages: dict | None = None           # Outcome.unjudged_msgs, when the judge listed them

    @property
    def judged(self) -> bool:
        """Did it judge anything: not skipped, and some message, delivery or stream counted
        (other than those it could not judge)?"""
        return self.status != "skipped" and any(n for k, n in self.counts.items() if not k.startswith("not judged"))

    def to_dict(self, max_listed=50):
        d = {"id": self.id, "title": self.title, "status": self.status, "missing": self.missing,
             "findings": self.n_findings, "listed": [f.to_dict() for f in self.findings[:max_listed]],
             "counts": self.counts, "notes": self.notes, "not_judged": self.not_judged}
        if self.unjudged_messages is not None:
            d["unjudged_messages"] = self.unjudged_messages
        return d


@dataclass
class HistoryReport:
    history: History
    verdicts: list
    sizes: dict = field(default_factory=dict)      # produced, consumed, dead_letters, peak_live

    @property
    def ok(self) -> bool:
        """No guarantee violated (see `verdict`: that is not yet a pass)."""
        return not any(v.status == "violated" for v in self.verdicts)

    @property
    def verdict(self) -> str:
        """violated (exit 1); incomplete (exit 4) when no guarantee judged anything: the answer
        is not known, never a pass on nothing; else holds (exit 0)."""
        if not self.ok:
            return "violated"
        return "holds" if any(v.judged for v in self.verdicts) else "incomplete"

    def violated(self) -> list[str]:
        return [v.id for v in self.verdicts if v.status == "violated"]

    def to_dict(self, max_listed=50) -> dict:
        h = self.history
        return {
            "path": h.source, "format": h.format, "complete": h.complete, "ok": self.verdict == "holds",
            "verdict": self.verdict, "records": h.records,
            "produced": self.sizes.get("produced", 0), "consumed": self.sizes.get("consumed", 0),
            "dead_letters": self.sizes.get("dead_letters", 0), "peak_live_messages": self.sizes.get("peak_live", 0),
            "groups": sorted(h.groups), "observes": sorted(h.observes),
            "unparseable": h.problem_count, "problems": [str(p) for p in h.problems[:max_listed]],
            "notes": h.notes, "guarantees": [v.to_dict(max_listed) for v in self.verdicts],
        }


def _default_max(default_max):
    if default_max is None:
        from rocketspec.rocketmq.profiles import DEFAULT_PROFILE, get_profile

        default_max = get_profile(DEFAULT_PROFILE).default_max_reconsume_times
    return default_max


def judge(h: History, records, default_max: int | None = None, only=None, window_ms: int = WINDOW_MS,
          progress=None, **opts) -> HistoryReport:
    """Stream `records` of the history `h` through every guarantee (or those in `only`);
    `opts`: Judge's (sweep_every, max_kept, list_unjudged)."""
    j = Judge(h, _default_max(default_max), only, window_ms, **opts)
    feed = j.feed
    if progress is None:
        for rec in records:
            feed(rec)
    else:
        for i, rec in enumerate(records, 1):
            feed(rec)
            if not i & 0xFFFF:
                progress(i)
    _settle(h)
    outs = j.finish()
    verdicts = []
    for g in GUARANTEES:
        if only is not None and g.id not in only:
            continue
        o = outs[g.id]
        miss = missing(j.has, g) or o.unjudged
        if miss:
            verdicts.append(Verdict(g.id, g.title, "skipped", miss, notes=o.notes if o.unjudged else [],
                                    not_judged=dict(o.not_judged), unjudged_messages=o.unjudged_msgs))
            continue
        status = "holds" if not o.n_findings else ("suspect" if o.suspect else "violated")
        verdicts.append(Verdict(g.id, g.title, status, [], o.findings, {k: n for k, n in o.counts.items() if n},
                                o.notes, o.n_findings, dict(o.not_judged), o.unjudged_msgs))
    return HistoryReport(h, verdicts, {"produced": j.n["produce"], "consumed": j.n["consume"],
                                       "dead_letters": j.n["dead_letter"], "peak_live": j.peak_live})


def _settle(h: History) -> None:
    """The history's completeness once read: declared, else the source's, made lossy by any
    record that could not be read."""
    if h.declared_complete is not None:
        h.complete = h.declared_complete
    elif h.problem_count and h.complete:
        h.complete = False
        h.notes.append(f"{h.problem_count} record(s) could not be read: the history is treated as lossy "
                       "(give --complete to judge it complete anyway)")


_TIE = {Produce: 0, Disruption: 1, Reset: 1, Expired: 1, Consume: 2, DeadLetter: 3}


def check_history(h: History, default_max_reconsume: int | None = None, only=None,
                  window_ms: int = WINDOW_MS, **opts) -> HistoryReport:
    """Judge a history held in memory: its records in the source's order, or, for one built by
    hand (no `stream`), in time order."""
    if h.stream:
        records = h.stream
    else:
        records = [*h.produces, *h.disruptions, *h.resets, *h.expired, *h.consumes, *h.dead_letters]
        records.sort(key=lambda r: (_time(r), _TIE[type(r)]))
    return judge(h, records, default_max_reconsume, only, window_ms, **opts)


def _time(r):
    t = getattr(r, "ts", None)
    if t is None:
        t = getattr(r, "end", None)
    return t if t is not None else 0


def open_history(path, fmt: str | None = None, complete: bool | None = None, groups=None):
    """(header, record stream) of the history at `path` in `fmt` (None: detect); `complete`
    declares completeness over the source's default; `groups` (name -> dict) declares what a
    source does not carry (subscriptions, consume mode, maxReconsumeTimes)."""
    from ...traces.history.sources import declare_groups, detect_format, new_history, stream

    fmt = fmt or detect_format(path)
    h = new_history(path, fmt)
    h.declared_complete = complete
    if groups:
        declare_groups(h, groups, getattr(groups, "source", None))
    return h, readable_only(h, stream(path, h))


# What each format's records look like, for the message that refuses a file read as it.
EXPECTED = {
    "trace": "a rocketspec trace (JSON Lines or Parquet)",
    "msgtrace": "RMQ_SYS_TRACE_TOPIC message bodies (Pub, SubBefore, SubAfter, EndTransaction records, fields "
                "separated by \\u0001, each ending with \\u0002), one body per line, or an export of them "
                "(JSON lines with body and bornHost, or `mqadmin printMsg` output): docs/history.md",
    "openchaos": "an OpenChaos history: tab-separated lines of clientId, enqueue|dequeue, REQUEST (6 or 7 fields) "
                 "or RESPONSE (8 to 10 fields), or fault lines",
}


def readable_only(h: History, records):
    """Pass `records` on, then refuse a history that was not read: no readable record, more
    unreadable records than readable ones, or not one send or delivery (a verdict on such a
    file would be a pass on nothing, whatever --complete says)."""
    judged = 0
    for rec in records:
        if type(rec) in (Produce, Consume, DeadLetter):
            judged += 1
        yield rec
    bad = h.problem_count
    readable = h.records - bad
    if bad and (readable <= 0 or bad > readable):
        p = h.problems[0]
        what = ("no record could be read" if readable <= 0 else
                f"{bad} of {h.records} records could not be read, more than were read")
        raise UserError(f"{what} as {h.format}: the first, {p.message}; expected {EXPECTED[h.format]}"
                        + ("" if h.format == "trace" else " (is --format right?)"), file=p.file, line=p.line)
    if not judged:
        raise UserError(f"nothing to judge: no send, delivery or dead letter in the {h.records} record(s) read as "
                        f"{h.format}; expected {EXPECTED[h.format]}", file=h.source)


def check_path(path, fmt: str | None = None, complete: bool | None = None, groups=None,
               default_max: int | None = None, window_ms: int = WINDOW_MS, progress=None) -> HistoryReport:
    """Stream the history at `path` through the guarantees: memory in proportion to its live keys."""
    h, records = open_history(path, fmt, complete, groups)
    return judge(h, records, default_max, None, window_ms, progress)


def load_history(path, fmt: str | None = None, complete: bool | None = None, groups=None) -> History:
    """Read the whole history at `path` into memory (as `check_path` reads it)."""
    h, records = open_history(path, fmt, complete, groups)
    for rec in records:
        h.keep(rec)
    _settle(h)
    return h


__all__ = ["History", "HistoryReport", "Verdict", "check_history", "check_path", "judge", "load_history",
           "open_history", "FORMATS", "GUARANTEES"]
