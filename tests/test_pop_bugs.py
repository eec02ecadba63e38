"""The POP bugs of issue 45 as known-bug profiles (docs/notes/pop-bugs.md): each modelled one is a
profile whose switch is the real code path, found by the explorer of the reference in its own
scope (model_checks/scopes.py BUG_SCOPES) with a trace the spec rejects, on its built-in scenario
bug-NNNN, and by the Hypothesis state machine's POP environment; the clean side (the release that
fixed it, or for an open bug the variant with the fix, profiles.OPEN_BUG_FIXES) takes the scope
clean.

#10985 (open): PopReviveService.reviveMsgFromCk's callback (allOf(...).whenComplete) calls
future.getNow on a read that completed exceptionally, so it throws before rePutCK, and
mergeAndRevive has already committed the revive offset past the checkpoint (5.3.3 line 557, 5.5.0
line 586): the un-acked message is never revived."""
from __future__ import annotations

import json

import pytest

from rocketspec.model_checks.refexplore import RefExplorer
from rocketspec.model_checks.result import write_trace
from rocketspec.model_checks.scopes import BUG_SCOPES, load_scope
from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import bug_scenario, load_scenario
from rocketspec.rocketmq import profiles
from rocketspec.rocketmq.profiles import get_profile
from rocketspec.spec.replay import check_events, check_trace


def _scope(bug):
    name, over = BUG_SCOPES[bug]
    return load_scope(name, **over)


def _report(events, profile):
    return check_events(enumerate(events, 1), profiles.get_profile(profile))


def _kinds(events, kind, **match):
    return [e for e in events if e["kind"] == kind and all(e.get(k) == v for k, v in match.items())]


def test_10985_is_registered_as_an_open_bug_with_its_fix_scope_and_scenario():
    bug, fix = profiles.PROFILES["bug-10985-rocketmq-5.5.1"], profiles.PROFILES["fix-10985-rocketmq-5.5.1"]
    assert bug in profiles.POP_BUG_PROFILES and profiles.OPEN_BUG_FIXES["#10985"] is fix
    assert bug.known_bug == "#10985" and bug.expected_violation == "INV-POP-LIVE-1" and fix.known_bug is None
    assert "#10985" in BUG_SCOPES and bug_scenario("#10985") == "bug-10985"
    release = profiles.PROFILES["rocketmq-5.5.1"].switches()
    # the bug profile is the release; the fix changes one switch, the revive's failed read
    assert {k for k, v in bug.switches().items() if release[k] != v} == {
        "name", "description", "known_bug", "expected_violation"}
    assert {k for k, v in fix.switches().items() if release[k] != v} == {
        "name", "description", "revive_read_failure_reputs"}
    # not among the open bugs of issue 43, whose tests run 4.9.8 (no POP) too
    assert bug not in profiles.OPEN_BUG_PROFILES


def test_10985_found_in_its_scope_under_every_5x_release_with_a_trace_the_spec_rejects(tmp_path):
    for prof in ("bug-10985-rocketmq-5.5.1", "rocketmq-5.5.1", "rocketmq-5.3.3"):
        r = RefExplorer(_scope("#10985"), prof, stop_at_first=True).run()
        assert [v.invariant for v in r.violations] == ["INV-POP-LIVE-1"], (prof, r.violations)
        v = r.violations[0]
        assert v.kind == "end"
        # the message's checkpoint reached its revive and nothing came of it
        assert not _kinds(v.events, "message_revived") and _kinds(v.events, "message_popped")
        path = tmp_path / f"{prof}.jsonl"
        write_trace(path, v.events)
        rep = check_trace(str(path), prof)
        assert not rep.ok and "INV-POP-LIVE-1" in rep.findings.counts, rep.findings.counts


def test_10985_the_fix_takes_the_scope_clean():
    r = RefExplorer(_scope("#10985"), "fix-10985-rocketmq-5.5.1").run()
    assert r.complete and r.violations == [] and r.quiescent > 0, r.violations


