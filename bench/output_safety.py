"""What writing a trace whole costs: a temporary file, fsync and rename (rocketspec/outputs.py)
against writing the file in place, for the same events.

    python -m bench.output_safety [--events N] [--repeat R] [--format jsonl|parquet]

The events are a reference run of `basic`, repeated to N events (default 500,000). Prints the
best of R wall times of each way, their ratio, and the fsync's share (the atomic write without
fsync). Wall time includes what other processes take from this machine and what the disk does.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time


def _events(n: int) -> list[dict]:
    from rocketspec.reference.runner import run_to_list
    from rocketspec.reference.scenario import load_scenario

    base = run_to_list(load_scenario("basic"), 1, "rocketmq-5.3.3")
    out = []
    while len(out) < n:
        out.extend(base)
    return out[:n]


def _in_place(path: str, events) -> None:
    """The writer as it was: the file opened under its own name and written as events come."""
    from rocketspec.traces import io as tio

    class Plain:
        def __init__(self, p):
            self.fh = open(p, "wb")

        def write(self, b):
            return self.fh.write(b)

        def commit(self):
            self.fh.close()

        def discard(self):
            self.fh.close()

    orig = tio._open_for_writing
    tio._open_for_writing = lambda p: Plain(p)
    try:
        if path.endswith(".parquet"):
            w = tio.ParquetWriter(path)
        else:
            w = tio.JsonlWriter(path)
        for e in events:
            w.write(e)
        w.close()
    finally:
        tio._open_for_writing = orig


def _atomic(path: str, events, fsync: bool = True) -> None:
    from rocketspec.traces.io import write_trace

    if fsync:
        write_trace(path, events)
        return
    real = os.fsync
    os.fsync = lambda fd: None
    try:
        write_trace(path, events)
    finally:
        os.fsync = real


def _best(f, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=500_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--format", choices=["jsonl", "parquet"], default="jsonl")
    a = ap.parse_args()
    events = _events(a.events)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, f"t.{a.format}")
        plain = _best(lambda: _in_place(path, events), a.repeat)
        size = os.path.getsize(path)
        nosync = _best(lambda: _atomic(path, events, fsync=False), a.repeat)
        whole = _best(lambda: _atomic(path, events), a.repeat)
    print(f"{a.events:,} events, {a.format}, {size / 1e6:.1f} MB, best of {a.repeat}")
    print(f"  in place (as before):             {plain:.3f} s")
    print(f"  temporary + rename, no fsync:     {nosync:.3f} s  ({nosync / plain:.2f}x)")
    print(f"  temporary + fsync + rename (now): {whole:.3f} s  ({whole / plain:.2f}x)")


if __name__ == "__main__":
    main()
