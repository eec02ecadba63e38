"""The command line's one error path (docs/cli-errors.md) and the trace readers' answers to
bad or unusual input (issue 14). Everything goes through the CLI's own entry point."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from rocketspec.cli import main

TRACES = Path(__file__).parent / "traces"
VALID = TRACES / "valid_concurrent.jsonl"
ERROR_KEYS = {"ok", "verdict", "exit_code", "command", "error", "message", "file", "line", "event", "field"}


def cli(*args, input=None, env=None):
    return CliRunner().invoke(main, [str(a) for a in args], input=input, env=env)


def bad_input(res, *needles, line=None):
    """Exit 2, one located line on stderr, no traceback; returns the message."""
    assert res.exit_code == 2, (res.exit_code, res.output, res.exception)
    err = res.stderr.strip()
    assert err.startswith("error: ") and "\n" not in err, err
    assert "Traceback" not in res.output
    for n in needles:
        assert n in err, (n, err)
    if line is not None:
        assert f":{line}:" in err, err
    return err


def json_error(res, verdict="bad_input"):
    d = json.loads(res.stdout)
    assert set(d) >= ERROR_KEYS and d["ok"] is False and d["verdict"] == verdict
    assert d["exit_code"] == res.exit_code
    return d


def valid_lines() -> list[bytes]:
    return VALID.read_bytes().splitlines(keepends=True)


# ------------------------------------------------------------------ the error path

def test_directory_given_as_the_trace(tmp_path):
    d = tmp_path / "x.jsonl"
    d.mkdir()
    bad_input(cli("check", d), str(d), "directory")
    d2 = json_error(cli("check", d, "--json"))
    assert d2["file"] == str(d) and "directory" in d2["message"] and d2["command"] == "check"


def test_an_unexpected_exception_is_a_bug_exit_3(monkeypatch, tmp_path):
    import rocketspec.spec.replay as replay

    def boom(*a, **k):
        raise ZeroDivisionError("planted")

    monkeypatch.setattr(replay, "check_trace", boom)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    res = cli("check", VALID)
    assert res.exit_code == 3
    assert "bug in rocketspec" in res.stderr and "report" in res.stderr and "Traceback" not in res.stderr
    res = cli("check", VALID, "--json")
    d = json_error(res, "internal_error")
    assert d["exit_code"] == 3 and "ZeroDivisionError" in d["error"]
    tb = Path(d["report"]["traceback"])
    assert tb.parent == tmp_path and "ZeroDivisionError: planted" in tb.read_text()
    # --debug (or ROCKETSPEC_DEBUG=1) prints the traceback instead
    res = cli("--debug", "check", VALID)
    assert res.exit_code == 3 and "Traceback" in res.stderr
    res = cli("check", VALID, env={"ROCKETSPEC_DEBUG": "1"})
    assert res.exit_code == 3 and "Traceback" in res.stderr


def test_usage_errors_are_json_with_json():
    res = cli("check", VALID, "--json", "--max-violations", "many")
    d = json_error(res)
    assert res.exit_code == 2 and "--max-violations" in d["error"]
    bad_input(cli("check", VALID, "--nope"), "--nope")


def test_one_error_schema_for_every_command(tmp_path):
    shapes = []
    for args in (["check", tmp_path / "none.jsonl"], ["explore", "--scope", "nope"],
                 ["profiles", "nope"], ["prove", "--profile", "nope"]):
        res = cli(*args, "--json")
        d = json_error(res)
        shapes.append(set(d))
    assert all(s == shapes[0] for s in shapes)


def test_real_process_exit_codes(tmp_path):
    d = tmp_path / "t.jsonl"
    d.mkdir()
    r = subprocess.run([sys.executable, "-m", "rocketspec.cli", "check", str(d)], capture_output=True, text=True)
    r = subprocess.run([sys.executable, "-c", "from rocketspec.cli import main; main()", "check", str(d)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr and str(d) in r.stderr


# ------------------------------------------------------------------ trace readers

def test_parquet_with_corrupted_pages(tmp_path):
    from rocketspec.traces.io import iter_trace, write_trace

    p = tmp_path / "t.parquet"
    write_trace(p, iter_trace(VALID))
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(p).metadata
    data = bytearray(p.read_bytes())
    for c in range(meta.num_columns):  # flip bytes inside each column chunk's pages; the footer stays valid
        col = meta.row_group(0).column(c)
        start = col.dictionary_page_offset or col.data_page_offset
        for i in range(start + 8, start + col.total_compressed_size, 5):
            data[i] ^= 0x5A
    p.write_bytes(bytes(data))
    pq.ParquetFile(p)  # the footer still reads
    bad_input(cli("check", p), str(p), "Parquet")
    assert json_error(cli("check", p, "--json"))["file"] == str(p)


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_compressed_traces_are_read_by_content_not_name(tmp_path, codec):
    from rocketspec.traces.io import iter_trace

    raw = VALID.read_bytes()
    if codec == "gzip":
        packed = gzip.compress(raw)
    else:
        import zstandard
        packed = zstandard.ZstdCompressor().compress(raw)
    for name in (f"t.jsonl.{codec}", "t.jsonl", "trace"):
        p = tmp_path / name
        p.write_bytes(packed)
        res = cli("check", p, "--json")
        assert res.exit_code == 0, res.output
        assert json.loads(res.stdout)["verdict"] == "holds"
        assert list(iter_trace(p)) == list(iter_trace(VALID))
    res = cli("check", "-", "--json", input=packed)
    assert res.exit_code == 0 and json.loads(res.stdout)["verdict"] == "holds"
    cut = tmp_path / "cut"
    cut.write_bytes(packed[: len(packed) // 2])
    bad_input(cli("check", cut), str(cut))


def test_invalid_utf8_is_named_with_its_line(tmp_path):
    lines = valid_lines()
    lines[3] = lines[3].replace(b'"broker-a"', b'"broker-\xff"', 1)
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"".join(lines))
    bad_input(cli("check", p), "UTF-8", line=4)
    assert json_error(cli("check", p, "--json"))["line"] == 4


def test_pretty_printed_json_is_refused_saying_one_object_per_line(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(json.dumps(json.loads(l), indent=2) for l in valid_lines()[:3]) + "\n")
    bad_input(cli("check", p), "one JSON object per line", line=1)


def test_duplicate_keys_are_refused(tmp_path):
    lines = valid_lines()
    assert lines[4].rstrip().endswith(b"}")
    lines[4] = lines[4].rstrip()[:-1] + b',"seq":999}\n'
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"".join(lines))
    bad_input(cli("check", p), "duplicate key 'seq'", line=5)
    # also when the writer is not orjson (spaces after separators)
    loose = [json.dumps(json.loads(l)).encode() + b"\n" for l in valid_lines()]
    loose[2] = loose[2].rstrip()[:-1] + b', "kind": "x"}\n'
    p.write_bytes(b"".join(loose))
    bad_input(cli("check", p), "duplicate key 'kind'", line=3)
    p.write_bytes(b"".join(json.dumps(json.loads(l)).encode() + b"\r\n" for l in valid_lines()))
    assert cli("check", p).exit_code == 0


def test_unsupported_schema_version_is_refused(tmp_path):
    lines = valid_lines()
    first = json.loads(lines[0])
    first["schema_version"] = 99
    p = tmp_path / "t.jsonl"
    p.write_bytes(orjson.dumps(first) + b"\n" + b"".join(lines[1:]))
    err = bad_input(cli("check", p), "schema_version 99", "not supported", line=1)
    from rocketspec.traces.schema import SUPPORTED_VERSIONS
    assert all(str(v) in err for v in SUPPORTED_VERSIONS)


def test_events_after_trace_ended_are_refused(tmp_path):
    lines = valid_lines()
    last = json.loads(lines[-1])
    assert last["kind"] == "trace_ended"
    extra = dict(last, seq=last["seq"] + 1, ts=last["ts"], kind="broker_started", broker="broker-a")
    extra.pop("reason", None)
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"".join(lines) + orjson.dumps(extra) + b"\n")
    bad_input(cli("check", p), "after trace_ended", line=len(lines) + 1)


def test_bare_command_prints_its_usage():
    res = cli()
    assert res.exit_code == 2 and "Usage:" in res.output and "Commands:" in res.output
    d = json_error(cli("nope", "--json"))
    assert "No such command" in d["message"]


def test_kind_of_the_wrong_type(tmp_path):
    lines = valid_lines()
    ev = json.loads(lines[2])
    ev["kind"] = [ev["kind"]]
    lines[2] = orjson.dumps(ev) + b"\n"
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"".join(lines))
    bad_input(cli("check", p), "'kind' must be a string", line=3)


def test_a_huge_line_costs_no_more_than_the_line_limit(tmp_path, monkeypatch):
    from rocketspec.traces import io

    monkeypatch.setattr(io, "MAX_LINE", 4096)
    p = tmp_path / "t.jsonl"
    p.write_bytes(valid_lines()[0] + b'{"seq": 1, "ts": 0, "kind": "' + b"x" * 100_000 + b'"}\n')
    bad_input(cli("check", p), "longer than", line=2)


def test_simulate_max_events_is_a_budget_exit_4(tmp_path):
    """A run asked for more than --max-events allows stops there and exits 4 (incomplete), with
    every event written up to the budget and no trace_ended; the fuzz run's orderly queue that
    SUSPENDs forever over a 6 h drain (tests/fuzz_corpus/scenario/5494f6a5cf0075c8.toml) is one."""
    scen = Path(__file__).parent / "fuzz_corpus" / "scenario" / "5494f6a5cf0075c8.toml"
    out = tmp_path / "t.jsonl"
    r = cli("simulate", "--scenario", scen, "--out", out, "--quiet", "--seed", "869", "--max-events", "5000")
    assert r.exit_code == 4, r.output
    assert "INCOMPLETE" in r.stderr and "5000 events" in r.stderr
    lines = out.read_text().splitlines()
    assert len(lines) == 5000
    assert [orjson.loads(x)["seq"] for x in lines] == list(range(5000))
    assert orjson.loads(lines[-1])["kind"] != "trace_ended"
    assert cli("check", out).exit_code == 0
    # a budget the run stays under changes nothing
    full = tmp_path / "full.jsonl"
    assert cli("simulate", "--scenario", "basic", "--out", full, "--quiet").exit_code == 0
    capped = tmp_path / "capped.jsonl"
    assert cli("simulate", "--scenario", "basic", "--out", capped, "--quiet",
               "--max-events", "10000000").exit_code == 0
    assert full.read_bytes() == capped.read_bytes()
    assert cli("simulate", "--events", "10", "--max-events", "5", "--out", tmp_path / "d").exit_code == 2
