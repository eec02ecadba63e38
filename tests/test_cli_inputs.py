"""Scenario and scope files, and the options of simulate and explore, against bad or absurd
input (issue 14): exit 2 with the file, line or field and the bound, never a traceback or a
runaway run. Through the CLI's own entry point."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from rocketspec.cli import main

GOOD = ('[[topics]]\nname = "T"\nqueues = 2\n[[groups]]\nname = "G"\nsubscriptions = { T = "*" }\n'
        '[[producers]]\ntopic = "T"\ncount = 3\n[[steps]]\nat_ms = 0\naction = "start"\nclient = "c"\ngroup = "G"\n')


def cli(*args, input=None):
    return CliRunner().invoke(main, [str(a) for a in args], input=input)


def bad_input(res, *needles, line=None):
    assert res.exit_code == 2, (res.exit_code, res.output, res.exception)
    err = res.stderr.strip()
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in res.output, err
    for n in needles:
        assert n in err, (n, err)
    if line is not None:
        assert f":{line}:" in err, err
    return err


def simulate(path, *more):
    return cli("simulate", "--scenario", path, "--out", path.parent / "o.jsonl", "--quiet", *more)


def test_good_scenario_file_runs(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(GOOD)
    assert simulate(p).exit_code == 0


def test_binary_and_invalid_utf8_scenarios(tmp_path):
    p = tmp_path / "s.toml"
    p.write_bytes(b"\xff\xfe\x00\x01binary")
    bad_input(simulate(p), str(p), "binary")
    p.write_bytes(GOOD.encode() + b'\n# caf\xe9\n')
    bad_input(simulate(p), str(p), "UTF-8", line=GOOD.count("\n") + 2)


@pytest.mark.parametrize("fmt,text", [("toml", "a = " + "[" * 100_000 + "]" * 100_000 + "\n"),
                                      ("json", '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")])
def test_deep_nesting(tmp_path, fmt, text):
    p = tmp_path / f"s.{fmt}"
    p.write_text(text)
    bad_input(simulate(p), str(p), "nested too deeply")
    if fmt == "toml":
        bad_input(cli("explore", "--scope", p, "--quiet"), str(p), "nested too deeply")


def test_directory_as_scenario_or_scope(tmp_path):
    d = tmp_path / "x.toml"
    d.mkdir()
    bad_input(simulate(d), str(d), "directory", "scenario")
    bad_input(cli("explore", "--scope", d, "--quiet"), str(d), "directory", "scope")
    d2 = json.loads(cli("explore", "--scope", d, "--json").stdout)
    assert d2["verdict"] == "bad_input" and d2["file"] == str(d)


def test_yaml_scenario_says_toml_is_expected(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("name: x\n")
    bad_input(simulate(p), str(p), "TOML", "not YAML")


def test_invalid_toml_names_the_line(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(GOOD + "oops = \n")
    bad_input(simulate(p), "not valid TOML", line=GOOD.count("\n") + 1)


@pytest.mark.parametrize("old,new,field,bound", [
    ("queues = 2", "queues = 100000000", "topics[0].queues", "1024"),
    ("queues = 2", "queues = -4", "topics[0].queues", "1024"),
    ("name = \"T\"\n", "name = \"T\"\n", "duration_ms", "604800000"),
    ("count = 3", "count = -1", "producers[0].count", "[0, "),
    ("count = 3", "count = 100000000", "producers[0].count", "10000000"),
])
def test_bounds_are_named(tmp_path, old, new, field, bound):
    text = GOOD.replace(old, new, 1)
    if field == "duration_ms":
        text = f"duration_ms = {2**63 - 1}\n" + text
    p = tmp_path / "s.toml"
    p.write_text(text)
    bad_input(simulate(p), str(p), field, bound)


def test_negative_durations_refused(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text("duration_ms = -5\n" + GOOD)
    bad_input(simulate(p), "duration_ms", "[0, ")
    p.write_text(GOOD + '[[steps]]\nat_ms = 5\naction = "pause"\nclient = "c"\nduration_ms = -1\n')
    bad_input(simulate(p), "steps[1].duration_ms")


def test_queues_times_time_budget(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text("duration_ms = 604800000\n" + GOOD.replace("queues = 2", "queues = 1000"))
    bad_input(simulate(p), "queue-days")


@pytest.mark.parametrize("seed", [str(2**64 + 1), "-1"])
def test_seed_out_of_range(tmp_path, seed):
    bad_input(cli("simulate", "--seed", seed, "--out", tmp_path / "o.jsonl"), "--seed")


def test_out_dash_writes_the_trace_to_stdout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = cli("simulate", "--out", "-")
    assert res.exit_code == 0
    lines = res.stdout.splitlines()
    assert json.loads(lines[0])["kind"] == "trace_started" and json.loads(lines[-1])["kind"] == "trace_ended"
    assert not (tmp_path / "-").exists()
    assert "standard output" in res.stderr


def test_scope_bounds_and_types(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text("max_states = 99999999999\n")
    bad_input(cli("explore", "--scope", p, "--quiet"), "max_states", "200000000")
    p.write_text("pause_ms = [-1]\n")
    bad_input(cli("explore", "--scope", p, "--quiet"), "pause_ms")
    p.write_bytes(b"consumers = 1\n# \xff\n")
    bad_input(cli("explore", "--scope", p, "--quiet"), "UTF-8", line=2)
    bad_input(cli("explore", "--max-states", "-3", "--quiet"), "--max-states")


# ------------------------------------------------------------------ progress

def _big_trace(tmp_path):
    p = tmp_path / "t.jsonl"
    res = cli("simulate", "--scenario", "basic", "--out", p, "--quiet")
    assert res.exit_code == 0
    return p


def test_progress_only_on_a_terminal(tmp_path, monkeypatch):
    from rocketspec.commands import options
    from rocketspec.traces import io

    p = _big_trace(tmp_path)
    monkeypatch.delenv("CI", raising=False)
    res = cli("check", p)
    assert res.exit_code == 0 and res.stderr == ""          # a pipe: quiet
    monkeypatch.setattr(options, "_stderr_is_terminal", lambda: True)
    monkeypatch.setattr(io, "PROGRESS_EVERY", 256)
    res = cli("check", p)
    assert res.exit_code == 0 and "%|" in res.stderr and "B/s" in res.stderr
    res = cli("simulate", "--scenario", "basic", "--out", tmp_path / "u.jsonl")
    assert res.exit_code == 0 and "s simulated" in res.stderr
    monkeypatch.setenv("CI", "true")                          # CI: quiet even on a terminal
    assert cli("check", p).stderr == ""
    monkeypatch.delenv("CI")
    assert cli("check", p, "--quiet").stderr == ""


# ------------------------------------------------------------------ defaults

def test_explore_help_lists_every_scope_and_the_default_finishes_fast():
    from pathlib import Path

    import rocketspec.model_checks.scopes as scopes
    from rocketspec.commands.explore import DEFAULT_SCOPE

    names = sorted(p.stem for p in Path(scopes.__file__).with_name("scopes").glob("*.toml"))
    assert {"small-lock", "bugs", "bugs-broadcast", "bugs-orderly"} <= set(names)
    res = cli("explore", "--help")
    text = " ".join(res.stdout.split()).replace("- ", "-")
    assert all(n in text for n in names), text
    # the default is a scope the full search exhausts quickly (bench.explore_default times it)
    assert DEFAULT_SCOPE == "tiny" and f"[default: {DEFAULT_SCOPE}]" in text


def test_pyproject_raises_no_setuptools_warning():
    """`make demo` printed ~70 lines of SetuptoolsDeprecationWarning (the project.license table)."""
    import os
    import warnings
    from pathlib import Path

    from setuptools.config.pyprojecttoml import apply_configuration
    from setuptools.dist import Distribution

    root = Path(__file__).parent.parent
    cwd = os.getcwd()
    os.chdir(root)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            dist = apply_configuration(Distribution(), root / "pyproject.toml")
    finally:
        os.chdir(cwd)
    assert [str(w.message) for w in caught] == []
    assert dist.metadata.license_expression == "Apache-2.0"


def test_explore_state_cap_is_incomplete_not_a_violation(tmp_path):
    """A search cut by --max-states exits 4 (incomplete); the node the cap cut halfway is not
    taken for a quiescent end (that gave a false INV-LIVE-1 and exit 1)."""
    res = cli("explore", "--scope", "tiny", "--max-states", "50", "--json",
              "--out-dir", tmp_path)
    d = json.loads(res.stdout)
    assert res.exit_code == 4 and d["complete"] is False and d["violations"] == [] and d["verdict"] == "holds"


def test_json_scenario_with_a_lone_surrogate(tmp_path):
    p = tmp_path / "s.json"
    p.write_text('{"name": "a\\ud800b"}')
    bad_input(simulate(p), str(p), "surrogate")


@pytest.mark.parametrize("timeout", ["nan", "inf", "-inf", "0", "-1", "1e400"])
def test_record_timeout_must_be_a_finite_positive_number(tmp_path, timeout):
    # Refused at option parsing, before any Java or classpath is looked for.
    err = bad_input(cli("record", "--scenario", "basic", "--out", tmp_path / "o.jsonl", "--timeout", timeout),
                    "--timeout", "finite")
    assert "classpath" not in err


def test_simulate_events_starts_only_the_runs_the_events_need(tmp_path):
    # --events 1 needs one run: one worker process, however many were asked for (each costs
    # about 140 MB); workers past the usable cores are capped, and the note says so.
    out = tmp_path / "ds"
    res = cli("simulate", "--scenario", "basic", "--events", 1, "--workers", 32, "--out", out)
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.iterdir() if p.name.startswith("run=")) == ["run=1"]
    assert "in 1 runs" in res.stdout and "on 1 workers" in res.stdout, res.stdout
    import os

    if len(os.sched_getaffinity(0)) < 32:
        assert "capped" in res.stderr, res.stderr
