"""Replay at scale: `rocketspec replay` on local[1] and local[2] against `check`, same data.

    python -m bench.replay_scale [--events 1e7] [--dir DIR] [--workers 2] [--no-check]
                                 [--path default|exact|arrow] [--layout trace|runs] [--cores 1,2]

(one trace: replays on replay's default path for a long trace of many deployments, the scoped
path, traces/spark/spark_scoped.py; --path exact: partitioned by key; --path arrow: `replay --arrow`.
--layout runs: each generation is a trace of its own, a dataset of runs, which replay takes on
its default path for small traces: each run whole in a task, traces/spark/spark_whole.py.)

The data: one trace of N events made of independent deployments (the `basic` scenario, four
seeds; each copy with its own brokers, topics, groups, clients and message ids), at most
SLOTS deployments live at a time: copy k runs in generation k // SLOTS, shifted in time by
SPAN_MS per generation (every time field moves with ts). That is an operator's cluster over
hours: many groups, each living a while. One generation is one Parquet file of consecutive
seqs (a partitioned Parquet directory); the files are written by --workers processes (default:
one per core), with a progress line, and the data is reused when it exists.

Prints, each with the load average (`uptime`) when it was measured:
- `check`: one process over the files in order (its CPU seconds too);
- `replay` on local[1] and local[2]: the job's wall time without the session's start, its CPU
  seconds (the Spark JVM and its Python workers), events per second of each, the path taken
  (scoped, whole, exact or arrow), the partition skew (most loaded partition over its fair share), the peak
  memory of a Python worker and of the JVM;
- the scaling from 1 to 2 cores and the ratio to check.

On a machine that other work keeps busy the wall times are stretched by the load; events per
CPU-second are not, and CPU seconds / cores is what the wall time is on free cores.
"""
from __future__ import annotations

import argparse
import json
import os
import time

SLOTS = 64              # deployments live at once
SPAN_MS = 240_000       # one generation: longer than any base run
SAME_TS = 64            # events of one copy at one ts, at most
SEEDS = (1, 2, 3, 4)
TIME_FIELDS = ("ts", "deliver_ts", "last_lock_ts", "expires_at")


def load() -> str:
    return "load %.1f" % os.getloadavg()[0]


def _names(events) -> set:
    out = set()
    for e in events:
        for f in ("group", "topic", "client", "broker", "msg_id", "origin_msg_id", "view", "real_topic"):
            v = e.get(f)
            if isinstance(v, str):
                out.add(v)
    return out


def _renamer(names: set, suffix: str):
    def ren(v):
        if isinstance(v, str):
            return v + suffix if v in names else v
        if isinstance(v, list):
            return [ren(x) for x in v]
        if isinstance(v, dict):
            return {ren(k): ren(x) for k, x in v.items()}
        return v
    return ren


_RUNS = None


def _runs():
    global _RUNS
    if _RUNS is None:
        from rocketspec.reference.runner import run_to_list
        from rocketspec.reference.scenario import load_scenario

        _RUNS = [run_to_list(load_scenario("basic"), s, "rocketmq-5.3.3") for s in SEEDS]
        _RUNS = [(r, _names(r)) for r in _RUNS]
        for r, _ in _RUNS:
            assert r[-1]["ts"] < SPAN_MS, "a base run longer than a generation"
        _RUNS = [(r, names, [_template(e, names) for e in r]) for r, names in _RUNS]
    return _RUNS


def _template(e: dict, names: set) -> tuple:
    """An event of a base run as (the fields no copy changes, the name fields, the nested
    fields that hold names, the time fields): a copy only appends its suffix and shifts."""
    fixed, flat, deep, times = {}, [], [], []
    for f, v in e.items():
        if f in TIME_FIELDS and v is not None:
            times.append(f)
        if isinstance(v, str) and v in names:
            flat.append(f)
        elif isinstance(v, (list, dict)) and _renamer(names, "\0")(v) != v:
            deep.append(f)
        fixed[f] = v
    return fixed, flat, deep, times


def _copy_size(k: int) -> int:
    return len(_runs()[k % len(SEEDS)][0]) - 2     # without its trace_started and trace_ended


