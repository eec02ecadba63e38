"""Replay of traces on Spark: the spec's own actions and invariants, partitioned by key.

The job (`replay(paths, spark, ...)`):

1. **Read.** One task per input file (JSON Lines, gzip/zstd, Parquet; a directory stands for
   the Parquet files under it). Each event is read and validated by the readers `check` uses
   (traces.io, spec.replay.FastValidator), so bad input fails with the same file, line and
   message. Each event gets the state keys it touches (`spec.kinds.atoms`).
2. **Plan.** The distinct key sets are few (queues, stored queues, groups with retry chains);
   the driver joins keys that one event touches together (union-find) into *components*: no
   action reads state outside its component. Components are packed onto partitions by their
   event counts (largest first onto the lightest partition).
3. **Replay.** Each partition replays its components' events in seq order through
   `spec.actions` in one `SpecState`; directory events (clients, brokers, topics, allocations)
   go to the partitions of their scope (traces.scopes: the names events mention together, a
   deployment), the trace's own events to every partition. After the last event of a scope in
   a partition, the partition drops that scope's state (spec.evict), so its memory holds the
   scopes still live. A finding is kept by exactly one partition: the one its event went to,
   or for a directory event, the partition of its key's component (the scope's owner for the
   directory's own findings), so each finding is counted once.
4. **Merge.** Counts add up; the listed findings are the first by seq, as `check` lists them.

A partition's result depends only on its events, so a retried task (a lost executor) gives the
same result.
"""
from __future__ import annotations

import heapq
import os
import sys
import time
from pathlib import Path

import orjson

from ..kinds import atoms as event_atoms
from ..kinds import key_atom
from ..kinds import names_packer
from ..io import TraceInputError, out_of_order
from ..scopes import Scopes, UnionFind

WITNESS_CAP = 200_000
ROUTE_CACHE = 1 << 20      # distinct places whose partitions one routing task remembers
# A partition forgets ended scopes (a sweep walks its live state) once this many have ended, or
# this many events after the first of them: its memory holds the live scopes and a few more.
SWEEP_SCOPES, SWEEP_EVENTS = 16, 1 << 12
DIRECTORY = b"null"        # the packed places of a directory event
AS_IS = "as is"            # _replay_partition's decode: the payload is the event already


# ---------------------------------------------------------------- inputs

def expand_paths(paths) -> list[str]:
    """The trace files named by `paths`: a file as given, a directory as the Parquet files under
    it (a partitioned Parquet dataset), in path order; file:///x as /x, another file system's
    URL refused (traces.spark.spark_preflight.local_path)."""
    from .spark_preflight import local_path

    out = []
    for p in paths:
        s = local_path(p)
        if os.path.isdir(s):
            files = sorted(str(f) for f in Path(s).rglob("*.parquet")
                           if not any(part.startswith((".", "_")) for part in f.relative_to(s).parts))
            if not files:
                raise TraceInputError(s, None, "a directory with no .parquet file; expected a trace file or a "
                                               "partitioned Parquet directory")
            out.extend(files)
        elif not os.path.exists(s):
            raise TraceInputError(s, None, "no such file")
        else:
            out.append(s)
    if not out:
        raise TraceInputError(None, None, "no input: give one or more trace paths")
    return out


def _without_gc(it):
    """`it`, with Python's cyclic garbage collector off while it runs (as `check` replays): the
    rows, events and spec state hold no cycles worth collecting, and the collector's passes over
    millions of live rows cost more than the work itself."""
    import gc

    was = gc.isenabled()
    gc.disable()
    try:
        yield from it
    finally:
        if was:
            gc.enable()


def _pack_places(places) -> bytes:
    """An event's places (spec.kinds.atoms) as the rows carry them: JSON text, one object to
    pickle instead of a dozen nested tuples and strings (rows are pickled three times)."""
    return orjson.dumps(places)


def _places(packed: bytes):
    """The places `_pack_places` packed (keys are tuples again)."""
    v = orjson.loads(packed)
    return None if v is None else tuple(tuple(tuple(k) for k in place) for place in v)


def _names(packed: bytes) -> tuple:
    """The names (spec.kinds.names) a row carries packed, as tuples again."""
    return tuple(tuple(x) for x in orjson.loads(packed))


class _Unpacked(dict):
    """Packed places -> places, each unpacked once."""

    def __missing__(self, packed):
        v = self[packed] = _places(packed)
        return v


def _read_file(idx: int, path: str):
    """Rows of one file: (seq, ts, kind, packed places, file index, line, event JSON, packed
    names), or one error row ("error", file index, line, message, seq) at the first bad event."""
    from ...spec.replay import fast_validator
    from ..io import read_events

    validate = fast_validator()
    last_seq = last_ts = None
    dumps = orjson.dumps
    pack_names = names_packer(dumps)
    n = 0
    try:
        for line, ev in read_events(path, validate=False):
            problem = validate(ev)
            if problem:
                raise TraceInputError(path, line, problem)
            seq, ts = ev["seq"], ev["ts"]
            if last_seq is not None and (seq <= last_seq or ts < last_ts):
                raise TraceInputError(path, line, out_of_order(seq, ts, last_seq, last_ts))
            last_seq, last_ts = seq, ts
            n += 1
            yield (seq, ts, ev["kind"], dumps(event_atoms(ev)), idx, line, dumps(ev), pack_names(ev))
        if n == 0:
            raise TraceInputError(path, 1, "empty trace (no event): expected a trace_started event first")
    except TraceInputError as exc:
        yield ("error", idx, exc.line, exc.message, exc.event)


