"""Faults of the environment, not of rocketspec: a full disk under standard output, a reader
that went away, a closed standard input, an unwritable TMPDIR. Each is exit 2 with one line
naming the stream (or, for a reader that went away, a quiet exit 1), never exit 3 and never
Python's own "Exception ignored" at exit. Real processes: the faults live in file descriptors."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROCKETSPEC = Path(sys.executable).with_name("rocketspec")
TRACES = Path(__file__).parent / "traces"
VALID = TRACES / "valid_concurrent.jsonl"
FULL = "/dev/full"


def run(argv, *, stdout=None, stdin=subprocess.DEVNULL, close_stdin=False, input=None, env=None):
    pre = (lambda: os.close(0)) if close_stdin else None
    return subprocess.run([str(ROCKETSPEC), *map(str, argv)], stdout=stdout or subprocess.PIPE,
                          stderr=subprocess.PIPE, stdin=None if close_stdin else (subprocess.PIPE if input is not None else stdin),
                          input=input, preexec_fn=pre, env=env, timeout=120)


def one_line_error(p, *needles):
    err = p.stderr.decode()
    assert p.returncode == 2, (p.returncode, err)
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "internal error" not in err and "Traceback" not in err and "Exception ignored" not in err
    for n in needles:
        assert n in err, (n, err)
    return err


PRINTING = [
    ["scenarios"], ["profiles"], ["schema"], ["--help"], ["check", "--help"],
    ["check", VALID], ["check", VALID, "--json"], ["explain", VALID], ["explain", VALID, "--json"],
    ["history", VALID], ["history", VALID, "--json"], ["prove", "--list"],
    ["simulate", "--scenario", "basic", "--out", "-"],
]


@pytest.mark.skipif(not os.path.exists(FULL), reason="needs /dev/full")
@pytest.mark.parametrize("argv", PRINTING, ids=lambda a: " ".join(map(str, a)).replace(str(TRACES) + "/", ""))
def test_a_full_disk_under_stdout_is_bad_input_naming_stdout(argv):
    with open(FULL, "wb") as full:
        p = run(argv, stdout=full)
    one_line_error(p, "<stdout>", "No space left on device")


@pytest.mark.skipif(not os.path.exists(FULL), reason="needs /dev/full")
@pytest.mark.parametrize("cmd", ["allocate", "filter"])
def test_jsonlines_commands_on_a_full_disk(cmd):
    line = (b'{"strategy": "avg", "consumer": "c1", "consumers": ["c1"], "queues": ["q0"]}\n' if cmd == "allocate"
            else b'{"expression": "a", "tags": "a"}\n')
    with open(FULL, "wb") as full:
        p = subprocess.run([str(ROCKETSPEC), cmd], input=line, stdout=full, stderr=subprocess.PIPE, timeout=60)
    one_line_error(p, "<stdout>")


@pytest.mark.parametrize("argv", [["check", "-"], ["check", "-", "--json"], ["allocate"], ["filter"],
                                  ["history", "-", "--format", "trace"]])
def test_a_closed_stdin_is_bad_input_naming_stdin(argv):
    p = run(argv, close_stdin=True)
    if "--json" in argv:
        import json

        assert p.returncode == 2 and json.loads(p.stdout)["file"] == "<stdin>"
    else:
        one_line_error(p, "<stdin>", "closed")


def test_a_reader_that_goes_away_ends_quietly():
    # `rocketspec schema | head -c 1`: the rest of the output has nowhere to go.
    proc = subprocess.Popen([str(ROCKETSPEC), "check", VALID, "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) in (0, 1), err
    assert "Traceback" not in err and "Exception ignored" not in err and "internal error" not in err


def test_no_usable_temporary_directory_is_bad_input_naming_tmpdir(monkeypatch, tmp_path):
    import tempfile

    from click.testing import CliRunner

    from rocketspec.cli import main

    real = tmp_path / "basic.jsonl"
    assert CliRunner().invoke(main, ["simulate", "--scenario", "basic", "--out", str(real), "--quiet"]).exit_code == 0
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("TMPDIR", str(blocked / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.setattr(tempfile, "_candidate_tempdir_list", lambda: [str(blocked / "tmp")])
    res = CliRunner().invoke(main, ["diff", "--scenario", "basic", "--real", str(real)])
    assert res.exit_code == 2, (res.exit_code, res.output)
    err = res.stderr.strip()
    assert err.startswith("error: TMPDIR=") and "\n" not in err and "TMPDIR" in err, err


def test_minimize_refuses_a_trace_past_its_memory_share_naming_the_line(monkeypatch, tmp_path):
    # minimize holds the whole trace (about 5 bytes per byte of JSON: bench.minimize_memory);
    # past half the available memory it stops reading, as bad input at the line reached.
    from click.testing import CliRunner

    from rocketspec.cli import main
    from rocketspec.traces.minimize import minimize as M

    bug = tmp_path / "bug.jsonl"
    assert CliRunner().invoke(main, ["simulate", "--scenario", "bug-2724", "--profile", "bug-2724-rocketmq-4.9.1",
                                     "--out", str(bug), "--quiet"]).exit_code == 0
    # a machine with 1 GB available, on which the process grows 200 MB per 64 events read
    grown = iter(range(0, 100 * 2**30, 200 * 2**20))
    monkeypatch.setattr(M, "_available_bytes", lambda: 2**30)
    monkeypatch.setattr(M, "_resident_bytes", lambda: next(grown))
    monkeypatch.setattr(M.MemoryBound, "EVERY", 64)
    res = CliRunner().invoke(main, ["minimize", str(bug), "-o", str(tmp_path / "m.jsonl"), "--quiet"])
    assert res.exit_code == 2, (res.exit_code, res.output)
    err = res.stderr.strip()
    assert err.startswith(f"error: {bug}:193:") and "0.5 GB" in err and "too large to minimize" in err and "\n" not in err, err
    assert not (tmp_path / "m.jsonl").exists()
