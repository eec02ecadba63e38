"""Random real runs per hour, and what they found (`rocketspec record --random`).

Records N random scenarios (conformance/random_scenarios.py) on real RocketMQ 4.9.8, checks each
trace and judges it against RocketMQ's own records (conformance/real_random.py), then prints the
wall time per run, runs per hour, and the counts: agreed, false alarms, missed losses,
white-box-only findings, incomplete. The machine is shared: run it under `nice`.

    nice -n 10 python -m bench.real_random --runs 10            # seeds 1..10, full-size scenarios
    nice -n 10 python -m bench.real_random --runs 4 --small --seed 100
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.real_random", description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2, help="random runs (default 2)")
    ap.add_argument("--seed", type=int, default=1, help="first seed (default 1)")
    ap.add_argument("--small", action="store_true", help="small scenarios (as make test's)")
    ap.add_argument("--out", default=None, help="keep the runs' folders here (default: a temporary folder)")
    args = ap.parse_args(argv)
    if shutil.which("java") is None or shutil.which("javac") is None:
        print("bench.real_random: skipped, no JDK on PATH (real runs need Java 17)")
        return 0
    from rocketspec.commands.record import record
    from rocketspec.conformance import real_random

    out = args.out or tempfile.mkdtemp(prefix="bench-real-random-")
    t0 = time.monotonic()
    results = real_random.run_many(record, args.runs, args.seed, out, args.small,
                                   progress=lambda r: print(f"  seed {r.seed}: {r.cls}, {r.seconds:.0f} s", flush=True))
    wall = time.monotonic() - t0
    s = real_random.summary(results)
    print(f"runs {s['runs']} in {wall:.0f} s wall: {wall / max(1, s['runs']):.1f} s a run, "
          f"{3600 * s['runs'] / wall:.0f} runs per hour ({'small' if args.small else 'full-size'} scenarios, "
          f"seeds {args.seed}..{args.seed + args.runs - 1})")
    print(f"agreed {s['agreed']}, false alarms {s['false alarm']}, missed losses {s['missed loss']}, "
          f"white-box-only findings {s['finding']}, incomplete {s['incomplete']}")
    for key in ("false_alarms_by_invariant", "missed_losses_by_guarantee", "findings_by_invariant"):
        if s[key]:
            print(f"  {key.replace('_', ' ')}: " + ", ".join(f"{k} x{len(v)}" for k, v in s[key].items()))
    print(f"runs' folders: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
