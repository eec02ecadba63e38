"""Counterexample minimization against the explorer: how short, how fast.

    python -m bench.minimize_bugs [--skip-explorer] [--skip-big] [--big-events N]

1. Known bugs: for every known-bug profile, the reference runs the bug's built-in scenario
   (thousands of events) and `minimize` shrinks the trace, keeping the profile's expected
   invariant; the explorer finds its shortest counterexample in the bug's scope (model_checks/
   scopes.py BUG_SCOPES). Printed: both lengths in events, their ratio (aim: at most 1.5) and
   the time minimization took.
2. Real RocketMQ: every failing recorded trace in tests/fixtures/real/, minimized; the result
   as a share of the original (aim: at most 5%).
3. Time: traces of about 10^4 and 10^6 events, minimized (aim: under 10 s and under 2
   minutes): "sliced", the #2708 scenario with its violation at the end, among the traffic of
   another topic and group (slicing by key does most of the work); "one-queue", the #2449
   scenario scaled up, nearly every event on the violation's topic (removing messages does).

Times are CPU seconds of this process (the machine may be shared; wall-clock time is longer
when other processes take the cores).
"""
from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "tests" / "fixtures" / "real"


def _minimize(events, invariant=None):
    from rocketspec.traces.minimize.minimize import minimize

    t0 = time.process_time()
    res = minimize(events, invariant=invariant)
    return res, time.process_time() - t0


def _explorer_length(profile) -> int | None:
    from rocketspec.model_checks.refexplore import bug_counterexample

    v = bug_counterexample(profile)
    return None if v is None or v.invariant != profile.expected_violation else len(v.events)


def known_bugs(explorer: bool = True) -> list[dict]:
    from rocketspec.reference.runner import run_to_list
    from rocketspec.reference.scenario import bug_scenario, load_scenario
    from rocketspec.rocketmq.profiles import PROFILES

    rows = []
    for p in PROFILES.values():
        if not p.known_bug:
            continue
        name = bug_scenario(p.known_bug)
        events = run_to_list(load_scenario(name), 1, p.name)
        res, dt = _minimize(events, p.expected_violation)
        ex = _explorer_length(p) if explorer else None
        rows.append({"bug": p.known_bug, "profile": p.name, "scenario": name, "invariant": p.expected_violation,
                     "events": len(events), "minimized": len(res.events), "explorer": ex,
                     "ratio": None if not ex else len(res.events) / ex, "seconds": dt, "replays": res.tests,
                     "exact": res.exact})
    return rows


def real_traces() -> list[dict]:
    from rocketspec.spec.replay import check_trace
    from rocketspec.traces.io import read_events

    rows = []
    for path in sorted(REAL.glob("*.jsonl")):
        if check_trace(path, max_listed=0).ok:
            continue
        events = [ev for _, ev in read_events(path)]
        res, dt = _minimize(events)
        rows.append({"trace": path.name, "invariant": res.invariant, "events": len(events),
                     "minimized": len(res.events), "share": len(res.events) / len(events), "seconds": dt,
                     "replays": res.tests})
    return rows


