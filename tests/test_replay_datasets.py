"""A dataset of runs (what `simulate --events N --out DIR` writes: one trace per `run=<id>`
partition) is replayed run by run in one Spark job: each run's verdict and finding counts are
`check`'s on that run's file, a bad run is named with its file and does not hide the others."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from rocketspec.errors import UserError
from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import load_scenario
from rocketspec.spec.replay import check_trace
from rocketspec.traces.datasets import dataset_runs
from rocketspec.traces.io import write_trace


def _cli(args):
    from rocketspec.cli import main

    return CliRunner().invoke(main, args, catch_exceptions=False)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("ds")
    runs = {"1": ("basic", 1, "rocketmq-5.3.3"), "2": ("bug-4215", 1, "bug-4215-rocketmq-4.9.3"),
            "10": ("rebalance", 2, "rocketmq-4.9.8")}
    for rid, (name, seed, prof) in runs.items():
        p = d / f"run={rid}" / "part-0.parquet"
        p.parent.mkdir()
        write_trace(str(p), run_to_list(load_scenario(name), seed, prof))
    return d


def test_a_dataset_of_runs_is_recognised_in_run_order(dataset, tmp_path):
    assert [r for r, _ in dataset_runs(dataset)] == ["1", "2", "10"]
    assert dataset_runs(dataset / "run=1") is None            # one run: a plain trace directory
    (tmp_path / "run=1").mkdir()
    (tmp_path / "stray.parquet").write_bytes(b"")
    with pytest.raises(UserError, match="beside the run=<id> partitions"):
        dataset_runs(tmp_path)


@pytest.mark.spark
def test_replay_of_a_dataset_judges_each_run_as_check_does(spark, dataset, tmp_path):
    import pyarrow.parquet as pq

    res = _cli(["replay", str(dataset), "--json", "--quiet", "--out", str(tmp_path / "o")])
    assert res.exit_code == 1, res.output
    d = orjson.loads(res.stdout)
    assert d["verdict"] == "violated" and d["runs_violated"] == 1 and [r["run"] for r in d["runs"]] == ["1", "2", "10"]
    for r in d["runs"]:
        c = check_trace(str(Path(r["path"]) / "part-0.parquet")).to_dict()
        assert (r["report"]["verdict"], r["report"]["counts"], r["report"]["errors"]) == (
            c["verdict"], c["counts"], c["errors"])
    rows = pq.read_table(tmp_path / "o" / "violations.parquet").to_pylist()
    assert {x["run"] for x in rows if x["severity"] == "error"} == {"2"}
    text = _cli(["replay", str(dataset), "--quiet"]).output
    assert "run=2: VIOLATED" in text and "run=1: HOLDS" in text and "1 of 3 runs violated" in text


@pytest.mark.spark
def test_a_bad_run_is_named_and_the_others_still_judged(spark, dataset, tmp_path):
    import shutil

    bad = tmp_path / "ds"
    shutil.copytree(dataset, bad)
    (bad / "run=10" / "part-0.parquet").write_bytes(b"not parquet at all")
    res = _cli(["replay", str(bad), "--quiet"])
    assert res.exit_code == 2
    assert "run=10: BAD INPUT" in res.output and str(bad / "run=10" / "part-0.parquet") in res.output
    assert "run=2: VIOLATED" in res.output


def test_check_of_a_dataset_judges_each_run(dataset, tmp_path):
    res = _cli(["check", str(dataset), "--json", "--quiet"])
    assert res.exit_code == 1, res.output
    d = orjson.loads(res.stdout)
    assert [(r["run"], r["report"]["verdict"]) for r in d["runs"]] == [("1", "holds"), ("2", "violated"),
                                                                        ("10", "holds")]
    for r in d["runs"]:
        assert r["report"]["counts"] == check_trace(str(Path(r["path"]) / "part-0.parquet")).to_dict()["counts"]
    # a run that is not one readable trace file is bad input, named, and the others are judged
    import shutil

    bad = tmp_path / "ds"
    shutil.copytree(dataset, bad)
    (bad / "run=10" / "part-0.parquet").write_bytes(b"not parquet")
    (bad / "run=1" / "part-1.parquet").write_bytes(b"")
    res = _cli(["check", str(bad), "--quiet"])
    assert res.exit_code == 2
    assert "run=1: BAD INPUT" in res.output and "2 files in this run" in res.output
    assert "run=10: BAD INPUT" in res.output and str(bad / "run=10" / "part-0.parquet") in res.output
    assert "run=2: VIOLATED" in res.output


def test_a_dataset_with_other_paths_is_refused(dataset):
    res = _cli(["replay", str(dataset), str(dataset / "run=1" / "part-0.parquet"), "--quiet"])
    assert res.exit_code == 2 and "replayed alone" in res.output
