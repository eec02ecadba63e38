"""Explorer speed: states per second and the time to exhaust a scope (CPU time, best of N).

    python -m bench.explore_speed [--scope small] [--profile rocketmq-5.3.3] [--repeat 1]
    python -m bench.explore_speed --scope tiny --repeat 3 --no-sleep-sets
    python -m bench.explore_speed --scope small-orderly --max-depth 15
    python -m bench.explore_speed --scope small-orderly --persistent-sets --progress 60

CPU time (time.process_time), best of the repeats: the machine is shared. "States" are the
successor states generated (each one: a copy-on-write child of the parent, the move's events
through `spec.step`, a fingerprint per symmetry image, and `check_state` when it is new);
"distinct" the states kept. `small` takes several minutes per run (see
docs/notes/explorer-findings.md), hence one repeat by default.
"""
from __future__ import annotations

import argparse
import gc
import sys


class _Log:
    """Progress for long runs: one line on stderr per `every` seconds of wall time."""

    def __init__(self, every: float):
        import time

        self.every, self.clock, self.next = every, time.perf_counter, time.perf_counter() + every

    def set(self, distinct, generated, depth, violations):
        if self.clock() >= self.next:
            self.next = self.clock() + self.every
            print(f"  ... {distinct:,} distinct, {generated:,} generated, depth {depth}, {violations} violations",
                  file=sys.stderr, flush=True)

    def close(self):
        pass


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.explore_speed")
    ap.add_argument("--scope", default="small")
    ap.add_argument("--profile", default="rocketmq-5.3.3")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--max-states", type=int, default=None)
    ap.add_argument("--max-depth", type=int, default=None, help="a bounded search: every run of at most N moves")
    ap.add_argument("--no-sleep-sets", action="store_true", help="explore without sleep sets (for the ratio)")
    ap.add_argument("--persistent-sets", action="store_true",
                    help="partial-order reduction of states (model_checks/persistent.py; replaces sleep sets)")
    ap.add_argument("--progress", type=float, default=None, metavar="SECONDS",
                    help="print the state counts to stderr every SECONDS of wall time")
    args = ap.parse_args(argv)

    from rocketspec.model_checks.explorer import Explorer
    from rocketspec.model_checks.scopes import load_scope

    import resource

    over = {"sleep_sets": not args.no_sleep_sets}
    if args.persistent_sets:
        over["persistent_sets"] = True
    if args.max_depth is not None:
        over["max_depth"] = args.max_depth
    scope = load_scope(args.scope, **over)
    best = None
    for _ in range(max(1, args.repeat)):
        gc.collect()
        ex = Explorer(scope, args.profile, max_states=args.max_states,
                      progress=_Log(args.progress) if args.progress else None)
        res = ex.run()
        if best is None or res.cpu_seconds < best.cpu_seconds:
            best, reexpanded = res, ex.reexpanded
    d = best.to_dict()
    print(f"scope {d['scope']} under {d['profile']}: {d['states_generated']} states generated, "
          f"{d['states_distinct']} distinct, depth {d['depth']}, complete={d['complete']}"
          + (f", bounded at depth {d['depth']} (every run of at most {d['depth']} moves)" if d["bounded"] else ""))
    print(f"  {'time' if d['bounded'] else 'exhaust time'} (CPU, best of {args.repeat}): {best.cpu_seconds:.2f} s")
    print(f"  states/s (generated, CPU): {best.states_per_second:,.0f}")
    print(f"  distinct states/s (CPU): {best.distinct / best.cpu_seconds if best.cpu_seconds else 0:,.0f}")
    if d["persistent_sets"]:
        print(f"  persistent sets: on ({d['states_reduced']} states expanded with a persistent subset); sleep sets off")
    else:
        print(f"  sleep sets: {'off' if args.no_sleep_sets else 'on'}; states expanded again: {reexpanded}")
    print(f"  wall time: {best.seconds:.2f} s; peak memory: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB")
    print(f"  violations: {len(best.violations)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
