"""The Hypothesis state machine over the reference: speed, and what it finds.

    python -m bench.statemachine [--examples N] [--bug-examples N] [--seed S] [--budget SECONDS]

For each release profile: N examples (derandomized unless --seed), examples per second of CPU
time and of wall time, and the verdict. For each known-bug profile: whether the machine finds
the bug's invariant within --bug-examples examples (or --budget seconds), after how many
examples and how many wall seconds (before shrinking; cpu s is the whole search), and the
finding. CPU time is this process's
(the machine may be shared); wall time is printed too.
"""
from __future__ import annotations

import argparse
import time


def main(argv=None) -> int:
    from rocketspec.conformance.statemachine import check_reference
    from rocketspec.rocketmq.profiles import PROFILES, get_profile

    ap = argparse.ArgumentParser(prog="python -m bench.statemachine")
    ap.add_argument("--examples", type=int, default=200)
    ap.add_argument("--bug-examples", type=int, default=500)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--budget", type=float, default=120.0, help="seconds per known-bug search")
    a = ap.parse_args(argv)

    print(f"{'profile':34} {'examples':>8} {'cpu s':>7} {'wall s':>7} {'ex/cpu s':>9}  verdict")
    for name in ("rocketmq-4.9.8", "rocketmq-5.3.3"):
        c0, w0 = time.process_time(), time.perf_counter()
        res = check_reference(name, max_examples=a.examples, seed=a.seed, shrink_budget_s=30)
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        verdict = "holds" if res.ok else f"FAILS {res.finding or res.crash}"
        print(f"{name:34} {res.examples_run:8d} {cpu:7.1f} {wall:7.1f} {res.examples_run / cpu:9.1f}  {verdict}",
              flush=True)
        if not res.ok:
            print(res.summary())

    print()
    print(f"{'known-bug profile':34} {'expected':14} {'found':14} {'examples':>8} {'cpu s':>7} {'wall s':>7}")
    for name in sorted(p for p in PROFILES if get_profile(p).expected_violation):
        want = get_profile(name).expected_violation
        c0 = time.process_time()
        res = check_reference(name, max_examples=a.bug_examples, seed=a.seed, budget_s=a.budget, shrink_budget_s=0)
        cpu = time.process_time() - c0
        if res.ok:
            print(f"{name:34} {want:14} {'not found':14} {res.examples_run:8d} {cpu:7.1f} {res.seconds:7.1f}", flush=True)
        else:
            found = res.finding or "crash"
            mark = "" if found == want else "  (another invariant)"
            print(f"{name:34} {want:14} {found:14} {res.examples_to_failure:8d} {cpu:7.1f} "
                  f"{res.seconds_to_failure:7.1f}{mark}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
