"""The scoped path of `replay`: a long trace of many deployments, each deployment (a *scope*,
traces.scopes) replayed whole in one task, with no shuffle.

The exact path (traces.spark.spark_replay) partitions a long trace by key: every event is turned into
JSON and pickled rows, cached, routed, shuffled and sorted in Python, about four times the CPU
per event of `check` itself (docs/replay.md). But a trace that an operator's cluster records
over hours is mostly many deployments that share nothing: groups with their own topics,
brokers and clients, each living a while. No action reads state of another scope than its
event's (spec.evict), so a task that replays whole scopes needs no event of any other. Here:

1. **Survey** (a task per file): the name columns of each Parquet row group (group, topics,
   broker, clients, and the nested names of directory events) give each row one name it
   mentions and the pairs of names rows mention together; per row group and name, the events
   and their first and last seq. Arrow and numpy over columns, a Python step per distinct
   value, not per row. It also proves the envelope: seq strictly up and ts never down in each
   file, exactly one trace_started (the lowest seq) and at most one trace_ended (the highest).
2. **Plan** (driver): names joined into scopes (union-find, as traces.scopes joins them); scopes
   sorted by their first seq and cut into tasks of about equal events, so a task reads the
   files of its stretch of time (a scope is never split); each task learns the row groups it
   must read, the names it owns and where each of its scopes ends.
3. **Replay** (a task per stretch, map-only): each task reads its row groups, keeps the rows
   whose name it owns (the trace's own two events come from the driver), builds the events with
   `check`'s reader (traces.io) and validator (the kinds a batch's columns vouch for skipped,
   traces.parquet_trust), and replays them in seq order through the exact path's partition
   replay (`_replay_partition`: spec.actions, the findings kept once, ended scopes dropped).

Anything unusual sends the trace to the exact path, which then says what it always said: files
not in the writer's schema, rows out of order, an unknown kind, a null envelope field, a bad
event, and a trace whose largest scope would make one task the job's tail (EXACT_COST_RATIO).
"""
from __future__ import annotations

import gc
import heapq
import os
import sys
import time
from collections import deque
from itertools import chain, repeat

import orjson

from ..kinds import INERT, KINDS, NAME_LETTERS, NESTED_NAME_FIELDS, key_atom, name_fields, nested_names, value_names
from ..io import TraceInputError, parquet_text_as_dictionary, valued_columns
from ..schema import ENVELOPE
from ..scopes import UnionFind
from .spark_replay import ScopesEnded

# the columns `spec.kinds.names` reads: flat name fields, then the nested ones of directory kinds
NAME_COLS = tuple(NAME_LETTERS)
NESTED_COLS = NESTED_NAME_FIELDS
SURVEY_COLS = ("seq", "ts", "kind", *NAME_COLS, *NESTED_COLS)
DIRECTORY_KINDS = frozenset(k for k, v in KINDS.items() if v.route == "directory")
TRACE_OWN = ("trace_started", "trace_ended")
# The exact path's CPU per event over this path's, measured on the benchmark (docs/replay.md:
# 24.4 against 5.2 to 5.7 us). A trace whose largest scope holds more than this many fair shares
# of the cores goes to the exact path: that scope alone, in one task, would outlast it.
EXACT_COST_RATIO = 4
SURVEY_TASKS_PER_CORE = 4
TASK_EVENTS = 1 << 21       # (as the whole path: Spark's progress, and a retry's cost, by the task)


class NotScoped(Exception):
    """This trace is for the exact path (why, in the message)."""


class _Names:
    """The names (letter, value) met in one file or task, as small ints."""

    __slots__ = ("ids", "names")

    def __init__(self):
        self.ids: dict = {}
        self.names: list = []

    def id(self, name) -> int:
        i = self.ids.get(name)
        if i is None:
            i = self.ids[name] = len(self.names)
            self.names.append(name)
        return i


def _reads(kind: str) -> frozenset:
    """The name columns a kind's names come from (spec.kinds.names reads the same fields)."""
    flat, nested = name_fields(kind)
    return frozenset(f for f, _ in flat) | frozenset(nested)


