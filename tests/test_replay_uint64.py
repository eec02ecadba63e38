"""Offsets from 2^63 to 2^64-1 (JSON, and Parquet's uint64, as a writer that stores -1 unsigned
makes them) are ordinary numbers to `replay` as to `check`: the same verdict, counts and listed
findings on every path (whole, exact, scoped, Arrow), and `replay --json` writes its report
(an offset of 2^64-1 plus one in it) instead of failing as an internal error."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import load_scenario
from rocketspec.spec.replay import check_trace
from rocketspec.traces.io import write_trace

pytest.importorskip("pyspark")
pytestmark = pytest.mark.spark

BIN = Path(sys.executable).parent
TOP = 2 ** 64 - 1
# (kind, field) given 2^64-1 or 2^63 in the JSON cases: stored, committed, read, pulled, answered
FIELDS = [("message_stored", "offset"), ("offset_committed", "offset"), ("offset_read", "offset"),
          ("pull_issued", "offset"), ("pull_issued", "commit_offset"), ("pull_answered", "next_offset"),
          ("pull_answered", "max_offset"), ("pull_answered", "min_offset"), ("offset_persisted", "offset"),
          ("pq_messages_removed", "offset")]


def _events():
    return run_to_list(load_scenario("basic"), 1, "rocketmq-5.3.3")


def _json_cases(d: Path) -> dict:
    evs = _events()
    out = {}
    for value in (TOP, 2 ** 63):
        for kind, field in FIELDS:
            i = next(i for i, e in enumerate(evs) if e["kind"] == kind and isinstance(e.get(field), int))
            es = [dict(e) for e in evs]
            es[i][field] = value
            p = d / f"{kind}-{field}-{value}.jsonl"
            with open(p, "w") as fh:      # (the standard library: any integer)
                fh.writelines(json.dumps(e) + "\n" for e in es)
            out[p.name] = str(p)
    return out


def _parquet_cases(d: Path) -> dict:
    """The writer's Parquet with offset columns as uint64: -1 stored unsigned is 2^64-1."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    src = d / "basic.parquet"
    write_trace(str(src), _events())
    t = pq.read_table(src)
    out = {}
    for cols in (("offset",), ("commit_offset",), ("offset", "commit_offset", "next_offset", "max_offset")):
        u = t
        for c in cols:
            i = u.schema.get_field_index(c)
            u = u.set_column(i, pa.field(c, pa.uint64()), pc.cast(u.column(c), pa.uint64(), safe=False))
        p = d / f"uint64-{'-'.join(cols)}.parquet"
        pq.write_table(u, p)
        out[p.name] = str(p)
    # and a message stored at 2^64-1 (the queue's next offset: 2^64)
    i = u.schema.get_field_index("offset")
    kinds, offs = u.column("kind").to_pylist(), u.column("offset").to_pylist()
    offs[kinds.index("message_stored")] = TOP
    p = d / "uint64-stored-at-top.parquet"
    pq.write_table(u.set_column(i, pa.field("offset", pa.uint64()), pa.array(offs, pa.uint64())), p)
    out[p.name] = str(p)
    assert pq.read_table(out["uint64-offset.parquet"]).column("offset").to_pylist().count(TOP) > 0
    return out


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    d = tmp_path_factory.mktemp("uint64")
    return {**_json_cases(d), **_parquet_cases(d)}


def _findings(rep):
    return (rep.ok, dict(sorted(rep.findings.counts.items())), rep.events,
            [(f.inv, f.seq, repr(f.key)) for f in rep.findings.errors])


@pytest.mark.parametrize("path", [{}, {"partitions": 3}, {"scoped": True}, {"arrow": True, "partitions": 2}],
                         ids=["whole", "exact", "scoped", "arrow"])
def test_replay_judges_offsets_past_2_63_as_check_does(spark, cases, path):
    from rocketspec.traces.spark.spark_replay import replay_many

    names = sorted(cases)
    reps = replay_many([[cases[n]] for n in names], spark, max_listed=10 ** 6, **path)
    violated = 0
    for n, rep in zip(names, reps):
        want = check_trace(cases[n], max_listed=10 ** 6)
        assert not isinstance(rep, Exception), (n, rep)
        assert _findings(rep) == _findings(want), n
        violated += not want.ok
    assert violated >= len(FIELDS)      # (the values are judged, not skipped)


def _cli(*args):
    p = subprocess.run([str(BIN / "rocketspec"), *args], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, ROCKETSPEC_DEBUG="0"))
    return p.returncode, p.stdout, p.stderr


def test_replay_json_and_out_carry_offsets_past_64_bits(cases, tmp_path):
    """message_stored at 2^64-1: the report's state holds 2^64 (the queue's next offset)."""
    path = cases[f"message_stored-offset-{TOP}.jsonl"]
    rc, out, err = _cli("replay", "--master", "local[1]", path, "--json", "--quiet", "--out", str(tmp_path / "o"))
    assert rc == 1, err[-2000:]
    got = json.loads(out)
    rc, cout, _ = _cli("check", path, "--json")
    want = json.loads(cout)
    assert rc == 1 and (got["verdict"], got["counts"], got["events"]) == (want["verdict"], want["counts"], want["events"])
    assert TOP + 1 in [v.get("last_state", {}).get("max_offset") for v in got["violations"]]
    assert (tmp_path / "o" / "violations.parquet").exists() and (tmp_path / "o" / "report.txt").exists()


def test_replay_json_of_a_dataset_of_runs_carries_offsets_past_64_bits(cases, tmp_path):
    import shutil

    d = tmp_path / "runs"
    (d / "run=1").mkdir(parents=True)
    (d / "run=2").mkdir()
    shutil.copy(cases["uint64-offset.parquet"], d / "run=1" / "part-0.parquet")
    shutil.copy(cases["uint64-stored-at-top.parquet"], d / "run=2" / "part-0.parquet")
    rc, out, err = _cli("replay", "--master", "local[1]", str(d), "--json", "--quiet")
    assert rc == 1, err[-2000:]
    got = json.loads(out)
    assert [r["report"]["verdict"] for r in sorted(got["runs"], key=lambda r: str(r["run"]))] == \
        [check_trace(str(d / f"run={i}" / "part-0.parquet")).to_dict()["verdict"] for i in (1, 2)]