def _summary() -> dict:
    """What the plan needs of some rows: per (packed places, packed names), the event count and
    the last seq; the first event, the trace_started headers, the bad input (`_summarize`)."""
    return {"n": 0, "counts": {}, "first": None, "starts": [], "errors": []}


def _summarize(s: dict, r) -> None:
    if r[0] == "error":
        s["errors"].append(r)
        return
    s["n"] += 1
    a = (r[3], r[7])
    c = s["counts"].get(a)
    if c is None:
        s["counts"][a] = [1, r[0]]
    else:
        c[0] += 1
        if c[1] < r[0]:
            c[1] = r[0]
    if s["first"] is None or r[0] < s["first"][0]:
        s["first"] = (r[0], r[2], r[4], r[5])
    if r[2] == "trace_started":
        s["starts"].append((r[0], r[4], r[5], r[6]))


def _combos(sums) -> dict:
    """{(places, names): (events, last seq)} of a trace's summaries, for the plan."""
    out: dict = {}
    for s in sums:
        for (p, nm), (c, last) in s["counts"].items():
            k = (_places(p), _names(nm))
            o = out.get(k)
            out[k] = (c, last) if o is None else (o[0] + c, max(o[1], last))
    return out


def _summarize_traces(trows):
    """One summary per trace, of (trace, row) pairs."""
    by: dict = {}
    for t, r in trows:
        s = by.get(t)
        if s is None:
            s = by[t] = _summary()
        _summarize(s, r)
    yield from by.items()


class _FileSummaries:
    """An accumulator (pyspark's AccumulatorParam protocol) of one summary per input file,
    keyed by the file's index. A file's summary is the same however often its task runs (a
    retry, a recomputed cache block), so adding it again changes nothing."""

    def zero(self, value):
        return {}

    def addInPlace(self, a, b):
        a.update(b)
        return a


def _read_summarized(idx: int, path: str, t: int, acc):
    """(trace, row) pairs of one file, as `_read_file` reads them; its summary goes to `acc`
    once every row is read. The read stage summarizes as it reads: no second pass over the
    rows (they would be moved from the JVM back to Python and unpickled once more)."""
    s = _summary()
    for r in _read_file(idx, path):
        _summarize(s, r)
        # the names route a directory event (traces.scopes); the others' are in the summary
        yield t, (r if r[0] == "error" or r[3] == DIRECTORY else r[:7] + (None,))
    acc.add({idx: s})


# ---------------------------------------------------------------- plan

def _is_marker(place) -> bool:
    """("Q", group) alone: every queue of the group; ("T", topic): the chains of every group
    that consumes the topic (spec.kinds.atoms)."""
    return len(place) == 1 and (place[0][0] == "T" or (place[0][0] == "Q" and len(place[0]) == 2))