def test_10985_scenario_loses_the_message_and_the_fix_revives_it_later():
    sc = load_scenario("bug-10985")
    for prof in ("bug-10985-rocketmq-5.5.1", "rocketmq-5.5.1"):
        evs = run_to_list(sc, 1, prof)
        assert evs[-1]["reason"] == "quiescent"
        [f] = _report(evs, prof).findings.errors
        assert f.inv == "INV-POP-LIVE-1" and "never came back" in f.message, f.message
        assert len(_kinds(evs, "pop_consume_started")) == 1 and not _kinds(evs, "message_revived")
    evs = run_to_list(sc, 1, "fix-10985-rocketmq-5.5.1")
    assert _report(evs, "fix-10985-rocketmq-5.5.1").ok
    [first] = _kinds(evs, "pop_checkpoint_written", cause="pop", topic="Jobs")
    # rePutCK: the same pop time, the invisible time raised by the first rewrite interval (10 s)
    [reput] = _kinds(evs, "pop_checkpoint_written", cause="reput")
    assert reput["pop_time"] == first["pop_time"] and reput["invisible_time"] == first["invisible_time"] + 10_000
    assert reput["reput_times"] == 1 and _kinds(evs, "message_revived", outcome="reput")
    [retry] = _kinds(evs, "message_revived", outcome="retry")
    # revived once the re-put checkpoint's deadline is 2 s behind, into the POP retry topic
    assert retry["ts"] >= first["pop_time"] + 15_000 + 2_000 and retry["reconsume_times"] == 1
    assert retry["target_topic"] == "%RETRY%GID_10985_Jobs"
    assert len(_kinds(evs, "pop_consume_started")) == 2 and _kinds(evs, "message_acked", result="acked")


def test_10985_a_scenario_that_fails_revive_reads_is_refused_by_record():
    from rocketspec.commands.record import UNSUPPORTED_STEPS

    assert "fail_revive_reads" in UNSUPPORTED_STEPS


def test_10985_the_state_machine_finds_it_in_the_pop_environment(tmp_path):
    from rocketspec.conformance.statemachine import POP, check_reference

    res = check_reference("bug-10985-rocketmq-5.5.1", max_examples=100, scenario=POP,
                          trace_path=str(tmp_path / "f.jsonl"), shrink_budget_s=10)
    assert not res.ok and res.crash is None and res.finding == "INV-POP-LIVE-1", res.summary()
    assert "fail_revive_reads" in res.falsifying_code
    rep = check_trace(res.trace_path, "bug-10985-rocketmq-5.5.1")
    assert not rep.ok and "INV-POP-LIVE-1" in rep.findings.counts
    fixed = check_reference("fix-10985-rocketmq-5.5.1", max_examples=100, scenario=POP)
    assert fixed.ok and fixed.crashes_ignored == 0, fixed.summary()


def test_the_pop_environment_plays_pop_moves_only():
    from rocketspec.conformance.statemachine import POP, PopMachine, ReferenceMachine, machine_class

    cls = machine_class("rocketmq-5.5.1", scenario=POP)
    assert issubclass(cls, PopMachine)
    assert not issubclass(machine_class("rocketmq-5.5.1"), PopMachine)
    # the push consumer's moves (leases, offsets, ProcessQueues) are not rules of the POP machine
    for name in ("begin", "reset_offset", "set_broker_offset", "await_call"):
        assert getattr(PopMachine, name) is None and getattr(ReferenceMachine, name) is not None
    # a broker restart is a POP move: the spec takes its second deliveries as at-least-once
    assert PopMachine.restart_broker is not None
    assert {g["client_type"] for g in POP["groups"].values()} == {"POP_PUSH", "SIMPLE"}


def test_an_orderly_pop_queue_holding_an_unacked_message_waits_on_the_clock():
    # an orderly handle has no revive: its message is owed to the group's next attempt once its
    # invisible time ends, so a run is not settled while one is out (drain's horizon is not judged)
    # while it is invisible or a consumer of the group is registered to make that attempt
    sc = load_scenario("pop-orderly")
    evs = run_to_list(sc, 1, "rocketmq-5.5.1")
    assert evs[-1]["reason"] == "quiescent"
    from types import SimpleNamespace

    from rocketspec.reference.broker.order_info import ConsumerOrderInfoManager
    from rocketspec.reference.broker.pop import PopService

    svc = PopService.__new__(PopService)
    svc.sim, svc.b = SimpleNamespace(now=0), SimpleNamespace(consumers={"G": {"c1": 0}})
    svc.checkpoints, svc.order = {}, ConsumerOrderInfoManager()
    assert not svc.pending()
    svc.order.update("a1", "T", "G", 0, 0, 5000, [0, 1])
    assert svc.pending()
    svc.sim.now = 6000                  # visible again: owed to the registered consumer's next attempt
    assert svc.pending()
    svc.b.consumers["G"].clear()        # none left: the message waits for the next consumer
    assert not svc.pending()
    svc.sim.now = 4000                  # still invisible: its visibility is on the clock
    assert svc.pending()
    svc.order.commit_and_next("T", "G", 0, 0, 0)
    svc.order.commit_and_next("T", "G", 0, 1, 0)
    assert not svc.pending()


