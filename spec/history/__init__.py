"""rocketspec.spec.history: the black-box level of the spec.

A *history* (`model.History`) holds only what a user of RocketMQ sees: produce and consume
records, dead letters, and, where the source has them, disruptions (faults, consumers joining
and leaving), offset resets and retention. The guarantees (`guarantees.GUARANTEES`) are checked
from it alone; each declares the fields it needs and is skipped, with the reason, where a
history lacks them.

Sources (`load_history`): a full trace (`from_trace`: the two levels compared on one run), the
RocketMQ message-trace topic's bodies (`msgtrace`), an OpenChaos history file (`openchaos`).

    h = load_history(path, fmt=None)       # format told by the file's first bytes if None
    rep = check_history(h)                 # HistoryReport: per guarantee holds/violated/skipped
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .guarantees import GUARANTEES, missing
from .model import History

FORMATS = ("trace", "msgtrace", "openchaos")


@dataclass
class Verdict:
    id: str
    title: str
    status: str                 # holds | violated | suspect | skipped
    missing: list = field(default_factory=list)
    findings: list = field(default_factory=list)
    counts: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    def to_dict(self, max_listed=50):
        return {"id": self.id, "title": self.title, "status": self.status, "missing": self.missing,
                "findings": len(self.findings), "listed": [f.to_dict() for f in self.findings[:max_listed]],
                "counts": self.counts, "notes": self.notes}


@dataclass
class HistoryReport:
    history: History
    verdicts: list

    @property
    def ok(self) -> bool:
        return not any(v.status == "violated" for v in self.verdicts)

    def violated(self) -> list[str]:
        return [v.id for v in self.verdicts if v.status == "violated"]

    def to_dict(self, max_listed=50) -> dict:
        h = self.history
        return {
            "path": h.source, "format": h.format, "complete": h.complete, "ok": self.ok,
            "verdict": "holds" if self.ok else "violated", "records": h.records,
            "produced": len(h.produces), "consumed": len(h.consumes), "dead_letters": len(h.dead_letters),
            "groups": sorted(h.groups), "observes": sorted(h.observes),
            "unparseable": len(h.problems), "problems": [str(p) for p in h.problems[:max_listed]],
            "notes": h.notes, "guarantees": [v.to_dict(max_listed) for v in self.verdicts],
        }


def check_history(h: History, default_max_reconsume: int | None = None, only=None) -> HistoryReport:
    """Judge every guarantee (or those in `only`) on `h`."""
    if default_max_reconsume is None:
        from ..profiles import DEFAULT_PROFILE, get_profile

        default_max_reconsume = get_profile(DEFAULT_PROFILE).default_max_reconsume_times
    verdicts = []
    for g in GUARANTEES:
        if only is not None and g.id not in only:
            continue
        miss = missing(h, g)
        if miss:
            verdicts.append(Verdict(g.id, g.title, "skipped", miss))
            continue
        o = g.check(h, default_max_reconsume)
        status = "holds" if not o.findings else ("suspect" if o.suspect else "violated")
        verdicts.append(Verdict(g.id, g.title, status, [], o.findings, dict(o.counts), o.notes))
    return HistoryReport(h, verdicts)


def load_history(path, fmt: str | None = None, complete: bool | None = None, groups=None) -> History:
    """Read a history from `path` in `fmt` (None: detect); `complete` overrides the source's
    default; `groups` (name -> dict) declares what a source does not carry (subscriptions,
    consume mode, maxReconsumeTimes)."""
    from .sources import detect_format, read

    fmt = fmt or detect_format(path)
    h = read(path, fmt)
    if groups:
        from .sources import declare_groups

        declare_groups(h, groups, path)
    if h.problems and h.complete and complete is None:
        h.complete = False
        h.notes.append(f"{len(h.problems)} record(s) could not be read: the history is treated as lossy "
                       "(give --complete to judge it complete anyway)")
    if complete is not None:
        h.complete = complete
    return h


__all__ = ["History", "HistoryReport", "Verdict", "check_history", "load_history", "FORMATS", "GUARANTEES"]
