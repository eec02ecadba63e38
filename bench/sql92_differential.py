"""rocketspec's SQL92 evaluator against RocketMQ 4.9.8's own filter, on many generated cases.

Draws N selectors and property maps (conformance/sql92_cases.py), has one JVM answer them
with the real FilterFactory, MessageEvaluationContext and ExpressionMessageFilter
(conformance/java/SqlDiff.java) and rocketspec answer them with the evaluator `rocketspec
filter` uses, and prints how many agree, by RocketMQ's outcome class, and each disagreement
(up to --show). Needs java and the RocketMQ classpath (see conformance/realdiff.py); prints
why and exits 0 when they are absent. Exit 1 when any case disagrees.

    python -m bench.sql92_differential [--examples N] [--seed S] [--show K]
"""
from __future__ import annotations

import argparse
import collections
import time

from hypothesis import HealthCheck, Phase, given, seed, settings

from rocketspec.conformance.realdiff import RealSql92, Unavailable, apply_sql92, sql92_difference, sql92_outcome
from rocketspec.conformance.sql92_cases import requests

BATCH = 512


def draw(n: int, s: int) -> list[dict]:
    """N requests drawn by Hypothesis (generation only: nothing to shrink here)."""
    out: list[dict] = []

    @seed(s)
    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(requests())
    def collect(req):
        out.append(req)

    collect()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.sql92_differential")
    ap.add_argument("--examples", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--show", type=int, default=10)
    a = ap.parse_args(argv)

    t0 = time.perf_counter()
    reqs = draw(a.examples, a.seed)
    t_gen = time.perf_counter() - t0
    try:
        jvm = RealSql92()
    except Unavailable as exc:
        print(f"skipped: {exc}")
        return 0
    t1 = time.perf_counter()
    with jvm:
        real = []
        for i in range(0, len(reqs), BATCH):
            real += jvm.run(reqs[i:i + BATCH])
    t_java = time.perf_counter() - t1
    t2 = time.perf_counter()
    ours = [apply_sql92(r["expr"], r["props"]) for r in reqs]
    t_ours = time.perf_counter() - t2

    by_class: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    diffs = []
    for req, r, o in zip(reqs, real, ours):
        d = sql92_difference(req, r, o)
        by_class[sql92_outcome(r)][d is None] += 1
        if d is not None:
            diffs.append(d)
    distinct = len({r["expr"] for r in reqs})
    print(f"{len(reqs)} cases ({distinct} distinct selectors), seed {a.seed}: "
          f"{len(reqs) - len(diffs)} agree, {len(diffs)} disagree")
    print(f"{'RocketMQ outcome':18} {'cases':>7} {'agree':>7} {'disagree':>8}")
    for cls in sorted(by_class):
        bad, good = by_class[cls]
        print(f"{cls:18} {bad + good:>7} {good:>7} {bad:>8}")
    matched = sum(1 for r in real if r.get("matched"))
    decoded = sum(1 for r in real if r["compiled"] and r["matched"] != (r.get("value") == "TRUE"))
    print(f"broker matched {matched} ({decoded} decided otherwise than the evaluation on the given properties, "
          f"because the broker drops empty ones); generation {t_gen:.1f} s, RocketMQ {t_java:.1f} s, rocketspec {t_ours:.1f} s")
    for d in diffs[:a.show]:
        print("DISAGREE", d)
    return 1 if diffs else 0


if __name__ == "__main__":
    raise SystemExit(main())
