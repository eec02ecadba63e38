"""Outputs never lose data (rocketspec/outputs.py, docs/cli-errors.md "Outputs"): an output path
that is an input is refused; a file appears only complete, so an interrupted run (Ctrl-C,
SIGTERM) leaves neither a prefix nor a damaged older file; a dataset directory has one writer."""
from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketspec.cli import main

ROOT = Path(__file__).resolve().parent.parent
BASIC = ROOT / "reference" / "scenarios" / "basic.toml"
CLI = [sys.executable, "-c", "from rocketspec.cli import main; main()"]


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def refused(res, *names):
    """Exit 2 with one line naming the output and the input it would destroy."""
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "same file" in lines[0], res.stderr
    for n in names:
        assert str(n) in lines[0], (n, lines[0])


@pytest.fixture(scope="module")
def failing_trace(tmp_path_factory):
    """A short trace that fails (bug-2724 under its bug profile): minimize has work to do."""
    p = tmp_path_factory.mktemp("t") / "b2724.jsonl"
    res = cli("simulate", "--scenario", "bug-2724", "--profile", "bug-2724-rocketmq-4.9.1", "--out", p, "--quiet")
    assert res.exit_code == 0, res.output
    return p


def copy(src, dst) -> Path:
    shutil.copy(src, dst)
    return Path(dst)


# ---------------------------------------------------------------- an output that is an input

def test_minimize_refuses_to_write_over_its_input_directly_through_a_symlink_or_a_hard_link(tmp_path, failing_trace):
    t = copy(failing_trace, tmp_path / "t.jsonl")
    before = t.read_bytes()
    refused(cli("minimize", t, "-o", t, "--quiet"), "-o/--out", t)
    (tmp_path / "link.jsonl").symlink_to(t)
    refused(cli("minimize", t, "-o", tmp_path / "link.jsonl", "--quiet"), t)
    os.link(t, tmp_path / "hard.jsonl")
    refused(cli("minimize", tmp_path / "hard.jsonl", "-o", t, "--quiet"), t)
    refused(cli("minimize", t, "-o", tmp_path / "sub" / ".." / "t.jsonl", "--quiet"), t)
    assert t.read_bytes() == before and (tmp_path / "link.jsonl").is_symlink()


def test_minimize_of_a_history_refuses_to_write_over_it_or_its_groups_file(tmp_path):
    h = copy(ROOT / "tests" / "fixtures" / "history" / "real-retry-dlq.msgtrace", tmp_path / "h.msgtrace")
    # declared with one retry less than the run made: the history fails, so there is work to do
    g = tmp_path / "groups.json"
    g.write_text('{"GID_real_retry": {"consume_mode": "CONCURRENTLY", "message_model": "CLUSTERING", '
                 '"max_reconsume_times": 1}}')
    before, groups = h.read_bytes(), g.read_bytes()
    args = ["--format", "msgtrace", "--groups", g, "--quiet"]
    refused(cli("minimize", h, "-o", h, *args), h)
    (tmp_path / "l.msgtrace").symlink_to(h)
    refused(cli("minimize", h, "-o", tmp_path / "l.msgtrace", *args), h)
    refused(cli("minimize", h, "-o", g, *args), "--groups", g)
    assert h.read_bytes() == before and g.read_bytes() == groups
    res = cli("minimize", h, "-o", tmp_path / "min.msgtrace", *args)
    assert res.exit_code == 1, res.output        # the same command with another output works


def test_explain_refuses_html_or_png_over_the_trace(tmp_path, failing_trace):
    t = copy(failing_trace, tmp_path / "t.jsonl")
    before = t.read_bytes()
    refused(cli("explain", t, "--html", t), "--html", t)
    refused(cli("explain", t, "--png", t), "--png", t)
    assert t.read_bytes() == before


def test_simulate_refuses_out_naming_its_scenario_file(tmp_path):
    sc = copy(BASIC, tmp_path / "basic.toml")
    before = sc.read_bytes()
    refused(cli("simulate", "--scenario", sc, "--out", sc), "--out", "--scenario", sc)
    (tmp_path / "s.json").symlink_to(sc)          # a name the trace writer would take (.json)
    refused(cli("simulate", "--scenario", sc, "--out", tmp_path / "s.json"), sc)
    assert sc.read_bytes() == before
    # a built-in scenario's name is not a file
    res = cli("simulate", "--scenario", "basic", "--out", tmp_path / "basic.jsonl", "--quiet")
    assert res.exit_code == 0, res.output