def _generation(out_dir: str, g: int, copies: int, first_seq: int, last: bool, own: bool = False) -> int:
    """Write generation g (copies g*SLOTS ...) as one file, seqs from first_seq; return its size.
    `own`: the generation is a trace of its own (its trace_started and trace_ended), the run
    `run=<g>` of a dataset of runs."""
    from rocketspec.traces.io import open_writer

    runs = _runs()
    shift = g * SPAN_MS
    rows = []
    if own:
        first_seq, last = 0, True
        head = dict(runs[0][0][0])
        head["ts"] = shift
        rows.append(((-1, 0, 0), head))
    elif g == 0:
        rows.append(((-1, 0, 0), dict(runs[0][0][0])))     # the one trace_started
    end_ts = 0
    for k in range(g * SLOTS, min(copies, (g + 1) * SLOTS)):
        evs, names, templates = runs[k % len(SEEDS)]
        suffix = f"-{k}"
        ren = _renamer(names, suffix)
        j, last_ts = 0, None
        for fixed, flat, deep, times in templates[1:-1]:
            ts = fixed["ts"]
            j = j + 1 if ts == last_ts else 0
            last_ts = ts
            assert j < SAME_TS
            d = fixed.copy()
            for f in flat:
                d[f] += suffix
            for f in deep:
                d[f] = ren(d[f])
            for f in times:
                d[f] += shift
            rows.append(((d["ts"], k % SLOTS, j), d))
        end_ts = max(end_ts, evs[-1]["ts"] + shift)
    rows.sort(key=lambda r: r[0])
    if last:
        tail = dict(runs[0][0][-1])
        tail["ts"] = max(end_ts, rows[-1][1]["ts"])
        rows.append((None, tail))
    path = os.path.join(out_dir, f"run={g}", "part-0.parquet") if own else os.path.join(out_dir, f"part-{g:05d}.parquet")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    w = open_writer(path)
    for i, (_, d) in enumerate(rows):
        d["seq"] = first_seq + i
        w.write(d)
    w.close()
    return len(rows)


def generate(n: int, out_dir: str, workers: int | None = None, layout: str = "trace") -> int:
    """Write about n events into out_dir as part-00000.parquet, ... (one file per generation),
    on `workers` processes; return the count. Layout "runs": each generation is a trace of its
    own, run=<g>/part-0.parquet (a dataset of runs, as `simulate --events` writes)."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    runs = _runs()
    per = sum(len(r[0]) - 2 for r in runs) / len(runs)
    copies = max(1, round(n / per))
    gens = (copies + SLOTS - 1) // SLOTS
    firsts, s = [], 0
    for g in range(gens):
        firsts.append(s)
        s += sum(_copy_size(k) for k in range(g * SLOTS, min(copies, (g + 1) * SLOTS))) + (1 if g == 0 else 0)
    os.makedirs(out_dir, exist_ok=True)
    workers = workers or os.cpu_count() or 1
    t0 = time.perf_counter()
    done = events = 0
    last_print = 0.0
    with ProcessPoolExecutor(workers, mp_context=get_context("fork")) as pool:
        futs = [pool.submit(_generation, out_dir, g, copies, firsts[g], g == gens - 1, layout == "runs")
                for g in range(gens)]
        for f in futs:
            events += f.result()
            done += 1
            now = time.perf_counter()
            if now - last_print > 5 or done == gens:
                last_print = now
                print(f"  generating: {done}/{gens} files, {events:,} events, {events / (now - t0):,.0f} events/s "
                      f"on {workers} workers ({load()})", flush=True)
    with open(os.path.join(out_dir, "_meta.json"), "w") as fh:
        json.dump({"events": events, "copies": copies, "slots": SLOTS, "layout": layout}, fh)
    return events


def _cpu_tree(pid: int) -> tuple[float, float]:
    """CPU seconds of a process (with its reaped children) and of its live descendants (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    kids: dict = {}
    stats: dict = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as fh:
                f = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(d)] = f
        kids.setdefault(int(f[1]), []).append(int(d))
    own, total, todo = None, 0.0, [pid]
    while todo:
        p = todo.pop()
        f = stats.get(p)
        if f is None:
            continue
        c = (int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])) / tick
        if own is None:
            own = c
        else:
            total += c
        todo.extend(kids.get(p, ()))
    return own or 0.0, total


