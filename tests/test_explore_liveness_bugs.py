"""The liveness bugs of issue 43 (#5465, #8772) found by the explorer of the reference, each in a
scope of its own (model_checks/scopes.py LIVENESS_BUG_SCOPES): an end at the horizon with nothing
waiting on the clock and a message a client never consumed (INV-LIVE-1), a trace the spec's
replay rejects; the release that has the fix takes the whole scope clean."""
from __future__ import annotations

import pytest

from rocketspec.model_checks.refexplore import RefExplorer
from rocketspec.model_checks.result import write_trace
from rocketspec.model_checks.scopes import LIVENESS_BUG_SCOPES, load_scope
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
