"""`rocketspec check` on the hand-written traces of tests/traces (see its README)."""
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from rocketspec.cli import main

TRACES = Path(__file__).parent / "traces"

EXPECTED = {
    "valid_concurrent.jsonl": None,
    "valid_orderly.jsonl": None,
    "valid_dlq.jsonl": None,
    "wrong_offset_past_unconsumed.jsonl": "INV-OFFSET-3",
    "wrong_broker_commit_past_unconsumed.jsonl": "INV-OFFSET-3",
    "wrong_two_lock_holders.jsonl": "INV-LOCK-1",
    "wrong_consume_after_drop.jsonl": "INV-DROP-1",
    "wrong_17th_retry.jsonl": "INV-RETRY-1",
    "wrong_dlq_consume.jsonl": "INV-DLQ-1",
    "wrong_loss_at_quiescence.jsonl": "INV-LIVE-1",
    "wrong_two_pullers.jsonl": "INV-PULL-1",
}

BAD = {
    "bad_malformed.jsonl": (6, "malformed JSON"),
    "bad_missing_field.jsonl": (6, "missing required field 'offset'"),
    "bad_unknown_kind.jsonl": (6, "unknown event kind 'message_teleported'"),
    "bad_out_of_order.jsonl": (8, "out of order"),
    "bad_unknown_profile.jsonl": (1, "unknown profile 'rocketmq-0.0.1'"),
}


def run(*args):
    return CliRunner().invoke(main, ["check", *map(str, args)])


@pytest.mark.parametrize("name,inv", sorted(EXPECTED.items()))
def test_verdict_and_invariant(name, inv):
    res = run(TRACES / name, "--json")
    rep = orjson.loads(res.output)
    if inv is None:
        assert res.exit_code == 0, rep["violations"]
        assert rep["verdict"] == "holds"
        return
    assert res.exit_code == 1
    assert rep["verdict"] == "violated"
    ids = [v["invariant"] for v in rep["violations"]]
    assert inv in ids, ids
    v = next(v for v in rep["violations"] if v["invariant"] == inv)
    # the report names the key, the event (seq and line), and the last accepted state of the key
    assert v["key"] and v["seq"] is not None and v["line"] == v["seq"] + 1
    assert v["event"]["seq"] == v["seq"]
    assert isinstance(v["last_state"], dict)
    assert v["message"]


@pytest.mark.parametrize("name", [n for n, inv in EXPECTED.items() if inv])
def test_text_report_is_readable(name):
    res = run(TRACES / name)
    assert res.exit_code == 1
    lines = res.output.splitlines()
    # the verdict on the first line, the violated invariant and its cause right after
    assert "VIOLATED" in lines[0] and name in lines[0]
    assert lines[2].startswith("  INV-") and lines[3].strip()      # the first error, then its cause
    out = res.output
    assert EXPECTED[name] in out
    assert "event: seq" in out and "line" in out and "key:" in out
    assert "Traceback" not in out
    # no state dump without --verbose: no JSON object, no "last accepted state"
    assert "last accepted state of the key" not in out
    assert not [ln for ln in lines if ln.strip() in ("{", "}") or ln.strip().startswith('"')]
    assert "--verbose" in out      # and it says how to get it


@pytest.mark.parametrize("name", [n for n, inv in EXPECTED.items() if inv])
def test_verbose_adds_the_state_of_the_key(name):
    res = run(TRACES / name, "--verbose")
    assert res.exit_code == 1
    assert "last accepted state of the key" in res.output
    assert "VIOLATED" in res.output.splitlines()[0]


@pytest.mark.parametrize("name,expect", sorted(BAD.items()))
def test_bad_input_exit_2_with_line(name, expect):
    line, text = expect
    res = run(TRACES / name)
    assert res.exit_code == 2
    assert f"{name}:{line}:" in res.output
    assert text in res.output
    assert "Traceback" not in res.output
    res = run(TRACES / name, "--json")
    assert res.exit_code == 2
    assert orjson.loads(res.output)["line"] == line


def test_missing_file_and_unknown_profile_option():
    res = run(TRACES / "nope.jsonl")
    assert res.exit_code == 2 and "no such file" in res.output
    res = run(TRACES / "valid_concurrent.jsonl", "--profile", "rocketmq-9")
    assert res.exit_code == 2 and "unknown profile" in res.output


def test_profile_option_overrides_trace(tmp_path):
    res = run(TRACES / "valid_concurrent.jsonl", "--profile", "rocketmq-4.9.8", "--json")
    assert res.exit_code == 0
    assert orjson.loads(res.output)["profile"] == "rocketmq-4.9.8"


def test_parquet_input(tmp_path):
    from rocketspec.traces.io import iter_trace, write_trace

    out = tmp_path / "t.parquet"
    write_trace(out, iter_trace(TRACES / "wrong_two_lock_holders.jsonl"))
    res = run(out, "--json")
    assert res.exit_code == 1
    rep = orjson.loads(res.output)
    assert "INV-LOCK-1" in [v["invariant"] for v in rep["violations"]]
    assert rep["position"] == "row"


def test_parquet_findings_are_placed_by_row_not_line(tmp_path):
    from rocketspec.traces.io import iter_trace, write_trace

    out = tmp_path / "t.parquet"
    write_trace(out, iter_trace(TRACES / "wrong_two_lock_holders.jsonl"))
    text = run(out).output
    assert "event: seq 9, row 10," in text
    assert " line " not in text
    # the same trace in JSON Lines keeps its lines
    assert "event: seq 9, line 10," in run(TRACES / "wrong_two_lock_holders.jsonl").output
