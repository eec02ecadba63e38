"""`rocketspec explore [--scope S|FILE] [--profile P] [--json] [--out-dir D] [--max-depth N]
[--persistent-sets] [--continue]`: exhaustive small-scope model checking of the spec (with
`--max-depth`, of every run of at most N moves: a bounded check for scopes too large to exhaust;
with `--persistent-sets`, exhaustive over a partial-order reduced graph, see
model_checks/persistent.py).

Like TLC, the search stops at the first violation: breadth-first, so its counterexample is a
shortest one (the states at that depth are finished first, and every violation found by then is
reported). `--continue` searches on and reports the first counterexample of every invariant.
Liveness needs the whole graph: it is checked only when the search ran to the end, never on a
graph cut by the state cap or by the first violation.

Exit codes: 0 no violation, 1 violations (each safety violation written as a trace file that
`rocketspec check` also rejects; a liveness lasso is a run the spec accepts step by step), 2 bad
input (unknown scope or profile, bad scope file), 4 incomplete (the state cap ran out before the
search did, and no violation was found).
"""
from __future__ import annotations

import sys

import click

from rocketspec.model_checks.scopes import named_scopes

# Bare `rocketspec explore` must answer within a minute: the full search of `tiny` does (about
# 15 s of CPU, liveness included). Larger scopes stay one option away.
DEFAULT_SCOPE = "tiny"


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


def _render(res, files, live, live_skipped=None) -> str:
    d = res.to_dict()
    out = [f"explore {d['scope']} under {d['profile']}: {d['states_generated']} states generated, "
           f"{d['states_distinct']} distinct, depth {d['depth']}, {d['seconds']} s "
           f"({d['states_per_second']} states/s CPU), symmetry group of {d['symmetries']}"
           + ("" if d["complete"] else " (INCOMPLETE: state cap reached)")]
    if res.stopped:
        out.append("STOPPED at the first violation (a shortest counterexample); --continue searches on "
                   "for the other invariants")
    if d["bounded"] and d["complete"]:
        out.append(f"BOUNDED: every run of at most {d['depth']} moves was checked; states at that depth were "
                   "not expanded, so longer runs are not covered")
    if d["persistent_sets"]:
        out.append(f"REDUCED (persistent sets): {d['states_reduced']} states expanded with a persistent subset of "
                   "their moves; every quiescent state and every rejected step is still reached, but a "
                   "counterexample is shortest within the reduced graph only")
    if live_skipped:
        out.append(f"liveness not checked: it needs the whole graph, and {live_skipped}")
    if not res.violations and not res.complete:
        out.append("INCOMPLETE: no violation among the states explored; the rest of the scope was not searched")
    if live is not None:
        out.append(f"liveness: {live['sccs']} strongly connected components with a cycle, {live['fair_cycles']} "
                   f"fair counterexamples ({live['fairness']} fairness, stuttering included), "
                   f"{len(live['violations'])} violations reported")
    if not res.violations:
        out.append("no violation")
    for v, path in zip(res.violations, files):
        out.append("")
        out.append(f"  {v.invariant} ({v.kind}) at depth {v.depth}: {v.message}")
        if path and v.kind == "liveness":
            out.append(f"    trace: {path}  ({len(v.events)} events: the lasso's prefix and one turn of its cycle, "
                       "each step allowed by the spec; the violation is the cycle repeated forever)")
        elif path:
            out.append(f"    trace: {path}  ({len(v.events)} events; `rocketspec check {path}` rejects it)")
        for ev in v.events[-5:]:
            brief = {k: ev[k] for k in ev if k not in ("seq", "group", "broker")}
            out.append(f"      {brief}")
    return "\n".join(out)


@click.command("explore")
@click.option("--scope", "scope_name", default=DEFAULT_SCOPE, show_default=True,
              help=f"A named scope ({', '.join(named_scopes())}; model_checks/scopes/) or a scope TOML file. "
                   f"The default, {DEFAULT_SCOPE}, is searched in full, liveness included, in well under a "
                   "minute; `--scope small --persistent-sets` takes a few minutes, `--scope small` (the full "
                   "search with liveness) about ten.")
@click.option("--profile", "profile", default=None, help="Version profile (default rocketmq-5.3.3).")
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable JSON report.")
@click.option("--out-dir", "out_dir", default="explore-out", show_default=True,
              help="Directory for the counterexample traces (JSON Lines).")
@click.option("--liveness/--no-liveness", default=True, show_default=True,
              help="Also look for fair cycles that violate the liveness properties. It needs every "
                   "edge of the graph, so sleep sets are off and memory grows with the edges: "
                   "`small` takes about 11 min of CPU and 3.7 GB with it, 6 min and 1.9 GB without.")
@click.option("--max-states", type=click.IntRange(1, 200_000_000), default=None,
              help="Stop after this many distinct states (then exit 4 if nothing was found: incomplete).")
@click.option("--max-depth", type=click.IntRange(min=1), default=None,
              help="Expand no state deeper than this many moves: every run of at most N moves is checked "
                   "(a bounded search; liveness is then not checked).")
