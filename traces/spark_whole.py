"""The whole-trace path of `replay`: a trace small enough for one task is replayed whole in one
task, with no plan and no shuffle.

A dataset of runs (`simulate --events N`: thousands of runs of a few thousand events each) or a
directory of small traces is a map-only job: each task reads its traces with `check`'s reader
and validator and replays them, one after the other, through the same partition replay as the
exact path (`spark_replay._replay_partition`) with a single partition that owns every key. So
the result is the exact path's with one partition: the verdict, counts and (invariant, key,
seq) that `check` gives (the tests compare them), plus the per-(invariant, key) groups of the
violations dataset. What it saves is the exact path's whole apparatus for such traces: turning
every event into JSON and pickled rows, the read stage's cache, the routing, the shuffle and
Python's sort, and a plan per trace (a dataset of 436 runs of 10^6 events in all took 167 s on
`local[2]` through the exact path, one Spark job per step for every run at once).

Anything unusual sends a trace back to the exact path, which then says what `replay` has always
said about it: bad input of any kind (its error names the file and line as before), files given
out of order (the exact path sorts them by seq), a trace that does not start with its one
trace_started, and a violated trace whose witnesses are wanted (they come from the exact path's
partitions). A good trace costs one read; a bad one a second.
"""
from __future__ import annotations

import itertools
import os
import time

from .io import TraceInputError, out_of_order

# A trace goes whole when it has at most this many events: one core replays it at `check`'s
# speed (about 10 us per event), faster than the exact path on two cores (about 33 CPU-us per
# event); above it, a trace is partitioned, so its memory and time are shared by the cores.
WHOLE_EVENTS = 1 << 20
TASK_EVENTS = 1 << 21
_JSON_BYTES = 120           # an event's JSON is at least this long (a lower bound: a high count)
_COMPRESSED = 12            # and compresses by at most this much


class NotWhole(Exception):
    """This trace is for the exact path (why, in the message; ROCKETSPEC_REPLAY_DEBUG prints it)."""


def events_at_most(paths: list[str]) -> int:
    """An upper bound of the events in these files, without reading them: a Parquet file's row
    count from its footer, else the file's size over the shortest event's JSON."""
    import pyarrow.parquet as pq

    n = 0
    for p in paths:
        if p.endswith(".parquet"):
            try:
                n += pq.ParquetFile(p).metadata.num_rows
                continue
            except Exception:       # (not readable as Parquet: the exact path says why)
                return WHOLE_EVENTS + 1
        size = os.path.getsize(p)
        if p.endswith((".gz", ".zst")):
            size *= _COMPRESSED
        n += size // _JSON_BYTES + 1
    return n


class WholePlan:
    """The plan of a trace replayed whole: one partition, the home of every event and key."""

    n = 1
    components = 1
    scopes = None

    def __init__(self, events: int, directory_events: int = 0):
        self.loads = [events]
        self.directory_events = directory_events

    def key_partition(self, key):
        return None

    def targets(self, places) -> tuple:
        return (0,)

    def skew(self) -> float:
        return 1.0


def _rows(files: list[tuple[int, str]], stats: dict):
    """The trace's events as the partition replay takes them, ((0, seq), (directory?, home, ts,
    file index, line, event)), validated as `check` validates them; NotWhole for a trace the
    exact path must judge."""
    from ..spec.replay import fast_validator
    from .io import read_events

    validate = fast_validator()
    first = True
    for fidx, path in files:
        last_seq = last_ts = None
        n = 0
        try:
            for line, ev in read_events(path, validate=False):
                problem = validate(ev)
                if problem:
                    raise NotWhole(f"{path}:{line}: {problem}")
                seq, ts, kind = ev["seq"], ev["ts"], ev["kind"]
                if last_seq is not None and (seq <= last_seq or ts < last_ts):
                    raise NotWhole(f"{path}:{line}: {out_of_order(seq, ts, last_seq, last_ts)}")
                if (kind == "trace_started") != first:
                    raise NotWhole(f"{path}:{line}: {kind} where the trace's first event is "
                                   f"{'expected' if first else 'not'}")
                first = False
                last_seq, last_ts = seq, ts
                n += 1
                stats["events"] += 1
                yield (0, seq), (False, 0, ts, fidx, line, ev)
        except TraceInputError as exc:
            raise NotWhole(str(exc)) from None
        if n == 0:
            raise NotWhole(f"{path}: no event")


