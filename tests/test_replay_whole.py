"""The whole path of `replay` (traces/spark/spark_whole.py) without Spark: a trace replayed whole in a
task is `check` on it (with the findings also grouped for the violations dataset), anything
unusual goes back to the exact path, the size bound never undercounts, and the packing of
traces onto tasks places each trace once and keeps the tasks near their fair share. The same
path on Spark is compared with `check` in tests/test_replay_spark.py."""
from __future__ import annotations

import gzip

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import load_scenario
from rocketspec.spec.replay import check_trace
from rocketspec.traces.io import write_trace
from rocketspec.traces.spark.spark_whole import events_at_most, pack, replay_whole

CASES = [("basic", 1, "rocketmq-5.3.3"), ("orderly", 2, "rocketmq-4.9.8"),
         ("bug-4215", 1, "bug-4215-rocketmq-4.9.3"), ("broadcast", 1, "rocketmq-5.3.3")]


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("whole")
    out = {}
    for name, seed, prof in CASES:
        evs = run_to_list(load_scenario(name), seed, prof)
        for ext in ("jsonl", "parquet"):
            p = d / f"{name}.{ext}"
            write_trace(str(p), evs)
            out[(name, ext)] = (str(p), evs)
    return out


@pytest.mark.parametrize("case", [(n, e) for n, _, _ in CASES for e in ("jsonl", "parquet")],
                         ids=lambda c: "-".join(c))
def test_a_trace_replayed_whole_is_check(traces, case):
    path, evs = traces[case]
    c = check_trace(path, max_listed=10 ** 6)
    r = replay_whole(7, [(0, path)], None, 10 ** 6)
    assert "back" not in r, r
    assert (r["trace"], r["events"], r["ended"], r["error_count"], r["counts"]) == (
        7, c.events, c.ended, c.findings.error_count, c.findings.counts)
    assert [(f.inv, f.key, f.seq) for f in r["errors"]] == [(f.inv, f.key, f.seq) for f in c.findings.errors]
    # every error is in exactly one group, (invariant, key), and the groups' spans are in order
    per: dict = {}
    for (inv, _key), g in r["groups"].items():
        if g[6] == "error":
            per[inv] = per.get(inv, 0) + g[0]
    assert per == {inv: n for inv, n in c.findings.counts.items() if inv in per or
                   any(f.inv == inv for f in c.findings.errors)}
    assert sum(per.values()) == c.findings.error_count
    for count, s0, s1, t0, t1, _msg, _sev in r["groups"].values():
        assert count >= 1 and s0 <= s1 and t0 <= t1


def test_two_files_in_seq_order_are_one_trace_whole(traces, tmp_path):
    path, evs = traces[("basic", "jsonl")]
    half = len(evs) // 2
    a, b = tmp_path / "a.jsonl", tmp_path / "b.parquet"
    write_trace(str(a), evs[:half])
    write_trace(str(b), evs[half:])
    c = check_trace(path)
    r = replay_whole(0, [(0, str(a)), (1, str(b))], None, 50)
    assert (r["events"], r["counts"]) == (c.events, c.findings.counts)


def _bad(tmp_path, evs) -> dict:
    lines = [orjson.dumps(e) for e in evs]
    out = {}

    def put(what, ls):
        p = tmp_path / f"{what}.jsonl"
        p.write_bytes(b"\n".join(ls) + b"\n")
        out[what] = [(0, str(p))]

    put("malformed", lines[:5] + [b'{"seq": 5, "ts": '] + lines[6:])
    put("unknown-kind", lines[:7] + [orjson.dumps({**evs[7], "kind": "no_such_kind"})] + lines[8:])
    put("out-of-order", lines[:9] + [lines[10], lines[9]] + lines[11:])
    put("no-header", lines[1:])
    put("unknown-profile", [orjson.dumps({**evs[0], "profile": "rocketmq-0.0.1"})] + lines[1:])
    put("empty", [])
    (tmp_path / "empty.jsonl").write_bytes(b"")
    # two files whose seqs interleave: the exact path sorts them
    a, b = tmp_path / "odd.jsonl", tmp_path / "even.jsonl"
    a.write_bytes(b"\n".join(lines[0::2]) + b"\n")
    b.write_bytes(b"\n".join(lines[1::2]) + b"\n")
    out["interleaved"] = [(0, str(a)), (1, str(b))]
    # a second trace_started in a second file
    c = tmp_path / "again.jsonl"
    c.write_bytes(b"\n".join(lines) + b"\n")
    out["second-header"] = [(0, str(c)), (1, str(c))]
    return out


@pytest.mark.parametrize("what", ["malformed", "unknown-kind", "out-of-order", "no-header", "unknown-profile",
                                  "empty", "interleaved", "second-header"])
def test_anything_unusual_goes_back_to_the_exact_path(traces, tmp_path, what):
    _, evs = traces[("basic", "jsonl")]
    r = replay_whole(3, _bad(tmp_path, evs)[what], None, 50)
    assert r["trace"] == 3 and r["back"], r


def test_the_size_bound_never_undercounts(traces, tmp_path):
    for (name, ext), (path, evs) in traces.items():
        assert events_at_most([path]) >= len(evs), (name, ext)
        if ext == "parquet":
            assert events_at_most([path]) == len(evs)       # the footer's exact count
    path, evs = traces[("basic", "jsonl")]
    gz = tmp_path / "t.jsonl.gz"
    gz.write_bytes(gzip.compress(open(path, "rb").read(), 9))
    assert events_at_most([str(gz)]) >= len(evs)
    assert events_at_most([path, path]) >= 2 * len(evs)


@given(st.dictionaries(st.integers(0, 500), st.integers(0, 10 ** 6), max_size=60), st.integers(1, 16))
def test_packing_places_each_trace_once_near_the_fair_share(sizes, slots):
    tasks = pack(sizes, slots)
    placed = [t for ts in tasks for t in ts]
    assert sorted(placed) == sorted(sizes)
    assert len(tasks) <= max(1, slots) and all(tasks)
    if sizes:
        loads = [sum(sizes[t] for t in ts) for ts in tasks]
        # largest first onto the lightest: no task exceeds the fair share by more than one trace
        assert max(loads) <= sum(loads) / len(tasks) + max(sizes.values())
