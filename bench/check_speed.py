"""Trace validation speed: events per second of `rocketspec check` on a large reference trace.

    python -m bench.check_speed [--messages N] [--trace PATH] [--profile-hot]

Without --trace, the reference simulates the `basic` scenario scaled to N messages (default
150,000: about 1.5 million events) into a temporary JSON Lines file. The figure is events per
second of CPU time of this process (one core), end to end: reading, schema validation, spec
replay. Wall time is printed too (it includes time other processes take from this machine).
--profile-hot prints the top functions of a cProfile run over the replay alone.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time


def make_trace(path: str, messages: int, seed: int = 1, profile: str = "rocketmq-5.3.3") -> int:
    from rocketspec.reference.runner import run
    from rocketspec.reference.scenario import load_scenario
    from rocketspec.traces.io import open_writer

    sc = load_scenario("basic")
    sc = dict(sc)
    sc["name"] = "bench-check-speed"
    sc["duration_ms"] = max(sc.get("duration_ms", 60000), messages // 2 + 60000)
    prods = []
    for p in sc["producers"]:
        p = dict(p)
        p["count"] = messages
        p["rate_per_s"] = 2000
        prods.append(p)
    sc["producers"] = prods
    w = open_writer(path)
    n = [0]

    def sink(ev):
        w.write(ev)
        n[0] += 1

    try:
        run(sc, seed, profile, sink)
    finally:
        w.close()
    return n[0]


def measure(path: str) -> dict:
    from rocketspec.spec.replay import check_trace

    c0, w0 = time.process_time(), time.perf_counter()
    rep = check_trace(path)
    c1, w1 = time.process_time(), time.perf_counter()
    return {"events": rep.events, "verdict": "holds" if rep.ok else "violated", "cpu_s": c1 - c0, "wall_s": w1 - w0,
            "events_per_cpu_s": rep.events / max(c1 - c0, 1e-9), "events_per_wall_s": rep.events / max(w1 - w0, 1e-9),
            "live_keys": rep.live_keys}


def profile_hot(path: str, top: int = 20) -> None:
    import cProfile
    import gc
    import pstats

    from rocketspec.rocketmq.profiles import get_profile
    from rocketspec.spec.replay import check_events
    from rocketspec.traces.io import read_events

    events = list(read_events(path, validate=False))
    gc.collect()
    gc.freeze()
    gc.disable()
    pr = cProfile.Profile()
    pr.enable()
    check_events(iter(events), get_profile(None), path)
    pr.disable()
    gc.enable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(top)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m bench.check_speed", description=__doc__.split("\n")[0])
    ap.add_argument("--messages", type=int, default=150000)
    ap.add_argument("--trace", default=None, help="validate this trace instead of simulating one")
    ap.add_argument("--profile-hot", action="store_true")
    args = ap.parse_args(argv)
    tmp = None
    path = args.trace
    if path is None:
        tmp = tempfile.TemporaryDirectory()
        path = os.path.join(tmp.name, "bench.jsonl")
        t0 = time.perf_counter()
        n = make_trace(path, args.messages)
        print(f"simulated {n} events ({args.messages} messages) in {time.perf_counter() - t0:.1f}s -> {path}")
    r = measure(path)
    print(f"check: {r['events']} events, {r['verdict']}, cpu {r['cpu_s']:.2f}s, wall {r['wall_s']:.2f}s")
    print(f"check speed: {r['events_per_cpu_s']:,.0f} events/s (one core, CPU time); "
          f"{r['events_per_wall_s']:,.0f} events/s wall")
    print(f"live keys at the end: {r['live_keys']}")
    if args.profile_hot:
        profile_hot(path)
    if tmp is not None:
        tmp.cleanup()
    return r


if __name__ == "__main__":
    main()
