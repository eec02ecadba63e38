"""The explorer on the reference itself (`rocketspec explore`): states per second and
the time to exhaust each scope, under both release profiles, and where a scope is too large, how
far a state cap got.

    python -m bench.explore_reference [--scopes tiny-quiet,tiny-crash,small] [--max-states 20000] [--workers 2]
    python -m bench.explore_reference --bugs all [--max-states 20000]
    python -m bench.explore_reference --scopes tiny-crash --no-chain --no-reduce   # the search before both
    python -m bench.explore_reference --scopes small --max-states 3000000 --workers 2   # small, a kind per worker

A scope with one fault among several kinds is searched a kind at a time (RefExplorer.run_split):
the scope's row sums the kinds', and a row per kind follows.

`--bugs` searches each known bug's scope (BUG_SCOPES) breadth-first under the bug's
profile until the first violation (a shortest trace), then the same scope under the release
the profile reverts (rocketmq-4.9.8, 5.3.3, or 5.5.1 for a bug fixed there; for an open bug,
which every release has, the variant with the fix: profiles.OPEN_BUG_FIXES) to the end or the
state cap.

Scopes: a named scope, or one of the variants below (tiny with fewer fault kinds). For the
comparison with TLC (about 160,000 generated states/s with 2 workers on this machine for a
RocketMQ consumer model of similar scope) the figure printed is generated states per CPU second
(the workers' CPU included), and the wall time.
"""
from __future__ import annotations

import argparse

VARIANTS = {
    "tiny-quiet": ("tiny", {"faults": 0, "failures": 0}),
    "tiny-retry": ("tiny", {"faults": 0}),
    "tiny-crash": ("tiny", {"failures": 0, "fault_kinds": ["crash"]}),
    "tiny-persist": ("tiny", {"fault_kinds": ["persist_lost"]}),
    "tiny-query": ("tiny", {"fault_kinds": ["query_failure"]}),
    "small-quiet": ("small", {"faults": 0, "failures": 0}),
    "small-crash": ("small", {"failures": 0, "fault_kinds": ["crash"]}),
}


def main(argv=None) -> int:
    from rocketspec.model_checks.refexplore import RefExplorer
    from rocketspec.model_checks.scopes import load_scope

    ap = argparse.ArgumentParser(prog="python -m bench.explore_reference")
    ap.add_argument("--scopes", default="tiny-quiet,tiny-retry,tiny-persist,tiny-query,tiny-crash,small")
    ap.add_argument("--profiles", default="rocketmq-4.9.8,rocketmq-5.3.3")
    ap.add_argument("--max-states", type=int, default=20000)
    ap.add_argument("--workers", type=int, default=1, help="processes expanding each level (RefExplorer workers)")
    ap.add_argument("--bugs", default=None, help="all, or known bugs (#4215,#2449): search each bug's scope")
    ap.add_argument("--no-chain", action="store_true", help="a node per step (RefExplorer chain=False)")
    ap.add_argument("--no-reduce", action="store_true", help="every order of tasks due together (reduce=False)")
    ap.add_argument("--progress", action="store_true", help="states so far on stderr every 30 s")
    args = ap.parse_args(argv)
    if args.bugs:
        return _bugs(args)
    print("| scope | profile | distinct | generated | depth | CPU s | wall s | generated/s CPU | exhausted | violations |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.scopes.split(","):
        base, over = VARIANTS.get(name, (name, {}))
        for prof in args.profiles.split(","):
            r = RefExplorer(load_scope(base, **over), prof, max_states=args.max_states,
                            workers=args.workers, **_engine(args)).run()
            rate = r.generated / r.cpu_seconds if r.cpu_seconds else 0
            viol = ", ".join(f"{v.invariant}@{v.depth}" for v in r.violations) or "-"
            print(f"| {name} | {prof} | {r.distinct:,} | {r.generated:,} | {r.depth} | {r.cpu_seconds:.1f} | "
                  f"{r.seconds:.1f} | {rate:,.0f} | {'yes' if r.complete else 'NO (cap)'} | {viol} |", flush=True)
            for kind, k in r.kinds.items():    # one fault among several kinds: a search per kind
                krate = k.generated / k.cpu_seconds if k.cpu_seconds else 0
                kviol = ", ".join(f"{v.invariant}@{v.depth}" for v in k.violations) or "-"
                print(f"| {name}, {kind} only | {prof} | {k.distinct:,} | {k.generated:,} | {k.depth} | "
                      f"{k.cpu_seconds:.1f} | {k.seconds:.1f} | {krate:,.0f} | "
                      f"{'yes' if k.complete else 'NO (cap)'} | {kviol} |", flush=True)
    return 0


def _engine(args) -> dict:
    return {"chain": not args.no_chain, "reduce": not args.no_reduce,
            "progress": _Progress() if args.progress else None}


class _Progress:
    """States so far, on stderr, at most every 30 s (RefExplorer's progress interface)."""

    def __init__(self):
        import time

        self.clock = time.monotonic
        self.t0 = self.last = self.clock()

    def set(self, distinct, generated, depth, found):
        import sys

        now = self.clock()
        if now - self.last >= 30:
            self.last = now
            print(f"  {now - self.t0:6.0f} s: {distinct:,} distinct, {generated:,} generated, depth {depth}, "
                  f"{found} violations", file=sys.stderr, flush=True)

    def close(self):
        pass


def _bugs(args) -> int:
    from rocketspec.model_checks.refexplore import RefExplorer
    from rocketspec.model_checks.scopes import BUG_SCOPES, load_scope
    from rocketspec.rocketmq.profiles import OPEN_BUG_FIXES, PROFILES

    bugs = sorted(BUG_SCOPES) if args.bugs == "all" else args.bugs.split(",")
    print("| bug | profile | finding (depth) | distinct | generated | CPU s | release | release: distinct | "
          "release: CPU s | release: exhausted, findings |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for bug in bugs:
        name, over = BUG_SCOPES[bug]
        prof = next(p for p in PROFILES.values() if p.known_bug == bug)
        r = RefExplorer(load_scope(name, **over), prof.name, stop_at_first=True, workers=args.workers,
                        **_engine(args)).run()
        found = ", ".join(f"{v.invariant} ({v.depth})" for v in r.violations) or "none"
        # a bug fixed in 5.5.1 (#10276) is clean in that release; the older ones in 5.3.3
        base = OPEN_BUG_FIXES[bug].name if bug in OPEN_BUG_FIXES else (
            "rocketmq-4.9.8" if prof.release.startswith("4") else
            "rocketmq-5.5.1" if prof.release.startswith("5.5") else "rocketmq-5.3.3")
        r2 = RefExplorer(load_scope(name, **over), base, max_states=args.max_states, workers=args.workers,
                         **_engine(args)).run()
        found2 = ", ".join(f"{v.invariant} ({v.depth})" for v in r2.violations) or "none"
        print(f"| {bug} | {prof.name} | {found} | {r.distinct:,} | {r.generated:,} | {r.cpu_seconds:.1f} | {base} | "
              f"{r2.distinct:,} | {r2.cpu_seconds:.1f} | {'yes' if r2.complete else 'NO (cap)'}, {found2} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