def test_a_fifo_message_held_when_the_group_leaves_ends_the_run_settled_and_not_owed():
    """The POP machine's FIFO client leaves holding a message (the listener fails it, no
    change): the drain ends settled once its group has no registered consumer, and the spec
    does not owe the held message (INV-POP-LIVE-1 holds, docs/pop.md)."""
    from rocketspec.conformance.statemachine import POP
    from rocketspec.reference.runner import Run

    sc = json.loads(json.dumps(POP))
    sc["groups"]["GID_F"]["listener"] = {"duration_ms": [1, 1], "fail_rate": 1.0}
    evs: list = []
    run = Run(sc, 0, "rocketmq-5.5.1", evs.append)
    run.setup()
    for st in ({"action": "start", "client": "f1", "group": "GID_F"},
               {"action": "produce", "topic": "T", "count": 1, "tags": "A"}):
        run.do_step(st)
    run.sim.run_until(run.sim.now + 2000)
    run.do_step({"action": "shutdown", "client": "f1"})
    from rocketspec.spec.actions import JUDGED_ENDS

    assert run.drain(run.sim.now + 300_000) in JUDGED_ENDS     # settled: the end rule judges it
    rep = check_events(enumerate(evs, 1), get_profile("rocketmq-5.5.1"))
    held = [e for e in evs if e["kind"] == "message_popped" and e["order"]]
    assert held and rep.ok, [f.message for f in rep.findings.errors]


# ---- #8490 (develop only, no release): processPopResult (DefaultMQPushConsumerImpl line 656) compared
# a popped message's reconsumeTimes with the raw maxReconsumeTimes between #8332's fix (ce27e1f) and
# #8491 (25b1a0e); 5.3.0 had no such check, 5.3.1, 5.3.3 and 5.5.0 compare with getMaxReconsumeTimes()
# (-1 means 16). At the default -1 every popped message was acked before its listener call.
BUG_8490 = "bug-8490-rocketmq-5.3.1-SNAPSHOT"


def _pop_default_limit():
    """The POP environment with GID_P (push consumers in POP mode) at the default maxReconsumeTimes."""
    from rocketspec.conformance.statemachine import POP

    sc = json.loads(json.dumps(POP))
    sc["groups"]["GID_P"]["max_reconsume_times"] = -1
    return sc


def test_8490_is_registered_with_one_switch_reverted_from_5_3_3_a_scope_and_a_scenario():
    bug = profiles.PROFILES[BUG_8490]
    assert bug in profiles.POP_BUG_PROFILES and "#8490" not in profiles.OPEN_BUG_FIXES
    assert bug.known_bug == "#8490" and bug.expected_violation == "INV-POP-LOSS-1"
    release = profiles.PROFILES["rocketmq-5.3.3"].switches()
    assert {k for k, v in bug.switches().items() if release[k] != v} == {
        "name", "release", "description", "known_bug", "expected_violation", "pop_push_limit_resolved"}
    # every release compares with the resolved limit
    for name in ("rocketmq-5.3.3", "rocketmq-5.5.1"):
        assert profiles.PROFILES[name].pop_push_limit_resolved
    assert "#8490" in BUG_SCOPES and bug_scenario("#8490") == "bug-8490"


@pytest.mark.parametrize("resolved", [True, False])
def test_8490_the_limit_differs_only_for_the_default_minus_one(resolved):
    from hypothesis import given, strategies as st

    from rocketspec.rocketmq.pop import max_reconsume_times, push_pop_past_limit

    @given(st.integers(0, 40), st.integers(-1, 16))
    def prop(times, configured):
        past = push_pop_past_limit(times, configured, limit_resolved=resolved)
        if resolved:
            assert past == (times > (16 if configured == -1 else configured))
        else:
            assert past == (times > configured)
        # the two readings disagree exactly at -1 up to 16 reconsumptions: a message the resolved
        # limit still retries is acked unseen by the raw one
        assert (push_pop_past_limit(times, configured) != push_pop_past_limit(times, configured, False)) == (
            configured == -1 and times <= max_reconsume_times(-1))

    prop()


def test_8490_found_in_its_scope_with_a_trace_the_spec_rejects_naming_it_and_the_releases_clean(tmp_path):
    r = RefExplorer(_scope("#8490"), BUG_8490, stop_at_first=True).run()
    assert [v.invariant for v in r.violations] == ["INV-POP-LOSS-1"], r.violations
    v = r.violations[0]
    # acked as past its retries at its first delivery, with no listener call
    [ack] = _kinds(v.events, "message_acked", reason="max_reconsume")
    [popped] = _kinds(v.events, "message_popped")
    assert popped["reconsume_times"] == 0 and not _kinds(v.events, "pop_consume_started")
    path = tmp_path / "cex.jsonl"
    write_trace(path, v.events)
    rep = check_trace(str(path), BUG_8490)
    [f] = [f for f in rep.findings.errors if f.inv == "INV-POP-LOSS-1"]
    assert "#8490" in f.message and "below its limit 16" in f.message, f.message
    for prof in ("rocketmq-5.3.3", "rocketmq-5.5.1"):
        r2 = RefExplorer(_scope("#8490"), prof).run()
        assert r2.complete and r2.violations == [] and r2.quiescent > 0, (prof, r2.violations)
        # the scope's failed call is retried: its release path reaches a second listener call
        assert r2.distinct > r.distinct


