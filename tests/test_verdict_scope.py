"""What a verdict says it judged: a trace without its end is judged for safety only, and says
so (text and --json); `check --require-end` refuses it; a known bug's scenario judged under a
profile that is not the bug's says which profile shows the bug."""
from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hst

from rocketspec.cli import main
from rocketspec.reference import runner
from rocketspec.reference.scenario import bug_scenario, load_scenario
from rocketspec.rocketmq.profiles import PROFILES

TRACES = Path(__file__).parent / "traces"
LOSS = TRACES / "wrong_loss_at_quiescence.jsonl"


def run(*args):
    return CliRunner().invoke(main, ["check", *map(str, args)])


def write(path: Path, events) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def lines_of(path: Path) -> list[str]:
    return path.read_text().splitlines(keepends=True)


def test_a_trace_cut_before_its_end_is_judged_for_safety_only(tmp_path):
    # the whole trace loses a message at quiescence (INV-LIVE-1); without its last event the loss
    # cannot be judged, and the verdict must not pass for a full one
    assert run(LOSS).exit_code == 1
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(lines_of(LOSS)[:-1]))
    res = run(cut)
    assert res.exit_code == 0
    first = res.output.splitlines()[0]
    assert "HOLDS (safety only: the trace has no trace_ended, so liveness (INV-LIVE-1, INV-POP-LIVE-1) was not judged)" in first
    rep = orjson.loads(run(cut, "--json").output)
    assert rep["verdict"] == "holds" and rep["judged"] == "safety"
    assert rep["liveness_not_judged"] == "the trace has no trace_ended"
    assert rep["liveness_invariants"] == ["INV-LIVE-1", "INV-POP-LIVE-1"]
    whole = orjson.loads(run(LOSS, "--json").output)
    assert whole["judged"] == "safety and liveness" and whole["liveness_not_judged"] is None


def test_an_end_other_than_quiescence_is_named(tmp_path):
    evs = [json.loads(ln) for ln in lines_of(LOSS)]
    assert evs[-1]["kind"] == "trace_ended"
    evs[-1]["reason"] = "duration"
    res = run(write(tmp_path / "t.jsonl", evs))
    assert res.exit_code == 0
    assert ("HOLDS (safety only: the trace ended by duration, not at quiescence or a horizon, so liveness "
            "(INV-LIVE-1, INV-POP-LIVE-1) was not judged)") in res.output.splitlines()[0]
    # a trace that has its trace_ended is complete for --require-end, whatever the reason
    assert run(tmp_path / "t.jsonl", "--require-end").exit_code == 0


def test_require_end_refuses_a_trace_without_its_end(tmp_path):
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(lines_of(LOSS)[:-1]))
    res = run(cut, "--require-end")
    assert res.exit_code == 2
    out = res.output.strip().splitlines()
    assert len(out) == 1 and str(cut) in out[0]
    assert "no trace_ended" in out[0] and "--require-end expects a complete trace" in out[0]
    assert "Traceback" not in res.output
    j = orjson.loads(run(cut, "--require-end", "--json").output)
    assert j["exit_code"] == 2 and j["file"] == str(cut) and "trace_ended" in j["message"]
    # a complete trace passes --require-end with its own verdict
    assert run(LOSS, "--require-end").exit_code == 1
    assert run(TRACES / "valid_concurrent.jsonl", "--require-end").exit_code == 0


def test_require_end_on_a_dataset_names_the_run(tmp_path):
    ds = tmp_path / "ds"
    (ds / "run=1").mkdir(parents=True)
    (ds / "run=2").mkdir(parents=True)
    (ds / "run=1" / "part-0.jsonl").write_text((TRACES / "valid_concurrent.jsonl").read_text())
    (ds / "run=2" / "part-0.jsonl").write_text("".join(lines_of(TRACES / "valid_concurrent.jsonl")[:-1]))
    assert run(ds).exit_code == 0
    res = run(ds, "--require-end")
    assert res.exit_code == 2
    assert "run=2" in res.output and "no trace_ended" in res.output


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=hst.data())
def test_every_prefix_says_safety_only_and_require_end_refuses_it(tmp_path, data):
    name = data.draw(hst.sampled_from(["valid_concurrent.jsonl", "valid_orderly.jsonl", "valid_dlq.jsonl",
                                       "wrong_loss_at_quiescence.jsonl", "wrong_two_lock_holders.jsonl"]))
    lines = lines_of(TRACES / name)
    k = data.draw(hst.integers(1, len(lines) - 1))
    cut = tmp_path / f"cut-{k}.jsonl"
    cut.write_text("".join(lines[:k]))
    res = run(cut)
    assert res.exit_code in (0, 1)
    assert "(safety only: the trace has no trace_ended" in res.output.splitlines()[0]
    assert run(cut, "--require-end").exit_code == 2


# known-bug profiles whose scenario runs in well under a second
FAST_BUGS = ["#4215", "#1825", "#5481", "#2724", "#2708"]


def bug_profile(bug: str):
    return next(p for p in PROFILES.values() if p.known_bug == bug)


@pytest.mark.parametrize("bug", FAST_BUGS)
def test_a_bug_scenario_under_a_release_profile_names_the_bug_profile(tmp_path, bug):
    prof = bug_profile(bug)
    scenario = bug_scenario(bug)
    release = "rocketmq-5.3.3"
    t = write(tmp_path / "release.jsonl", runner.run_to_list(load_scenario(scenario), 1, release))
    res = run(t)
    notes = [ln for ln in res.output.splitlines() if ln.strip().startswith("note:")]
    assert len(notes) == 1, res.output
    assert res.output.splitlines()[1] == notes[0]      # right under the verdict
    assert f"--profile {prof.name}" in notes[0] and bug in notes[0] and scenario in notes[0]
    # the profile it names does show the bug
    b = write(tmp_path / "bug.jsonl", runner.run_to_list(load_scenario(scenario), 1, prof.name))
    res = run(b, "--json")
    assert res.exit_code == 1
    assert prof.expected_violation in {v["invariant"] for v in orjson.loads(res.output)["violations"]}
    assert "note:" not in run(b).output
    # made under the bug's profile but judged under a release: told to check with the bug's profile
    res = run(b, "--profile", release)
    assert f"made under {prof.name}" in res.output and f"check it with --profile {prof.name}" in res.output


def test_no_note_for_a_scenario_of_no_known_bug(tmp_path):
    t = write(tmp_path / "t.jsonl", runner.run_to_list(load_scenario("basic"), 1, "rocketmq-5.3.3"))
    assert "note:" not in run(t).output