def _hwm_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def run_check_runs(runs) -> tuple[float, float, bool]:
    """check of a dataset of runs, run by run in one process, as `rocketspec check DIR` does it
    (check_trace per run: its reader, and the schema check skipped for the kinds a Parquet batch's
    columns vouch for): (wall s, CPU s, every run holds)."""
    from rocketspec.commands.check import _check_run

    t0, c0 = time.perf_counter(), time.process_time()
    reps = [_check_run(d, None, 50) for _, d in runs]
    ok = all(not isinstance(r, Exception) and r.ok for r in reps)
    return time.perf_counter() - t0, time.process_time() - c0, ok


def run_check(files) -> tuple[float, float, object]:
    """check's replay (one process) over the files in order: (wall s, CPU s, report)."""
    import gc

    from rocketspec.spec.replay import FastValidator, check_events, resolve_profile
    from rocketspec.traces.io import read_events

    def events():
        n = 0
        for f in files:
            for _, ev in read_events(f, validate=False):
                n += 1
                yield n, ev

    it = events()
    first = next(it)
    prof = resolve_profile(None, first[1], files[0])

    def chained():
        yield first
        yield from it

    gc.disable()
    t0, c0 = time.perf_counter(), time.process_time()
    rep = check_events(chained(), prof, files[0], validate=FastValidator())
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    gc.enable()
    return dt, cpu, rep


def run_replay(path, cores: int, partitions: int | None, which: str = "default", conf: dict | None = None):
    from rocketspec.traces.spark.spark_replay import replay_many, spark_session

    spark = spark_session(f"local[{cores}]", app=f"replay-bench-{cores}",
                          conf={"spark.ui.enabled": "false", "spark.driver.memory": "4g",
                                "spark.sql.execution.arrow.maxRecordsPerBatch": "10000", **(conf or {})})
    try:
        pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
        c0 = _cpu_tree(pid)
        t0 = time.perf_counter()
        from rocketspec.traces.datasets import dataset_runs

        runs = dataset_runs(path)
        kw = {"default": {}, "arrow": {"arrow": True}, "exact": {"scoped": False, "whole": False}}[which]
        if which == "exact" and partitions is None:
            partitions = 2 * cores
        reps = replay_many([[d] for _, d in runs] if runs else [[path]], spark, partitions=partitions, **kw)
        for rep in reps:
            if isinstance(rep, Exception):
                raise rep
        c1 = _cpu_tree(pid)
        return time.perf_counter() - t0, (c1[0] - c0[0], c1[1] - c0[1]), _hwm_mb(pid), reps
    finally:
        spark.stop()