def _value_names(col: str, v) -> list:
    """The names one cell gives: a flat field's value, or a nested field's JSON text."""
    if col in NAME_LETTERS:
        return value_names(NAME_LETTERS[col], v)
    try:
        return nested_names(col, orjson.loads(v))
    except orjson.JSONDecodeError:
        raise NotScoped(f"column {col!r}: not JSON text") from None


def _anchors(table, reg: _Names, want_pairs: bool):
    """Per row of a table (the survey's columns at least), the id in `reg` of one name the row
    mentions (-1: none), the pairs of ids that rows mention together (with `want_pairs`), the
    row's kind index and the kinds. One name is enough to place a row: all of a row's names are
    of one scope."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = table.num_rows
    kcol = table.column("kind").combine_chunks()
    if kcol.null_count:
        raise NotScoped("an event without a kind")
    kenc = kcol if pa.types.is_dictionary(kcol.type) else kcol.dictionary_encode()
    kinds = kenc.dictionary.to_pylist()
    kidx = kenc.indices.to_numpy(zero_copy_only=False)
    for k in kinds:
        if k not in KINDS:
            raise NotScoped(f"unknown event kind {k!r}")
    reads = [_reads(k) for k in kinds]
    anchor = np.full(n, -1, dtype=np.int64)
    pairs: set = set()
    for col in NAME_COLS + NESTED_COLS:
        allow = np.array([col in r for r in reads], dtype=bool)[kidx]
        if not want_pairs:
            allow &= anchor < 0     # (to place a row, its first name is enough)
        k = int(allow.sum())
        if not k:
            continue
        c = table.column(col)
        sel = None
        if k < n // 2:              # (few rows: encode only theirs)
            sel = np.flatnonzero(allow)
            c = c.take(pa.array(sel))
        c = c.combine_chunks()
        if c.null_count == len(c):
            continue
        e = c if pa.types.is_dictionary(c.type) else c.dictionary_encode()
        values = e.dictionary.to_pylist()
        ind = pc.fill_null(e.indices, len(values)).to_numpy(zero_copy_only=False)
        if sel is None:
            ind = np.where(allow, ind, len(values))            # (a kind that does not read it: none)
        vid = np.full(len(values) + 1, -1, dtype=np.int64)     # (the last: none)
        used = np.bincount(ind, minlength=len(values) + 1)
        for j in np.flatnonzero(used[:-1]).tolist():   # (only values some row names: no scope without events)
            ids = [reg.id(x) for x in _value_names(col, values[j])]
            if ids:
                vid[j] = ids[0]
                if want_pairs:
                    pairs.update((ids[0], i) for i in ids[1:])
        if sel is None:
            rid = vid[ind]
        else:
            rid = np.full(n, -1, dtype=np.int64)
            rid[sel] = vid[ind]
        if want_pairs:
            both = (anchor >= 0) & (rid >= 0) & (rid != anchor)
            if both.any():
                m = len(reg.names)
                codes = anchor[both] * m + rid[both]
                if m * m <= 1 << 24:        # (a mark per pair: no sort, no hash)
                    seen = np.zeros(m * m, dtype=bool)
                    seen[codes] = True
                    u = np.flatnonzero(seen)
                else:
                    u = np.unique(codes)
                pairs.update(zip((u // m).tolist(), (u % m).tolist()))
        anchor = np.where(anchor < 0, rid, anchor)
    return anchor, pairs, kidx, kinds


# ---------------------------------------------------------------- survey (a task per file)

def survey_file(fidx: int, path: str) -> dict:
    """What the plan needs of one Parquet file in the writer's schema, or {"back": why}."""
    import pyarrow as pa

    c0 = time.process_time()
    try:
        out = _survey(fidx, path)
        out["cpu_seconds"] = time.process_time() - c0
        return out
    except NotScoped as exc:
        return {"fidx": fidx, "back": f"{path}: {exc}"}
    except (OSError, pa.ArrowException) as exc:
        return {"fidx": fidx, "back": f"{path}: {' '.join(str(exc).split())}"[:300]}