class Plan:
    """Which partition replays which key: components of the keys that events read together
    (each place of spec.kinds.atoms), packed onto `n` partitions by event count (largest
    first, onto the lightest). `counts`: {places: events}. With `combos` ({(places, names):
    (events, last seq)}, instead of `counts`), the plan also has `scopes` (traces.scopes):
    a directory event goes to its scope's partitions, not to every one, and each partition
    learns when a scope's events are over."""

    def __init__(self, counts: dict | None, n_wanted: int, combos: dict | None = None):
        if combos is not None:
            counts = {}
            for (places, _), (c, _) in combos.items():
                counts[places] = counts.get(places, 0) + c
        uf = UnionFind()
        self.directory_events = counts.get(None, 0)
        for places, c in counts.items():
            for place in places or ():
                if _is_marker(place):
                    continue
                for x in place:
                    uf.find(x)
                for x in place[1:]:
                    uf.union(place[0], x)
        size: dict = {}
        for places, c in counts.items():
            if places:
                r = uf.find(places[0][0]) if not _is_marker(places[0]) else None
                if r is not None:
                    size[r] = size.get(r, 0) + c
        for x in list(uf.parent):
            size.setdefault(uf.find(x), 0)
        self.components = len(size)
        self.n = max(1, min(n_wanted, len(size)))
        heap = [(0, p) for p in range(self.n)]
        comp_part = {}
        for r, c in sorted(size.items(), key=lambda kv: (-kv[1], repr(kv[0]))):
            load, p = heapq.heappop(heap)
            comp_part[r] = p
            heapq.heappush(heap, (load + c, p))
        self.part_of = {x: comp_part[uf.find(x)] for x in list(uf.parent)}
        self.group_parts: dict = {}
        for x, p in self.part_of.items():
            if x[0] == "Q":
                self.group_parts.setdefault(x[1], set()).add(p)
        self.group_parts = {g: tuple(sorted(ps)) for g, ps in self.group_parts.items()}
        topic_parts: dict = {}
        for x in self.part_of:
            if x[0] == "Q" and ("C", x[1]) in self.part_of:
                topic_parts.setdefault(x[2], set()).add(self.part_of[("C", x[1])])
        self.topic_parts = {t: tuple(sorted(ps)) for t, ps in topic_parts.items()}
        self.scopes = None if combos is None else Scopes(combos, self)
        self.loads = [0] * self.n
        items = combos.items() if combos is not None else (((k, ()), (c, None)) for k, c in counts.items())
        for (places, names), (c, _) in items:
            for p in self.route(places, names):
                self.loads[p] += c

    def route(self, places, names) -> tuple:
        """The partitions an event goes to, its home first; with scopes, a directory event to its
        scope's partitions only."""
        if places is None and self.scopes is not None:
            return self.scopes.targets(names)
        return self.targets(places)

    def targets(self, places) -> tuple:
        """The partitions an event goes to, its home first."""
        if places is None:
            return tuple(range(self.n))
        if not places:
            return (0,)
        out = []
        for place in places:
            if not _is_marker(place):
                ps = (self.part_of[place[0]],)
            elif place[0][0] == "T":
                ps = self.topic_parts.get(place[0][1], ())
            else:
                ps = self.group_parts.get(place[0][1], ())
            for p in ps:
                if p not in out:
                    out.append(p)
        return tuple(out) or (0,)

    def key_partition(self, key):
        """The partition that owns a finding's key (None: the directory's, or unknown)."""
        a = key_atom(key)
        if a is None:
            return None
        p = self.part_of.get(a)
        if p is None and a[0] == "Q":
            p = self.part_of.get(("S",) + a[2:])
        return p

    def skew(self) -> float:
        """The most loaded partition's events over the fair share (1.0 is perfect balance)."""
        total = sum(self.loads)
        return max(self.loads) * self.n / total if total else 1.0


# ---------------------------------------------------------------- replay of one partition

def grouped_findings_class():
    """Findings that also aggregate every finding by (invariant, key): its count, first and last
    seq and ts, first message and severity (the violations dataset's rows)."""
    from ...spec.replay import LIVE, Findings, _inv

    class GroupedFindings(Findings):
        def __init__(self, st, **kw):
            super().__init__(st, **kw)
            self.groups: dict = {}

        def report(self, inv, message, key=None, state=LIVE):
            ev = self.ev
            seq, ts = (ev.get("seq"), ev.get("ts")) if ev else (None, None)
            g = self.groups.get((inv, key))
            if g is None:
                self.groups[(inv, key)] = [1, seq, seq, ts, ts, message, _inv.severity(inv)]
            else:
                g[0] += 1
                g[2], g[4] = seq, ts
            super().report(inv, message, key, state)

    return GroupedFindings


def _findings_class():
    from ..kinds import HOME_FINDINGS
    from ...spec.replay import LIVE

    class PartitionFindings(grouped_findings_class()):
        """Findings of one partition. A finding is kept by exactly one partition: the one that
        owns its key (for a directory event: its home, the scope's owner (traces.scopes), for
        the directory's own keys), or the event's home for the kinds whose findings judge their
        home's state (spec.kinds.HOME_FINDINGS) and for findings without a key. Every kept
        finding is also aggregated by (invariant, key) for the violations dataset."""

        def __init__(self, st, pid, plan, **kw):
            super().__init__(st, **kw)
            self.pid, self.plan = pid, plan
            self.broadcast, self.home, self.owner = False, True, 0

        def _keep(self, key) -> bool:
            if self.broadcast:
                p = self.plan.key_partition(key)
                return self.pid == (self.owner if p is None else p)
            if self.ev["kind"] in HOME_FINDINGS:
                return self.home
            p = self.plan.key_partition(key)
            return self.home if p is None else p == self.pid

        def report(self, inv, message, key=None, state=LIVE):
            if self._keep(key):
                super().report(inv, message, key, state)

        def example(self, inv, message, key=None, state=LIVE):
            if self._keep(key):
                super().example(inv, message, key, state)

    return PartitionFindings


class ScopesEnded:
    """In a partition's stream, after the event of that seq: these scopes have no more events
    here (traces.scopes); their state is dropped (spec.evict)."""

    __slots__ = ("names", "seq")

    def __init__(self, names, seq=None):
        self.names, self.seq = names, seq


def rows_as_chunks(rows, size: int = 512):
    """Rows ((part, seq), (broadcast, home, ts, file index, line, payload)), and ((part, seq, 1),
    names) for the scopes that end after seq, as `_replay_partition` takes them: chunks of
    consecutive events as columns, and ScopesEnded between them."""
    buf: list = []
    for k, v in rows:
        if len(k) == 3:
            if buf:
                yield _chunk(buf)
                buf = []
            yield ScopesEnded(v, k[1])
            continue
        buf.append((k[1], *v))
        if len(buf) >= size:
            yield _chunk(buf)
            buf = []
    if buf:
        yield _chunk(buf)