@click.option("--persistent-sets", "persistent_sets", is_flag=True,
              help="Partial-order reduction of states (scope key persistent_sets): far fewer states in "
                   "scopes with several clients; counterexamples are then shortest within the reduced graph "
                   "only, and liveness is not checked.")
@click.option("--continue", "keep_going", is_flag=True,
              help="Search on after the first violation: report the first (shortest) counterexample of every "
                   "invariant, liveness included. Without it the search stops at the first violation, as TLC does.")
@click.option("--engine", type=click.Choice(["model", "reference"]), default="model", show_default=True,
              help="What is searched: `model`, the explorer's own moves (model_checks/generator.py); "
                   "`reference`, the reference broker and client themselves, one simulator task at a time with "
                   "every choice of the scope (model_checks/refexplore.py; exhaustive within the scope's "
                   "horizon_ms; a node is a state before a choice, tasks due together that commute by their "
                   "declared footprints run in one order; no symmetry, no liveness graph: the spec judges "
                   "each run's end).")
@click.option("--workers", type=click.IntRange(1, 64), default=1, show_default=True,
              help="`--engine reference`: processes that search in parallel: with one fault among several "
                   "kinds, one kind's search each; else a breadth-first level's nodes (the same search, the "
                   "same states and counterexamples, whatever the number).")
@click.option("--quiet", is_flag=True, help="No progress display.")
def explore(scope_name, profile, as_json, out_dir, liveness, max_states, max_depth, persistent_sets, keep_going,
            quiet, engine, workers):
    """Explore every behaviour of a small deployment through the spec, breadth-first.

    Without --scope it explores `tiny` (one consumer, two queues, two messages, one retry,
    one fault) completely, liveness included, in well under a minute; see --scope for the
    larger scopes.

    Stops at the first violation (breadth-first: a shortest counterexample); --continue finds
    the first of every invariant. Liveness is checked only when the whole scope was searched.

    Exit 0 when no violation is found, 1 on violations, 2 on bad input, 4 when the state cap
    ran out first (incomplete: no liveness verdict on a cut graph)."""
    import os

    import orjson

    from rocketspec.model_checks.explorer import Explorer, write_trace
    from rocketspec.model_checks.scopes import Scope, load_scope
    from rocketspec.spec.profiles import get_profile

    if workers > 1 and engine != "reference":
        raise click.UsageError("--workers is for --engine reference (the model engine runs in one process)")
    if engine == "reference" and (persistent_sets or max_depth is not None):
        raise click.UsageError("--persistent-sets and --max-depth are for --engine model: the reference engine "
                               "searches every run of the scope to its end (quiescence or horizon_ms)")
    over = {}
    if persistent_sets:
        over["persistent_sets"] = True
    if max_depth is not None:
        over["max_depth"] = max_depth
    # the options go through the scope's validation (e.g. persistent sets exclude a depth bound)
    scope = load_scope(scope_name, **over)
    prof = get_profile(profile)
    bounded = max_depth is not None or scope.max_depth != Scope().max_depth
    # a bounded graph has dead ends at the bound, a reduced one lacks edges: cycles and stutters
    # would mean nothing, so the graph is not even kept
    live_skipped = None
    if liveness and bounded:
        live_skipped = "the search has a depth bound"
    elif liveness and scope.persistent_sets:
        live_skipped = "the graph is reduced (persistent sets)"
    liveness = liveness and live_skipped is None
    bar = _Bar(not quiet and not as_json, max_states or scope.max_states)
    if engine == "reference":
        from rocketspec.model_checks.refexplore import RefExplorer

        if liveness:
            live_skipped, liveness = "the reference engine judges each run's end instead (trace_ended)", False
        ex = RefExplorer(scope, prof, progress=bar, max_states=max_states, stop_at_first=not keep_going,
                         workers=workers)
    else:
        ex = Explorer(scope, prof, liveness=liveness, progress=bar, max_states=max_states,
                      stop_at_first=not keep_going)
    res = ex.run()
    live = None
    # liveness is about infinite runs of the whole graph: states the search did not expand (the cap
    # or the first violation stopped it) would look like dead ends and cut cycles short
    if liveness and not res.complete:
        live_skipped, liveness = "the state cap stopped the search", False
    elif liveness and res.stopped:
        live_skipped, liveness = "the search stopped at the first violation (--continue searches on)", False
    if liveness:
        from rocketspec.model_checks.liveness import check_liveness

        live = check_liveness(ex, res, max_reports=2 if keep_going else 1)
        res.violations.extend(live["violations"])
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
        if live_skipped:
            d["liveness"] = f"not checked ({live_skipped})"
        elif live is not None:
            d["liveness"] = {k: v for k, v in live.items() if k != "violations"}
        d["verdict"] = "violated" if res.violations else "holds"
        sys.stdout.write(orjson.dumps(d).decode() + "\n")
    else:
        click.echo(_render(res, files, live, live_skipped))
    sys.exit(1 if res.violations else 0 if res.complete else 4)  # 4: the state cap ran out first
