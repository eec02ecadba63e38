"""The scoped path of `replay` (traces/spark/spark_scoped.py) without Spark: a long trace of many
deployments, each deployment (scope) replayed whole in one task, against `check` on the same
trace. The traces here are copies of reference runs, each copy with its own names (groups,
topics, brokers, clients, message ids), interleaved in time into one trace, as an operator's
cluster records many deployments at once; some copies share a broker, which joins their scopes.
The same path on Spark is compared with `check` in tests/test_replay_spark.py."""
from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import load_scenario
from rocketspec.traces.kinds import names as event_names
from rocketspec.spec.replay import check_trace
from rocketspec.traces.io import write_trace
from rocketspec.traces.spark.spark_replay import ScopesEnded
from rocketspec.traces.spark.spark_scoped import NotScoped, _file_rows, replay_scoped_local, survey_file, tasks_of
from test_replay_scopes import NAME_FIELDS, TIME_FIELDS
from test_replay_scopes import _rename as _renamed

ALL = 10 ** 6
# (scenario, profile): runs of one profile make one trace; the bug profile's runs violate
MIXES = {
    "rocketmq-5.3.3": ["basic", "orderly", "broadcast", "retry-dlq", "tags", "sql-filter", "multi-broker"],
    "rocketmq-4.9.8": ["basic", "orderly", "retry-dlq", "rebalance", "faults", "orderly-dlq"],
    "bug-4215-rocketmq-4.9.3": ["bug-4215", "basic"],
}


def _names(evs) -> set:
    return {v for e in evs for f in NAME_FIELDS if isinstance(v := e.get(f), str)}