def _chunk(buf):
    seqs, bcasts, homes, tss, fidxs, lines, payloads = zip(*buf)
    return seqs, tss, lines, bcasts, homes, fidxs, payloads


def _replay_partition(pid, chunks, profile_name, files, max_listed, plan, decode=None):
    """Replay one partition's events, in seq order, through spec.actions. `chunks` yields runs
    of consecutive events as columns (seqs, tss, lines, broadcasts, homes, file indices,
    payloads), each an iterable (`repeat(x)` for a column of one value), and ScopesEnded after
    the event where those scopes end here (rows_as_chunks makes them from rows).
    `decode(payload, file index, line)` makes the event (default: the payload is the event's JSON,
    read and validated already; AS_IS: the payload is the event). Columns rather than a tuple
    per event: building and unpacking two tuples an event cost a tenth of a scoped task's CPU."""
    from ...spec.actions import HANDLERS
    from ...spec.evict import Deferred, live_sizes, take
    from ...spec.limits import BadConfig
    from rocketspec.rocketmq.profiles import get_profile
    from ...spec.replay import PRUNE_EVERY, prune
    from ...spec.state import SpecState

    st = SpecState(get_profile(profile_name))
    out = _findings_class()(st, pid, plan, max_listed=max_listed)
    deferred = Deferred(max_listed=max_listed)
    ended: list = []
    peak: dict = {}
    dropped = due = 0

    def sweep(drop=True):
        nonlocal dropped
        for k, v in live_sizes(st).items():
            peak[k] = max(peak.get(k, 0), v)
        if ended and drop:
            deferred.judge(take(st, {x for names in ended for x in names}))
            dropped += len(ended)
            ended.clear()

    loads = orjson.loads
    as_is = decode is AS_IS
    n = 0
    last_seq = last_ts = float("-inf")      # (below every seq and ts: the first event passes)
    prune_mask = PRUNE_EVERY - 1
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        for chunk in chunks:
            if chunk.__class__ is ScopesEnded:     # the end of a scope here: forgotten with the next few
                if not ended:
                    due = n + SWEEP_EVENTS
                ended.append(chunk.names)
                if len(ended) >= SWEEP_SCOPES:
                    sweep()
                continue
            for seq, ts, line, bcast, home, fidx, payload in zip(*chunk):
                if seq <= last_seq or ts < last_ts:
                    if seq == last_seq:
                        raise TraceInputError(files[fidx], line, f"seq {seq} appears twice in the input")
                    raise TraceInputError(files[fidx], line, f"events out of order: ts {ts} after ts {last_ts} "
                                                             f"(seq {seq}), across input files")
                last_seq, last_ts = seq, ts
                ev = payload if as_is else loads(payload) if decode is None else decode(payload, fidx, line)
                out.ev, out.line, out.broadcast, out.owner = ev, line, bcast, home
                out.home = here = bcast or home == pid
                kind = ev["kind"]
                counts = None if here else dict(st.counts)
                try:
                    HANDLERS[kind](st, ev, out)
                except BadConfig as exc:
                    raise TraceInputError(files[fidx], line, f"{kind}.config.{exc}") from None
                if kind == "trace_ended":   # the end-of-trace rule on the scopes dropped before it
                    deferred.hand_on(st, out)
                if counts is not None:
                    st.counts = counts      # counted once, at the event's home
                n += 1
                if ended and n >= due:
                    sweep()
                if not n & prune_mask:
                    sweep()
                    prune(st)
    except TraceInputError as exc:
        return {"pid": pid, "error": (exc.file, exc.line, exc.message, exc.event)}
    sweep(drop=False)       # (the scopes still here were judged by trace_ended itself)
    for k, v in st.counts.items():
        out.counts[k] = out.counts.get(k, 0) + v
    return {"pid": pid, "events": n, "ended": st.ended, "errors": out.errors, "warnings": out.warnings,
            "counts": out.counts, "error_count": out.error_count, "groups": out.groups,
            "seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0, "maxrss_kb": _maxrss_kb(),
            "live_keys": live_sizes(st), "live_keys_peak": peak, "scopes_dropped": dropped}