def test_8490_scenario_drops_every_message_unseen_and_the_releases_consume_them():
    sc = load_scenario("bug-8490")
    evs = run_to_list(sc, 1, BUG_8490)
    errors = _report(evs, BUG_8490).findings.errors
    assert [f.inv for f in errors] == ["INV-POP-LOSS-1"] * 3
    assert all("#8490" in f.message and "raw maxReconsumeTimes -1" in f.message for f in errors)
    assert len(_kinds(evs, "message_acked", reason="max_reconsume")) == 3 and not _kinds(evs, "pop_consume_started")
    for prof in ("rocketmq-5.3.3", "rocketmq-5.5.1"):
        evs = run_to_list(sc, 1, prof)
        assert _report(evs, prof).ok
        assert len(_kinds(evs, "pop_consume_started")) == 3 and not _kinds(evs, "message_acked", reason="max_reconsume")


def test_8490_the_cause_is_named_only_for_a_count_above_the_raw_limit():
    # the same drop with maxReconsumeTimes 2 set by the application: below its limit, not #8490's
    evs = run_to_list(load_scenario("bug-8490"), 1, BUG_8490)
    for e in evs:
        if e["kind"] == "client_started":
            e["config"] = dict(e["config"], max_reconsume_times=2, max_reconsume_resolved=2)
    errors = _report(evs, BUG_8490).findings.errors
    assert [f.inv for f in errors] == ["INV-POP-LOSS-1"] * 3
    assert all("below its limit 2" in f.message and "#8490" not in f.message for f in errors)


def test_8490_the_state_machine_finds_it_in_the_pop_environment_at_the_default_limit(tmp_path):
    from rocketspec.conformance.statemachine import check_reference

    sc = _pop_default_limit()
    res = check_reference(BUG_8490, max_examples=100, scenario=sc, trace_path=str(tmp_path / "f.jsonl"),
                          shrink_budget_s=10)
    assert not res.ok and res.crash is None and res.finding == "INV-POP-LOSS-1", res.summary()
    rep = check_trace(res.trace_path, BUG_8490)
    assert not rep.ok and "INV-POP-LOSS-1" in rep.findings.counts
    # 5.5.1 in the same environment holds; the environment also plays #10985's failed revive reads,
    # which every release has (open), so 5.5.1 is taken with that fix only
    fixed = check_reference("fix-10985-rocketmq-5.5.1", max_examples=100, scenario=sc)
    assert fixed.ok and fixed.crashes_ignored == 0, fixed.summary()


def test_8490_real_5_5_0_consumes_every_message_at_the_default_limit():
    """Scenario bug-8490 recorded on real 5.5.0 (`rocketspec record --scenario bug-8490 --release
    5.5.0`): maxReconsumeTimes -1, three messages popped at reconsumeTimes 0, each received by a
    listener call before its ack, none acked unseen: the release compares with 16, and check holds."""
    import gzip
    from pathlib import Path

    path = Path(__file__).parent / "fixtures" / "real" / "bugs" / "bug-8490-5.5.0.jsonl.gz"
    with gzip.open(path, "rt") as fh:
        evs = [json.loads(line) for line in fh if line.strip()]
    assert next(e["config"]["version"] for e in evs if e["kind"] == "broker_started") == "5.5.0"
    [started] = _kinds(evs, "client_started")
    assert started["config"]["max_reconsume_times"] == -1
    popped = _kinds(evs, "message_popped", topic="Jobs")
    assert sorted(e["offset"] for e in popped) == [0, 1, 2] and {e["reconsume_times"] for e in popped} == {0}
    handed = {h: e["seq"] for e in _kinds(evs, "pop_consume_started") for h in e["handles"]}
    acks = _kinds(evs, "message_acked", result="acked")
    assert len(acks) == 3 and all(handed[a["handle"]] < a["seq"] for a in acks)
    for prof in ("rocketmq-5.5.1", BUG_8490):
        assert _report(evs, prof).ok


