"""Inputs that are streams or are mostly nothing: a pipe (`<(zcat t.gz)`), a FIFO, a file of
blank lines. A stream is read as a stream, once; a FIFO is read when a writer comes, with a line
on standard error while rocketspec waits; blank lines cost no more than the events they sit
between, so that a gigabyte of newlines is refused at once (docs/cli-errors.md)."""
from __future__ import annotations

import gzip
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketspec.cli import main
from rocketspec.traces import io as trace_io

BLANK_ALLOWANCE = getattr(trace_io, "BLANK_ALLOWANCE", 1024)
ROCKETSPEC = Path(sys.executable).with_name("rocketspec")
VALID = Path(__file__).parent / "traces" / "valid_concurrent.jsonl"
LINES = VALID.read_bytes().splitlines(keepends=True)


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_a_gzip_of_newlines_is_refused_at_once_with_its_line(tmp_path):
    # 4 MiB of newlines in 4 KiB: the reader stops at the first line past the allowance
    p = tmp_path / "nl.jsonl.gz"
    p.write_bytes(gzip.compress(b"\n" * (4 << 20), 9))
    t0 = time.process_time()
    res = cli("check", p)
    assert res.exit_code == 2, res.output
    err = res.stderr.strip()
    assert f"{p}:{BLANK_ALLOWANCE + 1}:" in err and "blank lines" in err and "\n" not in err, err
    assert time.process_time() - t0 < 5  # a generous bound: the old reader took minutes on this


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(blanks=st.lists(st.integers(0, len(LINES)), max_size=len(LINES)),
       blank=st.sampled_from([b"\n", b"   \n", b"\r\n", b"\t\n"]))
def test_blank_lines_no_more_than_the_events_are_skipped(tmp_path, blanks, blank):
    out = list(LINES)
    for i in sorted(blanks, reverse=True):
        out.insert(i, blank)
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"".join(out))
    assert cli("check", p).exit_code == 0


def _bash(cmd: str, timeout=120):
    return subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=timeout)


def test_a_process_substitution_is_read_as_a_stream(tmp_path):
    gz = tmp_path / "t.jsonl.gz"
    gz.write_bytes(gzip.compress(VALID.read_bytes()))
    p = _bash(f"{shlex.quote(str(ROCKETSPEC))} check <(zcat {shlex.quote(str(gz))})")
    assert p.returncode == 0 and "HOLDS" in p.stdout, (p.returncode, p.stdout, p.stderr)
    p = _bash(f"{shlex.quote(str(ROCKETSPEC))} check --json <(cat {shlex.quote(str(VALID))})")
    assert p.returncode == 0 and json.loads(p.stdout)["verdict"] == "holds", p.stderr


def test_a_parquet_through_a_pipe_is_read_whole(tmp_path):
    pq = tmp_path / "t.parquet"
    assert cli("simulate", "--scenario", "basic", "--out", pq, "--quiet").exit_code == 0
    p = _bash(f"{shlex.quote(str(ROCKETSPEC))} check <(cat {shlex.quote(str(pq))})")
    assert p.returncode == 0 and "HOLDS" in p.stdout, (p.stdout, p.stderr)


def test_a_command_that_reads_twice_refuses_a_pipe_by_name(tmp_path):
    real = tmp_path / "basic.jsonl"
    assert cli("simulate", "--scenario", "basic", "--out", real, "--quiet").exit_code == 0
    p = _bash(f"{shlex.quote(str(ROCKETSPEC))} diff --scenario basic --real <(cat {shlex.quote(str(real))})")
    assert p.returncode == 2, (p.returncode, p.stderr)
    err = p.stderr.strip()
    assert "/dev/fd/" in err and "already read" in err and "give a file" in err and "\n" not in err, err


def test_a_fifo_is_read_when_a_writer_comes_and_the_wait_is_said(tmp_path):
    fifo = tmp_path / "t.fifo"
    os.mkfifo(fifo)
    proc = subprocess.Popen([str(ROCKETSPEC), "check", str(fifo)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    time.sleep(2.5)  # past the one second after which the wait is said
    assert proc.poll() is None
    with open(fifo, "wb") as w:
        w.write(VALID.read_bytes())
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "HOLDS" in out, (out, err)
    assert "FIFO" in err and "waiting" in err and str(fifo) in err, err


def test_history_from_a_pipe_asks_for_its_format_and_reads_it_with_one(tmp_path):
    # telling a history's format reads its first bytes, which a pipe gives once: without
    # --format the answer says to give it (it said the pipe was "already read"); with it the
    # pipe is judged
    hist = Path(__file__).parent / "fixtures" / "history" / "real-basic.trace.jsonl"
    p = _bash(f"{shlex.quote(str(ROCKETSPEC))} history <(cat {shlex.quote(str(hist))})")
    err = p.stderr.strip()
    assert p.returncode == 2 and "give --format" in err and "\n" not in err, (p.returncode, err)
    p = _bash(f"{shlex.quote(str(ROCKETSPEC))} history --format trace <(cat {shlex.quote(str(hist))})")
    assert p.returncode == 0 and "HOLDS" in p.stdout, (p.returncode, p.stdout, p.stderr)
