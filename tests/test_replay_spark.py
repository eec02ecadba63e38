"""`rocketspec replay` (Spark, partitioned by key) against `rocketspec check` (one process):
the same verdict, the same finding counts per invariant, the same set of (invariant, key, seq)
when both list every finding, and the same errors on bad input.

The traces of the Spark tests are replayed in one Spark job on one shared local session (the
`spark` fixture, marked `spark`: `make test` runs them in one process); the partitioned replay
without Spark (`replay_local`, the same code path minus Spark) covers more seeds and partition
counts."""
from __future__ import annotations

import gzip
import os
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import builtin_names, load_scenario, runs_under
from rocketspec.rocketmq.profiles import PROFILES
from rocketspec.spec.replay import check_trace
from rocketspec.traces.io import TraceInputError, write_trace

pytest.importorskip("pyspark")
# the tests that need the Spark session; `make test` runs them in one process, after the rest
spark_test = pytest.mark.spark

RELEASES = ("rocketmq-5.3.3", "rocketmq-4.9.8")
REAL = sorted(str(p) for p in (Path(__file__).parent / "fixtures" / "real").glob("*.jsonl"))
ALL = 10 ** 6


def _bug_cases():
    out = []
    for pname, p in PROFILES.items():
        if not p.known_bug:
            continue
        num = p.known_bug.lstrip("#")
        named = [n for n in builtin_names() if num in n] or (["orderly-dlq"] if num == "6163" else [])
        out.append((named[0], 1, pname))
    return out


def _runnable(seeds=(1,)):
    """(scenario, seed, release) cases the runner accepts (a POP scenario needs a 5.x release)."""
    return [(n, s, p) for n in builtin_names() for s in seeds for p in RELEASES if runs_under(load_scenario(n), p)]


SCENARIOS = _runnable()
BUGS = _bug_cases()


def findings(rep):
    return sorted((f.inv, repr(f.key), f.seq) for f in rep.findings.errors)


def same(c, r):
    """What must be equal between check and replay (both listing every finding)."""
    return (c.ok, dict(c.findings.counts), c.findings.error_count, findings(c), c.events, c.ended) == \
        (r.ok, dict(r.findings.counts), r.findings.error_count, findings(r), r.events, r.ended)


def _bad_inputs(d: Path, good: str) -> dict:
    """Bad traces, named by what is wrong; the last one for check is the single file."""
    lines = Path(good).read_bytes().splitlines(keepends=True)
    out = {}
    p = d / "malformed.jsonl"
    p.write_bytes(b"".join(lines[:5] + [b'{"seq": 5, "ts": \n'] + lines[6:]))
    out["malformed"] = p
    p = d / "unknown-kind.jsonl"
    ev = orjson.loads(lines[7])
    ev["kind"] = "no_such_kind"
    p.write_bytes(b"".join(lines[:7] + [orjson.dumps(ev) + b"\n"] + lines[8:]))
    out["unknown-kind"] = p
    p = d / "out-of-order.jsonl"
    p.write_bytes(b"".join(lines[:9] + [lines[10], lines[9]] + lines[11:]))
    out["out-of-order"] = p
    p = d / "no-header.jsonl"
    p.write_bytes(b"".join(lines[1:]))
    out["no-header"] = p
    p = d / "unknown-profile.jsonl"
    ev = orjson.loads(lines[0])
    ev["profile"] = "rocketmq-0.0.1"
    p.write_bytes(b"".join([orjson.dumps(ev) + b"\n"] + lines[1:]))
    out["unknown-profile"] = p
    return out


def _bad_parquet(d: Path, good: str) -> dict:
    """Bad Parquet traces (the Arrow path must leave them to the exact path, which says what
    check says), named by what is wrong."""
    evs = [orjson.loads(x) for x in Path(good).read_bytes().splitlines()]
    out = {}

    def put(what, es):
        write_trace(str(d / f"{what}.parquet"), es)
        out[what] = d / f"{what}.parquet"

    put("unknown-kind", evs[:7] + [{**evs[7], "kind": "no_such_kind"}] + evs[8:])
    put("out-of-order", evs[:9] + [evs[10], evs[9]] + evs[11:])
    put("no-header", evs[1:])
    put("unknown-profile", [{**evs[0], "profile": "rocketmq-0.0.1"}] + evs[1:])
    put("after-end", evs + [{**evs[-2], "seq": evs[-1]["seq"] + 1}])
    put("missing-field", evs[:12] + [{k: v for k, v in evs[12].items() if k != "topic"}] + evs[13:])
    put("ts-back", evs[:20] + [{**evs[20], "ts": evs[19]["ts"] - 1}] + evs[21:])
    return out