def _maxrss_kb() -> int:
    """Peak resident memory of this (Python worker) process so far, in KiB."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


# ---------------------------------------------------------------- the job

def spark_session(master: str | None = None, app: str = "rocketspec-replay", progress: bool = False,
                  conf: dict | None = None):
    """A Spark session on `master`; with none, on the master the JVM was given (spark-submit's
    --master, PYSPARK_SUBMIT_ARGS, spark-defaults.conf), else an embedded local[*]. Python
    workers run spark.pyspark.python or PYSPARK_PYTHON when given (a shipped venv), else this
    interpreter (the project's venv: pyarrow, orjson and rocketspec itself). Java and the master
    are checked first (traces.spark.spark_preflight: exit 2 in seconds). Quiet unless `progress`."""
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    from .spark_preflight import check_java, check_master

    checked = None
    if SparkContext._gateway is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        check_java()            # (under spark-submit the JVM is up already)
        if master is not None:
            check_master(master)
            checked = master
    # The JVM first: before it exists SparkConf() is an empty dict, blind to spark-submit's master.
    # Launch-time settings (spark.driver.memory) go with the launch.
    launch = SparkConf()
    for k, v in (conf or {}).items():
        launch.set(k, v)
    try:
        SparkContext._ensure_initialized(conf=launch)
    except Exception as exc:    # noqa: BLE001 - pyspark's launcher error, told by its class
        if getattr(exc, "getCondition", lambda: None)() != "JAVA_GATEWAY_EXITED":
            raise
        from ...errors import UserError

        given_args = os.environ.get("PYSPARK_SUBMIT_ARGS")
        raise UserError("Spark's launcher (spark-submit) exited before its JVM started (its own message is above): "
                        "check " + (f"PYSPARK_SUBMIT_ARGS={given_args!r}, " if given_args else "")
                        + "SPARK_HOME and spark-defaults.conf") from None
    given = SparkConf()         # now the JVM's: --master, --conf, spark-defaults.conf
    if master is None and given.contains("spark.master"):
        master = given.get("spark.master")
    if master is not None and master != checked:
        check_master(master)
    python = given.get("spark.pyspark.python") or os.environ.get("PYSPARK_PYTHON") or sys.executable
    os.environ["PYSPARK_PYTHON"] = python
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

    b = SparkSession.builder.master(master or "local[*]")
    if not given.contains("spark.app.name"):
        b = b.appName(app)
    b = (b.config("spark.pyspark.python", python)
         .config("spark.ui.showConsoleProgress", "true" if progress else "false")
         .config("spark.python.worker.reuse", "true"))
    for k, v in (conf or {}).items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def replay(paths, spark, profile=None, max_listed: int = 50, partitions: int | None = None,
           witness_dir: str | None = None, arrow: bool = False, whole: bool | None = None):
    """Replay the trace given by `paths` on `spark`; a spec.replay.Report whose findings are
    merged from the partitions (with `.plan`, `.groups`, `.spark` and `.witnesses` for the
    operator outputs). Raises TraceInputError on bad input, as `check` does."""
    rep = replay_many([paths], spark, profile=profile, max_listed=max_listed, partitions=partitions,
                      witness_dirs=[witness_dir], arrow=arrow, whole=whole)[0]
    if isinstance(rep, Exception):
        raise rep
    return rep


def _header(sums, files, profile):
    """The trace's profile from its one trace_started, the lowest event (TraceInputError else)."""
    from ...spec.replay import resolve_profile

    errors = sorted((e for s in sums for e in s["errors"]), key=lambda e: (e[1], e[2] or 0))
    if errors:
        _, fidx, line, msg, seq = errors[0]
        raise TraceInputError(files[fidx], line, msg, event=seq)
    first = min(s["first"] for s in sums if s["first"] is not None)
    if first[1] != "trace_started":
        raise TraceInputError(files[first[2]], first[3], f"the first event must be trace_started, got "
                                                         f"{first[1]!r} (seq {first[0]}, the lowest)")
    starts = sorted(x for s in sums for x in s["starts"])
    if len(starts) > 1:
        _, fidx, line, _ = starts[1]
        raise TraceInputError(files[fidx], line, "a second trace_started: the inputs must be parts of one trace")
    return resolve_profile(profile, orjson.loads(starts[0][3]), files[starts[0][1]])


def replay_many(traces, spark, profile=None, max_listed: int = 50, partitions: int | None = None,
                witness_dirs=None, arrow: bool = False, whole: bool | None = None,
                scoped: bool | None = None) -> list:
    """Replay several traces (each a list of paths) in one Spark job: a Report, or the
    TraceInputError of its bad input, per trace. With `whole` (by default: when neither
    `partitions` nor `arrow` is asked for), a trace of at most spark_whole.WHOLE_EVENTS events
    is replayed whole in one task, several traces per task (traces.spark.spark_whole); the others,
    and those it sends back, are partitioned. With `arrow`, traces whose files are all
    Parquet as the writer makes them take the Arrow path (traces.spark.spark_arrow); the others, and
    those it cannot vouch for, the exact path here. (Not the default: on 10^6 events the exact
    path took 36 CPU-s, the Arrow path 57, most of it in the JVM; docs/replay.md.) With `scoped`
    (by default: as `whole`), a larger trace in Parquet of the writer's schema is replayed
    deployment by deployment, a task per stretch of whole scopes (traces.spark.spark_scoped); with
    `scoped=True` every trace is, small ones too (tests)."""
    files, trace_of = [], []
    out: list = [None] * len(traces)
    for t, paths in enumerate(traces):
        try:
            for f in expand_paths(paths):
                files.append(f)
                trace_of.append(t)
        except TraceInputError as exc:
            out[t] = exc
    exact = {t for t in range(len(traces)) if out[t] is None}
    if whole is None:
        whole = partitions is None and not arrow and scoped is not True
    if scoped is None:
        scoped = partitions is None and not arrow
    if whole and exact:
        from .spark_whole import WHOLE_EVENTS, events_at_most, replay_traces_whole

        by_trace: dict = {}         # trace -> [(file index, path)]
        for i, t in enumerate(trace_of):
            if t in exact:
                by_trace.setdefault(t, []).append((i, files[i]))
        sizes = {t: events_at_most([f for _, f in fs]) for t, fs in by_trace.items()}
        small = {t: by_trace[t] for t, n in sizes.items() if n <= WHOLE_EVENTS}
        if small:
            back = replay_traces_whole(small, sizes, out, spark, profile, max_listed, witness_dirs)
            exact = (exact - set(small)) | back
    if scoped and exact:
        from .spark_arrow import fast_files
        from .spark_scoped import replay_traces_scoped

        by_trace = {}
        for t in sorted(exact):
            tf = [i for i, tt in enumerate(trace_of) if tt == t]
            if fast_files([files[i] for i in tf]) is not None:
                by_trace[t] = tf
        if by_trace:
            back = replay_traces_scoped(by_trace, files, out, spark, profile, max_listed, witness_dirs)
            exact = (exact - set(by_trace)) | back
    if arrow:
        from .spark_arrow import fast_files, replay_arrow

        rows_of = {}
        fast = set()
        seen: set = set()
        for t in sorted(exact):
            tf = [i for i, tt in enumerate(trace_of) if tt == t]
            real = {os.path.realpath(files[i]) for i in tf}
            ok = fast_files([files[i] for i in tf]) if len(real) == len(tf) and not real & seen else None
            if ok is not None:     # (a file in two traces of one job: the Arrow path tells files by path)
                seen |= real
                rows_of.update({i: ok[files[i]] for i in tf})
                fast.add(t)
        if fast:
            back = replay_arrow(fast, files, trace_of, rows_of, spark, profile, max_listed, partitions, out)
            exact = (exact - fast) | set(back)
            for t in fast - set(back):
                wd = witness_dirs[t] if witness_dirs else None
                rep = out[t]
                if wd is not None and rep.findings.errors:
                    from rocketspec.rocketmq.profiles import get_profile

                    sc = spark.sparkContext
                    tf = [(i, files[i]) for i, tt in enumerate(trace_of) if tt == t]
                    rows = sc.parallelize(tf, max(1, min(len(tf), 4 * sc.defaultParallelism))).flatMap(
                        lambda x: _read_file(x[0], x[1]))
                    rep.witnesses = write_witnesses(rows, rep.plan, rep, get_profile(rep.profile), wd)
    if exact:
        _replay_exact(exact, traces, files, trace_of, out, spark, profile, max_listed, partitions, witness_dirs)
    return out


def _replay_exact(todo, traces, files, trace_of, out, spark, profile, max_listed, partitions, witness_dirs):
    """The exact path: every file read in Python by `check`'s readers, rows pickled into an RDD."""
    from pyspark import StorageLevel

    from ...spec.replay import Findings, Report

    t0 = time.perf_counter()
    sc = spark.sparkContext
    mine = [(i, f, trace_of[i]) for i, f in enumerate(files) if trace_of[i] in todo]
    # one read task per file, whatever the trace's length: a read task is also a routing task,
    # whose Python side (PySpark's partitionBy) buffers rows up to half the worker's memory
    # limit, so tasks that grow with the trace would make a worker's peak grow with it
    slices = max(1, len(mine))
    acc = sc.accumulator({}, _FileSummaries())
    rows = (sc.parallelize(mine, slices)
            .flatMap(lambda x: _without_gc(_read_summarized(x[0], x[1], x[2], acc)))
            .persist(StorageLevel.MEMORY_AND_DISK))
    try:
        # reading fills the cache (a JVM action: the rows stay pickled) and the summaries
        rows._jrdd.count()
        per: dict = {}
        for i, summary in sorted(acc.value.items()):
            per.setdefault(trace_of[i], []).append(summary)
        plans, profs, base, n_all = {}, {}, {}, 0
        for t in sorted(todo):
            if out[t] is not None or t not in per:
                continue
            try:
                profs[t] = _header(per[t], files, profile)
            except TraceInputError as exc:
                out[t] = exc
                continue
            plans[t] = Plan(None, partitions or max(2, 2 * sc.defaultParallelism), combos=_combos(per[t]))
            base[t] = n_all
            n_all += plans[t].n
        if not plans:
            return
        owner = [(t, p) for t in sorted(plans) for p in range(plans[t].n)]
        b = sc.broadcast((plans, base, {t: profs[t].name for t in plans}, files, owner))
        mx = max_listed

        def route(it):
            return _without_gc(_route(it))

        def _route(it):
            # the partitions of an event follow from its places (and a directory event's names)
            # alone: computed once per distinct places (a queue's, a chain's), not per event
            plans_, base_ = b.value[0], b.value[1]
            cache: dict = {}
            for t, r in it:
                plan = plans_.get(t)
                if plan is None:
                    continue
                packed = (t, r[3], r[7])
                hit = cache.get(packed)
                if hit is None:
                    if len(cache) > ROUTE_CACHE:
                        cache.clear()
                    places = _places(r[3])
                    tg = plan.route(places, None if r[7] is None else _names(r[7]))
                    hit = cache[packed] = (tuple(base_[t] + p for p in tg), places is None, tg[0])
                val = (hit[1], hit[2], r[1], r[4], r[5], r[6])
                seq = r[0]
                for p in hit[0]:
                    yield (p, seq), val

        def run(gpid, it):
            return _without_gc(_run(gpid, it))

        def _run(gpid, it):
            plans_, base_, names, files_, owner_ = b.value
            t, pid = owner_[gpid]
            res = _replay_partition(pid, rows_as_chunks(it), names[t], files_, mx, plans_[t])
            res["trace"] = t
            yield res

        # each scope's end in each partition, right after its last event there (traces.scopes)
        ends = [((base[t] + p, seq, 1), names) for t in sorted(plans) for p, seq, names in plans[t].scopes.ends]
        routed = rows.mapPartitions(route)
        if ends:
            routed = routed.union(sc.parallelize(ends, max(1, min(len(ends) // 1000, n_all))))
        results = (routed.repartitionAndSortWithinPartitions(n_all, partitionFunc=lambda k: k[0])
                   .mapPartitionsWithIndex(run).collect())
        for t, plan in plans.items():
            res = sorted((r for r in results if r["trace"] == t), key=lambda r: r["pid"])
            bad = sorted((r["error"] for r in res if "error" in r), key=lambda e: (str(e[0]), e[1] or 0))
            if bad:
                f, line, msg, seq = bad[0]
                out[t] = TraceInputError(f, line, msg, event=seq)
                continue
            tfiles = [f for f, tt in zip(files, trace_of) if tt == t]
            rep = _merge(res, tfiles, profs[t].name, sum(x["n"] for x in per[t]), max_listed, Findings, Report)
            rep.plan = plan
            rep.witnesses = []
            wd = witness_dirs[t] if witness_dirs else None
            if wd is not None and rep.findings.errors:
                rep.witnesses = write_witnesses(rows.filter(lambda tr, t=t: tr[0] == t).map(lambda tr: tr[1]),
                                                plan, rep, profs[t], wd)
            rep.seconds = time.perf_counter() - t0
            rep.spark = spark_info(sc, "exact", plan, res)
            out[t] = rep
    finally:
        rows.unpersist()


def spark_info(sc, path: str, plan, res) -> dict:
    """What `replay --json` reports of the job (`spark`): the path taken, the plan's partitions
    and skew, and each partition's replay figures."""
    return {"master": sc.master, "path": path, "partitions": plan.n, "components": plan.components,
            "directory_events": plan.directory_events, "partition_events": plan.loads,
            "skew": round(plan.skew(), 3), "replay_seconds": [round(r["seconds"], 3) for r in res],
            "replay_cpu_seconds": [round(r["cpu_seconds"], 3) for r in res],
            "worker_maxrss_mb": round(max(r["maxrss_kb"] for r in res) / 1024, 1),
            # traces.scopes (exact path): the deployments found, and how many each partition dropped
            "scopes": plan.scopes.count if getattr(plan, "scopes", None) else None,
            "scopes_dropped": [r.get("scopes_dropped", 0) for r in res]}


def replay_local(paths, profile=None, max_listed: int = 50, partitions: int = 4):
    """The same job without Spark, in this process: the same reading, plan, routing, partition
    replay and merge (for tests over many traces, and for comparing with Spark's)."""
    from ...spec.replay import Findings, Report

    files = expand_paths(paths)
    rows = [r for i, f in enumerate(files) for r in _read_file(i, f)]
    s = dict(_summarize_traces((0, r) for r in rows))[0]
    prof = _header([s], files, profile)
    plan = Plan(None, partitions, combos=_combos([s]))
    parts: dict = {p: [] for p in range(plan.n)}
    unpacked = _Unpacked()
    for r in rows:
        places = unpacked[r[3]]
        t = plan.route(places, _names(r[7]) if places is None else None)
        for p in t:
            parts[p].append(((p, r[0]), (places is None, t[0], r[1], r[4], r[5], r[6])))
    for p, seq, names in plan.scopes.ends:
        parts[p].append(((p, seq, 1), names))
    results = []
    for p in range(plan.n):
        res = _replay_partition(p, rows_as_chunks(sorted(parts[p], key=lambda x: x[0])), prof.name, files, max_listed,
                                plan)
        if "error" in res:
            f, line, msg, seq = res["error"]
            raise TraceInputError(f, line, msg, event=seq)
        results.append(res)
    rep = _merge(results, files, prof.name, s["n"], max_listed, Findings, Report)
    rep.plan = plan
    return rep


def _position(files) -> str:
    """What a finding's `line` counts, as check says it: rows when every file is Parquet, lines
    otherwise."""
    from ..io import is_parquet

    return "row" if files and all(is_parquet(f) for f in files) else "line"


def _merge(results, files, profile_name, total, max_listed, Findings, Report):
    f = Findings(None, max_listed=max_listed)
    errs, warns = [], []
    for r in results:
        errs.extend(r["errors"])
        warns.extend(r["warnings"])
        f.error_count += r["error_count"]
        for k, v in r["counts"].items():
            f.counts[k] = f.counts.get(k, 0) + v
    order = lambda x: (x.seq if x.seq is not None else -1)  # noqa: E731
    f.errors = sorted(errs, key=order)[:max_listed]
    per: dict = {}
    for w in sorted(warns, key=order):
        if per.get(w.inv, 0) < f.warn_examples:
            per[w.inv] = per.get(w.inv, 0) + 1
            f.warnings.append(w)
    groups = {}
    for r in results:
        groups.update(r["groups"])
    rep = Report(path=files[0] if len(files) == 1 else ", ".join(files), profile=profile_name, events=total,
                 ended=results[0]["ended"], findings=f, position=_position(files))
    # held at the end: summed over partitions (views, replicated with the directory events: the
    # most); at the peak (taken before each sweep of ended scopes): the most of one partition
    lk: dict = {}
    for r in results:
        for k, v in r["live_keys"].items():
            lk[k] = max(lk.get(k, 0), v) if k == "views" else lk.get(k, 0) + v
    rep.live_keys = lk
    rep.live_keys_peak = {k: max(r.get("live_keys_peak", {}).get(k, 0) for r in results) for k in lk}
    rep.scopes_dropped = sum(r.get("scopes_dropped", 0) for r in results)
    rep.groups = groups
    return rep


# ---------------------------------------------------------------- operator outputs

def violations_table(rep):
    """One row per (invariant, key) found: the key, its seq range and time span, the count and
    the first message (a pyarrow Table)."""
    import pyarrow as pa

    from ...spec.replay import Finding

    rows = []
    for (inv, key), (count, s0, s1, t0, t1, msg, sev) in sorted(rep.groups.items(), key=lambda kv: (kv[1][1] or 0)):
        kd = Finding(inv, sev, msg, key, None, None, None).key_dict()
        rows.append({"invariant": inv, "severity": sev, "key": None if kd is None else orjson.dumps(kd).decode(),
                     "seq_first": s0, "seq_last": s1, "ts_first": t0, "ts_last": t1, "count": count,
                     "message": msg})
    schema = pa.schema([("invariant", pa.string()), ("severity", pa.string()), ("key", pa.string()),
                        ("seq_first", pa.int64()), ("seq_last", pa.int64()), ("ts_first", pa.int64()),
                        ("ts_last", pa.int64()), ("count", pa.int64()), ("message", pa.string())])
    return pa.Table.from_pylist(rows, schema=schema)


def _nbhd(key) -> set:
    a = key_atom(key)
    if a is None:
        return set()
    out = {a}
    if a[0] == "Q":
        out.add(("S",) + a[2:])
    return out


def write_witnesses(rows, plan, rep, prof, out_dir, limit: int = 20) -> list[dict]:
    """For each listed violation (up to `limit`): the events of its key up to it, with the
    directory events, as a JSON Lines trace that `check` rejects with the same finding. The
    key's own events are tried first; when they do not show the finding alone (it needs state
    of a key it depends on), the events of its whole component are taken."""
    from ...spec.replay import check_events

    os.makedirs(out_dir, exist_ok=True)
    wanted = [(v, _nbhd(v.key), plan.key_partition(v.key)) for v in rep.findings.errors[:limit]]
    # a partition's whole stream is a fallback only when it is small enough to bring home
    wide = sum(plan.loads) <= 4 * WITNESS_CAP
    b = rows.context.broadcast(([(v.seq, nb, part if wide else None) for v, nb, part in wanted], plan))

    unpacked = _Unpacked()

    def pick(r):
        if r[0] == "error":
            return []
        ws, pl = b.value
        places = unpacked[r[3]]
        out = []
        for i, (seq, nb, part) in enumerate(ws):
            if r[0] > seq:
                continue
            if not places:      # the directory (and events without state): in every witness
                out.append((i, (r[0], r[6], True)))
                continue
            near = not nb.isdisjoint(x for place in places for x in place)
            if near or (part is not None and part in pl.targets(places)):
                out.append((i, (r[0], r[6], near)))
        return out

    got: dict = {}
    for i, row in rows.flatMap(pick).collect():
        got.setdefault(i, []).append(row)
    made = []
    for i, (v, nb, comp) in enumerate(wanted):
        evs = sorted(got.get(i, ()))
        narrow = [e for e in evs if e[2]]
        chosen = None
        for cand, scope in ((narrow, "key"), (evs, "component")):
            events = [orjson.loads(e[1]) for e in cand]
            if not events or len(events) > WITNESS_CAP:
                continue
            r = check_events(((j + 1, ev) for j, ev in enumerate(events)), prof, max_listed=1_000_000)
            if any(f.inv == v.inv and f.key == v.key and f.seq == v.seq for f in r.findings.errors):
                chosen = (events, scope)
                break
        if chosen is None:
            continue
        path = os.path.join(out_dir, f"witness-{i + 1:03d}-{v.inv}.jsonl")
        with open(path, "wb") as fh:
            for ev in chosen[0]:
                fh.write(orjson.dumps(ev, option=orjson.OPT_APPEND_NEWLINE))
        made.append({"invariant": v.inv, "seq": v.seq, "key": v.key_dict(), "path": path,
                     "events": len(chosen[0]), "scope": chosen[1]})
    return made

