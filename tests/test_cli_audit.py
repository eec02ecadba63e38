"""The command line's audit: every command that reads a file, against every kind of hostile
file, and the options, against absurd values. Each answer is an exit code in {0, 1, 2, 4}
(never 3, an internal error), and an exit 2 is one line on standard error, "error: " first,
that names the input (its path, or the option). For the faults of file descriptors (a full
disk under stdout, a closed stdin) see test_environment_faults.py."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocketspec.cli import main

VALID = Path(__file__).parent / "traces" / "valid_concurrent.jsonl"


def _garbage() -> bytes:
    return random.Random(46).randbytes(3000)


# name -> (file name, bytes); None: the path names nothing, "dir": a directory
HOSTILE = {
    "missing": ("nope.jsonl", None),
    "directory": ("d.jsonl", "dir"),
    "empty": ("empty.jsonl", b""),
    "blank": ("blank.jsonl", b"\n" * 5000),
    "garbage": ("garbage.bin", _garbage()),
    "nul": ("nul.jsonl", b"\0" * 4096),
    "trace_as_toml": ("t.toml", VALID.read_bytes()),
    "toml_as_trace": ("s.jsonl", b'[scenario]\nname = "x"\n'),
    "json_array": ("a.jsonl", b"[1, 2, 3]\n"),
    "half_gzip": ("t.jsonl.gz", __import__("gzip").compress(VALID.read_bytes())[:200]),
}

# command -> argv with {} for the hostile path; the kinds of file it should be given
TRACE_COMMANDS = {
    "check": ["check", "{}"],
    "check --json": ["check", "{}", "--json"],
    "explain": ["explain", "{}"],
    "minimize": ["minimize", "{}", "-o", "{out}"],
    "history": ["history", "{}"],
    "history --format openchaos": ["history", "{}", "--format", "openchaos"],
    "diff --real": ["diff", "--scenario", "basic", "--real", "{}"],
}
CONFIG_COMMANDS = {
    "simulate --scenario": ["simulate", "--scenario", "{}", "--out", "{out}"],
    "explore --scope": ["explore", "--scope", "{}", "--max-states", "10"],
    "gate --config": ["gate", "--config", "{}"],
    "record --scenario": ["record", "--scenario", "{}", "--out", "{out}"],
}
# A trace under a .toml name is still a trace (traces are read by content, not by name).
CASES = ([(c, h) for c in TRACE_COMMANDS for h in HOSTILE if h != "trace_as_toml"]
         + [(c, h) for c in CONFIG_COMMANDS for h in HOSTILE])


def _place(tmp_path: Path, hostile: str) -> Path:
    name, data = HOSTILE[hostile]
    p = tmp_path / name
    if data == "dir":
        p.mkdir()
    elif data is not None:
        p.write_bytes(data)
    return p


def assert_clean(res, *, names: str, as_json: bool = False):
    assert res.exit_code in (0, 1, 2, 4), (res.exit_code, res.output)
    assert "internal error" not in res.output and "Traceback" not in res.output, res.output
    if res.exit_code != 2:
        return
    if as_json:
        d = json.loads(res.stdout)
        assert d["exit_code"] == 2 and d["verdict"] == "bad_input" and names in d["error"], d
        return
    err = res.stderr.strip()
    assert err.startswith("error: ") and "\n" not in err, err
    assert names in err, (names, err)


@pytest.mark.parametrize("command, hostile", CASES, ids=[f"{c}-{h}" for c, h in CASES])
def test_a_hostile_input_is_bad_input_naming_it(tmp_path, command, hostile):
    p = _place(tmp_path, hostile)
    argv = {**TRACE_COMMANDS, **CONFIG_COMMANDS}[command]
    argv = [a.replace("{}", str(p)).replace("{out}", str(tmp_path / "out.jsonl")) for a in argv]
    res = CliRunner().invoke(main, argv)
    assert res.exit_code == 2, (res.exit_code, res.output)  # none of these is a trace, a scenario, a scope
    assert_clean(res, names=str(p), as_json="--json" in argv)
    assert not (tmp_path / "out.jsonl").exists()


BAD_OPTIONS = [
    (["simulate", "--scenario", "basic", "--seed", "-1", "--out", "{out}"], "--seed"),
    (["simulate", "--scenario", "basic", "--events", "0", "--out", "{out}"], "--events"),
    (["simulate", "--scenario", "basic", "--workers", "0", "--events", "5", "--out", "{out}"], "--workers"),
    (["simulate", "--scenario", "basic", "--workers", "100000", "--events", "5", "--out", "{out}"], "--workers"),
    (["simulate", "--scenario", "basic", "--max-events", "nan", "--out", "{out}"], "--max-events"),
    (["simulate", "--scenario", "basic", "--profile", "nope", "--out", "{out}"], "nope"),
    (["simulate", "--scenario", "no-such-scenario", "--out", "{out}"], "no-such-scenario"),
    (["record", "--scenario", "basic", "--out", "{out}", "--timeout", "nan"], "--timeout"),
    (["record", "--scenario", "basic", "--out", "{out}", "--timeout", "inf"], "--timeout"),
    (["record", "--scenario", "basic", "--out", "{out}", "--seed", str(2**64)], "--seed"),
    (["explore", "--scope", "tiny", "--workers", "100000"], "--workers"),
    (["explore", "--scope", "tiny", "--max-states", "0"], "--max-states"),
    (["explore", "--scope", "no-such-scope"], "no-such-scope"),
    (["prove", "--client-lease", "nan"], "--client-lease"),
    (["prove", "--client-lease", "-1"], "--client-lease"),
    (["check", str(VALID), "--profile", "nope"], "nope"),
    (["history", str(VALID), "--window-ms", "-1"], "--window-ms"),
    (["diff", "--scenario", "basic", "--real", str(VALID), "--time-tolerance-ms", "-5"], "--time-tolerance-ms"),
    (["explain", str(VALID), "--key", "no/such/lane/9"], "--key"),
    (["minimize", str(VALID), "--invariant", "INV-NOPE", "-o", "{out}"], "INV-NOPE"),
    (["schema", "--format", "yaml"], "--format"),
    (["profiles", "no-such-profile"], "no-such-profile"),
]


@pytest.mark.parametrize("argv, names", BAD_OPTIONS, ids=[" ".join(a[:1] + a[-2:]) for a, _ in BAD_OPTIONS])
def test_an_absurd_option_is_bad_input_naming_it(tmp_path, argv, names):
    argv = [a.replace("{out}", str(tmp_path / "out.jsonl")) for a in argv]
    res = CliRunner().invoke(main, argv)
    assert res.exit_code == 2, (res.exit_code, res.output)
    assert_clean(res, names=names)


@pytest.mark.parametrize("command", ["allocate", "filter"])
@pytest.mark.parametrize("hostile", ["garbage", "nul", "json_array", "blank"])
def test_jsonlines_commands_answer_hostile_lines_without_crashing(command, hostile):
    data = HOSTILE[hostile][1]
    res = CliRunner().invoke(main, [command], input=data)
    assert_clean(res, names="line")
