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
STOP_EVERY_MASK = (1 << 10) - 1   # a worker looks at the stop flag every 1024 events
_counter = None        # in a worker: events written so far, shared with the parent
_stop = None           # in a worker: set by the parent when the dataset is interrupted


class _Stopped(Exception):
    """The parent was interrupted: this run ends unwritten."""


def _init(counter, stop):
    import signal

    global _counter, _stop
    _counter, _stop = counter, stop
    # Ctrl-C reaches every process of the terminal's group: the parent alone decides, and stops
    # the workers through `_stop`. SIGTERM sent to a worker unwinds it, removing its partial run.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _terminated)


def _terminated(signum, frame):
    raise SystemExit(128 + signum)


def _run_one(scenario: dict, seed: int, profile: str, out_dir: str) -> tuple[int, str, int]:
    """One run written as the partition run=<seed>: built in a hidden directory beside it and
    renamed into place only when complete, so a reader never sees a partial run."""
    import shutil
    import tempfile

    from .runner import run
    from ..traces.io import open_writer

    final = os.path.dirname(partition_path(out_dir, seed))
    work = tempfile.mkdtemp(dir=out_dir, prefix=f".run={seed}.", suffix=".tmp")
    n = pending = 0
    try:
        with open_writer(os.path.join(work, os.path.basename(partition_path(out_dir, seed)))) as w:
            def sink(ev):
                nonlocal n, pending
                w.write(ev)
                n += 1
                pending += 1
                if not pending & STOP_EVERY_MASK:
                    if _stop is not None and _stop.value:
                        raise _Stopped
                    if pending == PROGRESS_EVERY and _counter is not None:
                        with _counter.get_lock():
                            _counter.value += pending
                        pending = 0

            reason = run(scenario, seed, profile, sink)
        os.chmod(work, 0o777 & ~_umask())     # mkdtemp makes it private; a partition is not
        os.rename(work, final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    if _counter is not None and pending:
        with _counter.get_lock():
            _counter.value += pending
    return seed, reason, n


def _umask() -> int:
    old = os.umask(0o022)
    os.umask(old)
    return old


def partition_path(out_dir: str, seed: int) -> str:
    return os.path.join(out_dir, f"run={seed}", "part-0.parquet")


FIRST_RUN_S = 1.0


def usable_cores() -> int:
    """The cores this process may run on (its affinity; a container's limit shows there)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def simulate_dataset(scenario: dict, profile: str, out_dir: str, min_events: int, seed: int = 1,
                     workers: int | None = None, progress=None) -> dict:
    """Run seeds from `seed` on until at least `min_events` events are written; return a summary.
    `progress(events_so_far)` is called about twice a second."""
    # More processes than usable cores only add memory (each worker is a Python process with the
    # reference loaded, about 140 MB): the pool has at most one per core.
    workers = min(workers or usable_cores(), usable_cores())
    ctx = get_context("spawn")       # no fork of a parent that may hold threads
    counter = ctx.Value("q", 0)
    stop = ctx.Value("b", 0)
    done = runs = 0
    per_run = None                   # events per run, learnt from the first one finished
    next_seed = seed
    t0 = time.perf_counter()
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init, initargs=(counter, stop)) as pool:
        running = {}

        def submit():
            nonlocal next_seed
            f = pool.submit(_run_one, scenario, next_seed, profile, out_dir)
            running[f] = next_seed
            next_seed += 1

        try:
            # One run first: the events a run makes are learnt from it, and the pool grows only as
            # far as the target needs (--events 1 is one run, not one per worker). A first run
            # slower than FIRST_RUN_S (from its first event) fills the pool without waiting for its count.
            first_events_t = None
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
                if per_run is None:
                    if first_events_t is None and counter.value:
                        first_events_t = time.perf_counter()  # the first run is past its start-up
                    if (first_events_t is None or time.perf_counter() - first_events_t < FIRST_RUN_S
                            or counter.value >= min_events):
                        continue
                while len(running) < workers and done + len(running) * (per_run or 0) < min_events:
                    submit()
        except BaseException:
            # Interrupted (Ctrl-C, SIGTERM) or a run failed: the running runs stop at their next
            # check and remove their partial partitions; the runs already renamed into place
            # are complete traces.
            stop.value = 1
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    dt = time.perf_counter() - t0
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)   # the pool's workers, joined by now
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    return {"runs": runs, "events": done, "seconds": dt, "events_per_s": done / dt if dt else 0.0,
            "cpu_seconds": cpu, "events_per_cpu_s": done / cpu if cpu else 0.0,
            "workers": min(workers, runs) or 1, "seeds": [seed, next_seed - 1], "out": out_dir}
