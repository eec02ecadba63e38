"""Many runs of one scenario, in parallel, written as a partitioned Parquet dataset.

One run is one trace, and a run's size is bounded (`scenario.MAX_QUEUE_DAYS`), so large data
is many runs: seeds seed, seed + 1, ... until at least `min_events` events, each run a complete
schema-v2 trace in `OUT/run=<seed>/part-0.parquet` (Hive-style partitions: readers such as
pyarrow.dataset and Spark see a `run` column; not `seed`, which trace_started already has). Runs go to a pool of worker processes, one per
core by default; the simulator is pure Python, so processes, not threads, use the cores.
"""
from __future__ import annotations

import os
import resource
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from multiprocessing import get_context

PROGRESS_EVERY = 1 << 14
_counter = None        # in a worker: events written so far, shared with the parent


def _init(counter):
    global _counter
    _counter = counter


def _run_one(scenario: dict, seed: int, profile: str, path: str) -> tuple[int, str, int]:
    from .runner import run
    from ..traces.io import open_writer

    os.makedirs(os.path.dirname(path), exist_ok=True)
    w = open_writer(path)
    n = pending = 0

    def sink(ev):
        nonlocal n, pending
        w.write(ev)
        n += 1
        pending += 1
        if pending == PROGRESS_EVERY and _counter is not None:
            with _counter.get_lock():
                _counter.value += pending
            pending = 0

    try:
        reason = run(scenario, seed, profile, sink)
    finally:
        w.close()
    if _counter is not None and pending:
        with _counter.get_lock():
            _counter.value += pending
    return seed, reason, n


def partition_path(out_dir: str, seed: int) -> str:
    return os.path.join(out_dir, f"run={seed}", "part-0.parquet")


def simulate_dataset(scenario: dict, profile: str, out_dir: str, min_events: int, seed: int = 1,
                     workers: int | None = None, progress=None) -> dict:
    """Run seeds from `seed` on until at least `min_events` events are written; return a summary.
    `progress(events_so_far)` is called about twice a second."""
    workers = workers or os.cpu_count() or 1
    ctx = get_context("spawn")       # no fork of a parent that may hold threads
    counter = ctx.Value("q", 0)
    done = runs = 0
    per_run = None                   # events per run, learnt from the first one finished
    next_seed = seed
    t0 = time.perf_counter()
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init, initargs=(counter,)) as pool:
        running = {}

        def submit():
            nonlocal next_seed
            f = pool.submit(_run_one, scenario, next_seed, profile, partition_path(out_dir, next_seed))
            running[f] = next_seed
            next_seed += 1

        for _ in range(workers):
            submit()
        while running:
            finished, _ = wait(running, timeout=0.5, return_when=FIRST_COMPLETED)
            for f in finished:
                running.pop(f)
                _, _, n = f.result()
                done += n
                runs += 1
                per_run = done / runs
            if progress is not None:
                progress(counter.value)
            # keep the pool busy while what is running will not reach the target by itself
            while len(running) < workers and done + len(running) * (per_run or 0) < min_events:
                submit()
    dt = time.perf_counter() - t0
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)   # the pool's workers, joined by now
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    return {"runs": runs, "events": done, "seconds": dt, "events_per_s": done / dt if dt else 0.0,
            "cpu_seconds": cpu, "events_per_cpu_s": done / cpu if cpu else 0.0,
            "workers": workers, "seeds": [seed, next_seed - 1], "out": out_dir}