def _formats(d: Path, good: str) -> dict:
    """The same trace as Parquet, gzip and zstd JSON Lines, and a partitioned Parquet directory
    of three files (events spread by kind: each file in seq order, their seqs interleaved)."""
    import zstandard

    evs = [orjson.loads(x) for x in Path(good).read_bytes().splitlines()]
    out = {}
    write_trace(str(d / "t.parquet"), evs)
    out["parquet"] = [str(d / "t.parquet")]
    (d / "t.jsonl.gz").write_bytes(gzip.compress(Path(good).read_bytes()))
    out["gzip"] = [str(d / "t.jsonl.gz")]
    (d / "t.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(Path(good).read_bytes()))
    out["zstd"] = [str(d / "t.jsonl.zst")]
    parts = {}
    for e in evs:
        parts.setdefault(hash(e["kind"]) % 3 if e["kind"] != "trace_started" else 0, []).append(e)
    for i, es in parts.items():
        (d / "ds" / f"part={i}").mkdir(parents=True, exist_ok=True)
        write_trace(str(d / "ds" / f"part={i}" / "events.parquet"), es)
    out["partitioned-dir"] = [str(d / "ds")]
    half = len(evs) // 2
    write_trace(str(d / "a.jsonl"), evs[:half])
    write_trace(str(d / "b.parquet"), evs[half:])
    out["two-paths"] = [str(d / "a.jsonl"), str(d / "b.parquet")]
    return out


@pytest.fixture(scope="module")
def replayed(spark, tmp_path_factory):
    """Every trace of this module, replayed in one job: {case: (check report, replay result)}."""
    from rocketspec.traces.spark.spark_replay import replay_many

    d = tmp_path_factory.mktemp("replay")
    cases = {}
    for name, seed, prof in SCENARIOS + BUGS:
        path = d / f"{name}-{seed}-{prof}.jsonl"
        evs = run_to_list(load_scenario(name), seed, prof)
        write_trace(str(path), evs)
        cases[("scenario", name, seed, prof)] = [str(path)]
        write_trace(str(d / f"{name}-{seed}-{prof}.parquet"), evs)      # the Arrow path
        cases[("parquet", name, seed, prof)] = [str(d / f"{name}-{seed}-{prof}.parquet")]
    for p in REAL:
        cases[("real", Path(p).name)] = [p]
    basic = cases[("scenario", "basic", 1, "rocketmq-5.3.3")][0]
    for what, path in _bad_inputs(d, basic).items():
        cases[("bad", what)] = [str(path)]
    for what, path in _bad_parquet(d, basic).items():
        cases[("bad-parquet", what)] = [str(path)]
    for what, paths in _formats(d, basic).items():
        cases[("format", what)] = paths
    keys = list(cases)
    reps = replay_many([cases[k] for k in keys], spark, max_listed=ALL, partitions=3, arrow=True)
    return {k: (cases[k], r) for k, r in zip(keys, reps)}


@pytest.fixture(scope="module")
def replayed_whole(spark, replayed):
    """The same traces on replay's default path for small traces (traces.spark.spark_whole: each trace
    whole in one task, several traces per task), in one job."""
    from rocketspec.traces.spark.spark_replay import replay_many

    keys = list(replayed)
    reps = replay_many([replayed[k][0] for k in keys], spark, max_listed=ALL)
    return {k: (replayed[k][0], r) for k, r in zip(keys, reps)}


def _check(paths):
    try:
        return check_trace(paths[0], max_listed=ALL)
    except TraceInputError as exc:
        return exc


@spark_test
@pytest.mark.parametrize("case", SCENARIOS, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_replay_equals_check_on_builtin_scenarios(replayed, case):
    paths, r = replayed[("scenario",) + case]
    c = _check(paths)
    assert same(c, r), (dict(c.findings.counts), dict(r.findings.counts),
                        set(findings(c)) ^ set(findings(r)))


@spark_test
@pytest.mark.parametrize("case", BUGS, ids=lambda c: c[2])
def test_replay_flags_every_known_bug_profile_as_check_does(replayed, case):
    paths, r = replayed[("scenario",) + case]
    c = _check(paths)
    assert same(c, r)
    assert not r.ok and r.findings.counts.get(PROFILES[case[2]].expected_violation)


@spark_test
@pytest.mark.parametrize("name", [Path(p).name for p in REAL])
def test_replay_equals_check_on_real_rocketmq_fixtures(replayed, name):
    paths, r = replayed[("real", name)]
    c = _check(paths)
    assert same(c, r), (dict(c.findings.counts), dict(r.findings.counts))


@spark_test
@pytest.mark.parametrize("what", ["malformed", "unknown-kind", "out-of-order", "no-header", "unknown-profile"])
def test_bad_input_fails_as_check_fails(replayed, what):
    _fails_as_check_fails(replayed[("bad", what)], what)


def _fails_as_check_fails(replayed_case, what):
    paths, r = replayed_case
    c = _check(paths)
    assert isinstance(c, TraceInputError) and isinstance(r, TraceInputError), (c, r)
    assert (r.file, r.line) == (c.file, c.line)
    if what != "no-header":     # replay names the lowest event, check the first line
        assert r.message == c.message


@spark_test
@pytest.mark.parametrize("case", SCENARIOS + BUGS, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_arrow_path_equals_check_on_parquet(replayed, case):
    """Parquet as the writer makes it takes the Arrow path (Spark reads the files, the JVM
    shuffles), with check's results."""
    paths, r = replayed[("parquet",) + case]
    c = _check(paths)
    assert r.spark["path"] == "arrow"
    assert same(c, r), (dict(c.findings.counts), dict(r.findings.counts),
                        set(findings(c)) ^ set(findings(r)))


@spark_test
@pytest.mark.parametrize("what", ["unknown-kind", "out-of-order", "no-header", "unknown-profile", "after-end",
                                  "missing-field", "ts-back"])
def test_bad_parquet_fails_as_check_fails(replayed, what):
    _fails_as_check_fails(replayed[("bad-parquet", what)], what)


@spark_test
@pytest.mark.parametrize("case", [("scenario",) + c for c in SCENARIOS + BUGS] + [("real", Path(p).name) for p in REAL],
                         ids=lambda c: "-".join(map(str, c)))
def test_whole_path_equals_check(replayed_whole, case):
    """A small trace replayed whole in one task (replay's default for it) gives check's verdict,
    counts and every (invariant, key, seq)."""
    paths, r = replayed_whole[case]
    c = _check(paths)
    assert r.spark["path"] == "whole"
    assert same(c, r), (dict(c.findings.counts), dict(r.findings.counts), set(findings(c)) ^ set(findings(r)))
    if not r.ok:        # the violations dataset's groups: one per (invariant, key), counts adding up
        assert sum(g[0] for (inv, _), g in r.groups.items() if g[6] == "error") == c.findings.error_count


@spark_test
@pytest.mark.parametrize("case", [("bad", w) for w in ("malformed", "unknown-kind", "out-of-order", "no-header",
                                                       "unknown-profile")]
                         + [("bad-parquet", w) for w in ("unknown-kind", "out-of-order", "no-header",
                                                         "unknown-profile", "after-end", "missing-field", "ts-back")],
                         ids=lambda c: "-".join(c))
def test_whole_path_sends_bad_input_to_the_exact_path(replayed_whole, case):
    """Bad input leaves the whole path: the exact path names its file and line as check does."""
    _fails_as_check_fails(replayed_whole[case], case[1])


@spark_test
@pytest.mark.parametrize("what", ["parquet", "gzip", "zstd", "partitioned-dir", "two-paths"])
def test_whole_path_reads_every_input_format(replayed_whole, what):
    """Several files in seq order are one trace whole; files whose seqs interleave (a directory
    partitioned by kind, in the writer's Parquet) leave it for the scoped path, which merges
    them by seq."""
    paths, r = replayed_whole[("format", what)]
    c = _check(replayed_whole[("scenario", "basic", 1, "rocketmq-5.3.3")][0])
    assert not isinstance(r, Exception), r
    assert same(c, r)
    assert r.spark["path"] == ("scoped" if what == "partitioned-dir" else "whole")


@spark_test
@pytest.mark.parametrize("what", ["parquet", "gzip", "zstd", "partitioned-dir", "two-paths"])
def test_every_input_format_gives_the_same_result(replayed, what):
    paths, r = replayed[("format", what)]
    c = _check(replayed[("scenario", "basic", 1, "rocketmq-5.3.3")][0])
    assert not isinstance(r, Exception), r
    assert same(c, r)


@pytest.fixture(scope="module")
def replayed_scoped(spark, replayed, tmp_path_factory):
    """The Parquet traces on the scoped path (traces.spark.spark_scoped, asked for: replay takes it by
    default for a trace above 2^20 events), with traces of many deployments: in one job."""
    from test_replay_scoped import _copies, _write, deployments

    from rocketspec.traces.spark.spark_replay import replay_many

    cases = {k: v[0] for k, v in replayed.items() if k[0] in ("parquet", "bad-parquet")}
    d = tmp_path_factory.mktemp("scoped")
    for prof in RELEASES + ("bug-4215-rocketmq-4.9.3",):
        evs = deployments(prof, _copies(prof, 8, 7_000), cut=3)
        sub = d / prof
        sub.mkdir()
        whole = sub / "whole.jsonl"
        write_trace(str(whole), evs)
        cases[("deployments", prof)] = _write(sub, evs, 3, True)
        cases[("deployments-check", prof)] = [str(whole)]
    keys = [k for k in cases if k[0] != "deployments-check"]
    reps = replay_many([cases[k] for k in keys], spark, max_listed=ALL, scoped=True)
    return {k: (cases[k], r) for k, r in zip(keys, reps)} | {k: (v, None) for k, v in cases.items()
                                                             if k[0] == "deployments-check"}


@spark_test
@pytest.mark.parametrize("case", [("parquet",) + c for c in SCENARIOS + BUGS] +
                         [("deployments", p) for p in RELEASES + ("bug-4215-rocketmq-4.9.3",)],
                         ids=lambda c: "-".join(map(str, c)))
def test_scoped_path_equals_check(replayed_scoped, case):
    """A trace replayed scope by scope, a task per stretch of whole deployments, gives check's
    verdict, counts and every (invariant, key, seq); traces of one deployment too."""
    paths, r = replayed_scoped[case]
    c = _check(replayed_scoped[("deployments-check", case[1])][0] if case[0] == "deployments" else paths)
    assert not isinstance(r, Exception), r
    assert r.spark["path"] == "scoped", r.spark
    assert same(c, r), (dict(c.findings.counts), dict(r.findings.counts), set(findings(c)) ^ set(findings(r)))
    if case[0] == "deployments":
        assert r.spark["scopes"] == 8 and r.spark["partitions"] > 1


@spark_test
@pytest.mark.parametrize("what", ["unknown-kind", "out-of-order", "no-header", "unknown-profile", "after-end",
                                  "missing-field", "ts-back"])
def test_scoped_path_sends_bad_input_to_the_exact_path(replayed_scoped, what):
    """Bad input leaves the scoped path: the exact path names its file and line as check does."""
    _fails_as_check_fails(replayed_scoped[("bad-parquet", what)], what)


@spark_test
def test_a_long_trace_takes_the_scoped_path_by_default(spark, replayed_scoped, monkeypatch):
    """replay's default for a trace above the whole path's bound (lowered here) is the scoped path."""
    from rocketspec.traces.spark import spark_whole
    from rocketspec.traces.spark.spark_replay import replay_many

    monkeypatch.setattr(spark_whole, "WHOLE_EVENTS", 1000)
    paths, _ = replayed_scoped[("deployments", "rocketmq-5.3.3")]
    r = replay_many([paths], spark, max_listed=ALL)[0]
    assert r.spark["path"] == "scoped"
    assert same(_check(replayed_scoped[("deployments-check", "rocketmq-5.3.3")][0]), r)


@spark_test
def test_partitions_are_balanced_and_directory_events_reach_each(replayed):
    _, r = replayed[("scenario", "multi-broker", 1, "rocketmq-5.3.3")]
    plan = r.plan
    assert plan.n > 1 and plan.components > plan.n
    assert all(load >= plan.directory_events for load in plan.loads)
    assert r.spark["skew"] < 2.0


# ---------------------------------------------------------------- the command

def _cli(args):
    from rocketspec.cli import main

    return CliRunner().invoke(main, args, catch_exceptions=False)


@spark_test
@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])      # the exact path, the Arrow path
def test_cli_json_has_check_fields_and_out_dir_has_dataset_report_and_witnesses(spark, tmp_path, fmt):
    import pyarrow.parquet as pq

    trace = tmp_path / f"bug.{fmt}"
    write_trace(str(trace), run_to_list(load_scenario("bug-4215"), 1, "bug-4215-rocketmq-4.9.3"))
    chk = _cli(["check", str(trace), "--json", "--quiet"])
    out = tmp_path / "out"
    rep = _cli(["replay", str(trace), "--json", "--quiet", "--out", str(out), "--arrow"])
    assert rep.exit_code == chk.exit_code == 1
    c, r = orjson.loads(chk.stdout), orjson.loads(rep.stdout)
    assert set(c) <= set(r)
    assert r["spark"]["path"] == ("arrow" if fmt == "parquet" else "exact")
    assert (r["verdict"], r["counts"], r["errors"]) == (c["verdict"], c["counts"], c["errors"])
    table = pq.read_table(out / "violations.parquet").to_pylist()
    assert {x["invariant"] for x in table} >= {v["invariant"] for v in c["violations"]}
    assert all(x["seq_first"] <= x["seq_last"] and x["ts_first"] <= x["ts_last"] for x in table)
    assert sum(x["count"] for x in table if x["severity"] == "error") == c["errors"]
    text = (out / "report.txt").read_text()
    assert "VIOLATED" in text and c["violations"][0]["invariant"] in text
    # every witness is a trace that check rejects with the violation it stands for
    assert r["witnesses"]
    for w in r["witnesses"]:
        res = _cli(["check", w["path"], "--json", "--quiet"])
        assert res.exit_code == 1
        found = orjson.loads(res.stdout)
        assert any(v["invariant"] == w["invariant"] and v["seq"] == w["seq"] for v in found["violations"])
        assert w["events"] < r["events"]


@spark_test
def test_cli_bad_input_exits_2_with_file_and_line(spark, tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text('{"seq": 0, "ts": 0, "kind": "trace_started", "schema_version": 2, "profile": "rocketmq-5.3.3"}\n'
                 'not json\n')
    res = _cli(["replay", str(p), "--quiet"])
    assert res.exit_code == 2
    assert f"{p}:2" in res.output
    assert _cli(["replay", str(tmp_path / "missing.jsonl"), "--quiet"]).exit_code == 2


# ---------------------------------------------------------------- without Spark: more seeds

LOCAL = [(n, s, p) for n in ("basic", "faults", "rebalance", "orderly", "long-pause", "multi-broker", "broadcast")
         for s in (3,) for p in RELEASES]


@pytest.mark.parametrize("case", LOCAL, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_partitioned_replay_equals_check_for_any_partition_count(tmp_path, case):
    _local_equals_check(tmp_path, case)


# POP: a revive reads the copy in the group's topic and stores one in its POP retry topic
# (%RETRY%group_topic), where the copy is popped, acked and dead-lettered; bug-10985's is lost
POP_LOCAL = [(n, 1, "rocketmq-5.3.3") for n in ("pop-basic", "pop-invisible-expiry", "pop-retry-dlq", "pop-orderly",
                                                "bug-10985")]


@pytest.mark.parametrize("case", POP_LOCAL, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_partitioned_replay_of_pop_keeps_a_topic_and_its_pop_retry_topic_together(tmp_path, case):
    _local_equals_check(tmp_path, case)


def test_a_revive_is_one_place_with_the_pop_retry_queue_it_stores_into():
    from rocketspec.traces.kinds import atoms
    from rocketspec.traces.spark.spark_replay import Plan

    evs = run_to_list(load_scenario("pop-invisible-expiry"), 1, "rocketmq-5.3.3")
    rev = next(e for e in evs if e["kind"] == "message_revived" and e["outcome"] == "retry")
    (place,) = atoms(rev)
    assert ("Q", rev["group"], rev["topic"], rev["broker"], rev["queue"]) in place
    assert ("Q", rev["group"], rev["target_topic"], rev["broker"], rev["target_queue"]) in place
    # whatever the partition count, every event of the topic and of its POP retry topic is replayed
    # in one partition
    counts = {}
    for e in evs:
        a = atoms(e)
        counts[a] = counts.get(a, 0) + 1
    plan = Plan(counts, 8)
    homes = {plan.targets(atoms(e))[0] for e in evs if atoms(e) and e.get("topic") in ("Work", rev["target_topic"])}
    assert len(homes) == 1


@pytest.mark.slow
@pytest.mark.parametrize("case", _runnable((4, 5, 6)), ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_partitioned_replay_equals_check_many_seeds(tmp_path, case):
    _local_equals_check(tmp_path, case)


def _local_equals_check(tmp_path, case):
    from rocketspec.traces.spark.spark_replay import replay_local

    name, seed, prof = case
    path = str(tmp_path / "t.jsonl")
    write_trace(path, run_to_list(load_scenario(name), seed, prof))
    c = check_trace(path, max_listed=ALL)
    for n in (1, 2, 5, 16):
        assert same(c, replay_local([path], max_listed=ALL, partitions=n)), n


@spark_test
@pytest.mark.slow
@pytest.mark.parametrize("name,profile", [(n, p) for n, _, p in _runnable()])
def test_full_sweep_on_spark(spark, tmp_path, name, profile):
    from rocketspec.traces.spark.spark_replay import replay_many

    paths = []
    for seed in range(1, 6):
        p = str(tmp_path / f"{seed}.jsonl")
        write_trace(p, run_to_list(load_scenario(name), seed, profile))
        paths.append([p])
    for p, r in zip(paths, replay_many(paths, spark, max_listed=ALL)):
        assert same(check_trace(p[0], max_listed=ALL), r), p


def test_one_registry_of_event_kinds():
    """Every schema kind has one registry entry, whose action is the spec's function of that
    name."""
    from rocketspec.spec import actions
    from rocketspec.traces.kinds import KINDS
    from rocketspec.traces.schema import kinds

    assert set(KINDS) == set(kinds())
    assert all(actions.HANDLERS[k].__name__ == k for k in KINDS)
    assert {k.route for k in KINDS.values()} == {"directory", "queue", "stored", "chain", "group", "none"}


def test_a_finding_of_a_directory_event_is_counted_once(tmp_path):
    """A client started twice (INV-CLIENT-1, no key) is seen by every partition, counted once."""
    from rocketspec.traces.spark.spark_replay import replay_local

    evs = run_to_list(load_scenario("multi-broker"), 1, "rocketmq-5.3.3")
    start = next(e for e in evs if e["kind"] == "client_started")
    dup = dict(start, seq=start["seq"] + 1, ts=start["ts"])
    evs = [e for e in evs if e["seq"] <= start["seq"]] + [dup] + \
        [dict(e, seq=e["seq"] + 1) for e in evs if e["seq"] > start["seq"]]
    path = str(tmp_path / "t.jsonl")
    write_trace(path, evs)
    c = check_trace(path, max_listed=ALL)
    r = replay_local([path], max_listed=ALL, partitions=6)
    assert r.plan.n == 6 and c.findings.counts.get("INV-CLIENT-1") == 1
    assert same(c, r)


def test_packed_places_unpack_to_the_places_of_every_event():
    """Rows carry an event's places packed (one object to pickle); unpacked, they are
    spec.kinds.atoms of the event again (tuples, so they key the plan), for every event of the
    built-in scenarios."""
    from rocketspec.traces.kinds import atoms
    from rocketspec.traces.spark.spark_replay import _pack_places, _places

    seen = set()
    for name in builtin_names():
        for ev in run_to_list(load_scenario(name), 1, "rocketmq-5.3.3"):
            a = atoms(ev)
            back = _places(_pack_places(a))
            assert back == a and type(back) is type(a), (name, ev)
            seen.add(ev["kind"])
    assert len(seen) > 30