# ---- #8332 (5.0.0 to 5.3.0, fixed in 5.3.1 by PR #8333, ce27e1f): processPopResult
# (DefaultMQPushConsumerImpl, 5.3.0 lines 621-664) has no past-limit check, so a popped message
# whose reconsumeTimes is above maxReconsumeTimes reaches the listener. It gets there by revive: a
# failed call at the limit is delayed by checkNeedAckOrDelay (ConsumeMessagePopConcurrentlyService
# 5.3.0 lines 255-285; acked only past 2 x 7200 s of age), or a call outlives its handle; each
# revive counts one more (PopReviveService.reviveRetry). 5.3.1+ acks it unconsumed (line 656).
BUG_8332 = "bug-8332-rocketmq-5.3.0"


def _pop_limit(n):
    """The POP environment with GID_P (push consumers in POP mode) at maxReconsumeTimes `n`."""
    from rocketspec.conformance.statemachine import POP

    sc = json.loads(json.dumps(POP))
    sc["groups"]["GID_P"]["max_reconsume_times"] = n
    return sc


def test_8332_is_registered_with_one_switch_reverted_from_5_3_3_a_scope_and_a_scenario():
    bug = profiles.PROFILES[BUG_8332]
    assert bug in profiles.POP_BUG_PROFILES and "#8332" not in profiles.OPEN_BUG_FIXES
    assert bug.known_bug == "#8332" and bug.expected_violation == "INV-POP-DLQ-1" and bug.release == "5.3.0"
    release = profiles.PROFILES["rocketmq-5.3.3"].switches()
    assert {k for k, v in bug.switches().items() if release[k] != v} == {
        "name", "release", "description", "known_bug", "expected_violation", "pop_push_acks_past_limit"}
    for name in ("rocketmq-5.3.3", "rocketmq-5.5.1", BUG_8490):
        assert profiles.PROFILES[name].pop_push_acks_past_limit
    assert "#8332" in BUG_SCOPES and bug_scenario("#8332") == "bug-8332"


def test_8332_found_in_its_scope_with_a_trace_the_spec_rejects_naming_it_and_the_releases_clean(tmp_path):
    r = RefExplorer(_scope("#8332"), BUG_8332, stop_at_first=True).run()
    assert [v.invariant for v in r.violations] == ["INV-POP-DLQ-1"], r.violations
    v = r.violations[0]
    # the first call fails at the limit (0), revive counts 1, and the listener gets the copy again
    calls = _kinds(v.events, "pop_consume_started")
    assert [c["reconsume_list"] for c in calls] == [[0], [1]]
    assert _kinds(v.events, "message_revived", outcome="retry", reconsume_times=1)
    assert not _kinds(v.events, "message_acked", reason="max_reconsume")
    path = tmp_path / "cex.jsonl"
    write_trace(path, v.events)
    rep = check_trace(str(path), BUG_8332)
    [f] = [f for f in rep.findings.errors if f.inv == "INV-POP-DLQ-1"]
    assert "#8332" in f.message and "1 reconsumptions" in f.message and "maxReconsumeTimes 0" in f.message, f.message
    for prof in ("rocketmq-5.3.3", "rocketmq-5.5.1"):
        r2 = RefExplorer(_scope("#8332"), prof).run()
        assert r2.complete and r2.violations == [] and r2.quiescent > 0, (prof, r2.violations)
        # the release path acks the revived copy unconsumed (no second listener call)
        assert r2.distinct > 0


def test_8332_scenario_calls_the_listener_past_the_limit_and_the_releases_ack_it_unconsumed():
    sc = load_scenario("bug-8332")
    evs = run_to_list(sc, 1, BUG_8332)
    errors = _report(evs, BUG_8332).findings.errors
    assert [f.inv for f in errors] == ["INV-POP-DLQ-1"] * 4
    assert all("#8332" in f.message for f in errors)
    past = sorted(n for e in _kinds(evs, "pop_consume_started") for n in e["reconsume_list"] if n > 0)
    assert past == [1, 1, 2, 3]       # the slow message once, the poison one three times
    assert not _kinds(evs, "message_acked", reason="max_reconsume")
    for prof in ("rocketmq-5.3.3", "rocketmq-5.5.1"):
        evs = run_to_list(sc, 1, prof)
        assert _report(evs, prof).ok
        assert all(e["reconsume_list"] == [0] for e in _kinds(evs, "pop_consume_started"))
        assert len(_kinds(evs, "message_acked", reason="max_reconsume")) == 2


