"""`rocketspec explore [--scope S|FILE] [--profile P] [--json] [--out-dir D] [--max-states N]
[--max-depth N] [--continue] [--workers N]`: exhaustive small-scope model checking of the
reference broker and client themselves (model_checks/refexplore.py), every step judged by the
spec. With `--max-depth`, every run of at most N choices: a bounded check for scopes too large
to exhaust.

Like TLC, the search stops at the first violation: breadth-first, so its counterexample is a
shortest one (the nodes at that depth are finished first, and every violation found by then is
reported). `--continue` searches on and reports the first counterexample of every invariant.
Liveness (INV-LIVE-1) is judged at the end of each run that quiesces, or that reaches the scope's
horizon with nothing left waiting on the clock; a search cut by the state cap reports no verdict
on the runs it did not finish.

Exit codes: 0 no violation, 1 violations (each written as a trace file that `rocketspec check`
also rejects), 2 bad input (unknown scope or profile, bad scope file), 4 incomplete (the state
cap ran out before the search did, and no violation was found).
"""
from __future__ import annotations

import sys
from typing import NamedTuple

import click

from rocketspec import jsonout

from rocketspec.model_checks.scopes import named_scopes

# Bare `rocketspec explore` must answer within a minute: the full search of `tiny` does (about
# 12 s of CPU). Larger scopes stay one option away.
DEFAULT_SCOPE = "tiny"


class Cost(NamedTuple):
    profile: str
    cpu_s: str
    wall: str | None
    measured: str


# The latest measured cost of exhausting the larger scopes (docs/model-checking.md, "How long";
# the README quotes the same figures and tests/test_docs_agree.py keeps the three equal).
SCOPE_COST: dict[str, tuple[Cost, ...]] = {
    "small": (Cost("rocketmq-4.9.8", "538.4 CPU-s", "276.5 s wall with --workers 2", "2026-12-04"),
              Cost("rocketmq-5.3.3", "3,940 CPU-s", None, "2026-12-04")),
}


def _cost_text(scope: str) -> str:
    return "; ".join(f"under {c.profile} about {c.cpu_s}" + (f" ({c.wall})" if c.wall else "") + f", measured {c.measured}"
                     for c in SCOPE_COST[scope])


class _Bar:
    """The explorer's progress: a tqdm bar on a terminal (options.progress_bar), else nothing."""

    def __init__(self, enabled: bool, limit: int):
        from rocketspec.commands.options import progress_bar

        self.t = progress_bar(enabled=enabled, total=None, unit=" states")
        self.last = 0

    def set(self, distinct, generated, depth, violations):
        if self.t is None:
            return
        self.t.update(distinct - self.last)
        self.last = distinct
        self.t.set_postfix(generated=generated, depth=depth, violations=violations, refresh=False)

    def close(self):
        if self.t is not None:
            self.t.close()


def _file_part(name: str, limit: int = 64) -> str:
    """The scope's name as part of a file name: it is the user's text (any length, any
    character, a NUL), a file name is short and plain. Other characters become '_'; a long name
    is cut, with a hash of the whole so that cut names stay apart."""
    import hashlib
    import re

    part = re.sub(r"[^A-Za-z0-9._-]", "_", name)
    if len(part) > limit:
        part = part[:limit] + "-" + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return part


def _render(res, files) -> str:
    d = res.to_dict()
    out = [f"explore {d['scope']} under {d['profile']}: {d['states_generated']} states generated, "
           f"{d['states_distinct']} distinct, depth {d['depth']}, {d['seconds']} s "
           f"({d['states_per_second']} states/s CPU); runs ended: {d['runs_quiescent']} quiescent, "
           f"{d['runs_at_horizon']} at the horizon (both judged), {d['runs_cut_short']} cut short"
           + ("" if d["complete"] else " (INCOMPLETE: state cap reached)")]
    for k, r in d.get("fault_kinds", {}).items():
        out.append(f"  fault kind {k}: {r['states_distinct']} distinct, {r['states_generated']} generated, "
                   f"depth {r['depth']}, {r['cpu_seconds']} CPU-s" + ("" if r["complete"] else " (INCOMPLETE)"))
    if res.stopped:
        out.append("STOPPED at the first violation (a shortest counterexample); --continue searches on "
                   "for the other invariants")
    if d["bounded"] and d["complete"]:
        out.append(f"BOUNDED: every run of at most {d['depth']} choices was checked; states at that depth were "
                   "not expanded, so longer runs are not covered")
    if not res.violations and not res.complete:
        out.append("INCOMPLETE: no violation among the states explored; the rest of the scope was not searched")
    if not res.violations:
        out.append("no violation")
    for v, path in zip(res.violations, files):
        out.append("")
        out.append(f"  {v.invariant} ({v.kind}) at depth {v.depth}: {v.message}")
        if path:
            out.append(f"    trace: {path}  ({len(v.events)} events; `rocketspec check {path}` rejects it)")
        for ev in v.events[-5:]:
            brief = {k: ev[k] for k in ev if k not in ("seq", "group", "broker")}
            out.append(f"      {brief}")
    return "\n".join(out)