def replay_whole(t: int, files: list[tuple[int, str]], all_files: list[str], profile, max_listed: int) -> dict:
    """Replay one trace whole (in a task): the partition replay's result, with the trace's
    profile name and event count, or {"trace": t, "back": why} for the exact path."""
    from ..spec.replay import resolve_profile
    from .spark_replay import _replay_partition

    try:
        stats = {"events": 0}
        it = _rows(files, stats)
        first = next(it, None)
        if first is None:
            raise NotWhole("no event")
        try:        # (_rows made sure the first event is the trace_started)
            prof = resolve_profile(profile, first[1][5], files[0][1])
        except Exception as exc:
            raise NotWhole(f"profile: {exc}") from None
        res = _replay_partition(0, itertools.chain((first,), it), prof.name, all_files, max_listed, WholePlan(0),
                                decode=_same)
        if "error" in res:
            raise NotWhole(f"{res['error']}")
    except NotWhole as exc:
        return {"trace": t, "back": str(exc)}
    except TraceInputError as exc:
        return {"trace": t, "back": str(exc)}
    res.update(trace=t, profile=prof.name, n=stats["events"])
    return res


def _same(payload, fidx, line):
    return payload


def pack(sizes: dict, slots: int) -> list[list[int]]:
    """Traces ({trace: events at most}) onto at most `slots` tasks, the largest first onto the
    lightest task: one task per trace would cost Spark a task's overhead per small run."""
    import heapq

    n = max(1, min(slots, len(sizes)))
    heap = [(0, i) for i in range(n)]
    out: list[list[int]] = [[] for _ in range(n)]
    for t, c in sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0])):
        load, i = heapq.heappop(heap)
        out[i].append(t)
        heapq.heappush(heap, (load + c, i))
    return [sorted(ts) for ts in out if ts]


def replay_traces_whole(todo, traces, files, trace_of, out, spark, profile, max_listed, witness_dirs) -> set:
    """Replay the traces `todo` whole, a task per group of traces; fill `out` with their
    Reports; return the traces sent back to the exact path."""
    from ..spec.replay import Findings, Report
    from .spark_replay import _merge, _without_gc, spark_info

    t0 = time.perf_counter()
    sc = spark.sparkContext
    by_trace = {t: [(i, files[i]) for i, tt in enumerate(trace_of) if tt == t] for t in todo}
    sizes = {t: events_at_most([f for _, f in by_trace[t]]) for t in todo}
    # a few tasks per core, and none much over TASK_EVENTS: Spark's progress (and a retried
    # task's repeated work) moves by the task
    tasks = pack(sizes, max(4 * sc.defaultParallelism, -(-sum(sizes.values()) // TASK_EVENTS)))
    b = sc.broadcast((by_trace, files, profile, max_listed))

    def run(ts):
        return _without_gc(_run(ts))

    def _run(ts):
        by, fs, prof, mx = b.value
        for t in ts:
            yield replay_whole(t, by[t], fs, prof, mx)

    loads = [sum(sizes[t] for t in ts) for ts in tasks]
    task_skew = round(max(loads) * len(loads) / sum(loads), 3) if sum(loads) else 1.0
    results = sc.parallelize(tasks, len(tasks)).flatMap(run).collect()
    back = set()
    debug = os.environ.get("ROCKETSPEC_REPLAY_DEBUG")
    for res in results:
        t = res["trace"]
        if "back" in res:
            if debug:
                print(f"rocketspec replay: trace {t} takes the exact path: {res['back']}")
            back.add(t)
            continue
        if witness_dirs and witness_dirs[t] is not None and res["error_count"]:
            back.add(t)         # (the witnesses come from the exact path's partitions)
            continue
        tfiles = [f for _, f in by_trace[t]]
        rep = _merge([res], tfiles, res["profile"], res["n"], max_listed, Findings, Report)
        rep.plan = WholePlan(res["n"])
        rep.witnesses = []
        rep.seconds = time.perf_counter() - t0
        rep.spark = spark_info(sc, "whole", rep.plan, [res])
        # the job's tasks, each a group of whole traces: how many, and the most loaded one's
        # events (at most: Parquet footers, else file sizes) over the fair share
        rep.spark.update(tasks=len(tasks), task_skew=task_skew)
        out[t] = rep
    return back
