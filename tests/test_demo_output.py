"""`rocketspec demo` is readable by default: each trace's verdict (against the scenario's declared
one) on the line under its scenario, the cause of each error right after, and no state dump
unless --verbose."""
from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from rocketspec.cli import main
from rocketspec.commands.demo import DEMO_PROFILES, DEMO_SCENARIOS

DUMP = re.compile(r'^\s*([{}\[\]],?|"[^"]+": .*)$')      # a line of an indented JSON object


def demo(tmp_path, *args):
    return CliRunner().invoke(main, ["demo", "--out-dir", str(tmp_path / "out"), *args])


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    return demo(tmp_path_factory.mktemp("demo"))


def test_each_trace_leads_with_its_verdict_and_no_state_is_dumped(plain):
    assert plain.exit_code == 0, plain.output
    lines = plain.output.splitlines()
    assert not [ln for ln in lines if DUMP.match(ln)]
    assert "last accepted state" not in plain.output
    for name in DEMO_SCENARIOS:
        i = next(i for i, ln in enumerate(lines) if ln.startswith(f"== {name}:"))
        assert lines[i + 1].startswith(f"  {DEMO_PROFILES[0]}: ")
        verdicts = [ln for ln in lines[i + 1:] if re.match(r"  rocketmq-\S+: ", ln)][:len(DEMO_PROFILES)]
        for v in verdicts:
            assert re.match(r"  rocketmq-\S+: (HOLDS|VIOLATED)\b.*as declared", v), v
    assert lines[-2] == f"demo: all {len(DEMO_SCENARIOS) * len(DEMO_PROFILES)} verdicts as declared by their scenarios"
    assert len(lines) < 60


def test_a_violation_is_followed_by_its_cause(plain):
    lines = plain.output.splitlines()
    violated = [i for i, ln in enumerate(lines) if re.match(r"  rocketmq-\S+: VIOLATED", ln)]
    assert len(violated) == len(DEMO_PROFILES)      # orderly-pause-broker-lock under each profile
    for i in violated:
        ids = re.findall(r"INV-[A-Z]+-\d+", lines[i])
        assert ids
        causes = lines[i + 2:i + 2 + len(ids)]       # under the trace's path
        assert [c.split()[0] for c in causes] == ids, causes
        assert all(re.search(r"\(seq \d+, line \d+\): \S", c) for c in causes)


def test_verbose_shows_the_full_reports(tmp_path, monkeypatch):
    from rocketspec.commands import demo as cmd

    monkeypatch.setattr(cmd, "DEMO_SCENARIOS", ("orderly-pause-broker-lock",))
    res = demo(tmp_path, "--verbose")
    assert res.exit_code == 0
    assert "last accepted state of the key" in res.output
    assert [ln for ln in res.output.splitlines() if DUMP.match(ln)]


def test_a_verdict_that_differs_from_the_declared_one_is_said_first_and_fails(tmp_path, monkeypatch):
    from rocketspec.commands import demo as cmd
    from rocketspec.reference import scenario

    monkeypatch.setattr(cmd, "DEMO_SCENARIOS", ("basic", "faults"))
    real = scenario.expected_failures
    monkeypatch.setattr(scenario, "expected_failures",
                        lambda sc, p: {"INV-LOSS-1"} if sc["name"] == "basic" else real(sc, p))
    res = demo(tmp_path)
    assert res.exit_code == 1
    lines = res.output.splitlines()
    assert lines[1].startswith(f"  {DEMO_PROFILES[0]}: HOLDS, DIFFERS from the declared verdict: fails with INV-LOSS-1")
    assert lines[-2].startswith("demo: 2 of 4 verdicts DIFFER from the declared ones: basic [")