def test_gate_refuses_junit_or_summary_over_its_config(tmp_path):
    cfg = tmp_path / "gate.toml"
    cfg.write_text('scopes = []\n[statemachine]\nenabled = false\n[traces]\ndirs = []\n')
    before = cfg.read_bytes()
    refused(cli("gate", "--config", cfg, "--junit", cfg, "--quiet"), "--junit", cfg)
    refused(cli("gate", "--config", cfg, "--summary", cfg, "--quiet"), "--summary", cfg)
    assert cfg.read_bytes() == before


def test_diff_refuses_keep_ref_over_the_real_trace(tmp_path):
    real = tmp_path / "real.jsonl"
    assert cli("simulate", "--scenario", "basic", "--seed", 2, "--out", real, "--quiet").exit_code == 0
    before = real.read_bytes()
    refused(cli("diff", "--scenario", "basic", "--real", real, "--keep-ref", real), "--keep-ref", "--real", real)
    assert real.read_bytes() == before


def test_same_file_sees_through_symlinks_dots_and_hard_links(tmp_path):
    from rocketspec.outputs import same_file

    a = tmp_path / "a.jsonl"
    a.write_text("x")
    (tmp_path / "s").symlink_to(a)
    os.link(a, tmp_path / "h")
    assert same_file(a, tmp_path / "s") and same_file(a, tmp_path / "h")
    assert same_file(tmp_path / "new.jsonl", tmp_path / "d" / ".." / "new.jsonl")    # neither exists
    assert not same_file(a, tmp_path / "b.jsonl")


# ---------------------------------------------------------------- complete or not at all

class Boom(Exception):
    pass


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 5000), st.sampled_from(["jsonl", "parquet"]))
def test_a_writer_that_fails_at_any_point_leaves_the_older_file_and_no_temporary(tmp_path_factory, k, fmt):
    from rocketspec.traces.io import write_trace

    d = tmp_path_factory.mktemp("w")
    out = d / f"t.{fmt}"
    old = [{"seq": 0, "ts": 0, "kind": "trace_started", "schema_version": 2}]
    write_trace(out, old)
    before = out.read_bytes()

    def events():
        for i in range(5001):
            if i == k:
                raise Boom
            yield {"seq": i, "ts": i, "kind": "trace_started", "schema_version": 2}

    with pytest.raises(Boom):
        write_trace(out, events())
    assert out.read_bytes() == before
    assert sorted(os.listdir(d)) == [out.name]


def test_a_file_is_written_through_a_symlink_and_into_a_fifo_in_place(tmp_path):
    from rocketspec.traces.io import write_trace

    target = tmp_path / "real.jsonl"
    target.write_text("old\n")
    (tmp_path / "link.jsonl").symlink_to(target)
    write_trace(tmp_path / "link.jsonl", [{"seq": 0}])
    assert (tmp_path / "link.jsonl").is_symlink() and target.read_bytes() == b'{"seq":0}\n'

    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_trace(fifo, [{"seq": 1}])
    reader.join(10)
    assert got == [b'{"seq":1}\n'] and stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_new_file_gets_the_usual_permissions_and_a_replaced_one_keeps_its_own(tmp_path):
    from rocketspec.traces.io import write_trace

    umask = os.umask(0o022)
    try:
        write_trace(tmp_path / "new.jsonl", [{"seq": 0}])
        assert stat.S_IMODE(os.stat(tmp_path / "new.jsonl").st_mode) == 0o644
        os.chmod(tmp_path / "new.jsonl", 0o600)
        write_trace(tmp_path / "new.jsonl", [{"seq": 1}])
        assert stat.S_IMODE(os.stat(tmp_path / "new.jsonl").st_mode) == 0o600
    finally:
        os.umask(umask)


# ---------------------------------------------------------------- interrupted runs