def _survey(fidx: int, path: str) -> dict:
    import numpy as np
    import pyarrow.parquet as pq

    # the name columns read as Parquet stores them, dictionary-encoded: no text per row
    pf = pq.ParquetFile(path, read_dictionary=["kind", *NAME_COLS, *NESTED_COLS])
    reg = _Names()
    pairs: set = set()
    rgs, heads = [], []
    row0 = 0
    first = last = None
    for rg in range(pf.metadata.num_row_groups):
        t = pf.read_row_group(rg, columns=list(SURVEY_COLS))
        n = t.num_rows
        if n == 0:
            rgs.append((row0, 0, (), 0))
            continue
        sc, tc = t.column("seq"), t.column("ts")
        if sc.null_count or tc.null_count:
            raise NotScoped("an event without seq or ts")
        seq, ts = sc.to_numpy(), tc.to_numpy()
        if (last is not None and (seq[0] <= last[0] or ts[0] < last[1])) or not (
                (seq[1:] > seq[:-1]).all() and (ts[1:] >= ts[:-1]).all()):
            raise NotScoped("events out of order")
        if first is None:
            first = (int(seq[0]), int(ts[0]))
        last = (int(seq[-1]), int(ts[-1]))
        anchor, pr, kidx, kinds = _anchors(t, reg, True)
        pairs |= pr
        named = anchor >= 0
        a, s = anchor[named], seq[named]
        order = np.argsort(a, kind="stable")
        a, s = a[order], s[order]
        per = ()
        if a.size:
            starts = np.flatnonzero(np.r_[True, a[1:] != a[:-1]])
            stops = np.r_[starts[1:], a.size]
            per = tuple(zip(a[starts].tolist(), (stops - starts).tolist(), s[starts].tolist(), s[stops - 1].tolist()))
        unnamed = 0
        for i in np.flatnonzero(~named).tolist():
            k = kinds[kidx[i]]
            if k in TRACE_OWN:
                heads.append((k, int(seq[i]), fidx, rg, i, row0 + i + 1))
            elif k in DIRECTORY_KINDS:
                raise NotScoped(f"row {row0 + i + 1}: a {k} that names nothing")
            else:
                unnamed += 1        # (an event of no deployment: replayed by task 0)
        rgs.append((row0, n, per, unnamed))
        row0 += n
    if first is None:
        raise NotScoped("an empty file")
    return {"fidx": fidx, "names": reg.names, "pairs": sorted(pairs), "rgs": rgs, "heads": heads,
            "first": first, "last": last, "rows": row0}


# ---------------------------------------------------------------- plan (driver)

class ScopePlan:
    """The plan of a trace replayed scope by scope: `n` tasks, each a stretch of whole scopes."""

    def __init__(self, n, loads, part_of_name, scope_count, directory_events):
        self.n, self.loads = n, loads
        self.part_of_name = part_of_name
        self.components = scope_count
        self.count = scope_count            # (spark_info reads plan.scopes.count)
        self.scopes = self
        self.directory_events = directory_events

    def key_partition(self, key):
        return _key_owner(key, self.part_of_name.get)

    def skew(self) -> float:
        total = sum(self.loads)
        return max(self.loads) * self.n / total if total else 1.0


def _key_owner(key, owner_of):
    """The task owning a finding's key, from the owner of one of its names (None: no key, or a
    view: the directory's, kept by the event's home)."""
    a = key_atom(key)
    if a is None:
        return None
    return owner_of(("t", a[1]) if a[0] == "S" else ("g", a[1]))


class _TaskPlan:
    """What one task's findings ask of the plan: which task owns a key (this one, for its names)."""

    def __init__(self, pid: int, mine):
        self.pid, self.mine = pid, mine

    def key_partition(self, key):
        return _key_owner(key, lambda x: self.pid if x in self.mine else None)