def deployments(prof: str, copies: list[tuple[str, int, int]], shared_broker: bool = False,
                cut: int = 0) -> list[dict]:
    """One trace of copies (scenario, seed, time shift ms) of reference runs, each with its own
    names, interleaved by ts (each copy's own order kept); with `shared_broker`, every copy's
    brokers keep their names, so copies meet on a broker (one scope); with `cut`, every cut-th
    copy stops halfway (the trace still ends quiescent: the end-of-trace rule finds it)."""
    rows = []
    head = tail = None
    end_ts = 0
    for k, (name, seed, shift) in enumerate(copies):
        evs = run_to_list(load_scenario(name), seed, prof)
        names = _names(evs)
        if shared_broker:
            names -= {e["broker"] for e in evs if isinstance(e.get("broker"), str)}
        if cut and k % cut == cut - 1:
            evs = evs[:len(evs) // 2] + evs[-1:]
        for i, e in enumerate(evs):
            if e["kind"] in ("trace_started", "trace_ended"):
                head = head or (dict(e) if e["kind"] == "trace_started" else None)
                tail = tail or (dict(e) if e["kind"] == "trace_ended" else None)
                end_ts = max(end_ts, e["ts"] + shift)
                continue
            d = {f: _renamed(v, names, f"-{k}") for f, v in e.items()}
            for f in TIME_FIELDS:
                if isinstance(d.get(f), int):
                    d[f] += shift
            rows.append(((d["ts"], k, i), d))
    rows.sort(key=lambda r: r[0])
    out = [head] + [d for _, d in rows]
    tail["ts"] = max(end_ts, out[-1]["ts"])
    out.append(tail)
    for s, e in enumerate(out):
        e["seq"] = s
    return out


def _write(tmp_path, evs, files: int, interleave: bool) -> list[str]:
    """The trace as Parquet files: consecutive seq ranges, or round-robin (files interleave)."""
    paths = []
    for j in range(files):
        part = evs[j::files] if interleave else evs[j * len(evs) // files:(j + 1) * len(evs) // files]
        p = tmp_path / f"part-{j}.parquet"
        write_trace(str(p), part)
        paths.append(str(p))
    return paths


def _findings(rep):
    return sorted((f.inv, repr(f.key), f.seq) for f in rep.findings.errors)


def _same(c, r):
    assert (r.events, r.ended, r.findings.error_count, dict(r.findings.counts)) == (
        c.events, c.ended, c.findings.error_count, dict(c.findings.counts))
    assert _findings(r) == _findings(c)
    assert [w.inv for w in r.findings.warnings] == [w.inv for w in c.findings.warnings]


def _copies(prof, n, spread_ms):
    mix = MIXES[prof]
    return [(mix[k % len(mix)], 1 + k // len(mix), k * spread_ms) for k in range(n)]


@pytest.mark.parametrize("prof", sorted(MIXES))
@pytest.mark.parametrize("files,interleave", [(1, False), (3, False), (3, True)], ids=["one-file", "seq-ranges",
                                                                                     "interleaved"])
def test_a_trace_of_many_deployments_replayed_scope_by_scope_is_check(tmp_path, prof, files, interleave):
    evs = deployments(prof, _copies(prof, 8, 7_000))
    whole = tmp_path / "whole.jsonl"
    write_trace(str(whole), evs)
    c = check_trace(str(whole), max_listed=ALL)
    paths = _write(tmp_path, evs, files, interleave)
    r = replay_scoped_local(paths, max_listed=ALL, tasks=3)
    _same(c, r)
    assert r.plan.components == 8 and r.plan.n == 3       # (eight deployments on three tasks)
    if prof.startswith("bug-"):
        assert not c.ok     # (findings counted once although the trace's own events reach every task)


@pytest.mark.parametrize("prof", ["rocketmq-5.3.3", "rocketmq-4.9.8"])
def test_the_end_of_trace_rule_judges_each_task_s_deployments_once(tmp_path, prof):
    """Deployments cut short are found by the end-of-trace rule (trace_ended reaches every task):
    each task judges its own, the ended scopes it dropped included, and each finding counts once."""
    evs = deployments(prof, _copies(prof, 9, 4_000), cut=2)
    whole = tmp_path / "whole.jsonl"
    write_trace(str(whole), evs)
    c = check_trace(str(whole), max_listed=ALL)
    assert not c.ok and any(f.seq == evs[-1]["seq"] for f in c.findings.errors)
    r = replay_scoped_local(_write(tmp_path, evs, 3, False), max_listed=ALL, tasks=3)
    _same(c, r)
    owners = {w.key for w in r.findings.errors if w.seq == evs[-1]["seq"]}
    assert len(owners) > 1


def test_deployments_that_share_a_broker_are_one_scope(tmp_path):
    prof = "rocketmq-5.3.3"
    evs = deployments(prof, _copies(prof, 4, 5_000), shared_broker=True)
    whole = tmp_path / "whole.jsonl"
    write_trace(str(whole), evs)
    c = check_trace(str(whole), max_listed=ALL)
    r = replay_scoped_local(_write(tmp_path, evs, 2, False), max_listed=ALL, tasks=3)
    _same(c, r)
    assert r.plan.components == 1 and r.plan.n == 1


def test_one_deployment_too_large_for_one_task_is_for_the_exact_path(tmp_path):
    prof = "rocketmq-5.3.3"
    evs = deployments(prof, _copies(prof, 4, 5_000), shared_broker=True)
    paths = _write(tmp_path, evs, 1, False)
    surveys = [survey_file(0, paths[0])]
    with pytest.raises(NotScoped, match="too many for one task"):
        tasks_of(0, surveys, paths, None, 50, slots=8)


def _bent(tmp_path, evs, how):
    evs = [dict(e) for e in evs]
    if how == "out-of-order":
        evs[10]["seq"], evs[11]["seq"] = evs[11]["seq"], evs[10]["seq"]
    elif how == "second-start":
        evs.insert(5, dict(evs[0], seq=evs[4]["seq"]))
        for s, e in enumerate(evs):
            e["seq"] = s
    elif how == "unknown-kind":
        evs[7]["kind"] = "no_such_kind"
    elif how == "ended-early":
        evs.insert(20, dict(evs[-1], ts=evs[20]["ts"]))
        for s, e in enumerate(evs):
            e["seq"] = s
    p = tmp_path / f"{how}.parquet"
    write_trace(str(p), evs)
    return str(p)


@pytest.mark.parametrize("how", ["out-of-order", "second-start", "unknown-kind", "ended-early"])
def test_unusual_input_is_for_the_exact_path(tmp_path, how):
    """What the scoped path does not prove clean goes to the exact path (which says what check
    says): the survey refuses it."""
    prof = "rocketmq-5.3.3"
    path = _bent(tmp_path, deployments(prof, _copies(prof, 2, 3_000)), how)
    with pytest.raises(NotScoped):
        replay_scoped_local([path], tasks=2)


def test_a_bad_event_sends_the_trace_back(tmp_path):
    """A row the schema check rejects (a pull_issued without its client) is found by the task
    that reads it: the trace goes back to the exact path, which reports check's file and line."""
    from rocketspec.traces.io import TraceInputError

    prof = "rocketmq-5.3.3"
    evs = deployments(prof, _copies(prof, 2, 3_000))
    i = next(i for i, e in enumerate(evs) if e["kind"] == "pull_issued")
    del evs[i]["client"]
    q = tmp_path / "bad.parquet"
    write_trace(str(q), evs)
    with pytest.raises(TraceInputError, match="client"):
        check_trace(str(q))
    with pytest.raises(NotScoped, match="client"):
        replay_scoped_local([str(q)], tasks=2)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(MIXES["rocketmq-5.3.3"]), min_size=1, max_size=6),
       st.integers(1, 4), st.booleans(), st.integers(1, 5), st.data())
def test_every_event_is_replayed_once_by_the_task_that_owns_its_names(tmp_path_factory, mix, files, interleave,
                                                                     tasks, data):
    """Routing: each event but the trace's own two reaches exactly one task, and that task owns
    every name the event mentions (spec.kinds.names): so no action reads a scope the task lacks."""
    prof = "rocketmq-5.3.3"
    shifts = data.draw(st.lists(st.integers(0, 30_000), min_size=len(mix), max_size=len(mix)))
    evs = deployments(prof, [(m, 1, s) for m, s in zip(mix, shifts)])
    d = tmp_path_factory.mktemp("route")
    paths = _write(d, evs, files, interleave)
    surveys = [survey_file(i, p) for i, p in enumerate(paths)]
    plan, work, _, total = tasks_of(0, surveys, paths, None, 50, slots=1, wanted=tasks)
    assert total == len(evs)
    seen: dict = {}
    for w in work:
        used = [False] * len(w["ends"])
        for f, rgs in sorted(w["reads"].items()):
            last = None
            for chunk in _file_rows(w["pid"], f, paths[f], rgs, w["mine"], w["pid"] == 0, w["ends"], used,
                                    lambda ev: None):
                if isinstance(chunk, ScopesEnded):
                    assert chunk.seq == last        # right after the scope's last event
                    continue
                for seq, _, _, _, _, _, ev in zip(*chunk):
                    assert ev["seq"] == seq and set(event_names(ev)) <= w["mine"]
                    seen[seq] = seen.get(seq, 0) + 1
                    last = seq
        assert all(used)        # every scope's end met right after its last event
    assert seen == {e["seq"]: 1 for e in evs if e["kind"] not in ("trace_started", "trace_ended")}
