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