def _summary(reps) -> dict:
    """What the bench prints of the job: one trace's Spark figures, or a dataset's (its runs'
    paths, the tasks of the whole path and their skew, the sums and the peaks)."""
    if len(reps) == 1:
        sp = dict(reps[0].spark)
        sp["ok"] = reps[0].ok
        return sp
    sps = [r.spark for r in reps]
    paths = sorted({sp["path"] for sp in sps})
    whole = [sp for sp in sps if sp["path"] == "whole"]
    return {"ok": all(r.ok for r in reps), "path": "+".join(paths),
            "partitions": whole[0]["tasks"] if whole else sum(sp["partitions"] for sp in sps),
            "components": len(reps), "skew": whole[0]["task_skew"] if whole else max(sp["skew"] for sp in sps),
            "worker_maxrss_mb": max(sp["worker_maxrss_mb"] for sp in sps),
            "replay_cpu_seconds": [sum(sum(sp["replay_cpu_seconds"]) for sp in sps)],
            "partition_events": f"{len(reps)} runs", "replay_seconds": "-"}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=float, default=1e6, help="events to generate (the issue asks 1e7 and 1e8)")
    ap.add_argument("--dir", default=None, help="data directory (default /tmp/rocketspec-replay-bench-N)")
    ap.add_argument("--workers", type=int, default=None, help="processes generating the data (default: cores)")
    ap.add_argument("--no-check", action="store_true", help="skip check (one process: the slowest part at 1e8)")
    ap.add_argument("--path", choices=("default", "exact", "arrow"), default="default",
                    help="default: replay's own choice (one long trace: the scoped path, traces/spark/spark_scoped.py; "
                         "runs: each whole); exact: partitioned by key (--partitions); arrow: replay --arrow")
    ap.add_argument("--exact", action="store_const", const="exact", dest="path", help="the same as --path exact")
    ap.add_argument("--cores", default="1,2", help="local[N] runs, e.g. 2 (default 1,2)")
    ap.add_argument("--partitions", type=int, default=None, help="replay partitions (default: 2 x cores)")
    ap.add_argument("--layout", choices=("trace", "runs"), default="trace",
                    help="trace: one trace of every generation (partitioned by the exact or Arrow path); runs: each "
                         "generation a trace of its own, run=<g>/ (a dataset of runs: each replayed whole in a task)")
    args = ap.parse_args(argv)
    n = int(args.events)
    d = args.dir or (f"/tmp/rocketspec-replay-bench-{n}" if args.layout == "trace"
                     else f"/tmp/rocketspec-replay-bench-runs-{n}")
    meta = os.path.join(d, "_meta.json")
    t0 = time.perf_counter()
    if os.path.exists(meta):
        total = json.load(open(meta))["events"]
        print(f"data: {d} ({total:,} events, reused)")
    else:
        total = generate(n, d, args.workers, args.layout)
        print(f"data: {d} ({total:,} events, generated in {time.perf_counter() - t0:.1f} s, {load()})")
    from rocketspec.traces.datasets import dataset_runs

    runs = dataset_runs(d)
    files = ([os.path.join(x, "part-0.parquet") for _, x in runs] if runs else
             sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".parquet")))
    size = sum(os.path.getsize(f) for f in files)
    print(f"      {len(files)} files{f' ({len(runs)} runs, each a trace)' if runs else ''}, "
          f"{size / 2**30:.2f} GiB on disk")
    dt = None
    if not args.no_check:
        if runs:
            dt, cpu, ok = run_check_runs(runs)
        else:
            dt, cpu, crep = run_check(files)
            ok = crep.ok
        print(f"check:          {dt:8.1f} s  {total / dt:10,.0f} events/s  CPU {cpu:7.1f} s = {total / cpu:9,.0f} "
              f"events/CPU-s  verdict {'holds' if ok else 'violated'}  ({load()})", flush=True)
    res = {}
    for cores in [int(c) for c in args.cores.split(",")]:
        # (the Arrow path is for one trace's Parquet; runs go whole unless --exact or --partitions)
        t, (jvm, py), hwm, reps = run_replay(d, cores, args.partitions, args.path)
        cpu = jvm + py
        res[cores] = t
        sp = _summary(reps)
        print(f"replay local[{cores}]: {t:8.1f} s  {total / t:10,.0f} events/s  CPU {cpu:7.1f} s = "
              f"{total / cpu:9,.0f} events/CPU-s  verdict {'holds' if sp['ok'] else 'violated'}  path {sp['path']}  "
              f"partitions {sp['partitions']}  components {sp['components']}  skew {sp['skew']:.2f}  "
              f"worker peak {sp['worker_maxrss_mb']:.0f} MiB  JVM peak {hwm:.0f} MiB  ({load()})", flush=True)
        print(f"                CPU s: JVM {jvm:.1f}, Python workers {py:.1f} (replaying {sum(sp['replay_cpu_seconds']):.1f})"
              f"  partition events {sp['partition_events']}  replay s {sp['replay_seconds']}")
        if sp.get("survey_seconds") is not None:
            print(f"                scoped path: survey {sp['survey_seconds']:.1f} s wall, {sp['survey_cpu_seconds']:.1f} "
                  f"CPU-s; {sp['scopes']} scopes on {sp['partitions']} tasks")
    if 1 in res and 2 in res:
        print(f"scaling 1 -> 2 cores: {res[1] / res[2]:.2f}x")
    if dt is not None:
        print("replay / check (events/s): " + ", ".join(f"local[{c}] {dt / t:.2f}" for c, t in res.items()))


if __name__ == "__main__":
    main()
