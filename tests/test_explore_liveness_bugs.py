"""The liveness bugs of issue 43 (#5465, #8772) found by the explorer of the reference, each in a
scope of its own (model_checks/scopes.py LIVENESS_BUG_SCOPES, part of BUG_SCOPES): an end at the
horizon with nothing waiting on the clock and a message a client never consumed (INV-LIVE-1), a
trace the spec's replay rejects; the release that has the fix takes the whole scope clean. The same
end on `simulate` (reference/runner.py drain): each bug's built-in scenario ends at its horizon and
`check` rejects it."""
from __future__ import annotations

import pytest

from rocketspec.model_checks.refexplore import RefExplorer
from rocketspec.model_checks.result import write_trace
from click.testing import CliRunner

from rocketspec.cli import main
from rocketspec.model_checks.scopes import BUG_SCOPES, LIVENESS_BUG_SCOPES, SETTLE_MS, load_scope
from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import bug_scenario, load_scenario
from rocketspec.rocketmq.profiles import (BUG_5465_ROCKETMQ_4_9_4, BUG_8772_ROCKETMQ_5_3_1, LIVENESS_BUG_PROFILES,
                                          PROFILES)
from rocketspec.spec.replay import check_trace


def _scope(bug):
    name, over = LIVENESS_BUG_SCOPES[bug]
    return load_scope(name, **over)


@pytest.mark.parametrize("prof", LIVENESS_BUG_PROFILES, ids=lambda p: p.known_bug)
def test_liveness_bug_found_in_its_scope_with_a_trace_the_spec_rejects(prof, tmp_path):
    r = RefExplorer(_scope(prof.known_bug), prof, stop_at_first=True).run()
    assert [v.invariant for v in r.violations] == [prof.expected_violation], r.violations
    v = r.violations[0]
    assert v.kind == "end" and v.events[-1]["kind"] == "trace_ended" and v.events[-1]["reason"] == "horizon"
    path = tmp_path / "cex.jsonl"
    write_trace(path, v.events)
    rep = check_trace(str(path), prof)
    assert not rep.ok and prof.expected_violation in rep.findings.counts, rep.findings.counts


@pytest.mark.parametrize("bug, releases", [("#5465", ["rocketmq-4.9.8", "rocketmq-5.3.3"]),
                                           ("#8772", ["rocketmq-5.3.3"])])
def test_the_fixed_releases_take_the_whole_scope_clean(bug, releases):
    for release in releases:
        r = RefExplorer(_scope(bug), release).run()
        assert r.complete and r.violations == [] and r.quiescent > 0, (release, r.violations)


def test_4_9_8_still_starves_an_orderly_broadcasting_client():
    # 4.9.8 locks each queue of an orderly broadcasting client at the broker (#8772 is fixed in
    # 5.3.2 only, RebalanceImpl.rebalanceByTopic passes isOrder): the release has the bug
    assert PROFILES["rocketmq-4.9.8"].broadcast_orderly_takes_locks
    r = RefExplorer(_scope("#8772"), "rocketmq-4.9.8", stop_at_first=True).run()
    assert [v.invariant for v in r.violations] == ["INV-LIVE-1"]


@pytest.mark.slow       # 30 s of CPU: the 300 s horizon's whole search (make test-slow)
def test_8772_is_a_starvation_that_ends():
    # the second client consumes once the first one's broker lock expires: with the horizon of
    # tiny (300 s) every run settles, so the scope's 30 s horizon is what makes the wait a finding
    r = RefExplorer(load_scope("tiny", **{**LIVENESS_BUG_SCOPES["#8772"][1], "horizon_ms": 300_000}),
                    BUG_8772_ROCKETMQ_5_3_1).run()
    assert r.complete and r.violations == []


def test_5465_a_broadcasting_orderly_client_never_pulls():
    # the finding names the message and the client that never consumed it
    r = RefExplorer(_scope("#5465"), BUG_5465_ROCKETMQ_4_9_4, stop_at_first=True).run()
    v = r.violations[0]
    assert "never consumed" in v.message and "c0" in v.message
    pulls = [e for e in v.events if e["kind"] == "pull_flow_controlled"]
    assert pulls and all(e["reason"] == "not_locked" for e in pulls)
    assert not any(e["kind"] == "consume_started" for e in v.events)


# ---------------------------------------------------------------- simulate's horizon end

def test_liveness_bugs_are_registered_known_bugs_with_their_scenario_and_scope():
    for p in LIVENESS_BUG_PROFILES:
        assert PROFILES[p.name] is p and BUG_SCOPES[p.known_bug] == LIVENESS_BUG_SCOPES[p.known_bug]
        sc = load_scenario(bug_scenario(p.known_bug))
        assert sc["duration_ms"] + sc["drain_limit_ms"] == SETTLE_MS == _scope(p.known_bug).horizon_ms


@pytest.mark.parametrize("prof", LIVENESS_BUG_PROFILES, ids=lambda p: p.known_bug)
def test_simulate_ends_an_unsettled_run_at_its_horizon_and_check_rejects_it(prof, tmp_path):
    name = bug_scenario(prof.known_bug)
    out = tmp_path / "t.jsonl"
    r = CliRunner().invoke(main, ["simulate", "--scenario", name, "--seed", "1", "--profile", prof.name,
                                  "--out", str(out)])
    assert r.exit_code == 0, r.output
    last = out.read_text().splitlines()[-1]
    assert '"reason":"horizon"' in last.replace(" ", "") and '"ts":30000' in last.replace(" ", ""), last
    r = CliRunner().invoke(main, ["check", str(out), "--profile", prof.name, "--json"])
    assert r.exit_code == 1 and prof.expected_violation in r.output, r.output
    # the releases with the fix consume at once: quiescent, and check holds
    evs = run_to_list(load_scenario(name), 1, "rocketmq-5.3.3")
    assert evs[-1]["reason"] == "quiescent" and evs[-1]["ts"] < 2000


def test_a_run_still_waiting_on_the_clock_at_its_limit_ends_duration_unjudged():
    # #6163's poison message bounces through the schedule forever: a delayed message is pending at
    # the drain limit, so the run was cut short (duration), not settled
    evs = run_to_list(load_scenario("orderly-dlq"), 1, "bug-6163-rocketmq-5.0.0")
    assert evs[-1]["reason"] == "duration"


# ---------------------------------------------------------------- the state machine

def test_the_state_machine_finds_5465_with_an_orderly_broadcasting_client(tmp_path):
    # the machine's deployment with its broadcasting group orderly: the teardown's drain ends at
    # its horizon with nothing waiting on the clock, and b1's never-pulled messages are owed
    from rocketspec.conformance.statemachine import ORDERLY_BROADCAST, check_reference

    res = check_reference(BUG_5465_ROCKETMQ_4_9_4.name, max_examples=100, scenario=ORDERLY_BROADCAST,
                          trace_path=str(tmp_path / "f.jsonl"), shrink_budget_s=5)
    assert not res.ok and res.finding == "INV-LIVE-1", res.summary()
    assert "GID_B" in res.falsifying_code or "b1" in res.falsifying_code, res.falsifying_code
    rep = check_trace(res.trace_path, BUG_5465_ROCKETMQ_4_9_4)
    assert "INV-LIVE-1" in rep.findings.counts
    # the release, in the same environment and examples, holds
    assert check_reference("rocketmq-4.9.8", max_examples=100, scenario=ORDERLY_BROADCAST).ok