def big_trace(events_wanted: int) -> list[dict]:
    """The #2708 scenario under its bug profile, cut one second after its violation (so the
    violation is at the end), with a second topic and group whose traffic brings the trace to
    about `events_wanted` events."""
    from rocketspec.reference.runner import run_to_list
    from rocketspec.reference.scenario import load_scenario

    sc = copy.deepcopy(load_scenario("bug-2708"))
    sc["name"] = f"bench-minimize-{events_wanted}"
    sc["duration_ms"] = 31_000
    sc["drain_limit_ms"] = 0
    # about 6.4 events per message of the other topic (stored, pulled, consumed, offsets), and
    # about 6200 of the #2708 topic and group in its first 31 s
    rate = max(1, int((events_wanted - 6200) / 6.4 / 31))
    sc["topics"].append({**sc["topics"][0], "name": "Noise", "queues": 16})
    noise_group = copy.deepcopy(sc["groups"]["GID_2708"])
    noise_group.update({"name": "GID_noise", "subscriptions": {"Noise": "*"}, "listener": {"duration_ms": [1, 2]}})
    sc["groups"]["GID_noise"] = noise_group
    # a producer sends at most one message per millisecond: as many as the rate needs
    n = -(-rate // 1000)
    sc["producers"] += [{**sc["producers"][0], "topic": "Noise", "count": rate * 31 // n, "rate_per_s": rate / n}
                        for _ in range(n)]
    sc["steps"] = [*sc["steps"], *({**sc["steps"][0], "client": f"n{i}", "group": "GID_noise"} for i in range(4))]
    return run_to_list(sc, 1, "bug-2708-rocketmq-4.9.0")


def one_queue_trace(events_wanted: int) -> list[dict]:
    """The #2449 scenario under its bug profile with its producer scaled to about
    `events_wanted` events: nearly all of them on the two queues of the violation's topic, so
    slicing by key removes little and the messages' removal does the work."""
    from rocketspec.reference.runner import run_to_list
    from rocketspec.reference.scenario import load_scenario

    k = events_wanted / 19_500     # about 19,500 events per unit of its producer (count 2000, 20/s)
    sc = copy.deepcopy(load_scenario("bug-2449"))
    sc["name"] = f"bench-minimize-one-queue-{events_wanted}"
    sc["producers"] = [{**p, "count": int(p["count"] * k), "rate_per_s": p["rate_per_s"] * k} for p in sc["producers"]]
    return run_to_list(sc, 1, "bug-2449-rocketmq-4.8.0")


TRACES = {"sliced": (big_trace, "INV-START-1", "#2708 among another topic's traffic, the violation at the end"),
          "one-queue": (one_queue_trace, "INV-PULL-1", "#2449 scaled: the violation's own queues hold it all")}


def timing(sizes) -> list[dict]:
    rows = []
    for name, (make, inv, what) in TRACES.items():
        for n in sizes:
            t0 = time.perf_counter()
            events = make(n)
            made = time.perf_counter() - t0
            w0 = time.perf_counter()
            res, dt = _minimize(events, inv)
            rows.append({"trace": name, "what": what, "events": len(events), "minimized": len(res.events),
                         "seconds": dt, "wall": time.perf_counter() - w0, "replays": res.tests,
                         "simulated_in": made})
            del events
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--skip-explorer", action="store_true", help="do not run the explorer (no ratios)")
    ap.add_argument("--skip-big", action="store_true", help="skip the 10^6-event trace")
    ap.add_argument("--big-events", type=int, default=1_000_000, help="size of the big trace (default 10^6)")
    args = ap.parse_args(argv)

    print("1. known bugs: the scenario trace minimized, against the explorer's shortest counterexample")
    print(f"  {'bug':7} {'invariant':12} {'scenario':12} {'trace':>7} {'minimized':>9} {'explorer':>8} "
          f"{'ratio':>6} {'seconds':>8} {'replays':>7}")
    worst = 0.0
    for r in known_bugs(not args.skip_explorer):
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}"
        worst = max(worst, r["ratio"] or 0)
        print(f"  {r['bug']:7} {r['invariant']:12} {r['scenario']:12} {r['events']:>7} {r['minimized']:>9} "
              f"{r['explorer'] if r['explorer'] is not None else '-':>8} {ratio:>6} {r['seconds']:>8.2f} "
              f"{r['replays']:>7}{'' if r['exact'] else '  (other errors remain)'}")
    if not args.skip_explorer:
        print(f"  largest ratio {worst:.2f} (aim: at most 1.50)")

    print("\n2. real RocketMQ recordings that fail (tests/fixtures/real/)")
    for r in real_traces():
        print(f"  {r['trace']:28} {r['invariant']:12} {r['events']:>6} -> {r['minimized']:>4} events "
              f"({100 * r['share']:.1f}% of the original; aim: at most 5%), {r['seconds']:.2f} s, "
              f"{r['replays']} replays")

    print("\n3. time, CPU seconds (sliced: " + TRACES["sliced"][2] + "; one-queue: " + TRACES["one-queue"][2] + ")")
    sizes = [10_000] + ([] if args.skip_big else [args.big_events])
    for r in timing(sizes):
        aim = 10 if r["events"] < 100_000 else 120
        print(f"  {r['trace']:9} {r['events']:>9} events -> {r['minimized']} in {r['seconds']:.1f} s CPU "
              f"(aim: under {aim} s; wall {r['wall']:.1f} s), {r['replays']} replays")


if __name__ == "__main__":
    main()
