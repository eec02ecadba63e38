"""What a search of the explorer (model_checks/refexplore.py) reports: its figures, its
violations with their traces, and how a trace is written for `rocketspec check`."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Violation:
    invariant: str
    message: str
    kind: str                  # "guard" (a step of the reference rejected), "state", "end"
    depth: int
    events: list               # the full trace, trace_started first, with seq and ts
    key: object = None
    detail: dict = field(default_factory=dict)

    def to_dict(self):
        return {"invariant": self.invariant, "kind": self.kind, "message": self.message, "depth": self.depth,
                "events": len(self.events), "key": list(self.key) if isinstance(self.key, tuple) else self.key,
                **self.detail}


@dataclass
class Result:
    scope: str
    profile: str
    generated: int = 0         # states generated, those a chain of choiceless steps passes through included
    distinct: int = 0          # nodes: distinct states before a choice
    depth: int = 0             # choices on the longest shortest path
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    complete: bool = True      # False: the state cap or a deadline stopped the search
    stopped: bool = False      # True: the search stopped at the first violation (stop_at_first)
    bounded: bool = False      # True: nodes at the depth bound were not expanded (exhaustive up to it)
    quiescent: int = 0         # runs that ended quiescent (judged by the spec's end rule)
    horizon: int = 0           # runs that reached horizon_ms settled (nothing waiting on the clock): judged
    unjudged: int = 0          # runs cut short by horizon_ms (a delayed message, pause or lost route pending)
    violations: list = field(default_factory=list)
    kinds: dict = field(default_factory=dict)   # fault kind -> its own search's Result (RefExplorer.run_split)

    @property
    def states_per_second(self):
        return self.generated / self.cpu_seconds if self.cpu_seconds else 0.0

    def to_dict(self):
        return {"scope": self.scope, "profile": self.profile, "states_generated": self.generated,
                "states_distinct": self.distinct, "depth": self.depth, "seconds": round(self.seconds, 3),
                "cpu_seconds": round(self.cpu_seconds, 3), "states_per_second": round(self.states_per_second),
                "complete": self.complete, "stopped_at_first_violation": self.stopped, "bounded": self.bounded,
                "runs_quiescent": self.quiescent, "runs_at_horizon": self.horizon, "runs_cut_short": self.unjudged,
                "violations": [v.to_dict() for v in self.violations]} | (
            {"fault_kinds": {k: {"states_generated": r.generated, "states_distinct": r.distinct, "depth": r.depth,
                                 "cpu_seconds": round(r.cpu_seconds, 3), "complete": r.complete}
                             for k, r in self.kinds.items()}} if self.kinds else {})


def _numbered(evs):
    out = []
    last = 0
    for i, ev in enumerate(evs):
        ev = dict(ev)
        ev["seq"] = i
        ev["ts"] = max(last, ev.get("ts", 0))
        last = ev["ts"]
        kind = ev.pop("kind")
        out.append({"seq": ev.pop("seq"), "ts": ev.pop("ts"), "kind": kind, **ev})
    return out


def write_trace(path, events) -> None:
    import orjson

    from rocketspec.outputs import AtomicFile

    # whole or not at all: a counterexample cut by an interrupt must not be read as a trace
    with AtomicFile(path) as fh:
        for ev in events:
            fh.write(orjson.dumps(ev) + b"\n")
