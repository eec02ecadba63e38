"""Peak memory of `rocketspec replay` at two or more trace lengths, and their ratio.

    python -m bench.replay_memory [--events 1e6,3e6] [--cores 2] [--path exact|default|arrow]

The data is bench.replay_scale's (independent copies of the `basic` deployment, at most 64
live at a time; generated once into /tmp/rocketspec-replay-bench-N and reused), replayed on
local[cores] (the exact path unless --path says otherwise). For each length it prints the peak resident
memory of a Python worker (the most of the replay tasks' workers, ru_maxrss: the read, route
and sort stages of that worker count too) and of the JVM, the CPU seconds (the JVM and its
Python workers) and the load average (`uptime`) before and after, the live keys a partition
held at its peak, the scopes (deployments) the partitions dropped, and the size of the plan
every executor gets. Then the ratio of the worker peaks of the longest and the shortest trace:
near 1 when a worker's memory does not grow with the trace.

With Spark's default `spark.python.worker.memory` (512 MiB) PySpark's sort in the Python worker
spills to disk at about 460 MiB, so a worker peaks near that whatever the spec state holds;
`--worker-memory 128m` lowers that part, which shows the spec state's own share.
"""
from __future__ import annotations

import argparse
import json
import os
import pickle

from .replay_scale import generate, run_replay


def _load() -> str:
    return "load %.2f %.2f %.2f" % os.getloadavg()


def _data(n: int) -> tuple[str, int]:
    d = f"/tmp/rocketspec-replay-bench-{n}"
    meta = os.path.join(d, "_meta.json")
    if os.path.exists(meta):
        return d, json.load(open(meta))["events"]
    return d, generate(n, d)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", default="1e6,3e6", help="trace lengths, comma-separated")
    ap.add_argument("--cores", type=int, default=2, help="local[N] (default 2)")
    ap.add_argument("--path", choices=("default", "exact", "arrow"), default="exact",
                    help="the replay path (default: exact; default: replay's own choice, the scoped path)")
    ap.add_argument("--rows-per-partition", type=float, default=None,
                    help="replay partitions: the events over this (default: 2 x cores, whatever the length)")
    ap.add_argument("--worker-memory", default=None,
                    help="spark.python.worker.memory (the Python sort's spill threshold; default Spark's)")
    args = ap.parse_args(argv)
    conf = {"spark.python.worker.memory": args.worker_memory} if args.worker_memory else None
    peaks = []
    for n in [int(float(x)) for x in args.events.split(",")]:
        d, total = _data(n)
        before = _load()
        parts = None if args.rows_per_partition is None else max(1, -(-total // int(args.rows_per_partition)))
        t, (jvm, py), hwm, reps = run_replay(d, args.cores, parts, args.path, conf)
        rep = reps[0]
        sp = rep.spark
        plan_mb = len(pickle.dumps(rep.plan)) / 2 ** 20
        peaks.append((total, sp["worker_maxrss_mb"]))
        print(f"{total:>11,} events  local[{args.cores}] {sp['path']}: wall {t:6.1f} s  CPU {jvm + py:6.1f} s "
              f"(JVM {jvm:.1f} + Python {py:.1f})  worker peak {sp['worker_maxrss_mb']:.0f} MiB  JVM peak {hwm:.0f} MiB"
              f"  verdict {'holds' if rep.ok else 'violated'}  ({before} before, {_load()} after)", flush=True)
        print(f"{'':>19}live keys at the end (all partitions) {rep.live_keys}", flush=True)
        print(f"{'':>19}live keys of a partition at its peak {getattr(rep, 'live_keys_peak', None)}  scope drops "
              f"{getattr(rep, 'scopes_dropped', 0)} (summed over partitions; scopes "
              f"{rep.plan.scopes.count if getattr(rep.plan, 'scopes', None) else '?'})  "
              f"plan shipped {plan_mb:.1f} MiB  partitions {sp['partitions']}", flush=True)
    if len(peaks) > 1:
        (n0, m0), (n1, m1) = peaks[0], peaks[-1]
        print(f"worker peak ratio {m1 / m0:.2f} for {n1 / n0:.1f}x the events")


if __name__ == "__main__":
    main()