def test_8332_the_spec_judges_only_a_push_consumer_in_pop_mode_against_its_resolved_limit():
    """The rule reads the client's maxReconsumeTimes as getMaxReconsumeTimes() (-1 means 16), and
    judges no SimpleConsumer (the proxy's limit is maxAttempts, judged at pop_dead_lettered)."""
    evs = run_to_list(load_scenario("bug-8332"), 1, BUG_8332)

    def with_config(**cfg):
        out = json.loads(json.dumps(evs))
        for e in out:
            if e["kind"] == "client_started":
                e["config"] = dict(e["config"], **cfg)
        return _report(out, BUG_8332)

    # the calls reach 3 reconsumptions: within a limit of 3, and of the default -1 (16)
    assert with_config(max_reconsume_times=3).ok
    assert with_config(max_reconsume_times=-1).ok
    assert [f.inv for f in with_config(max_reconsume_times=2).findings.errors] == ["INV-POP-DLQ-1"]
    assert with_config(max_reconsume_times=0, client_type="SIMPLE").findings.counts.get("INV-POP-DLQ-1") is None
    # the release's profile names #8332's fix, not the bug, as the check that should have run
    rep = _report(evs, "rocketmq-5.3.3")
    assert [f.inv for f in rep.findings.errors] == ["INV-POP-DLQ-1"] * 4
    assert all("#8332's fix" in f.message and "cause: #8332" not in f.message for f in rep.findings.errors)


def test_8332_the_state_machine_finds_it_in_the_pop_environment_at_limit_0(tmp_path, monkeypatch):
    from rocketspec.conformance.statemachine import check_reference

    # the bug profile is 5.3.3 with one switch reverted, so it has #10985 too, which the environment
    # plays (failed revive reads: INV-POP-LIVE-1) and may meet first: searched with #10985 fixed
    name = BUG_8332 + "+fix-10985"
    monkeypatch.setitem(profiles.PROFILES, name, profiles.derive(profiles.PROFILES[BUG_8332], name=name,
                                                                 revive_read_failure_reputs=True))
    sc = _pop_limit(0)
    res = check_reference(name, max_examples=100, scenario=sc, trace_path=str(tmp_path / "f.jsonl"),
                          shrink_budget_s=10)
    assert not res.ok and res.crash is None and res.finding == "INV-POP-DLQ-1", res.summary()
    rep = check_trace(res.trace_path, BUG_8332)
    assert not rep.ok and "INV-POP-DLQ-1" in rep.findings.counts
    # the release in the same environment (taken with #10985's fix: the environment also plays
    # failed revive reads, which every release has, open) calls no listener past the limit. At
    # limit 0 it may show the other loss every 5.x push consumer in POP mode has: a message whose
    # only pop ran out before its call is revived at 1 and acked unseen (INV-POP-LOSS-1, random
    # real run 20201); that is the only finding allowed
    fixed = check_reference("fix-10985-rocketmq-5.5.1", max_examples=100, scenario=sc,
                            trace_path=str(tmp_path / "fixed.jsonl"), shrink_budget_s=10)
    assert fixed.crash is None and fixed.crashes_ignored == 0, fixed.summary()
    if not fixed.ok:
        rep = check_trace(fixed.trace_path, "fix-10985-rocketmq-5.5.1")
        assert {f.inv for f in rep.findings.errors} == {"INV-POP-LOSS-1"}, rep.findings.counts
        assert all("no listener call ever received" in f.message for f in rep.findings.errors)


def test_8332_real_5_5_1_acks_the_revived_copies_unconsumed():
    """Scenario bug-8332 recorded on real 5.5.1 (`rocketspec record --scenario bug-8332 --release
    5.5.1`; its broker with 5.5.0's push consumer): maxReconsumeTimes 0; the poison message's call
    fails and the slow one's outlives its handle; revive puts both back at reconsumeTimes 1, and
    processPopResult acks each before any listener call. Every call is at 0; check holds."""
    import gzip
    from pathlib import Path

    path = Path(__file__).parent / "fixtures" / "real" / "bugs" / "bug-8332-5.5.1.jsonl.gz"
    with gzip.open(path, "rt") as fh:
        evs = [json.loads(line) for line in fh if line.strip()]
    assert next(e["config"]["version"] for e in evs if e["kind"] == "broker_started") == "5.5.1"
    [started] = _kinds(evs, "client_started")
    assert started["config"]["max_reconsume_times"] == 0 and started["config"]["client_type"] == "POP_PUSH"
    calls = _kinds(evs, "pop_consume_started")
    assert [c["reconsume_list"] for c in calls] == [[0], [0]]
    assert [e["status"] for e in _kinds(evs, "pop_consume_finished")] == ["RECONSUME_LATER", "CONSUME_SUCCESS"]
    assert sorted(e["reconsume_times"] for e in _kinds(evs, "message_revived", outcome="retry")) == [1, 1]
    retry_pops = [e for e in _kinds(evs, "message_popped") if e["topic"].startswith("%RETRY%")]
    assert sorted(e["reconsume_times"] for e in retry_pops) == [1, 1]
    handed = {h for c in calls for h in c["handles"]}
    acks = [a for a in _kinds(evs, "message_acked", result="acked") if a["topic"].startswith("%RETRY%")]
    assert len(acks) == 2 and not handed & {a["handle"] for a in acks}
    for prof in ("rocketmq-5.5.1", BUG_8332):
        assert _report(evs, prof).ok