def _engine(ctx, param, value):
    if value not in (None, "reference"):
        raise click.BadParameter("the explorer's own model (`model`) is retired: explore searches the reference "
                                 "broker and client themselves; drop --engine")
    return value


@click.command("explore")
@click.option("--scope", "scope_name", default=DEFAULT_SCOPE, show_default=True,
              help=f"A named scope ({', '.join(named_scopes())}; model_checks/scopes/) or a scope TOML file. "
                   f"The default, {DEFAULT_SCOPE}, is searched in full in well under a minute; `--scope small` "
                   f"takes {_cost_text('small')} (`--workers N` expands each fault kind's levels in N processes).")
@click.option("--profile", "profile", default=None, help="Version profile (default rocketmq-5.3.3).")
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable JSON report.")
@click.option("--out-dir", "out_dir", default="explore-out", show_default=True,
              help="Directory for the counterexample traces (JSON Lines).")
@click.option("--max-states", type=click.IntRange(1, 200_000_000), default=None,
              help="Stop after this many distinct states (then exit 4 if nothing was found: incomplete).")
@click.option("--max-depth", type=click.IntRange(min=1), default=None,
              help="Expand no state deeper than this many choices: every run of at most N choices is checked "
                   "(a bounded search for scopes too large to exhaust).")
@click.option("--continue", "keep_going", is_flag=True,
              help="Search on after the first violation: report the first (shortest) counterexample of every "
                   "invariant. Without it the search stops at the first violation, as TLC does.")
@click.option("--engine", default=None, hidden=True, callback=_engine,
              help="Accepted for old scripts: `reference` is the only engine.")
@click.option("--workers", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Processes that search in parallel: with one fault among several kinds, one kind's search "
                   "each; else a breadth-first level's nodes (the same search, the same states and "
                   "counterexamples, whatever the number).")
@click.option("--quiet", is_flag=True, help="No progress display.")
def explore(scope_name, profile, as_json, out_dir, max_states, max_depth, keep_going, engine, workers, quiet):
    """Explore every run of a small deployment of the reference broker and client, breadth-first,
    every step judged by the spec.

    A node is the state of the whole reference (simulator, broker, clients) before a choice: which
    of the tasks due together runs first, whether a fault strikes, the listener's outcome, a lost
    one-way call. Tasks that commute by their declared footprints run in one order. Each run is
    followed to its end: quiescence, or the scope's horizon_ms, both judged by the spec's end rule
    (INV-LIVE-1) unless a delayed message, a pause or a lost route was still pending at the horizon. Without --scope it explores `tiny` (one consumer, two queues, two messages, one
    retry, one fault) completely, in well under a minute.

    Stops at the first violation (breadth-first: a shortest counterexample); --continue finds
    the first of every invariant.

    Exit 0 when no violation is found, 1 on violations, 2 on bad input, 4 when the state cap
    ran out first (incomplete)."""
    import os


    from rocketspec.model_checks.refexplore import RefExplorer
    from rocketspec.model_checks.result import write_trace
    from rocketspec.model_checks.scopes import load_scope
    from rocketspec.rocketmq.profiles import get_profile

    over = {} if max_depth is None else {"max_depth": max_depth}
    scope = load_scope(scope_name, **over)
    prof = get_profile(profile)
    bar = _Bar(not quiet and not as_json, max_states or scope.max_states)

    def kind_done(kind, r):
        # a search split by fault kind can run for an hour: each kind's figures as it ends
        if not quiet:
            click.echo(f"fault kind {kind} done: {r.distinct} distinct, {r.generated} generated, depth {r.depth}, "
                       f"{r.cpu_seconds:.1f} CPU-s, {'exhausted' if r.complete else 'INCOMPLETE'}, "
                       f"{len(r.violations)} violation(s)", err=True)

    res = RefExplorer(scope, prof, progress=bar, max_states=max_states, stop_at_first=not keep_going,
                      workers=workers, on_kind=kind_done).run()
    files = []
    if res.violations:
        os.makedirs(out_dir, exist_ok=True)
    for v in res.violations:
        name = f"{_file_part(scope.name)}-{prof.name}-{v.invariant}-{v.kind}.jsonl"
        path = os.path.join(out_dir, name)
        write_trace(path, v.events)
        files.append(path)
    if as_json:
        d = res.to_dict()
        d["violations"] = [dict(v.to_dict(), trace=p) for v, p in zip(res.violations, files)]
        d["verdict"] = "violated" if res.violations else "holds"
        sys.stdout.write(jsonout.dumps(d) + "\n")
    else:
        click.echo(_render(res, files))
    sys.exit(1 if res.violations else 0 if res.complete else 4)  # 4: the state cap ran out first
