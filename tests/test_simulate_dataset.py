"""`rocketspec simulate --events N`: large data as a partitioned Parquet dataset, one complete
trace per run, made by a pool of worker processes."""
from __future__ import annotations

import os

import pyarrow.dataset as ds
from click.testing import CliRunner

from rocketspec.cli import main
from rocketspec.spec.replay import check_trace


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_events_make_a_partitioned_dataset_of_complete_traces(tmp_path):
    out = tmp_path / "data"
    res = cli("simulate", "--scenario", "basic", "--events", 5000, "--workers", 2, "--seed", 7, "--out", out)
    assert res.exit_code == 0, res.output
    parts = sorted(os.listdir(out))
    assert parts and all(p.startswith("run=") for p in parts)
    seeds = sorted(int(p.split("=")[1]) for p in parts)
    assert seeds == list(range(7, 7 + len(seeds)))          # consecutive seeds from --seed
    table = ds.dataset(str(out), format="parquet", partitioning="hive").to_table(columns=["seq", "kind", "run"])
    assert table.num_rows >= 5000
    # every partition is a whole trace that the spec accepts
    for p in parts[:2]:
        rep = check_trace(str(out / p / "part-0.parquet"))
        assert rep.ok and rep.ended == "quiescent"
    assert f"{table.num_rows:,} events" in res.output


def test_events_refuses_a_file_or_a_used_directory(tmp_path):
    res = cli("simulate", "--events", 10, "--out", tmp_path / "t.jsonl")
    assert res.exit_code == 2 and "directory" in res.stderr
    out = tmp_path / "data"
    assert cli("simulate", "--events", 10, "--workers", 1, "--out", out, "--quiet").exit_code == 0
    res = cli("simulate", "--events", 10, "--out", out)
    assert res.exit_code == 2 and "give a new one" in res.stderr


def test_workers_without_events_is_a_usage_error(tmp_path):
    res = cli("simulate", "--workers", 2, "--out", tmp_path / "t.jsonl")
    assert res.exit_code == 2