# ---- #7914 (5.0.0 to 5.2.0, fixed in 5.3.0 by PR #7915, 9b4f16a): PopReviveService.reviveMsgFromCk
# skips a checkpoint's message whose store time is later than the checkpoint's pop time ("skip ck
# from last epoch", 5.0.0 line 413, 5.2.0 line 545) and counts it done. PopMessageProcessor takes
# the pop time (processRequest: System.currentTimeMillis, 5.2.0 line 368) before popMsgFromQueue
# reads the queue, so a message stored in between is popped with a later store time; un-acked, it
# is never revived. 5.3.0's PopReviveService has no such check.
BUG_7914 = "bug-7914-rocketmq-5.2.0"


def test_7914_is_registered_with_one_switch_reverted_from_5_3_3_a_scope_and_a_scenario():
    bug = profiles.PROFILES[BUG_7914]
    assert bug in profiles.POP_BUG_PROFILES and "#7914" not in profiles.OPEN_BUG_FIXES
    assert bug.known_bug == "#7914" and bug.expected_violation == "INV-POP-LIVE-1" and bug.release == "5.2.0"
    release = profiles.PROFILES["rocketmq-5.3.3"].switches()
    assert {k for k, v in bug.switches().items() if release[k] != v} == {
        "name", "release", "description", "known_bug", "expected_violation", "pop_revive_skips_last_epoch"}
    for name in ("rocketmq-5.3.3", "rocketmq-5.5.1", BUG_8332, BUG_8490, "bug-10985-rocketmq-5.5.1"):
        assert not profiles.PROFILES[name].pop_revive_skips_last_epoch
    assert "#7914" in BUG_SCOPES and bug_scenario("#7914") == "bug-7914"
    # the late read is a fault of its own scope only: no other POP scope offers it
    for bug_id, (name, over) in BUG_SCOPES.items():
        if bug_id != "#7914":
            assert "pop_read_late" not in load_scope(name, **over).fault_kinds or not load_scope(name, **over).faults
    assert "pop_read_late" not in load_scope("tiny-pop").fault_kinds


def test_7914_the_skip_is_a_store_time_strictly_after_the_pop_time_and_only_with_the_switch():
    from hypothesis import given, strategies as st

    from rocketspec.rocketmq.pop import revive_skips_last_epoch

    @given(st.integers(0, 10**6), st.integers(-5, 5), st.booleans())
    def prop(pop_time, later, switch):
        # a message stored in the pop time's millisecond or before is revived by every release
        assert revive_skips_last_epoch(pop_time, pop_time + later, switch) == (switch and later > 0)

    prop()


def test_7914_a_late_pop_keeps_the_pop_time_it_took_at_the_start():
    """delay_pop_reads: the request arrives at 1 ms and takes its pop time then; the queue is read
    10 ms later, after the message stored at 5 ms: the handle, the checkpoint and the deadline carry
    the pop time of 1, not the read's time."""
    evs = run_to_list(load_scenario("bug-7914"), 1, "rocketmq-5.5.1")
    [stored] = _kinds(evs, "message_stored", topic="Jobs")
    [ck] = _kinds(evs, "pop_checkpoint_written", topic="Jobs", cause="pop")
    [popped] = _kinds(evs, "message_popped", topic="Jobs")
    assert ck["pop_time"] == popped["pop_time"] == 1 < stored["ts"] == 5 < popped["ts"] == 11
    from rocketspec.rocketmq.pop import parse_handle

    h = parse_handle(popped["handle"])
    assert h["pop_time"] == 1 and h["invisible_time"] == 5000 and popped["invisible_time"] == 5000