def plan_trace(surveys: list[dict], tasks_wanted: int, slots: int):
    """(ScopePlan, per task its work, the trace_started and trace_ended rows) of one trace's
    file surveys, or NotScoped."""
    uf = UnionFind()
    for s in surveys:
        nm = s["names"]
        for x in nm:
            uf.find(x)
        for a, b in s["pairs"]:
            uf.union(nm[a], nm[b])
    root = {x: uf.find(x) for x in uf.parent}
    count: dict = {}
    first: dict = {}
    last: dict = {}
    unnamed = total = 0
    heads = []
    for s in surveys:
        nm = s["names"]
        total += s["rows"]
        heads.extend(s["heads"])
        for _, _, per, un in s["rgs"]:
            unnamed += un
            for i, c, f, la in per:
                r = root[nm[i]]
                count[r] = count.get(r, 0) + c
                if first.get(r, f) >= f:
                    first[r] = f
                if last.get(r, la) <= la:
                    last[r] = la
    starts = [h for h in heads if h[0] == "trace_started"]
    ends = [h for h in heads if h[0] == "trace_ended"]
    lo = min(s["first"][0] for s in surveys)
    hi = max(s["last"][0] for s in surveys)
    if len(starts) != 1 or starts[0][1] != lo:
        raise NotScoped("not one trace_started with the lowest seq")
    if len(ends) > 1 or (ends and ends[0][1] != hi):
        raise NotScoped("a trace_ended that is not the last event")
    if not count:
        raise NotScoped("no deployment")
    big = max(count.values())
    if big * slots > EXACT_COST_RATIO * total:
        raise NotScoped(f"one deployment holds {big:,} of {total:,} events: too many for one task")
    n = max(1, min(len(count), tasks_wanted))
    order = sorted(count, key=lambda r: (first[r], repr(r)))
    part = _cut(order, count, n, unnamed)
    loads = _loads(part, count, n, unnamed)
    if max(loads) * n > 1.5 * sum(loads):
        # scopes too large for even stretches of time: pack them largest first onto the lightest
        part = _lpt(count, n, unnamed)
        loads = _loads(part, count, n, unnamed)
    members: dict = {}
    for x, r in root.items():
        members.setdefault(r, []).append(x)
    part_of_name = {x: part[r] for x, r in root.items()}
    work = [{"reads": {}, "mine": set(), "ends": []} for _ in range(n)]
    for r, p in part.items():
        work[p]["mine"].update(members[r])
        work[p]["ends"].append((last[r], tuple(sorted(members[r]))))
    for s in surveys:
        nm = s["names"]
        for rg, (row0, _, per, un) in enumerate(s["rgs"]):
            ps = {part[root[nm[i]]] for i, _, _, _ in per}
            if un:
                ps.add(0)
            for p in ps:
                work[p]["reads"].setdefault(s["fidx"], []).append((rg, row0))
    span = {s["fidx"]: (s["first"][0], s["last"][0]) for s in surveys}
    for w in work:
        w["ends"].sort()
        # a task's files read one after the other when their seqs do not interleave, else merged
        spans = sorted(span[f] for f in w["reads"])
        w["merge"] = any(b[0] <= a[1] for a, b in zip(spans, spans[1:]))
    plan = ScopePlan(n, loads, part_of_name, len(count), sum(1 for h in heads))
    return plan, work, starts[0], (ends[0] if ends else None)


def _loads(part, count, n, unnamed) -> list:
    """Each task's events (task 0 also replays the events of no deployment)."""
    loads = [0] * n
    loads[0] += unnamed
    for r, p in part.items():
        loads[p] += count[r]
    return loads


