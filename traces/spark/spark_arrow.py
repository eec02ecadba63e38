"""The fast path of `replay` for Parquet traces: Spark reads the files, the JVM shuffles and
sorts, Python sees Arrow batches.

The exact path (traces.spark.spark_replay) reads every file in Python, pickles each event's JSON into
an RDD and shuffles pickled rows: most of its time went to that, not to the spec. Here:

1. **Survey.** Spark scans the few routing columns of every file (`_metadata` gives each row's
   file and row index). A Python function over Arrow batches computes each row's places
   (`spec.kinds.atoms`, once per distinct combination of the columns it reads, not per row),
   counts them, and summarises each run of consecutive rows of a file: its first and last
   (row, seq, ts) and whether seq strictly increases and ts never decreases inside it.
2. **Plan** in the driver, as the exact path: the same `Plan` from the same counts. The
   summaries prove the envelope order of every file, the one `trace_started` with the lowest
   seq and nothing after `trace_ended`.
3. **Route.** Spark scans every column again and writes each event's JSON in the JVM
   (`to_json`, nulls left out: the event as the Parquet reader makes it, JSON-typed columns
   still as text). An Arrow UDF over the routing columns only (the JSON stays in the JVM)
   gives each event's target partitions. Spark explodes them, shuffles by partition and sorts
   each partition by seq (its external sort: memory does not grow with the trace).
4. **Replay** each partition from its Arrow batches through `spec.actions`, as the exact path
   does (`_replay_partition`), validating each event with `check`'s validator on the way.

A Spark partition must hold exactly one replay partition: each replay partition gets a label
whose hash (Spark's `hash`, Murmur3 as `repartition` uses it) falls on its own Spark partition.

Anything this path does not prove clean falls back to the exact path, which gives `check`'s
file, line and message: a schema other than the writer's, an event out of order, a bad event, a
second header, a task that fails. So bad input costs a second run, good input one.
"""
from __future__ import annotations

import os
import pickle
import time

import orjson

from ..kinds import atoms as event_atoms
from ..io import TraceInputError

SEP, NULL = "\x1f", "\x00"       # joins the routing columns of a row into one key; a null
# a POP revive's target queue joins its place (spec.kinds.atoms)
ROUTE_COLS = ("kind", "group", "topic", "broker", "queue", "real_topic", "target_topic", "target_queue")


class Unproven(Exception):
    """The fast path cannot vouch for this trace: replay it on the exact path."""


def _writer_schema():
    from ..io import _arrow_schema

    return _arrow_schema()


def fast_files(files) -> dict | None:
    """{file: rows} when every file is a non-empty Parquet file with exactly the schema the
    writer gives (traces.io.ParquetWriter), else None (the exact path reads it)."""
    import pyarrow.parquet as pq

    want = [(f.name, f.type) for f in _writer_schema()]
    out = {}
    for f in files:
        if not f.endswith(".parquet"):
            return None
        try:
            md = pq.read_metadata(f)
            sch = md.schema.to_arrow_schema()
        except Exception:  # noqa: BLE001 - unreadable: the exact path says why
            return None
        if md.num_rows == 0 or [(x.name, x.type) for x in sch] != want:
            return None
        out[f] = md.num_rows
    return out


def _file_key(uri: str) -> str:
    from urllib.parse import unquote, urlparse

    return os.path.realpath(unquote(urlparse(uri).path) if uri.startswith("file:") else uri)


