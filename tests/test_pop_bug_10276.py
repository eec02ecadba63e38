"""#10276 as a known-bug profile (docs/notes/pop-bugs.md): the broker's RocksDB POP path
(PopConsumerService, popConsumerKVServiceEnable, off by default) keys a popped message's record by
its deadline (PopConsumerRecord.getKeyBytes: popTime + invisibleTime, group, topic, queue,
offset). changeInvisibilityDuration writes the new record, then deletes the old key: in 5.5.0
also when the new deadline equals the old one, so the delete removes the record it has just
written and the message is never revived. 5.5.1 skips that delete when the keys match (PR #10277).
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketspec.model_checks.refexplore import RefExplorer
from rocketspec.model_checks.result import write_trace
from rocketspec.model_checks.scopes import BUG_SCOPES, load_scope
from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import ScenarioError, bug_scenario, load_scenario, validate
from rocketspec.rocketmq import profiles
from rocketspec.spec.replay import check_events, check_trace

BUG = "bug-10276-rocketmq-5.5.0"
RELEASE = "rocketmq-5.5.1"


def _scope(**more):
    name, over = BUG_SCOPES["#10276"]
    return load_scope(name, **{**over, **more})


def _kinds(events, kind, **match):
    return [e for e in events if e["kind"] == kind and all(e.get(k) == v for k, v in match.items())]


def _report(events, profile):
    return check_events(enumerate(events, 1), profiles.get_profile(profile))


def test_10276_is_registered_with_the_kv_path_and_the_same_key_delete_a_scope_and_a_scenario():
    bug = profiles.PROFILES[BUG]
    assert bug in profiles.POP_BUG_PROFILES and "#10276" not in profiles.OPEN_BUG_FIXES
    assert bug.known_bug == "#10276" and bug.expected_violation == "INV-POP-LIVE-1" and bug.release == "5.5.0"
    release = profiles.PROFILES[RELEASE].switches()
    assert {k for k, v in bug.switches().items() if release[k] != v} == {
        "name", "release", "description", "known_bug", "expected_violation", "pop_consumer_kv_service",
        "pop_kv_change_deletes_same_key"}
    # off by default in every release: every other profile keeps the revive-log path
    assert [p.name for p in profiles.PROFILES.values() if p.pop_consumer_kv_service] == [
        BUG, "bug-10827-rocketmq-5.5.0"]
    assert "#10276" in BUG_SCOPES and bug_scenario("#10276") == "bug-10276"


def test_10276_the_kv_path_is_off_unless_asked_for():
    evs = run_to_list(load_scenario("pop-basic"), 1, RELEASE)
    cks = _kinds(evs, "pop_checkpoint_written")
    assert cks and {e["store"] for e in cks} == {"revive_log"}
    [started] = _kinds(evs, "broker_started")
    assert "pop_consumer_kv_service" not in started["config"]
    with pytest.raises(ScenarioError):
        validate({"name": "x", "broker_config": {"pop_consumer_kv_service": "yes"}}, "<test>")


class _Sim:
    def __init__(self):
        self.now, self.events = 0, []

    def emit(self, kind, **f):
        self.events.append({"kind": kind, **f})


def _kv(deletes_same_key):
    from rocketspec.reference.broker.pop_kv import PopConsumerKv

    sim = _Sim()
    broker = SimpleNamespace(sim=sim, name="broker-a", proc=None,
                             profile=SimpleNamespace(pop_kv_change_deletes_same_key=deletes_same_key))
    return PopConsumerKv(broker), sim


@settings(max_examples=200, deadline=None)
@given(pop_time=st.integers(0, 10**6), invisible=st.integers(1000, 300_000), after=st.integers(0, 300_000),
       new_invisible=st.integers(1000, 300_000), deletes_same_key=st.booleans())
def test_10276_a_change_leaves_the_new_record_unless_5_5_0_deletes_its_own_key(pop_time, invisible, after,
                                                                                 new_invisible, deletes_same_key):
    kv, sim = _kv(deletes_same_key)
    sim.now = pop_time
    kv.write_popped("G", "T", 0, [7], pop_time, invisible)
    assert list(kv.records) == [(pop_time + invisible, "G", "T", 0, 7)]
    sim.now = pop_time + after
    kv.change("G", "T", 0, 7, pop_time, invisible, new_invisible)
    same = sim.now + new_invisible == pop_time + invisible
    if same and deletes_same_key:
        assert kv.records == {}      # #10276: nothing left for the revive
    else:
        assert list(kv.records) == [(sim.now + new_invisible, "G", "T", 0, 7)]
    # the old handle's ack: it deletes its key, which is the new record's only when the deadlines match
    left = dict(kv.records)
    result = kv.ack("G", "T", 0, 7, pop_time, invisible)
    assert result == ("acked" if same and left else "stale")


def test_10276_scenario_loses_the_message_on_5_5_0_and_5_5_1_revives_it():
    sc = load_scenario("bug-10276")
    evs = run_to_list(sc, 1, BUG)
    assert evs[-1]["reason"] == "quiescent"
    pop, change = _kinds(evs, "pop_checkpoint_written")
    # the change's record: a new pop time, the old deadline
    assert change["cause"] == "change_invisible" and change["pop_time"] > pop["pop_time"]
    assert change["pop_time"] + change["invisible_time"] == pop["pop_time"] + pop["invisible_time"]
    assert not _kinds(evs, "message_revived") and len(_kinds(evs, "pop_consume_started")) == 1
    [f] = _report(evs, BUG).findings.errors
    assert f.inv == "INV-POP-LIVE-1" and "cause: #10276" in f.message, f.message
    evs = run_to_list(sc, 1, RELEASE)
    assert _report(evs, RELEASE).ok
    [revived] = _kinds(evs, "message_revived", outcome="retry")
    assert revived["pop_time"] == change["pop_time"] and revived["target_topic"] == "%RETRY%GID_10276_Jobs"
    # the first revive scan whose window passes the deadline by 50 ms (every 500 ms)
    assert revived["ts"] == 6500
    assert _kinds(evs, "message_acked", result="acked")


def test_10276_found_in_its_scope_with_a_trace_the_spec_rejects_naming_it_and_5_5_1_clean(tmp_path):
    r = RefExplorer(_scope(), BUG, stop_at_first=True).run()
    assert [v.invariant for v in r.violations] == ["INV-POP-LIVE-1"], r.violations
    v = r.violations[0]
    path = tmp_path / "bug.jsonl"
    write_trace(path, v.events)
    rep = check_trace(str(path), BUG)
    assert not rep.ok and any("cause: #10276" in f.message for f in rep.findings.errors)
    r2 = RefExplorer(_scope(), RELEASE).run()
    assert r2.complete and r2.violations == [] and r2.quiescent > 0, r2.violations
    # the way in is the equal deadline on the KV path: 5.5.0 with a call 1 ms shorter is clean, and
    # so is the revive-log path (5.5.1 without the KV path) with the same timing
    for prof, more in ((BUG, {"consume_ms": [2997]}), (RELEASE, {"pop_kv_service": False})):
        r3 = RefExplorer(_scope(**more), prof).run()
        assert r3.complete and r3.violations == [], (more, r3.violations)


def test_10276_record_runs_the_kv_path_on_5x_and_refuses_it_on_4x(tmp_path):
    """The real broker's RocksDB POP path is a broker setting the recorder's driver makes
    (popConsumerKVServiceInit and popConsumerKVServiceEnable); 4.9.8 has no such path."""
    from rocketspec.commands.record import RecordError, _unsupported, build_plan, record

    sc = load_scenario("bug-10276")
    assert _unsupported(sc) == []
    assert build_plan(sc, 1, 60, tmp_path, tmp_path)["broker"]["pop_consumer_kv_service"] is True
    assert build_plan(load_scenario("pop-basic"), 1, 60, tmp_path, tmp_path)["broker"]["pop_consumer_kv_service"] is False
    with pytest.raises(RecordError, match="RocksDB POP path exists only in RocketMQ 5.x"):
        record("bug-10276", str(tmp_path / "t.jsonl"), None, 1, None, None, "4.9.8", None)


def test_random_pop_runs_take_the_kv_path_when_asked():
    from rocketspec.conformance.random_scenarios import generate

    for seed in range(5):
        assert generate(seed, pop=True, kv=True)["broker_config"]["pop_consumer_kv_service"] is True
        assert generate(seed, pop=True, simple=True, kv=True)["broker_config"]["pop_consumer_kv_service"] is True
        plain = generate(seed, pop=True)
        assert "pop_consumer_kv_service" not in plain["broker_config"]
        kv = generate(seed, pop=True, kv=True)
        kv["broker_config"].pop("pop_consumer_kv_service")
        assert kv == plain


def test_10276_the_state_machine_finds_it_in_the_kv_pop_environment(tmp_path):
    # in a fresh interpreter: in a CI worker that had run other tests first, this search met
    # INV-POP-ORDER-1 at example 11 instead (twice, 2026-12-07); alone it meets INV-POP-LIVE-1 at
    # example 9 under any hash seed. What leaks between tests is not found yet (docs/notes/pop-bugs.md)
    r = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
                        f"import test_pop_bug_10276 as t, pathlib; "
                        f"t._state_machine_search(pathlib.Path({str(tmp_path)!r}))"],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


def _state_machine_search(tmp_path):
    from rocketspec.conformance.statemachine import POP_KV, PopKvMachine, PopMachine, check_reference, machine_class

    # an environment of its own: the POP environment's rules are unchanged
    assert issubclass(machine_class(RELEASE, scenario=POP_KV), PopKvMachine)
    assert not hasattr(PopMachine, "pop_change_keeps_deadline")
    assert PopKvMachine.fail_revive_reads is None and PopKvMachine.restart_broker is None
    res = check_reference(BUG, max_examples=150, scenario=POP_KV, trace_path=str(tmp_path / "f.jsonl"),
                          shrink_budget_s=10)
    assert not res.ok and res.crash is None and res.finding == "INV-POP-LIVE-1", res.summary()
    assert "POP_KV" in res.falsifying_code and "pop_change_keeps_deadline" in res.falsifying_code
    rep = check_trace(res.trace_path, BUG)
    assert not rep.ok and any("cause: #10276" in f.message for f in rep.findings.errors)
    fixed = check_reference(RELEASE, max_examples=100, scenario=POP_KV)
    assert fixed.ok and fixed.crashes_ignored == 0 and fixed.runaway == 0, fixed.summary()
