"""The gate's client suite (conformance/client_gate.py, docs/gate.md "A client under test"):
its configuration fails closed (exit 2, naming the field), and the judging of a client's runs
(check at the trace's level, history black-box, against [client.expect]) on the committed real
Go recordings, the recording step replaced by a copy of them (the real run: test_gate_client_real.py)."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from rocketspec.conformance import client_gate, gate
from rocketspec.errors import UserError

ROOT = Path(__file__).resolve().parent.parent
GO = ROOT / "tests" / "fixtures" / "real" / "go"
CLIENT = "/bin/true"      # any program: the recording is replaced below


def config(tmp_path, client_toml: str) -> Path:
    p = tmp_path / "gate.toml"
    p.write_text('budget_s = 300\nscopes = []\n[statemachine]\nenabled = false\n[traces]\ndirs = []\n'
                 '[client]\n' + client_toml)
    return p


@pytest.mark.parametrize("toml, field, words", [
    ('command = "./no-such-client"\nscenarios = ["real-basic"]\n', "client.command", "no-such-client is not an executable"),
    (f'command = "{CLIENT}"\nscenarios = []\n', "client.scenarios", "non-empty list"),
    (f'command = "{CLIENT}"\nscenarios = ["no-such-scenario"]\n', "client.scenarios[0]", "not a scenario"),
    (f'command = "{CLIENT}"\nscenarios = ["real-basic"]\n[client.expect]\n"real-retry-dlq" = "holds"\n',
     "client.expect.real-retry-dlq", "not one of client.scenarios"),
    (f'command = "{CLIENT}"\nscenarios = ["real-basic"]\n[client.expect]\n"real-basic" = ["H-NOPE"]\n',
     "client.expect.real-basic", "expected \"holds\" or a list"),
    (f'command = "{CLIENT}"\nscenarios = ["real-basic"]\nrelease = "3.0"\n', "client.release", "unknown RocketMQ release"),
    (f'command = "{CLIENT}"\nscenarios = ["real-basic"]\nretries = 2\n', "client", "unknown keys ['retries']"),
])
def test_a_bad_client_table_is_bad_configuration(tmp_path, toml, field, words):
    with pytest.raises(UserError) as exc:
        gate.load_config(str(config(tmp_path, toml)))
    assert exc.value.field == field and words in str(exc.value)


def test_the_program_is_relative_to_the_config_file(tmp_path):
    prog = tmp_path / "bin" / "client"
    prog.parent.mkdir()
    shutil.copy("/bin/true", prog)
    cfg, _ = gate.load_config(str(config(tmp_path, 'command = "bin/client --flag"\nscenarios = ["real-basic"]\n')))
    assert cfg["client"]["command"] == f"{prog} --flag"


def with_recordings(monkeypatch, traces: dict):
    """The recording step gives the committed real Go recording of each scenario (and its
    message traces, the file beside it, when the config asks for them)."""
    def fake(cl, sc, folder, budget_s, case_cls, name, record=None):
        out = folder / f"{sc}.jsonl"
        shutil.copy(traces[sc], out)
        case = case_cls("client", f"{name} record", message="copied " + traces[sc].name)
        case.artifacts.append(str(out))
        if cl["msgtrace"]:
            mt = folder / f"{sc}.msgtrace"
            shutil.copy(traces[sc].with_suffix(".msgtrace"), mt)
            case.artifacts.append(str(mt))
        return case
    monkeypatch.setattr(client_gate, "_record", fake)


def run(tmp_path, toml):
    cfg, source = gate.load_config(str(config(tmp_path, toml)))
    return gate.run_gate(cfg, source=source, out_dir=str(tmp_path / "out"))


def test_the_go_orderly_over_retry_fails_the_gate_unless_declared(tmp_path, monkeypatch):
    with_recordings(monkeypatch, {"real-orderly-dlq": GO / "real-orderly-dlq.jsonl"})
    res = run(tmp_path, f'command = "{CLIENT}"\nscenarios = ["real-orderly-dlq"]\n')
    assert res.exit_code == 1
    failed = [c for c in res.cases if c.status == "failed"]
    assert [c.name for c in failed] == ["real-orderly-dlq [true] check", "real-orderly-dlq [true] history"]
    assert "verdict H-RETRY-1" in failed[1].message and "expected holds" in failed[1].message
    # the Java client's declared verdict (INV-DLQ-1, in the scenario) is not the Go client's: check
    # sees the over-retry in the part of INV-RETRY-1 its level judges
    assert "INV-RETRY-1" in failed[0].message and "observed broker, client_reports:" in failed[0].message

    res = run(tmp_path, f'command = "{CLIENT}"\nscenarios = ["real-orderly-dlq"]\n'
                        '[client.expect]\n"real-orderly-dlq" = ["H-RETRY-1", "INV-RETRY-1"]\n')
    assert res.exit_code == 0, [(c.name, c.message) for c in res.cases]
    row = next(x for x in res.reports if x.startswith("| real-orderly-dlq |"))
    assert row.startswith("| real-orderly-dlq | copied real-orderly-dlq.jsonl | INV-RETRY-1 (")
    assert row.endswith(" rules judged) | H-RETRY-1 | not recorded | H-RETRY-1, INV-RETRY-1 | passed (declared) |")


def test_a_declared_finding_that_is_gone_fails(tmp_path, monkeypatch):
    with_recordings(monkeypatch, {"real-basic": GO / "real-basic-long.jsonl"})
    res = run(tmp_path, f'command = "{CLIENT}"\nscenarios = ["real-basic"]\n[client.expect]\n"real-basic" = ["H-RETRY-1"]\n')
    assert res.exit_code == 1
    his = next(c for c in res.cases if c.name.endswith(" history"))
    assert his.status == "failed" and "verdict holds" in his.message


def test_the_coverage_report_names_what_the_runs_exercised(tmp_path, monkeypatch):
    with_recordings(monkeypatch, {"real-orderly-dlq": GO / "real-orderly-dlq.jsonl",
                                  "real-basic": GO / "real-basic-long.jsonl"})
    res = run(tmp_path, f'command = "{CLIENT}"\nscenarios = ["real-basic", "real-orderly-dlq"]\n'
                        '[client.expect]\n"real-orderly-dlq" = ["H-RETRY-1", "INV-RETRY-1"]\n')
    assert res.exit_code == 0
    text = "\n".join(res.reports)
    assert "coverage of 2 run(s) (observed: broker, client_reports)" in text
    # judged rules, each with the events it read or did not see
    assert "    INV-DLQ-1: exercised: message_stored x" in text
    assert "INV-CLIENT-1: partly exercised: client_started x3; never seen: client_stopped, client_crashed" in text
    assert "    H-ORDER-1: judged on 1 run(s) (34 listener calls)" in text
    # no kill or pause was run: the report says so; a 4.9.8 run owes no POP kind
    never = next(x for x in res.reports if x.startswith("    never appeared:"))
    assert "client_crashed" in never and "client_paused" in never and "message_popped" not in never
    # POP rules have nothing to judge under 4.9.8: not listed as partly exercised
    assert not any(x.startswith("    INV-POP-") and "exercised" in x for x in res.reports)


def test_the_cli_prints_the_table_and_coverage_before_the_verdict(tmp_path):
    # a real program the driver protocol cannot even start would need RocketMQ: here, the config
    # error path of the CLI, one line, exit 2
    p = config(tmp_path, 'command = "./missing"\nscenarios = ["real-basic"]\n')
    r = subprocess.run([str(ROOT / ".venv" / "bin" / "rocketspec"), "gate", "--config", str(p)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "client.command" in r.stderr and "Traceback" not in r.stderr


def test_a_scenario_file_is_relative_to_the_config_and_named_by_its_stem(tmp_path):
    (tmp_path / "sc").mkdir()
    src = ROOT / "examples" / "go-client" / "mutants" / "orderly-burst.toml"
    shutil.copy(src, tmp_path / "sc" / "burst.toml")
    cfg, _ = gate.load_config(str(config(tmp_path, f'command = "{CLIENT}"\nscenarios = ["sc/burst.toml"]\n'
                                                   '[client.expect]\n"burst" = ["H-RETRY-1"]\n')))
    path = str(tmp_path / "sc" / "burst.toml")
    assert cfg["client"]["scenarios"] == [path] and cfg["client"]["expect"] == {path: ["H-RETRY-1"]}
    assert client_gate.label(path) == "burst"


def test_the_clients_own_message_traces_are_a_history_case(tmp_path, monkeypatch):
    # real-retry-dlq through the Go client with its library's message trace on (record --msgtrace)
    with_recordings(monkeypatch, {"real-retry-dlq": ROOT / "tests" / "fixtures" / "go-client" / "real-retry-dlq.jsonl"})
    res = run(tmp_path, f'command = "{CLIENT}"\nmsgtrace = true\nscenarios = ["real-retry-dlq"]\n')
    assert res.exit_code == 0, [(c.name, c.status, c.message) for c in res.cases]
    mt = next(c for c in res.cases if c.name.endswith(" msgtrace history"))
    assert mt.status == "passed" and "msgtrace, 20 sends, 20 deliveries" in mt.message
    # the groups the message traces lack were declared from the scenario (maxReconsumeTimes 2)
    groups = json.loads((tmp_path / "out" / "client" / "real-retry-dlq.groups.json").read_text())
    assert groups["GID_real_retry"]["max_reconsume_times"] == 2
    row = next(x for x in res.reports if x.startswith("| real-retry-dlq |"))
    assert row.endswith("| holds | holds | holds | passed |")


def test_msgtrace_is_true_or_false(tmp_path):
    with pytest.raises(UserError) as exc:
        gate.load_config(str(config(tmp_path, f'command = "{CLIENT}"\nmsgtrace = "yes"\nscenarios = ["real-basic"]\n')))
    assert exc.value.field == "client.msgtrace"
