"""The gate fails closed on its inputs (issue 44): histories (RocketMQ message traces, OpenChaos)
in its trace directories or named in the config are cases judged as `rocketspec history`
judges them, against `[traces.expect]`; a gate that judges no case, and an expectation naming
no file, are bad configuration (exit 2); an unreadable record fails a history case unless the
config allows a share. The same inputs are pytest-plugin items."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from rocketspec.cli import main

pytest_plugins = ["pytester"]

HIST = Path(__file__).parent / "fixtures" / "history"
MSGTRACE = HIST / "real-basic.msgtrace"
CHAOS = HIST / "2026-11-24-00-00-00-rocketmq-chaos-history-file"
NO_SUITES = "budget_s = 60\nscopes = []\n[statemachine]\nenabled = false\n"


def gate(cfg: Path, *extra):
    res = CliRunner().invoke(main, ["gate", "--config", str(cfg), "--json", "--out-dir", str(cfg.parent / "out"),
                                    *extra])
    return res.exit_code, (orjson.loads(res.stdout) if res.stdout.strip() else None), res.output


def write_gate(tmp_path: Path, traces: str) -> Path:
    cfg = tmp_path / "gate.toml"
    cfg.write_text(NO_SUITES + "[traces]\n" + traces)
    return cfg


@pytest.fixture
def gotraces(tmp_path):
    d = tmp_path / "gotraces"
    d.mkdir()
    shutil.copy(MSGTRACE, d)
    shutil.copy(CHAOS, d)
    return d


def lossy_chaos(path: Path, bad_lines: int = 0, lose: bool = True) -> Path:
    """An OpenChaos history in the first Recorder's layout (io.openmessaging.chaos: REQUEST with
    6 fields, RESPONSE with 8): the consumer dequeues message 0, then 1 and 2 are sent and only
    2 is dequeued (with `lose`). Complete (the harness's default): H-DELIVER-1 is violated."""
    def send(v, ts):
        return [f"0\tenqueue\tREQUEST\t{v}\tnull\t{ts}", f"0\tenqueue\tRESPONSE\tSUCCESS\t{v}\tnull\t{ts + 1}\t1"]

    def take(v, ts):
        return [f"1\tdequeue\tRESPONSE\tSUCCESS\t{v}\tnull\t{ts}\t0"]

    rows = [*send(0, 1000), *take(0, 1500), *send(1, 1600), *send(2, 1700), *take(2, 2000)]
    if not lose:
        rows += take(1, 2100)
    rows += ["1\tdequeue\tRESPONSE\tSUCCESS"] * bad_lines
    path.write_text("\n".join(rows) + "\n")
    return path


def test_a_directory_of_histories_is_judged_not_passed_on_nothing(tmp_path, gotraces):
    # before: `0 cases ... exit 0`
    code, d, out = gate(write_gate(tmp_path, 'dirs = ["gotraces"]\n'))
    assert code == 0, out
    got = {c["name"]: c for c in d["cases"]}
    assert set(got) == {MSGTRACE.name, CHAOS.name}
    assert all(c["status"] == "passed" and c["suite"] == "traces" for c in got.values())
    assert "openchaos, 100 sends" in got[CHAOS.name]["message"]
    assert "msgtrace, 40 sends" in got[MSGTRACE.name]["message"]


def test_a_gate_that_judges_nothing_is_bad_configuration(tmp_path):
    d = tmp_path / "gotraces"
    d.mkdir()
    (d / "msgtrace.txt").write_text("not named as a history\n")
    code, _, out = gate(write_gate(tmp_path, 'dirs = ["gotraces"]\n'))
    assert code == 2, out
    assert "the gate judged no case" in out and "msgtrace.txt" in out and "0 scopes" in out


def test_an_expectation_naming_no_file_is_bad_configuration(tmp_path, gotraces):
    for key, named in (("missing.jsonl", "no file named missing.jsonl"),
                       ("gotraces/missing.msgtrace", f"no such file: {gotraces / 'missing.msgtrace'}")):
        code, _, out = gate(write_gate(tmp_path, f'dirs = ["gotraces"]\n[traces.expect]\n"{key}" = "holds"\n'))
        assert code == 2, out
        assert f"traces.expect.{key}" in out and named in out, out


def test_a_history_is_judged_against_its_expected_guarantees(tmp_path):
    d = tmp_path / "h"
    d.mkdir()
    lossy_chaos(d / "run-chaos-history-file")
    # undeclared: it must hold, and it loses message 1
    code, res, out = gate(write_gate(tmp_path, 'dirs = ["h"]\n'))
    assert code == 1, out
    assert res["cases"][0]["message"].startswith("verdict H-DELIVER-1 (openchaos")
    # declared by the config: passes (the same verdict and exit codes as `rocketspec history`)
    code, res, out = gate(write_gate(tmp_path, 'dirs = ["h"]\n[traces.expect]\n"run-chaos-history-file" = '
                                               '["H-DELIVER-1"]\n'))
    assert code == 0, out
    hist = CliRunner().invoke(main, ["history", str(d / "run-chaos-history-file"), "--quiet"])
    assert hist.exit_code == 1 and "H-DELIVER-1  VIOLATED" in hist.output


def test_expectations_of_the_wrong_kind_are_bad_configuration(tmp_path, gotraces):
    code, _, out = gate(write_gate(tmp_path, f'dirs = ["gotraces"]\n[traces.expect]\n"{CHAOS.name}" = '
                                             '["INV-LOSS-1"]\n'))
    assert code == 2 and "is a history" in out, out
    code, _, out = gate(write_gate(tmp_path, 'dirs = ["gotraces"]\n[traces.expect]\n"x" = ["H-NOPE"]\n'))
    assert code == 2 and "traces.expect.x" in out, out


def test_an_unreadable_record_fails_a_history_case_unless_a_share_is_allowed(tmp_path):
    d = tmp_path / "h"
    d.mkdir()
    p = lossy_chaos(d / "run-chaos-history-file", bad_lines=1, lose=False)
    code, res, out = gate(write_gate(tmp_path, 'dirs = ["h"]\n'))
    assert code == 2, out
    msg = res["cases"][0]["message"]
    assert res["cases"][0]["status"] == "bad_input"
    assert msg.startswith(f"{p}:10: 1 of 10 record(s) could not be read (none allowed"), msg
    # allowed: judged as `rocketspec history` judges it (lossy, since a record is missing)
    code, res, out = gate(write_gate(tmp_path, 'dirs = ["h"]\nmax_unreadable = 0.1\n'))
    assert code == 0 and res["cases"][0]["status"] == "passed", out
    code, _, out = gate(write_gate(tmp_path, 'dirs = ["h"]\nmax_unreadable = 2\n'))
    assert code == 2 and "traces.max_unreadable" in out


def test_histories_named_in_the_config_with_their_options(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copy(MSGTRACE, runs / "msgtrace.txt")       # as `record --random` names it: not a case by name
    cfg = write_gate(tmp_path, 'dirs = []\nhistories = ["runs/msgtrace.txt"]\n'
                               '[traces.history."runs/msgtrace.txt"]\nformat = "msgtrace"\ncomplete = false\n')
    code, res, out = gate(cfg)
    assert code == 0 and res["cases"][0]["name"] == "msgtrace.txt", out
    cfg = write_gate(tmp_path, 'dirs = []\nhistories = ["runs/nope.txt"]\n')
    code, _, out = gate(cfg)
    assert code == 2 and "traces.histories[0]" in out and "nope.txt" in out
    cfg = write_gate(tmp_path, 'dirs = []\nhistories = ["runs/msgtrace.txt"]\n[traces.history."msgtrace.txt"]\n'
                               'format = "bodies"\n')
    code, _, out = gate(cfg)
    assert code == 2 and "traces.history.msgtrace.txt.format" in out


def test_a_message_trace_export_named_jsonl_is_a_history(tmp_path):
    d = tmp_path / "h"
    d.mkdir()
    bodies = MSGTRACE.read_text(encoding="utf-8").splitlines()
    with open(d / "export.jsonl", "w") as fh:
        for b in bodies:
            fh.write(json.dumps({"body": b, "bornHost": "/127.0.0.1:40001"}) + "\n")
    code, res, out = gate(write_gate(tmp_path, 'dirs = ["h"]\n'))
    assert code == 0 and "(msgtrace, 40 sends" in res["cases"][0]["message"], out


def test_files_that_are_not_cases_are_said(tmp_path, gotraces):
    (gotraces / "notes.txt").write_text("x")
    res = CliRunner().invoke(main, ["gate", "--config", str(write_gate(tmp_path, 'dirs = ["gotraces"]\n'))])
    assert res.exit_code == 0 and "note: not cases: 1 file(s)" in res.output and "notes.txt" in res.output


# ------------------------------------------------------------------ the pytest plugin

def run_plugin(pytester, *args):
    return pytester.runpytest(*map(str, args), "-p", "no:cacheprovider", "-o", "addopts=", "-rA")


def test_plugin_histories_are_items(pytester):
    d = pytester.mkdir("h")
    shutil.copy(MSGTRACE, d)
    shutil.copy(CHAOS, d)
    lossy_chaos(d / "lossy-chaos-history-file")
    res = run_plugin(pytester, "--rocketspec-traces", d)
    res.assert_outcomes(passed=2, failed=1)
    assert "verdict H-DELIVER-1" in res.stdout.str()
    res = run_plugin(pytester, "--rocketspec-traces", d, "--rocketspec-expect", "lossy-chaos-history-file=H-DELIVER-1")
    res.assert_outcomes(passed=3)


def test_plugin_refuses_a_directory_with_no_case_and_an_expectation_with_no_file(pytester):
    d = pytester.mkdir("h")
    (d / "msgtrace.txt").write_text("x")
    res = run_plugin(pytester, "--rocketspec-traces", d)
    assert res.ret == 4
    res.stderr.fnmatch_lines(["*--rocketspec-traces*msgtrace.txt*and no case*"])
    shutil.copy(CHAOS, d)
    res = run_plugin(pytester, "--rocketspec-traces", d, "--rocketspec-expect", "gone.msgtrace=holds")
    assert res.ret == 4
    res.stderr.fnmatch_lines(["*--rocketspec-expect gone.msgtrace=holds: no collected trace or history*"])


def test_plugin_named_history_and_unreadable_share(pytester):
    d = pytester.mkdir("h")
    p = lossy_chaos(d / "any-name.txt", bad_lines=1, lose=False)
    res = run_plugin(pytester, "--rocketspec-histories", p)
    res.assert_outcomes(failed=1)
    assert "bad input" in res.stdout.str() and "1 of 10 record(s) could not be read" in res.stdout.str()
    res = run_plugin(pytester, "--rocketspec-histories", p, "--rocketspec-max-unreadable", "0.1")
    res.assert_outcomes(passed=1)