def _cut(order, count, n, unnamed) -> dict:
    """Scopes in order of their first seq onto n tasks, each a stretch of about equal events (a
    scope goes where the middle of its events falls)."""
    total = sum(count.values()) + unnamed
    share = total / n
    acc = unnamed
    out = {}
    for r in order:
        c = count[r]
        out[r] = min(n - 1, int((acc + c / 2) // share))
        acc += c
    return out


def _lpt(count, n, unnamed) -> dict:
    heap = [(unnamed if p == 0 else 0, p) for p in range(n)]
    heapq.heapify(heap)
    out = {}
    for r in sorted(count, key=lambda r: (-count[r], repr(r))):
        load, p = heapq.heappop(heap)
        out[r] = p
        heapq.heappush(heap, (load + count[r], p))
    return out


def head_events(files, heads) -> list:
    """The trace's own events (trace_started, trace_ended) as rows for every task: (seq, ts,
    file index, line, event), read and checked in full (schema and schema_version)."""
    import numpy as np
    import pyarrow.parquet as pq

    from ...spec.replay import fast_validator
    from ..io import _Stream

    validate = fast_validator()
    out = []
    for h in heads:
        if h is None:
            continue
        _, seq, fidx, rg, i, line = h
        path = files[fidx]
        pf = pq.ParquetFile(path)
        t = pf.read_row_group(rg, columns=valued_columns(pf, rg), use_threads=False)
        evs, _ = _events_of(path, t, np.array([i]), [line], line - 1 - i)
        ev = evs[0]
        _Stream(path).check(line, ev)
        problem = validate(ev)
        if problem:
            raise TraceInputError(path, line, problem)
        out.append((seq, ev["ts"], fidx, line, ev))
    return out


def _events_of(path, table, idx, lines, row0: int = 0) -> tuple:
    """(events, the table as one record batch): the rows `idx` (a sorted numpy array) of a
    table read from row `row0` of its file, as events, as `check`'s Parquet reader makes them
    (traces.io: nulls left out, the JSON-typed columns decoded); not validated."""
    import numpy as np

    from ..io import _batch_events, _json_fields, _json_rows, json_column_value

    batches = table.to_batches()
    batch = batches[0] if len(batches) == 1 else table.combine_chunks().to_batches()[0]
    events, json_cols = _batch_events(path, batch, row0, _json_fields(), rows=idx)
    if json_cols:
        for r, cols in _json_rows(batch, json_cols).items():
            j = int(np.searchsorted(idx, r))
            if j == len(idx) or idx[j] != r:
                continue        # (another task's row)
            ev = events[j]
            for n in cols:
                ev[n] = json_column_value(path, lines[j], n, ev[n])
    return events, batch


# ---------------------------------------------------------------- replay (a task per stretch)

def _file_rows(pid, fidx, path, rgs, mine, zero, ends, used, validate):
    """The events of one file this task replays, as `_replay_partition`'s chunks: each row
    group's events, cut where scopes end, with a ScopesEnded right after each scope's last event."""
    import numpy as np

    from ..parquet_trust import trusted_kinds

    pf = parquet_text_as_dictionary(path)
    reg = _Names()
    end_seqs = np.array([e[0] for e in ends], dtype=np.int64)
    for rg, row0 in rgs:
        # (the task's own core: Arrow's threads would only take CPU from the other tasks)
        t = pf.read_row_group(rg, columns=valued_columns(pf, rg), use_threads=False)
        anchor, _, kidx, kinds = _anchors(t, reg, False)
        owned = np.array([x in mine for x in reg.names] + [False], dtype=bool)
        take = owned[anchor]
        is_dir = np.array([k in DIRECTORY_KINDS for k in kinds], dtype=bool)
        if zero:
            take |= (anchor < 0) & ~is_dir[kidx]
        idx = np.flatnonzero(take)
        if not idx.size:
            continue
        lines = (idx + (row0 + 1)).tolist()
        sub_k = kidx[idx]
        trusted = trusted_kinds(t)
        seqs = t.column("seq").to_numpy()[idx]
        tss = t.column("ts").to_numpy()[idx].tolist()
        # an inert kind's action reads no field (spec.kinds.INERT): a trusted row of one is
        # replayed as its envelope alone, without making its event
        bare = [i for i, k in enumerate(kinds) if k in INERT and k in trusted]
        lean = np.isin(sub_k, bare) if bare else None
        if lean is None or not lean.any():
            events, _ = _events_of(path, t, idx, lines, row0)
        else:
            full = np.flatnonzero(~lean)
            events = [None] * len(idx)
            made, _ = _events_of(path, t, idx[full], [lines[j] for j in full.tolist()], row0)
            deque(map(events.__setitem__, full.tolist(), made), maxlen=0)
            env = np.flatnonzero(lean).tolist()
            deque(map(events.__setitem__, env, map(dict, map(zip, repeat(ENVELOPE), zip(
                seqs[env].tolist(), map(tss.__getitem__, env), map(kinds.__getitem__, sub_k[env].tolist()))))), maxlen=0)
        check = [i for i, k in enumerate(kinds) if k not in trusted]
        if check:
            for j in np.flatnonzero(np.isin(sub_k, check)).tolist():
                problem = validate(events[j])
                if problem:
                    raise TraceInputError(path, lines[j], problem)
        seqs_l = seqs.tolist()
        bc = is_dir[sub_k].tolist()
        homes, fidxs = repeat(pid), repeat(fidx)
        lo = int(np.searchsorted(end_seqs, seqs[0], side="left"))
        hi = int(np.searchsorted(end_seqs, seqs[-1], side="right"))
        if lo == hi:
            yield seqs_l, tss, lines, bc, homes, fidxs, events
            continue
        at = np.searchsorted(seqs, end_seqs[lo:hi]).tolist()
        k = 0
        for e, j in zip(range(lo, hi), at):
            if j < len(seqs_l) and seqs_l[j] == end_seqs[e]:
                j += 1
                yield seqs_l[k:j], tss[k:j], lines[k:j], bc[k:j], homes, fidxs, events[k:j]
                yield ScopesEnded(ends[e][1], seqs_l[j - 1])
                used[e] = True
                k = j
        if k < len(seqs_l):
            yield seqs_l[k:], tss[k:], lines[k:], bc[k:], homes, fidxs, events[k:]


def _as_rows(chunks):
    """A stream of chunks as the exact path's rows (seq, ..., and (seq, 1) after a scope's end),
    so that the streams of files whose seqs interleave can be merged by seq."""
    for c in chunks:
        if c.__class__ is ScopesEnded:
            yield (0, c.seq, 1), c.names
        else:
            for seq, ts, line, bcast, home, fidx, ev in zip(*c):
                yield (0, seq), (bcast, home, ts, fidx, line, ev)


def run_task(task: dict) -> dict:
    """Replay one task's stretch of scopes: `_replay_partition`'s result, or {"back": why}."""
    from ...spec.replay import fast_validator
    from .spark_replay import AS_IS, _replay_partition, rows_as_chunks

    pid, files = task["pid"], task["files"]
    validate = fast_validator()
    used = [False] * len(task["ends"])
    mine = task["mine"]

    def head(h):
        seq, ts, fidx, line, ev = h
        return (seq,), (ts,), (line,), (True,), (0,), (fidx,), (ev,)

    streams = [_file_rows(pid, f, files[f], rgs, mine, pid == 0, task["ends"], used, validate)
               for f, rgs in sorted(task["reads"].items())]
    if task["merge"]:       # (files whose seqs interleave: merged event by event)
        body = rows_as_chunks(heapq.merge(*map(_as_rows, streams), key=lambda r: r[0]))
    else:
        body = chain.from_iterable(streams)
    rows = chain((head(task["start"]),), body, (head(task["end"]),) if task["end"] else ())
    was = gc.isenabled()
    gc.disable()        # (as `check` replays: see spark_replay._without_gc)
    try:
        res = _replay_partition(pid, rows, task["profile"], files, task["max_listed"], _TaskPlan(pid, mine),
                                decode=AS_IS)
    except NotScoped as exc:
        return {"pid": pid, "trace": task["trace"], "back": str(exc)}
    except TraceInputError as exc:
        return {"pid": pid, "trace": task["trace"], "back": f"{exc.file}:{exc.line}: {exc.message}"}
    finally:
        if was:
            gc.enable()
    if "error" in res:
        f, line, msg, _ = res["error"]
        return {"pid": pid, "trace": task["trace"], "back": f"{f}:{line}: {msg}"}
    if not all(used):
        # a scope's last event was not among the rows read: the plan and the reading disagree
        print(f"rocketspec replay: internal error, please report it: task {pid} did not meet the end of "
              f"{used.count(False)} scopes; the trace takes the exact path", file=sys.stderr)
        return {"pid": pid, "trace": task["trace"], "back": "internal: scope ends not met"}
    res["trace"] = task["trace"]
    return res


# ---------------------------------------------------------------- the job

def tasks_of(t, surveys, files, profile, max_listed, slots, wanted=None):
    """(plan, tasks, profile, events) of one trace, or NotScoped / TraceInputError. `slots`: the
    cores; `wanted`: tasks (default: a few per core, none much over TASK_EVENTS)."""
    from ...spec.replay import resolve_profile

    for s in surveys:
        if "back" in s:
            raise NotScoped(s["back"])
    total = sum(s["rows"] for s in surveys)
    if wanted is None:
        wanted = max(4 * slots, -(-total // TASK_EVENTS))
    plan, work, start, end = plan_trace(surveys, wanted, slots)
    heads = head_events(files, [start, end])
    prof = resolve_profile(profile, heads[0][4], files[start[2]])
    tasks = [{"trace": t, "pid": p, "files": files, "profile": prof.name, "max_listed": max_listed,
              "start": heads[0], "end": heads[1] if end else None, **w} for p, w in enumerate(work)]
    return plan, tasks, prof, total


def replay_traces_scoped(by_trace: dict, files: list[str], out, spark, profile, max_listed, witness_dirs) -> set:
    """Replay the traces of `by_trace` ({trace: [file index]}) scope by scope on `spark`; fill `out`
    with their Reports; return the traces for the exact path."""
    from ...spec.replay import Findings, Report
    from .spark_replay import _merge, spark_info

    t0 = time.perf_counter()
    sc = spark.sparkContext
    mine = sorted(i for fs in by_trace.values() for i in fs)
    # a few survey tasks per core, each of consecutive files: a task per file would cost Spark's
    # per-task overhead (tens of ms of Python worker CPU) hundreds of times
    surveys = sc.parallelize(mine, max(1, min(len(mine), SURVEY_TASKS_PER_CORE * sc.defaultParallelism))).map(
        lambda i: survey_file(i, files[i])).collect()
    t_survey = time.perf_counter() - t0
    by_file = {s["fidx"]: s for s in surveys}
    back: set = set()
    debug = os.environ.get("ROCKETSPEC_REPLAY_DEBUG")
    planned = {}
    for t, fs in sorted(by_trace.items()):
        try:
            planned[t] = tasks_of(t, [by_file[i] for i in fs], files, profile, max_listed, sc.defaultParallelism)
        except (NotScoped, TraceInputError) as exc:
            if debug:
                print(f"rocketspec replay: trace {t} takes the exact path: {exc}")
            back.add(t)
    tasks = [x for t in sorted(planned) for x in planned[t][1]]
    if not tasks:
        return back
    results = sc.parallelize(tasks, len(tasks)).map(run_task).collect()
    for t, (plan, _, prof, total) in sorted(planned.items()):
        res = sorted((r for r in results if r["trace"] == t), key=lambda r: r["pid"])
        why = [r["back"] for r in res if "back" in r]
        if why or (witness_dirs and witness_dirs[t] is not None and any(r["error_count"] for r in res)):
            if debug:
                print(f"rocketspec replay: trace {t} takes the exact path: {why[0] if why else 'witnesses'}")
            back.add(t)
            continue
        tfiles = [files[i] for i in by_trace[t]]
        rep = _merge(res, tfiles, prof.name, total, max_listed, Findings, Report)
        rep.plan = plan
        rep.witnesses = []
        rep.seconds = time.perf_counter() - t0
        rep.spark = spark_info(sc, "scoped", plan, res)
        # the survey's CPU (a task per file) and wall time, before the replay's tasks
        rep.spark.update(survey_cpu_seconds=round(sum(by_file[i].get("cpu_seconds", 0) for i in by_trace[t]), 3),
                         survey_seconds=round(t_survey, 3), tasks=plan.n)
        out[t] = rep
    return back


def replay_scoped_local(paths, profile=None, max_listed: int = 50, tasks: int = 4, slots: int = 1):
    """The same job in this process, without Spark (tests): a Report, or NotScoped."""
    from ...spec.replay import Findings, Report
    from .spark_replay import _merge, expand_paths

    files = expand_paths(paths)
    surveys = [survey_file(i, f) for i, f in enumerate(files)]
    plan, work, prof, total = tasks_of(0, surveys, files, profile, max_listed, slots, wanted=tasks)
    res = [run_task(w) for w in work]
    why = [r["back"] for r in res if "back" in r]
    if why:
        raise NotScoped(why[0])
    rep = _merge(res, files, prof.name, total, max_listed, Findings, Report)
    rep.plan = plan
    return rep
