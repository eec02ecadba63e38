"""The explorer on the reference itself (`explore --engine reference`): states per second and
the time to exhaust each scope, under both release profiles, and where a scope is too large, how
far a state cap got.

    python -m bench.explore_reference [--scopes tiny-quiet,tiny-crash,small] [--max-states 20000] [--workers 2]

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
}


def main(argv=None) -> int:
    from rocketspec.model_checks.refexplore import RefExplorer
    from rocketspec.model_checks.scopes import load_scope

    ap = argparse.ArgumentParser(prog="python -m bench.explore_reference")
    ap.add_argument("--scopes", default="tiny-quiet,tiny-retry,tiny-persist,tiny-query,tiny-crash,small")
    ap.add_argument("--profiles", default="rocketmq-4.9.8,rocketmq-5.3.3")
    ap.add_argument("--max-states", type=int, default=20000)
    ap.add_argument("--workers", type=int, default=1, help="processes expanding each level (RefExplorer workers)")
    args = ap.parse_args(argv)
    print("| scope | profile | distinct | generated | depth | CPU s | wall s | generated/s CPU | exhausted | violations |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.scopes.split(","):
        base, over = VARIANTS.get(name, (name, {}))
        for prof in args.profiles.split(","):
            r = RefExplorer(load_scope(base, **over), prof, max_states=args.max_states,
                            workers=args.workers).run()
            rate = r.generated / r.cpu_seconds if r.cpu_seconds else 0
            viol = ", ".join(f"{v.invariant}@{v.depth}" for v in r.violations) or "-"
            print(f"| {name} | {prof} | {r.distinct:,} | {r.generated:,} | {r.depth} | {r.cpu_seconds:.1f} | "
                  f"{r.seconds:.1f} | {rate:,.0f} | {'yes' if r.complete else 'NO (cap)'} | {viol} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