def long_scenario(tmp_path) -> Path:
    """basic, but an hour of traffic: a run that is still writing when the signal comes."""
    text = BASIC.read_text().replace('name = "basic"', 'name = "long"').replace("duration_ms = 60000",
                                                                               "duration_ms = 3600000")
    text = text.replace("count = 200", "count = 200000").replace("rate_per_s = 20", "rate_per_s = 100")
    p = tmp_path / "long.toml"
    p.write_text(text)
    return p


def _default_sigint() -> None:
    """The run starts with SIGINT at its default, as from a terminal: a test process started in the
    background by a non-interactive shell has SIGINT ignored, which its children inherit, and
    Python then installs no KeyboardInterrupt handler (the CLI would rightly not see Ctrl-C)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def kill_group(p) -> None:
    """Whatever the outcome, no process of the run outlives the test (a worker orphaned by a
    killed parent included)."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if p.poll() is None:
        p.wait()


def wait_for_output(d: Path, keep: set, timeout=60) -> None:
    """Until something other than `keep` (name -> bytes) holds 64 KB or more under `d`."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for root, _, files in os.walk(d):
            for f in files:
                p = Path(root) / f
                try:
                    size = p.stat().st_size
                except FileNotFoundError:
                    continue
                if size >= 65536 and (p.name not in keep or p.read_bytes() != keep[p.name]):
                    return
        time.sleep(0.1)
    raise AssertionError("the run wrote nothing")


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_an_interrupted_simulate_leaves_no_prefix_and_the_older_file_intact(tmp_path, sig, code):
    sc = long_scenario(tmp_path)
    out = tmp_path / "t.jsonl"
    assert cli("simulate", "--out", out, "--quiet").exit_code == 0
    before = out.read_bytes()
    p = subprocess.Popen(CLI + ["simulate", "--scenario", str(sc), "--out", str(out), "--quiet"],
                         cwd=tmp_path, stderr=subprocess.PIPE, start_new_session=True, preexec_fn=_default_sigint)
    try:
        wait_for_output(tmp_path, {out.name: before, sc.name: sc.read_bytes()})
        os.killpg(p.pid, sig)        # as a terminal's Ctrl-C, or a service manager, sends it
        rc = p.wait(60)
    finally:
        kill_group(p)
    assert rc == code, p.stderr.read()
    assert out.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == sorted([out.name, sc.name])


def complete_run(part: Path) -> bool:
    import pyarrow.parquet as pq

    try:
        kinds = pq.read_table(part, columns=["kind"]).column("kind").to_pylist()
    except Exception:   # noqa: BLE001 - a cut Parquet file has no footer
        return False
    return bool(kinds) and kinds[0] == "trace_started" and kinds[-1] == "trace_ended"


@pytest.mark.parametrize("sig,code,group", [(signal.SIGINT, 130, True), (signal.SIGTERM, 143, False)])
def test_an_interrupted_dataset_keeps_only_complete_runs(tmp_path, sig, code, group):
    sc = long_scenario(tmp_path)
    out = tmp_path / "data"
    p = subprocess.Popen(CLI + ["simulate", "--scenario", str(sc), "--events", str(10 ** 8), "--workers", "2",
                                "--out", str(out), "--quiet"],
                         cwd=tmp_path, stderr=subprocess.PIPE, start_new_session=True, preexec_fn=_default_sigint)
    try:
        end = time.monotonic() + 60
        while not (out.is_dir() and len(os.listdir(out)) >= 2) and time.monotonic() < end:
            time.sleep(0.1)
        time.sleep(1.0)
        if group:
            os.killpg(p.pid, sig)    # Ctrl-C reaches the workers too
        else:
            os.kill(p.pid, sig)      # `kill PID`: the parent alone
        rc = p.wait(60)
    finally:
        kill_group(p)
    assert rc == code, p.stderr.read()
    left = sorted(os.listdir(out))
    assert all(n.startswith("run=") for n in left), left      # no partial run, no lock left behind
    for n in left:
        assert os.listdir(out / n) == ["part-0.parquet"] and complete_run(out / n / "part-0.parquet"), n


# ---------------------------------------------------------------- one writer per output

def test_a_second_dataset_writer_is_refused_while_the_first_holds_the_directory(tmp_path):
    out = tmp_path / "data"
    out.mkdir()
    holder = subprocess.Popen([sys.executable, "-c",
                               "import sys, time\n"
                               "from rocketspec.outputs import claim_directory\n"
                               "with claim_directory(sys.argv[1]):\n"
                               "    print('held', flush=True); time.sleep(60)\n", str(out)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        res = cli("simulate", "--events", 10, "--workers", 1, "--out", out, "--quiet")
        assert res.exit_code == 2 and f"pid {holder.pid}" in res.stderr and str(out) in res.stderr, res.output
        assert not any(n.startswith("run=") for n in os.listdir(out))
    finally:
        holder.kill()
        holder.wait()
    # the holder died without cleaning up: its lock file stays, but the kernel released the lock
    res = cli("simulate", "--events", 10, "--workers", 1, "--out", out, "--quiet")
    assert res.exit_code == 0, res.output
    assert sorted(os.listdir(out)) == ["run=1"]


def test_two_dataset_writers_started_together_leave_one_whole_dataset(tmp_path):
    out = tmp_path / "data"
    procs = [subprocess.Popen(CLI + ["simulate", "--scenario", name, "--events", "10", "--workers", "1",
                                     "--out", str(out), "--quiet"], stderr=subprocess.PIPE, text=True)
             for name in ("basic", "tags")]
    codes = sorted(p.wait(120) for p in procs)
    errs = "".join(p.stderr.read() for p in procs)
    assert codes == [0, 2], errs
    runs = sorted(os.listdir(out))
    assert runs == ["run=1"]
    assert complete_run(out / "run=1" / "part-0.parquet")


def test_two_simulates_to_one_file_leave_one_whole_trace(tmp_path):
    out = tmp_path / "t.jsonl"
    alone = {}
    for name in ("retry-dlq", "tags"):
        assert cli("simulate", "--scenario", name, "--out", tmp_path / f"{name}.jsonl", "--quiet").exit_code == 0
        alone[name] = (tmp_path / f"{name}.jsonl").read_bytes()
    procs = [subprocess.Popen(CLI + ["simulate", "--scenario", name, "--out", str(out), "--quiet"])
             for name in alone]
    assert [p.wait(120) for p in procs] == [0, 0]
    assert out.read_bytes() in alone.values()
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]


def test_gate_summary_appends_whole(tmp_path):
    from rocketspec.outputs import write_bytes

    s = tmp_path / "summary.md"
    s.write_text("# before\n")
    write_bytes(s, b"after\n", append=True)
    assert s.read_text() == "# before\nafter\n"
    assert sorted(os.listdir(tmp_path)) == ["summary.md"]


def test_an_output_that_cannot_be_written_is_bad_input_and_leaves_nothing(tmp_path):
    res = cli("simulate", "--out", tmp_path / "no" / "such" / "t.jsonl", "--quiet")
    assert res.exit_code == 2 and "cannot write" in res.stderr and "t.jsonl" in res.stderr, res.output
    (tmp_path / "d.parquet").mkdir()
    res = cli("simulate", "--out", tmp_path / "d.parquet", "--quiet")
    assert res.exit_code == 2 and "is a directory" in res.stderr, res.output
    assert sorted(os.listdir(tmp_path)) == ["d.parquet"] and not os.listdir(tmp_path / "d.parquet")


def test_counterexample_writers_leave_nothing_when_cut(tmp_path):
    # explore's and the mutants' counterexample traces (gate --out-dir) are written whole or not
    # at all: a generator that fails mid-way (as an interrupt would) leaves no prefix behind
    from rocketspec.conformance.mutants import write_events
    from rocketspec.model_checks.result import write_trace

    def cut():
        yield {"seq": 0, "ts": 0, "kind": "trace_started"}
        raise KeyboardInterrupt

    for name, write in (("explore.jsonl", write_trace), ("mutant.jsonl", write_events)):
        out = tmp_path / name
        with pytest.raises(KeyboardInterrupt):
            write(out, cut())
        assert not out.exists() and list(tmp_path.iterdir()) == [], list(tmp_path.iterdir())