def _combos(batch, trace_ids):
    """Per row, the index of its routing combination, and the combinations (trace, kind, group,
    topic, broker, queue, real_topic, target_topic, target_queue, offset given), computed by Arrow
    over the batch."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    cols = [pa.array(trace_ids).cast(pa.string())]
    for n in ROUTE_COLS:
        c = batch.column(n)
        if n in ("queue", "target_queue"):
            c = pc.cast(c, pa.string())
        cols.append(pc.fill_null(c, NULL))
    cols.append(pc.if_else(batch.column("has_offset"), "1", "0"))
    enc = pc.dictionary_encode(pc.binary_join_element_wise(*cols, SEP))
    out = []
    for key in enc.dictionary.to_pylist():
        t, kind, group, topic, broker, queue, real, tt, tq, off = [None if x == NULL else x for x in key.split(SEP)]
        out.append((int(t), kind, group, topic, broker, None if queue is None else int(queue), real, tt,
                    None if tq is None else int(tq), off == "1"))
    return np.asarray(enc.indices), out


def places(combo):
    """spec.kinds.atoms of an event with these routing fields (Unproven: not a known kind)."""
    _, kind, group, topic, broker, queue, real, tt, tq, off = combo
    ev = {"kind": kind, "group": group, "topic": topic, "broker": broker, "queue": queue, "real_topic": real,
          "target_topic": tt, "target_queue": tq, "offset": 0 if off else None}
    try:
        return event_atoms(ev)
    except KeyError:
        raise Unproven(f"unknown event kind {kind!r}") from None


def _file_ids(batch, fidx_of):
    import numpy as np
    import pyarrow.compute as pc

    enc = pc.dictionary_encode(batch.column("file"))
    ids = np.asarray([fidx_of[_file_key(u)] for u in enc.dictionary.to_pylist()], dtype=np.int64)
    return ids[np.asarray(enc.indices)]


def _survey(batches, fidx_of, trace_of):
    """Per Spark task: places counts per trace, row-run summaries and the header rows (one
    pickled row each: trace, tag, blob)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    trace_of = np.asarray(trace_of, dtype=np.int64)
    counts: dict = {}
    cache: dict = {}
    out = []
    bad = set()
    for b in batches:
        if b.num_rows == 0:
            continue
        fid = _file_ids(b, fidx_of)
        tr = trace_of[fid]
        seq, ts = b.column("seq"), b.column("ts")
        if seq.null_count or ts.null_count:
            bad.update(tr.tolist())
            continue
        seq, ts = np.asarray(seq), np.asarray(ts)
        row = np.asarray(b.column("row"))
        brk = np.flatnonzero((fid[1:] != fid[:-1]) | (row[1:] != row[:-1] + 1)) + 1
        ok = (seq[1:] > seq[:-1]) & (ts[1:] >= ts[:-1])
        ok[brk - 1] = True
        if not ok.all():
            bad.update(tr[np.flatnonzero(~ok) + 1].tolist())
        kcol = b.column("kind")
        starts, ends = np.concatenate(([0], brk)), np.concatenate((brk, [len(fid)]))
        for s, e in zip(starts.tolist(), ends.tolist()):
            out.append((int(tr[s]), "run", (int(fid[s]), int(row[s]), int(seq[s]), int(ts[s]), kcol[s].as_py(),
                                            int(row[e - 1]), int(seq[e - 1]), int(ts[e - 1]))))
        idx, combos = _combos(b, tr)
        per = np.bincount(idx, minlength=len(combos))
        for c, n in zip(combos, per.tolist()):
            if n == 0:
                continue
            p = cache.get(c, cache)
            if p is cache:
                try:
                    p = cache[c] = places(c)
                except Unproven:
                    bad.add(c[0])
                    continue
            k = (c[0], p)
            counts[k] = counts.get(k, 0) + n
        marks = pc.is_in(kcol, value_set=pa.array(["trace_started", "trace_ended"]))
        for i in np.flatnonzero(np.asarray(pc.fill_null(marks, False))).tolist():
            out.append((int(tr[i]), kcol[i].as_py(), (int(fid[i]), int(row[i]), int(seq[i]),
                                                     b.column("start")[i].as_py())))
    for (t, p), n in counts.items():
        out.append((t, "places", (p, n)))
    for t in bad:
        out.append((t, "bad", None))
    blobs = [pickle.dumps(x, protocol=5) for x in out]
    yield pa.RecordBatch.from_arrays([pa.array(blobs, pa.binary())], names=["blob"])


def _decoder(files):
    """payload (the event's JSON from Spark's to_json) -> the event as `check` reads it: the
    JSON-typed columns decoded, the stream rules and the schema checked."""
    from ...spec.replay import fast_validator
    from ...traces.schema import kinds
    from ..io import _json_fields, _Stream, json_column_value

    validate = fast_validator()
    jf = _json_fields()
    per_kind = {k: tuple(n for n in (*kd["required"], *kd["optional"]) if n in jf) for k, kd in kinds().items()}
    every = tuple(sorted(jf))
    rules = _Stream(None)
    loads = orjson.loads

    def decode(payload, fidx, line):
        ev = loads(payload)
        for n in per_kind.get(ev.get("kind"), every):
            v = ev.get(n)
            if v is not None:
                ev[n] = json_column_value(files[fidx], line, n, v)
        rules.path, rules.ended = files[fidx], None   # (nothing after trace_ended: the survey's)
        rules.check(line, ev)
        problem = validate(ev)
        if problem:
            raise TraceInputError(files[fidx], line, problem)
        return ev

    return decode


def _hash_labels(spark, n: int) -> list[int]:
    """For each Spark partition p < n, an int whose Murmur3 hash (Spark's `hash`, which
    `repartition(n, col)` uses) modulo n is p."""
    from pyspark.sql import functions as F

    got: dict = {}
    span = 64 * n
    lo = 0
    while len(got) < n:
        rows = (spark.range(lo, lo + span).select(F.col("id").cast("int").alias("l"))
                .select("l", F.pmod(F.hash("l"), F.lit(n)).alias("p")).collect())
        for r in rows:
            got.setdefault(r["p"], r["l"])
        lo += span
    return [got[p] for p in range(n)]


