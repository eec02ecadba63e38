"""Values at the edge of what a trace may hold: integers from 2^63 up to 2^64-1 (JSON, and
Parquet uint64 columns) are judged as ordinary numbers by `check`, in text and in --json,
never an internal error."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketspec.cli import main

VALID = Path(__file__).parent / "traces" / "valid_concurrent.jsonl"
EVENTS = [json.loads(line) for line in VALID.read_text().splitlines() if line.strip()]
INT_FIELDS = [(i, k) for i, e in enumerate(EVENTS) for k, v in e.items()
              if isinstance(v, int) and not isinstance(v, bool) and k not in ("seq", "schema_version")]
HUGE = [2**63 - 1, 2**63, 2**63 + 1, 2**64 - 2, 2**64 - 1]


def judged(res, as_json=False):
    assert res.exit_code in (0, 1, 2), (res.exit_code, res.output)
    assert "internal error" not in res.output and "Traceback" not in res.output
    if as_json:
        assert json.loads(res.stdout)["exit_code" if res.exit_code == 2 else "verdict"] is not None
    elif res.exit_code == 2:
        err = res.stderr.strip()
        assert err.startswith("error: ") and "\n" not in err and ".jsonl" in err, err


def test_an_offset_of_2_64_minus_1_is_judged_in_json(tmp_path):
    events = [dict(e) for e in EVENTS]
    stored = next(e for e in events if e["kind"] == "message_stored")
    stored["offset"] = 2**64 - 1
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps(e) + "\n" for e in events))
    res = CliRunner().invoke(main, ["check", str(p), "--json"])
    judged(res, as_json=True)
    assert res.exit_code == 1 and json.loads(res.stdout)["verdict"] == "violated"
    judged(CliRunner().invoke(main, ["check", str(p), "--verbose"]))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.sampled_from(INT_FIELDS), value=st.sampled_from(HUGE), as_json=st.booleans())
def test_any_integer_up_to_2_64_minus_1_is_judged(tmp_path, where, value, as_json):
    i, key = where
    events = [dict(e) for e in EVENTS]
    events[i][key] = value
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps(e) + "\n" for e in events))
    judged(CliRunner().invoke(main, ["check", str(p), *(["--json"] if as_json else [])]), as_json)


@pytest.mark.parametrize("column", ["offset", "next_offset", "commit_offset", "offsets"])
def test_parquet_uint64_columns_are_judged(tmp_path, column):
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = tmp_path / "t.parquet"
    assert CliRunner().invoke(main, ["simulate", "--scenario", "basic", "--out", str(src), "--quiet"]).exit_code == 0
    t = pq.read_table(src)
    values = t.column(column).to_pylist()
    if column == "offsets":
        col = pa.array([None if v is None else [2**64 - 1] * len(v) for v in values], type=pa.list_(pa.uint64()))
    else:
        col = pa.array([None if v is None else 2**64 - 1 for v in values], type=pa.uint64())
    out = tmp_path / "u.parquet"
    pq.write_table(t.set_column(t.schema.get_field_index(column), pa.field(column, col.type), col), out)
    for extra in ([], ["--json"]):
        res = CliRunner().invoke(main, ["check", str(out), *extra])
        assert res.exit_code in (0, 1), (res.exit_code, res.output)


@pytest.mark.parametrize("command", [["explain"], ["minimize", "-o", "{out}"], ["history"]])
def test_other_json_reports_carry_an_offset_of_2_64_minus_1(tmp_path, command):
    # explain, minimize and history print the trace's values in their --json reports as check
    # does: orjson stops at 64 bits, a report with 2^64-1 (or one past it) must still be written
    events = [dict(e) for e in EVENTS]
    stored = next(e for e in events if e["kind"] == "message_stored")
    stored["offset"] = 2**64 - 1
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps(e) + "\n" for e in events))
    args = [a.replace("{out}", str(tmp_path / "m.jsonl")) for a in command]
    res = CliRunner().invoke(main, [args[0], str(p), *args[1:], "--json"])
    assert res.exit_code in (0, 1, 2), (res.exit_code, res.output)
    assert "internal error" not in res.output
    json.loads(res.stdout.strip().splitlines()[-1])
