"""The whole-trace path of `replay`: a trace small enough for one task is replayed whole in one
task, with no plan and no shuffle.

A dataset of runs (`simulate --events N`: thousands of runs of a few thousand events each) or a
directory of small traces is a map-only job: each task replays its traces one after the other
with `check`'s own replay (spec.replay.check_events: its reader, validator, order rules and
findings), the findings also grouped by (invariant, key) for the violations dataset. So the
verdict, counts and (invariant, key, seq) are `check`'s by construction (and the tests compare
them). What it saves is the exact path's apparatus, which such traces do not need: turning
every event into JSON and pickled rows, the read stage's cache, the routing, the shuffle and
Python's sort, and a plan per trace (a dataset of 436 runs, 10^6 events in all, took 167 s on
`local[2]` through the exact path and 13 s whole).

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

from ..io import TraceInputError

# A trace goes whole when it has at most this many events: one core replays it at `check`'s
# speed, about 2.9 times what the exact path gets from a core (docs/replay.md); above it, a
# trace is partitioned, so its memory and time are shared by the cores and ended scopes dropped.
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

    directory_events = 0        # (none told apart: nothing is routed)

    def __init__(self, events: int):
        self.loads = [events]

    def key_partition(self, key):
        return None

    def skew(self) -> float:
        return 1.0


def _events(paths: list[str], trust):
    """(line, event) of the files in turn. One file's reader holds it to one trace_started, the
    first row (traces.io); across files, a trace_started anywhere but first is for the exact path.
    `trust` (a TrustingValidator) is told, batch by batch, which kinds need no check per event.
    One file's events come straight from its reader (no Python step per event here)."""
    from ..io import read_events

    if len(paths) == 1:
        trust.plain()
        return read_events(paths[0], validate=False, on_batch=trust.batch)
    return _events_of_files(paths, trust)


def _events_of_files(paths: list[str], trust):
    from ..io import read_events

    first = True
    for path in paths:
        trust.plain()
        for line, ev in read_events(path, validate=False, on_batch=trust.batch):
            if not first and type(ev) is dict and ev.get("kind") == "trace_started":
                raise NotWhole(f"{path}:{line}: a second trace_started")
            first = False
            yield line, ev


def replay_whole(t: int, files: list[tuple[int, str]], profile, max_listed: int) -> dict:
    """Replay one trace whole (in a task) with `check`'s own replay (spec.replay.check_events:
    its reader, validator and order rules; the validator skips the kinds a Parquet file's
    columns already vouch for, traces.parquet_trust), its findings also grouped by (invariant, key): a
    result as the exact path's partitions give it, or {"trace": t, "back": why} for the exact path."""
    from ...spec.replay import check_events, fast_validator, resolve_profile
    from ..parquet_trust import TrustingValidator
    from .spark_replay import _maxrss_kb, grouped_findings_class

    paths = [f for _, f in files]
    t0, c0 = time.perf_counter(), time.process_time()
    validate = TrustingValidator(fast_validator())
    try:
        it = _events(paths, validate)
        first = next(it, None)
        if first is None or type(first[1]) is not dict or first[1].get("kind") != "trace_started":
            raise NotWhole("the first event is not a trace_started")
        prof = resolve_profile(profile, first[1], paths[0])
        rep = check_events(itertools.chain((first,), it), prof, paths[0], max_listed=max_listed,
                           validate=validate, findings=grouped_findings_class())
    except (NotWhole, TraceInputError) as exc:
        return {"trace": t, "back": str(exc)}
    f = rep.findings
    return {"trace": t, "profile": prof.name, "events": rep.events, "ended": rep.ended,
            "errors": f.errors, "warnings": f.warnings, "counts": f.counts, "error_count": f.error_count,
            "groups": f.groups, "seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0,
            "maxrss_kb": _maxrss_kb(), "live_keys": rep.live_keys, "live_keys_peak": {}, "scopes_dropped": 0}


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


def replay_traces_whole(by_trace: dict, sizes: dict, out, spark, profile, max_listed, witness_dirs) -> set:
    """Replay the traces of `by_trace` ({trace: [(file index, path)]}, with `sizes`, their
    events_at_most) whole, a task per group of traces; fill `out` with their Reports; return the
    traces sent back to the exact path."""
    from ...spec.replay import Findings, Report
    from .spark_replay import _merge, _without_gc, spark_info

    t0 = time.perf_counter()
    sc = spark.sparkContext
    sizes = {t: sizes[t] for t in by_trace}
    # a few tasks per core, and none much over TASK_EVENTS: Spark's progress (and a retried
    # task's repeated work) moves by the task
    tasks = pack(sizes, max(4 * sc.defaultParallelism, -(-sum(sizes.values()) // TASK_EVENTS)))
    b = sc.broadcast((by_trace, profile, max_listed))

    def run(ts):
        return _without_gc(_run(ts))

    def _run(ts):
        by, prof, mx = b.value
        for t in ts:
            yield replay_whole(t, by[t], prof, mx)

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
        rep = _merge([res], tfiles, res["profile"], res["events"], max_listed, Findings, Report)
        rep.plan = WholePlan(res["events"])
        rep.witnesses = []
        rep.seconds = time.perf_counter() - t0
        rep.spark = spark_info(sc, "whole", rep.plan, [res])
        # the job's tasks, each a group of whole traces: how many, and the most loaded one's
        # events (at most: Parquet footers, else file sizes) over the fair share
        rep.spark.update(tasks=len(tasks), task_skew=task_skew)
        out[t] = rep
    return back
