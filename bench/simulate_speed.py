"""Simulation speed of the reference, in events per second.

    python -m bench.simulate_speed [--messages N] [--seed S] [--write PATH]

Runs a large built-in-style scenario (four consumers, 16 queues, retries, a crash, a pause,
lost one-way calls) and prints events, wall time and events/second, once with events
discarded (the simulator alone) and once written to a JSON Lines file (the real cost of
`rocketspec simulate`). Times are CPU seconds of this process, best of --repeat runs.
Target: 200,000 events/s, so a 100-million-event trace takes minutes.

    python -m bench.simulate_speed --dataset EVENTS [--run-messages M] [--workers 1,2]

Large data (`rocketspec simulate --events`): runs of the same scenario (M messages each) on a
pool of worker processes, written as a partitioned Parquet dataset, until EVENTS events; prints
wall-clock events/s per worker count and the scaling. Run it with `nice -n 10` on a shared
machine.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

from rocketspec.reference.runner import run
from rocketspec.reference.scenario import validate
from rocketspec.traces.io import open_writer

TARGET = 200_000


def scenario(messages: int) -> dict:
    rate = 2000
    duration = messages * 1000 // rate + 10000
    return validate({
        "name": "bench", "duration_ms": duration,
        "topics": [{"name": "Bench", "queues": 16}],
        "groups": [{"name": "GID_bench", "consume_message_batch_max_size": 1,
                    "subscriptions": {"Bench": "*"},
                    "listener": {"duration_ms": [1, 5], "fail_rate": 0.02}}],
        "producers": [{"topic": "Bench", "count": messages, "rate_per_s": rate, "tags": ["A", "B"]}],
        "steps": [
            {"at_ms": 0, "action": "start", "client": f"c{i}", "group": "GID_bench"} for i in range(4)
        ] + [
            {"at_ms": duration // 4, "action": "oneway_loss", "probability": 0.05},
            {"at_ms": duration // 3, "action": "pause", "client": "c1", "duration_ms": 20000},
            {"at_ms": duration // 2, "action": "crash", "client": "c2"},
        ],
    }, "bench")


def measure(sc, seed, sink) -> tuple[int, float]:
    count = 0

    def counting(ev):
        nonlocal count
        count += 1
        sink(ev)

    # CPU time of this process: the figure should not depend on what else the machine runs.
    t0 = time.process_time()
    run(sc, seed, "rocketmq-5.3.3", counting)
    return count, time.process_time() - t0


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.simulate_speed")
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--write", default=None, help="JSON Lines path for the writing run (default: a temp file)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure; the best is reported (the machine is shared)")
    ap.add_argument("--dataset", type=int, default=None, help="events of a partitioned Parquet dataset to make")
    ap.add_argument("--run-messages", type=int, default=100_000, help="with --dataset: messages per run")
    ap.add_argument("--workers", default="1,2", help="with --dataset: worker counts to measure")
    a = ap.parse_args(argv)
    if a.dataset is not None:
        dataset(a)
        return
    sc = scenario(a.messages)
    n, dt = min((measure(sc, a.seed, lambda ev: None) for _ in range(a.repeat)), key=lambda r: r[1])
    rate = n / dt
    print(f"simulate (events discarded): {n:,} events in {dt:.2f} s = {rate:,.0f} events/s "
          f"({rate / TARGET:.2f}x the {TARGET:,}/s target)")
    path = a.write or os.path.join(tempfile.mkdtemp(), "bench.jsonl")
    best = None
    for _ in range(a.repeat):
        w = open_writer(path)
        r = measure(sc, a.seed, w.write)
        w.close()
        best = r if best is None or r[1] < best[1] else best
    n2, dt2 = best
    rate2 = n2 / dt2
    print(f"simulate + write JSONL:      {n2:,} events in {dt2:.2f} s = {rate2:,.0f} events/s "
          f"({rate2 / TARGET:.2f}x target), {os.path.getsize(path) / 1e6:.1f} MB")
    print(f"100,000,000 events would take {1e8 / rate2 / 60:.1f} min written, {1e8 / rate / 60:.1f} min discarded")


def dataset(a) -> None:
    import shutil

    from rocketspec.reference.bulk import simulate_dataset

    sc = scenario(a.run_messages)
    rates = {}
    for w in [int(x) for x in a.workers.split(",")]:
        out = tempfile.mkdtemp(prefix="rocketspec-dataset-")
        try:
            r = simulate_dataset(sc, "rocketmq-5.3.3", out, a.dataset, a.seed, w)
            size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(out) for f in fs)
        finally:
            shutil.rmtree(out, ignore_errors=True)
        rates[w] = r["events_per_s"]
        per_core = r["events_per_cpu_s"]
        print(f"dataset, {w} worker(s): {r['events']:,} events in {r['runs']} runs, {r['seconds']:.1f} s wall = "
              f"{r['events_per_s']:,.0f} events/s wall; {r['cpu_seconds']:.1f} CPU s = {per_core:,.0f} events per "
              f"CPU second; {size / 1e6:.0f} MB Parquet")
    if len(rates) > 1:
        lo, hi = min(rates), max(rates)
        print(f"wall-clock scaling {lo} -> {hi} workers: {rates[hi] / rates[lo]:.2f}x (on a machine shared with "
              f"others' jobs this is a lower bound; see os.getloadavg() = {os.getloadavg()[0]:.1f})")
    cores = os.cpu_count() or 1
    print(f"100,000,000 events: {1e8 / per_core / cores / 60:.1f} min on {cores} idle cores at {per_core:,.0f} "
          f"events per CPU second; {1e8 / max(rates.values()) / 60:.1f} min at the best wall-clock rate measured")


if __name__ == "__main__":
    main()