def replay_arrow(traces, files, trace_of, rows_of, spark, profile, max_listed, partitions, out) -> list[int]:
    """Replay the traces (indices into `traces`) whose files all passed `fast_files`; fill
    out[t] with its Report. Returns the traces it could not vouch for (for the exact path)."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.functions import arrow_udf
    from pyspark.sql.pandas.types import from_arrow_schema

    from ...spec.replay import Findings, Report, resolve_profile
    from . import spark_replay as sr

    t0 = time.perf_counter()
    sc = spark.sparkContext
    todo = sorted(traces)
    fids = [i for i, t in enumerate(trace_of) if t in traces]
    paths = [files[i] for i in fids]
    fidx_of = {os.path.realpath(files[i]): i for i in fids}
    schema = from_arrow_schema(_writer_schema())
    cols = list(schema.names)

    def scan(paths, *extra):
        df = spark.read.schema(schema).parquet(*paths)
        return df.select(F.col("_metadata.file_path").alias("file"), F.col("_metadata.row_index").alias("row"),
                         *ROUTE_COLS, F.col("offset").isNotNull().alias("has_offset"), "seq", "ts", *extra)

    header = F.when(F.col("kind").isin("trace_started", "trace_ended"),
                    F.to_json(F.struct(*cols))).alias("start")
    tof = list(trace_of)
    try:
        got = (scan(paths, header).mapInArrow(lambda it: _survey(it, fidx_of, tof), "blob binary")
               .collect())
    except Exception as exc:  # noqa: BLE001 - any failure of the scan: the exact path reads and says why
        _why(exc)
        return todo
    survey: dict = {t: {"runs": [], "places": {}, "starts": [], "ends": [], "bad": False} for t in todo}
    for r in got:
        t, tag, x = pickle.loads(r["blob"])
        s = survey[t]
        if tag == "run":
            s["runs"].append(x)
        elif tag == "places":
            s["places"][x[0]] = s["places"].get(x[0], 0) + x[1]
        elif tag == "trace_started":
            s["starts"].append(x)
        elif tag == "trace_ended":
            s["ends"].append(x)
        else:
            s["bad"] = True
    fallback, plans, profs, base, n_all = [], {}, {}, {}, 0
    for t in todo:
        s = survey[t]
        try:
            if s["bad"]:
                raise Unproven("an event out of order or of an unknown kind")
            s["n"] = _prove_order(s, rows_of, {i for i in fids if trace_of[i] == t})
            fidx, row, _, start = s["starts"][0]
            profs[t] = resolve_profile(profile, _decoder(files)(start, fidx, row + 1), files[fidx])
        except (Unproven, TraceInputError) as exc:
            _why(exc)
            fallback.append(t)
            continue
        plans[t] = sr.Plan(s["places"], partitions or max(2, 2 * sc.defaultParallelism))
        base[t] = n_all
        n_all += plans[t].n
    if not plans:
        return fallback
    labels = _hash_labels(spark, n_all)
    owner = {}
    for t, plan in plans.items():
        for p in range(plan.n):
            owner[labels[base[t] + p]] = (t, p)
    b = sc.broadcast((plans, base, {t: profs[t].name for t in plans}, files, owner, labels, fidx_of, tof))
    mx = max_listed

    def route(file, kind, group, topic, broker, queue, real_topic, target_topic, target_queue, has_offset):
        import numpy as np
        import pyarrow as pa

        plans_, base_, _, _, _, labels_, fidx_of_, tof_ = b.value
        bt = pa.RecordBatch.from_arrays([file, kind, group, topic, broker, queue, real_topic, target_topic,
                                         target_queue, has_offset],
                                        names=["file", *ROUTE_COLS, "has_offset"])
        fid = _file_ids(bt, fidx_of_)
        idx, combos = _combos(bt, np.asarray(tof_, dtype=np.int64)[fid])
        tg, home, bcast = [], [], []
        for c in combos:
            r = cache.get(c)
            if r is None:
                t = c[0]
                pl = places(c)
                parts = plans_[t].targets(pl)
                r = cache[c] = ([labels_[base_[t] + p] for p in parts], parts[0], pl is None)
            tg.append(r[0])
            home.append(r[1])
            bcast.append(r[2])
        ia = pa.array(idx)
        return pa.StructArray.from_arrays(
            [pa.array(tg, pa.list_(pa.int32())).take(ia), pa.array(home, pa.int32()).take(ia),
             pa.array(bcast, pa.bool_()).take(ia), pa.array(fid, pa.int32())],
            names=["targets", "home", "bcast", "fid"])

    cache: dict = {}        # (per Python worker: the routing of each combination, once)

    def run(batches):
        import pyarrow as pa
        import pyarrow.compute as pc

        plans_, _, names, files_, owner_, _, _, _ = b.value
        decode = _decoder(files_)
        first = next(batches, None)
        if first is None:
            return
        label = first.column("label")[0].as_py()
        t, pid = owner_[label]

        def rows():
            for bt in _chain(first, batches):
                lab = bt.column("label")
                if lab.null_count or pc.any(pc.not_equal(lab, label)).as_py():
                    raise RuntimeError("two replay partitions in one Spark partition")
                yield tuple(bt.column(n).to_pylist() for n in ("seq", "ts", "line", "bcast", "home", "fid", "payload"))

        res = sr._replay_partition(pid, rows(), names[t], files_, mx, plans_[t], decode=decode)
        res["trace"] = t
        yield pa.RecordBatch.from_arrays([pa.array([pickle.dumps(res, protocol=5)], pa.binary())], names=["blob"])

    planned = [files[i] for i in fids if trace_of[i] in plans]
    router = arrow_udf(route, "struct<targets: array<int>, home: int, bcast: boolean, fid: int>")
    routed = (scan(planned, F.to_json(F.struct(*cols)).alias("payload"))
              .select(router("file", *ROUTE_COLS, "has_offset").alias("r"), "seq", "ts",
                      (F.col("row") + 1).alias("line"), "payload"))
    try:
        got = (routed.select(F.explode("r.targets").alias("label"), "r.home", "r.bcast", "seq", "ts", "r.fid", "line",
                             "payload")
               .repartition(n_all, "label").sortWithinPartitions("seq")
               .mapInArrow(run, "blob binary").collect())
    except Exception as exc:  # noqa: BLE001 - a failed task: the exact path
        _why(exc)
        return fallback + sorted(plans)
    results = [pickle.loads(r["blob"]) for r in got]
    for t, plan in plans.items():
        res = sorted((r for r in results if r["trace"] == t), key=lambda r: r["pid"])
        if len(res) != plan.n or any("error" in r for r in res):
            fallback.append(t)
            continue
        tfiles = [f for f, tt in zip(files, trace_of) if tt == t]
        rep = sr._merge(res, tfiles, profs[t].name, survey[t]["n"], max_listed, Findings, Report)
        rep.plan = plan
        rep.witnesses = []
        rep.seconds = time.perf_counter() - t0
        rep.spark = sr.spark_info(sc, "arrow", plan, res)
        out[t] = rep
    return sorted(fallback)


def _why(exc):
    """Why a trace left the fast path (to standard error with ROCKETSPEC_REPLAY_DEBUG set)."""
    if os.environ.get("ROCKETSPEC_REPLAY_DEBUG"):
        import sys

        print(f"replay: exact path: {' '.join(str(exc).split())[:2000]}", file=sys.stderr)


def _chain(first, rest):
    yield first
    yield from rest


def _prove_order(s, rows_of, tfids) -> int:
    """From the survey of one trace: each file's rows all seen once, in envelope order; nothing
    after trace_ended in its file; one trace_started, the lowest seq; files whose seq ranges do
    not overlap in order between them (overlapping files are checked per partition, as on the
    exact path). The number of events, or Unproven."""
    by: dict = {}
    for r in s["runs"]:
        by.setdefault(r[0], []).append(r)
    total = 0
    spans = []
    for fidx, runs in by.items():
        runs.sort(key=lambda r: r[1])
        if runs[0][1] != 0:
            raise Unproven("rows missing")
        for a, b in zip(runs, runs[1:]):
            if b[1] != a[5] + 1 or not (b[2] > a[6] and b[3] >= a[7]):
                raise Unproven("runs not contiguous or out of order")
        n = runs[-1][5] + 1
        if n != rows_of[fidx]:
            raise Unproven("rows missing")
        total += n
        spans.append((runs[0][2], runs[-1][6], runs[0][3], runs[-1][7], runs[0][4]))
    if set(by) != tfids or len(s["starts"]) != 1:
        raise Unproven("not one trace_started")
    for fidx, row, _, _ in s["ends"]:
        if row != rows_of[fidx] - 1:
            raise Unproven("an event after trace_ended")
    spans.sort()
    if spans[0][4] != "trace_started" or spans[0][0] != s["starts"][0][2]:
        raise Unproven("the lowest event is not trace_started")
    for a, b in zip(spans, spans[1:]):
        if b[0] <= a[0]:
            raise Unproven("seq twice")
        if b[0] > a[1] and b[2] < a[3]:
            raise Unproven("ts goes back between files")
    return total