def test_7914_scenario_loses_the_message_and_the_releases_revive_it():
    sc = load_scenario("bug-7914")
    evs = run_to_list(sc, 1, BUG_7914)
    assert evs[-1]["reason"] == "quiescent"
    [f] = _report(evs, BUG_7914).findings.errors
    assert f.inv == "INV-POP-LIVE-1" and "never came back" in f.message and "cause: #7914" in f.message, f.message
    assert "stored at 5, after the pop time 1" in f.message
    assert len(_kinds(evs, "pop_consume_started")) == 1 and not _kinds(evs, "message_revived")
    for prof in ("rocketmq-5.3.3", "rocketmq-5.5.1"):
        evs = run_to_list(sc, 1, prof)
        # the spec takes a 5.x trace whose popped message was stored after its checkpoint's pop
        # time, revived as every other (5.3.0+ have no such check)
        assert _report(evs, prof).ok, [x.message for x in _report(evs, prof).findings.errors]
        [stored] = _kinds(evs, "message_stored", topic="Jobs")
        [retry] = _kinds(evs, "message_revived", outcome="retry")
        assert retry["pop_time"] < stored["ts"] and retry["target_topic"] == "%RETRY%GID_7914_Jobs"
        assert len(_kinds(evs, "pop_consume_started")) == 2 and _kinds(evs, "message_acked", result="acked")


def test_7914_is_named_only_where_the_held_copy_was_stored_after_its_pop_time():
    # the release's profile names no #7914 for the same loss (its revive has no skip)
    evs = run_to_list(load_scenario("bug-7914"), 1, BUG_7914)
    [f] = _report(evs, "rocketmq-5.3.3").findings.errors
    assert f.inv == "INV-POP-LIVE-1" and "#7914" not in f.message
    # a message lost otherwise (#10985's failed revive read) under the 5.2.0 profile: popped by a
    # pop that started after its store, so #7914 is not its cause
    evs = run_to_list(load_scenario("bug-10985"), 1, BUG_7914)
    [f] = _report(evs, BUG_7914).findings.errors
    assert f.inv == "INV-POP-LIVE-1" and "#7914" not in f.message, f.message


def test_7914_found_in_its_scope_with_a_trace_the_spec_rejects_naming_it_and_the_releases_clean(tmp_path):
    r = RefExplorer(_scope("#7914"), BUG_7914, stop_at_first=True).run()
    assert [v.invariant for v in r.violations] == ["INV-POP-LIVE-1"], r.violations
    v = r.violations[0]
    assert v.kind == "end"
    [stored] = _kinds(v.events, "message_stored")
    [popped] = _kinds(v.events, "message_popped")
    assert popped["pop_time"] < stored["ts"] < popped["ts"] and not _kinds(v.events, "message_revived")
    path = tmp_path / "cex.jsonl"
    write_trace(path, v.events)
    rep = check_trace(str(path), BUG_7914)
    [f] = [f for f in rep.findings.errors if f.inv == "INV-POP-LIVE-1"]
    assert "cause: #7914" in f.message, f.message
    for prof in ("rocketmq-5.3.3", "rocketmq-5.5.1"):
        r2 = RefExplorer(_scope("#7914"), prof).run()
        assert r2.complete and r2.violations == [] and r2.quiescent > 0, (prof, r2.violations)
    # without the late read the bug has no way in: the scope with no fault is clean on 5.2.0
    name, over = BUG_SCOPES["#7914"]
    r3 = RefExplorer(load_scope(name, **dict(over, faults=0)), BUG_7914).run()
    assert r3.complete and r3.violations == [], r3.violations


def test_7914_a_scenario_that_delays_pop_reads_is_refused_by_record():
    from rocketspec.commands.record import UNSUPPORTED_STEPS

    assert "delay_pop_reads" in UNSUPPORTED_STEPS


def test_7914_the_state_machine_finds_it_in_the_late_read_pop_environment(tmp_path):
    from rocketspec.conformance.statemachine import POP_LATE, PopLateMachine, PopMachine, check_reference, \
        machine_class

    # an environment of its own: the POP environment's rules are unchanged
    assert issubclass(machine_class("rocketmq-5.5.1", scenario=POP_LATE), PopLateMachine)
    assert not hasattr(PopMachine, "produce_during_pop_read") and not hasattr(PopMachine, "pop_reads_late")
    assert PopLateMachine.fail_revive_reads is None and PopMachine.fail_revive_reads is not None
    res = check_reference(BUG_7914, max_examples=100, scenario=POP_LATE, trace_path=str(tmp_path / "f.jsonl"),
                          shrink_budget_s=10)
    assert not res.ok and res.crash is None and res.finding == "INV-POP-LIVE-1", res.summary()
    assert "POP_LATE" in res.falsifying_code and "produce_during_pop_read" in res.falsifying_code
    rep = check_trace(res.trace_path, BUG_7914)
    assert not rep.ok and any("cause: #7914" in f.message for f in rep.findings.errors)
    fixed = check_reference("rocketmq-5.5.1", max_examples=100, scenario=POP_LATE)
    assert fixed.ok and fixed.crashes_ignored == 0 and fixed.runaway == 0, fixed.summary()
