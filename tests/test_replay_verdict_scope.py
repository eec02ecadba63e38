"""`replay` says what it judged as `check` does: --require-end refuses a trace without its
trace_ended (a trace, and a run of a dataset), and findings in a Parquet trace are placed by row."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from rocketspec.cli import main

pytestmark = pytest.mark.spark

TRACES = Path(__file__).parent / "traces"
LOSS = TRACES / "wrong_loss_at_quiescence.jsonl"


def replay(*args):
    return CliRunner().invoke(main, ["replay", "--quiet", *map(str, args)])


def cut_of(path: Path, out: Path) -> Path:
    out.write_text("".join(path.read_text().splitlines(keepends=True)[:-1]))
    return out


def test_require_end_refuses_a_trace_without_its_end(spark, tmp_path):
    cut = cut_of(LOSS, tmp_path / "cut.jsonl")
    assert replay(cut).exit_code == 0          # safety only, as check judges it
    res = replay(cut, "--require-end")
    assert res.exit_code == 2, res.output
    assert str(cut) in res.output and "no trace_ended" in res.output
    assert replay(LOSS, "--require-end").exit_code == 1


def test_require_end_on_a_dataset_names_the_run(spark, tmp_path):
    from rocketspec.traces.io import iter_trace, write_trace

    ds = tmp_path / "ds"
    for r in ("run=1", "run=2"):
        (ds / r).mkdir(parents=True)
    # replay reads a dataset of runs in Parquet, as `simulate --events` writes it
    whole = list(iter_trace(TRACES / "valid_concurrent.jsonl"))
    write_trace(ds / "run=1" / "part-0.parquet", whole)
    write_trace(ds / "run=2" / "part-0.parquet", whole[:-1])
    assert replay(ds).exit_code == 0
    res = replay(ds, "--require-end")
    assert res.exit_code == 2, res.output
    assert "run=2" in res.output and "no trace_ended" in res.output


def test_parquet_findings_are_placed_by_row(spark, tmp_path):
    from rocketspec.traces.io import iter_trace, write_trace

    out = tmp_path / "t.parquet"
    write_trace(out, iter_trace(TRACES / "wrong_two_lock_holders.jsonl"))
    res = replay(out, "--json")
    assert res.exit_code == 1, res.output
    assert orjson.loads(res.output.strip().splitlines()[-1])["position"] == "row"
    text = replay(out).output
    assert "row 10" in text and " line " not in text
    assert "line 10" in replay(TRACES / "wrong_two_lock_holders.jsonl").output
