"""How deep RocketMQ's SQL92 parser nests with its default thread stack, against ours.

For each kind of nesting, prints the deepest that real RocketMQ 4.9.8 compiles on a
default-stack thread (conformance/java/SqlDepth.java): cold (each probe in a fresh JVM, the
parser interpreted) and warm (after N parses, the parser JIT-compiled), and the deepest
that rocketspec compiles (rocketspec.rocketmq.filter.sql92, JAVA_MAX_NESTING). rocketspec must compile at
least the warm maximum. Needs java and the RocketMQ classpath (see conformance/realdiff.py);
prints why and exits 0 when they are absent.

    python -m bench.sql92_java_depth [--kinds paren,not,...] [--warmup N] [--no-cold]
"""
from __future__ import annotations

import argparse
import time

from rocketspec.conformance.realdiff import Unavailable, java_sql92_compile, java_sql92_edge
from rocketspec.rocketmq.filter import FilterCompileError, compile_sql92

# The same shapes as SqlDepth.shape()
SHAPES = {
    "paren": lambda n: "(" * n + "a = 1" + ")" * n,
    "not": lambda n: "NOT " * n + "a",
    "minus": lambda n: "a > " + "- " * n + "1",
    "plus": lambda n: "a > " + "+ " * n + "1",
    "notparen": lambda n: "NOT (" * n + "a" + ")" * n,
    "eqparen": lambda n: "a = (" * n + "a" + ")" * n,
    "andparen": lambda n: "a AND (" * n + "a" + ")" * n,
    "plusparen": lambda n: "a > " + "+(" * n + "1" + ")" * n,
}


def deepest(ok, hi=1 << 16) -> int:
    lo = 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


def ours(kind: str) -> int:
    def ok(n):
        try:
            compile_sql92(SHAPES[kind](n), "rocketmq-4.9.8", cache=False)
            return True
        except FilterCompileError:
            return False
    return deepest(ok)


def cold(kind: str) -> int:
    return deepest(lambda n: java_sql92_compile([SHAPES[kind](n)])[0]["ok"], hi=4096)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.sql92_java_depth")
    ap.add_argument("--kinds", default=",".join(SHAPES))
    ap.add_argument("--warmup", type=int, default=5000)
    ap.add_argument("--no-cold", action="store_true")
    a = ap.parse_args(argv)
    print(f"{'kind':10} {'java cold':>10} {'java warm':>10} {'rocketspec':>10}  (deepest that compiles; "
          f"warm after {a.warmup} parses)")
    short = True
    for kind in a.kinds.split(","):
        t = time.perf_counter()
        try:
            c = "-" if a.no_cold else cold(kind)
            w = java_sql92_edge(kind, a.warmup)
        except Unavailable as exc:
            print(f"skipped: {exc}")
            return 0
        o = ours(kind)
        short &= o >= w
        print(f"{kind:10} {c:>10} {w:>10} {o:>10}  {'ok' if o >= w else 'ROCKETSPEC REFUSES WHAT JAVA COMPILES'}"
              f"  ({time.perf_counter() - t:.0f} s)", flush=True)
    return 0 if short else 1


if __name__ == "__main__":
    raise SystemExit(main())
