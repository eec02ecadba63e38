"""The Hypothesis state machine over the reference (conformance.statemachine), CI profile.

Derandomized: the same examples every run. Under the release profiles the reference must
conform; under a known-bug profile the machine must find the bug's invariant, print a
falsifying example that runs, and write a trace that `rocketspec check` rejects.
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from unittest import mock

import orjson
import pytest
from click.testing import CliRunner

from rocketspec.cli import main
from rocketspec.conformance.monitor import SpecViolation
from rocketspec.conformance.statemachine import check_reference, machine_class
from rocketspec.reference.client.process_queue import ProcessQueue
from rocketspec.rocketmq.profiles import get_profile

# The CI profile: examples per release profile. Both profiles together stay well under the two
# minutes the state machine may take in `make test` (bench figures: see docs/conformance.md).
CI_EXAMPLES = 120


@pytest.mark.parametrize("profile", ["rocketmq-4.9.8", "rocketmq-5.3.3"])
def test_reference_conforms_under_the_state_machine(profile, tmp_path):
    res = check_reference(profile, max_examples=CI_EXAMPLES, trace_path=str(tmp_path / "finding.jsonl"))
    assert res.ok, res.summary()
    assert res.examples_run >= CI_EXAMPLES * 0.9     # the examples really ran (none skipped)


KNOWN_BUG = "bug-6163-rocketmq-5.0.0"


@pytest.fixture(scope="module")
def known_bug(tmp_path_factory):
    path = tmp_path_factory.mktemp("sm") / "bug.jsonl"
    # the search stops at the first failure (example 118 here); max_examples also sets how fast
    # Hypothesis lets examples grow, and with 300 they stay too small to reach the bug
    return check_reference(KNOWN_BUG, max_examples=1000, trace_path=str(path), shrink_budget_s=10)


# The profile is 5.0.0 with the fixes it lacks: besides #6163 (INV-RETRY-1, the profile's known
# bug), its broadcasting persistAll rewrites the offsets file with the queues held now (#7740,
# fixed in 5.2.0), so a queue that left the route and came back has lost its offset
# (INV-START-1: the store read returns -1 while the file held one). The machine finds one of
# the two first, depending on its moves.
DEFECTS_OF_5_0_0 = {get_profile(KNOWN_BUG).expected_violation, "INV-START-1"}


def test_finds_the_known_bug_with_its_invariant(known_bug):
    assert not known_bug.ok
    assert known_bug.finding in DEFECTS_OF_5_0_0
    assert known_bug.crash is None


def test_falsifying_example_is_runnable_code_that_fails_the_same_way(known_bug):
    code = known_bug.falsifying_code
    assert code.startswith("from rocketspec.conformance.statemachine import machine_class")
    assert "state = ReferenceMachine()" in code and code.rstrip().endswith("state.teardown()")
    with pytest.raises(SpecViolation) as info:
        exec(compile(code, "<falsifying example>", "exec"), {})
    assert info.value.finding.inv == known_bug.finding


def test_falsifying_trace_is_rejected_by_check(known_bug):
    out = CliRunner().invoke(main, ["check", known_bug.trace_path, "--json", "--quiet"])
    assert out.exit_code == 1, out.output
    rep = orjson.loads(out.output)
    assert rep["verdict"] == "violated"
    assert known_bug.finding in {v["invariant"] for v in rep["violations"]}


def _commit_batch_max(self, msgs, now):
    """A client author's mistake: commit past the batch (queueOffsetMax + 1) instead of the
    tree minimum, so a message still being consumed elsewhere is skipped on a handover."""
    self.last_consume_ts = now
    for m in msgs:
        if self.msg_tree.pop(m.offset, None) is not None:
            self.msg_count -= 1
    return self.queue_offset_max + 1


def test_reference_patch_runs_the_machine_against_a_mutant():
    patch = mock.patch.object(ProcessQueue, "remove_messages", _commit_batch_max)
    res = check_reference("rocketmq-5.3.3", max_examples=300, reference_patch=patch, shrink_budget_s=5)
    assert not res.ok and res.finding is not None and res.crash is None, res.summary()
    # the patch was undone after every example
    assert ProcessQueue.remove_messages is not _commit_batch_max


def test_a_crash_of_a_patched_reference_is_not_a_finding():
    def boom(self, *a, **k):
        raise KeyError("mutant broke the reference")

    patch = mock.patch.object(ProcessQueue, "remove_messages", boom)
    res = check_reference("rocketmq-5.3.3", max_examples=20, reference_patch=patch)
    assert res.ok and res.finding is None and res.crashes_ignored > 0


def test_a_crash_of_the_reference_fails_unless_ignored():
    def boom(self, *a, **k):
        raise KeyError("broken")

    patch = mock.patch.object(ProcessQueue, "remove_messages", boom)
    res = check_reference("rocketmq-5.3.3", max_examples=20, reference_patch=patch, ignore_crashes=False,
                          shrink_budget_s=2)
    assert not res.ok and res.finding is None and "KeyError" in res.crash


def test_budget_stops_new_examples():
    res = check_reference("4.9.8", max_examples=10_000, budget_s=0.0)
    assert res.ok and res.budget_exhausted and res.examples_run <= 1


def test_machine_class_is_cached_per_profile_for_the_printed_code():
    assert machine_class("rocketmq-4.9.8") is machine_class("4.9.8")
    assert machine_class("rocketmq-4.9.8").profile == "rocketmq-4.9.8"


@pytest.mark.parametrize("name", ["restarted-client-sends-back-again.jsonl", "restarted-client-consume-ids.jsonl",
                                  "reset-past-end-crash-before-correction.jsonl",
                                  "reset-past-end-empty-queue-persisted-again.jsonl",
                                  "fallback-after-failed-send-back-dlq.jsonl"])
def test_traces_the_machine_found_against_the_spec_hold_now(name):
    # Reference runs the state machine reported, where the spec was wrong: a client restarted
    # under the same id re-consumed a message its crashed incarnation had sent back, and failed
    # it again (a second copy for a second failure, not INV-RETRY-3); a restarted client's
    # consume ids start at 1 again (not a batch of the old incarnation's removed ProcessQueue,
    # INV-DROP-1); an operator reset past the queue's end (all consumers stopped), whose
    # OFFSET_ILLEGAL correction (10 s after the answer) never ran because the client crashed, so a
    # later owner starts at the reset's offset and skips a message stored below it meanwhile (by
    # design of the reset, ANOM-RESET-SKIP, not INV-START-1); an operator's write past the end
    # of an orderly queue still empty, two messages stored after it, the client persisting the
    # written offset again after the OFFSET_ILLEGAL answer and then the correction to 0: the two
    # messages were never consumed, so the offset moving back is not INV-ORDER-3 (the spec took
    # the write, and its second persist, as skipping what was stored later); a send-back that
    # failed (both brokers down) raised the client's count of the message to 1, and the next
    # failure's send-back fell back to the producer, whose copy carries 2: 4.9.8's
    # handleRetryAndDLQ dead-letters it (2 >= maxReconsumeTimes 2), which the spec, judging the
    # stored copy's 0, took for INV-RETRY-1. Each declares "holds"
    # (trace_started.config.expect).
    from pathlib import Path

    from rocketspec.conformance.verdicts import judge_trace

    j = judge_trace(Path(__file__).parent / "fixtures" / "statemachine" / name)
    assert j.declared and j.ok, j.describe()


def test_an_example_past_the_event_cap_ends_without_a_finding():
    # a step that emits more than MAX_STEP_EVENTS is a runaway (a mutant pulling forever): the
    # example ends there, is counted, and the search goes on
    from rocketspec.conformance import statemachine as SM

    with mock.patch.object(SM, "MAX_STEP_EVENTS", 40):
        res = check_reference("rocketmq-5.3.3", max_examples=30)
    assert res.ok and res.finding is None and res.runaway > 0, res.summary()
    # (Hypothesis may start one example more than max_examples counts, e.g. one it discards)
    assert res.examples_run >= 30 and "ran away" in res.summary()
    assert res.runaway_steps[0] == "state = ReferenceMachine()"


def test_the_budget_ends_an_example_inside_a_step():
    # a slow reference (every event 5 ms): the budget is looked at between events, so few are
    # emitted after it ran out, and no new example starts
    import time

    from rocketspec.conformance import statemachine as SM
    from rocketspec.reference.sim import Simulator

    stamps, emit = [], Simulator.emit

    def slow_emit(self, kind, **fields):
        time.sleep(0.005)
        stamps.append(time.monotonic())
        return emit(self, kind, **fields)

    with mock.patch.object(SM, "BUDGET_CHECK_EVERY", 4):
        t0 = time.monotonic()
        res = check_reference("rocketmq-5.3.3", max_examples=1000, budget_s=0.3,
                              reference_patch=mock.patch.object(Simulator, "emit", slow_emit))
    assert res.ok and res.budget_exhausted, res.summary()
    assert len([t for t in stamps if t > t0 + 0.3]) <= 4


def test_a_runaway_mutant_is_killed_by_a_finding_not_stalled():
    # pull-offset-not-advanced pulls the same messages forever: the step ends at the first
    # spec error instead of running on (it stalled the mutation bench before)
    from rocketspec.conformance import mutants as M

    k = M.kill_by_hypothesis(M.BY_ID["pull-offset-not-advanced"], budget_s=60, max_examples=200, shrink_budget_s=2)
    assert k.killed and k.invariants == ["INV-PULL-1"], k.to_dict()


# The state machine's shrunk example (5.3.3, example 782 of a derandomized run): broadcasting b1
# (CONSUME_FROM_LAST_OFFSET) creates its ProcessQueues on empty queues and is shut down before any
# pull answers (long polling holds an empty pull up to 15 s), so its offset table has no entry and
# persistAll writes nothing; a message is stored; b1 starts again, reads -1 from its offsets file
# and starts at maxOffset (computePullFromWhere: "first start"), skipping the message. Real
# RocketMQ does this (4.9.8: LocalFileOffsetStore.persistAll, RebalancePushImpl.computePullFromWhere),
# so the reference is right and the spec reports the loss naming A-OFFSET-ENTRY; a machine that
# respects the assumptions does not play that stop.
BROADCAST_RESTART = """\
from rocketspec.conformance.statemachine import machine_class
ReferenceMachine = machine_class('rocketmq-5.3.3'{attrs})
state = ReferenceMachine()
state.begin(clients=['b1'], count=0)
state.advance(choices=[0], ms=1)
state.shutdown(client='b1')
state.start(client='b1')
state.produce(count=1, tags='A')
state.start(client='b1')
state.teardown()
"""


def test_a_broadcast_restart_before_the_first_offset_entry_loses_what_was_stored_between():
    from pathlib import Path

    from rocketspec.conformance.verdicts import judge_trace

    j = judge_trace(Path(__file__).parent / "fixtures" / "statemachine" / "broadcast-restart-before-first-offset.jsonl")
    assert j.declared and j.ok, j.describe()
    [f] = j.report.findings.errors
    assert "A-OFFSET-ENTRY" in f.message and "b1 stopped or crashed before its offset table had an entry" in f.message


def test_the_machine_plays_that_stop_only_when_it_may_break_assumptions(tmp_path):
    exec(compile(BROADCAST_RESTART.format(attrs=""), "<respecting>", "exec"), {})     # b1's stop is not played
    code = BROADCAST_RESTART.format(attrs=f", respect_assumptions=False, trace_path={str(tmp_path / 't.jsonl')!r}")
    with pytest.raises(SpecViolation) as info:
        exec(compile(code, "<everything>", "exec"), {})
    assert info.value.finding.inv == "INV-LOSS-1"


def test_a_persist_on_its_way_when_the_broker_restarts_a_second_time_is_lost():
    # The machine's shrunk example (5.3.3, example 395): the broker's restart made a fresh process
    # with incarnation 0, so after a second restart a one-way persist sent to the previous process
    # matched again and was committed on the client's next offset query (INV-OFFSET-1: a commit
    # no persist in flight carries). A restarted broker has lost what was on its way to it.
    code = """\
from rocketspec.conformance.statemachine import machine_class
ReferenceMachine = machine_class('rocketmq-5.3.3')
state = ReferenceMachine()
state.begin(clients=['c1'], count=2)
state.advance(choices=[], ms=20000)
state.listener_fails(failure='fail', group='GID_B', tags='A', until=None)
state.restart_broker(downtime_ms=10000)
state.start(client='c2')
state.restart_broker(downtime_ms=1000)
state.teardown()
"""
    exec(compile(code, "<broker restarts>", "exec"), {})



# A queue that leaves the route before a broadcasting client has its offset in its offsets file
# (5.3.3, a shrunk example of the machine before the move respected A-OFFSET-ENTRY): the rebalance
# drops the queue and its offset, the queue comes back, the client reads -1 from its file and
# starts at maxOffset, skipping what was stored meanwhile (real: INV-LOSS-1 naming the cause).
def test_a_queue_leaves_the_route_only_once_broadcast_offsets_files_have_it():
    from rocketspec.conformance.statemachine import machine_class

    state = machine_class("rocketmq-5.3.3")()
    state.begin(clients=["b1"], count=0)
    state.advance(choices=[], ms=1)
    mq = ("T", "broker-a", 0)
    b1 = state.run.consumers["b1"]
    assert mq in b1.rebalance.pq_table and mq not in b1.offset_store.disk
    assert not state._route_loss_allowed("broker-a", 0)
    state.advance(choices=[], ms=30000)     # the held pull answered (an entry), persistAll wrote it
    assert mq in b1.offset_store.disk
    assert state._route_loss_allowed("broker-a", 0)
    state.route_lost(broker="broker-a", duration_ms=25000, queue=0)
    state.advance(choices=[], ms=26000)
    state.produce(count=4, tags="A")
    state.teardown()


# A pause past the client lease with no listener call running is within A-LEASE-MARGIN: the broker
# locks outlive it, and the client's consume loop must see the lease expired and lock again before
# its next batch (orderly-pause-lease). The reference does; the mutant that skips isLockExpired
# consumes on the expired lease (INV-OWNER-2).
PAST_LEASE = """\
from rocketspec.conformance.statemachine import machine_class
ReferenceMachine = machine_class('rocketmq-5.3.3'{attrs})
state = ReferenceMachine()
state.begin(clients=['o1'], count=2)
state.advance(choices=[], ms=15000)
state.pause(client='o1', duration_ms='past_lease')
state.produce(count=2, tags='A')
state.advance(choices=[], ms=60000)
state.teardown()
"""


def test_a_pause_past_the_lease_between_calls_holds_and_catches_the_lease_mutant(tmp_path):
    from rocketspec.conformance import mutants as M

    exec(compile(PAST_LEASE.format(attrs=""), "<reference>", "exec"), {})
    attrs = (f", reference_patch=lambda: M.applied(M.BY_ID['orderly-lease-no-expiry']), "
             f"trace_path={str(tmp_path / 't.jsonl')!r}")
    ns = {"M": M}
    with pytest.raises(SpecViolation) as info:
        exec(compile(PAST_LEASE.format(attrs=attrs), "<mutant>", "exec"), ns)
    ns["state"].teardown()      # the finding ended the code before teardown: undo the mutant
    assert info.value.finding.inv == "INV-OWNER-2"


# The moves made while a listener call runs (application, the *_during_call rules) reach the
# mutants that need a call cut across by a broker outage, a pause, a reset or a handover. Each
# example holds on the reference and fails on its mutant with a spec finding.
DURING_CALL = {
    # a failed call's broker is down when the call ends: the fallback producer's copy
    "fallback-send-wrong-delay": ("rocketmq-5.3.3", "INV-RETRY-2", """\
state.application(concurrent_ms=5000, failure='fail', orderly_ms=None)
state.begin(clients=['c1'], count=4)
state.restart_during_call(group='GID_C', every_broker=False)
"""),
    # every broker is down: the fallback fails too, and the client keeps the message
    "sendback-failed-removed": ("rocketmq-4.9.8", "INV-OFFSET-1", """\
state.application(concurrent_ms=5000, failure='fail', orderly_ms=None)
state.begin(clients=['c1'], count=4)
state.restart_during_call(group='GID_C', every_broker=True)
"""),
    # 4.9.8: frozen mid-call past the lease (the broker locks outlive the pause and the call)
    "orderly-skip-lease-check": ("rocketmq-4.9.8", "INV-OWNER-2", """\
state.application(concurrent_ms=None, failure=None, orderly_ms=5000)
state.begin(clients=['o1'], count=4)
state.produce(count=3, tags='A')
state.advance(choices=[], ms=1000)
state.pause_during_call(group='GID_O')
"""),
    # a reset mid-call: the rebalance creates the queue's ProcessQueue again while the call runs
    "orderly-no-queue-lock": ("rocketmq-4.9.8", "INV-ORDER-1", """\
state.application(concurrent_ms=None, failure=None, orderly_ms=25000)
state.begin(clients=['o1'], count=4)
state.advance(choices=[], ms=30000)
state.produce(count=3, tags='A')
state.reset_during_call(group='GID_O')
"""),
    # a second orderly client joins during a 25 s call (4.9.8 may: within the lease margin)
    "orderly-remove-while-consuming-49": ("rocketmq-4.9.8", "INV-ORDER-1", """\
state.application(concurrent_ms=None, failure=None, orderly_ms=25000)
state.begin(clients=['o1'], count=4)
state.join_during_call(group='GID_O')
"""),
    "lock-takeover-live": ("rocketmq-4.9.8", "INV-LOCK-1", """\
state.application(concurrent_ms=None, failure=None, orderly_ms=15000)
state.begin(clients=['o1'], count=4)
state.join_during_call(group='GID_O')
"""),
    # the handover drops the ProcessQueue mid-call; the call's batch ends on a dropped one
    "orderly-commit-when-dropped": ("rocketmq-4.9.8", "INV-DROP-1", """\
state.application(concurrent_ms=None, failure=None, orderly_ms=15000)
state.begin(clients=['o1'], count=4)
state.join_during_call(group='GID_O')
"""),
}


def _play(profile, steps, **attrs):
    state = machine_class(profile, **attrs)()
    try:
        exec(compile(steps + "state.advance(choices=[], ms=60000)\n", "<steps>", "exec"), {"state": state})
    finally:
        state.teardown()        # also after a finding: it undoes the reference_patch


def _trace_of(profile, steps, path) -> str:
    """Play the steps as `_play` does, and write the run's trace (it holds) to `path`."""
    state = machine_class(profile)()
    try:
        exec(compile(steps + "state.advance(choices=[], ms=60000)\n", "<steps>", "exec"), {"state": state})
    finally:
        state.teardown()
    state.monitor.write(str(path))
    return str(path)


@pytest.mark.parametrize("mutant", sorted(DURING_CALL))
def test_a_move_during_a_call_holds_and_kills_its_mutant(mutant, tmp_path):
    from rocketspec.conformance import mutants as M

    profile, inv, steps = DURING_CALL[mutant]
    _play(profile, steps)
    with pytest.raises(SpecViolation) as info:
        _play(profile, steps, reference_patch=lambda: M.applied(M.BY_ID[mutant]),
              trace_path=str(tmp_path / "t.jsonl"))
    assert info.value.finding.inv == inv


# The brokers refuse a reset of a group with no committed offset on a queue ("the consumer group
# not exist"), and a group's first offsets reach them with its first persistAll, 10 s after its
# clients start, while its first calls begin at once. reset_during_call used to reset as soon as
# a call was open, so after `begin` its reset was refused and the move did nothing (most of its
# draws on GID_O, 2026-12-04); it now lets the clock run until a call is open at a moment the
# brokers take the reset, and the reset cuts across the 25 s orderly call: the call ends on a
# ProcessQueue the reset dropped while it ran.
RESET_AFTER_BEGIN = """\
state.application(concurrent_ms=None, failure=None, orderly_ms=25000)
state.begin(clients=['o1'], count=4)
state.reset_during_call(group='GID_O')
"""


def test_a_reset_during_a_call_waits_until_the_brokers_take_it(tmp_path):
    import orjson

    from rocketspec.spec.replay import check_trace

    state = machine_class("rocketmq-4.9.8")()
    try:
        exec(compile(RESET_AFTER_BEGIN, "<steps>", "exec"), {"state": state})
        # one line for the move: the reset it makes is not logged again (run again, the
        # printed code would reset twice)
        assert state.steps[1:] == RESET_AFTER_BEGIN.splitlines()
        assert any(c.consume_service.in_flight for c in state.run.consumers.values() if c.group == "GID_O")
    finally:
        state.teardown()
    path = Path(state.monitor.write(str(tmp_path / "t.jsonl")))
    evs = [orjson.loads(x) for x in path.read_bytes().splitlines()]
    key = lambda e: (e.get("client"), e.get("broker"), e.get("queue"))  # noqa: E731
    drops = [e for e in evs if e["kind"] == "pq_dropped" and e.get("group") == "GID_O" and e["reason"] == "reset"]
    assert drops, "the reset did nothing"
    first = drops[0]
    started = [e for e in evs if e["kind"] == "consume_started" and e.get("group") == "GID_O" and key(e) == key(first)]
    cut = [e for e in evs if e["kind"] == "consume_finished" and e.get("group") == "GID_O" and key(e) == key(first)
           and e["consume_id"] == started[0]["consume_id"]]
    assert started[0]["seq"] < first["seq"] < cut[0]["seq"] and cut[0]["dropped"]
    assert check_trace(str(path)).findings.error_count == 0


# Under 5.x an orderly call that outlives the unlock delay (20 s) during a handover is consumed
# by two clients (#7644, orderly-long-call-handover): a loss of 5.x the spec reports, not a fault
# of the reference, so the machine keeps 5.x's orderly calls shorter.
LONG_CALL_HANDOVER = """\
state.listener_slow(group='GID_O', tags=None, duration_ms=25000)
state.begin(clients=['o1'], count=4)
state.advance(choices=[], ms=3000)
state.start(client='o2')
"""


def test_a_5x_orderly_call_past_the_unlock_delay_is_not_played(tmp_path):
    _play("rocketmq-5.3.3", LONG_CALL_HANDOVER)
    with pytest.raises(SpecViolation) as info:
        _play("rocketmq-5.3.3", LONG_CALL_HANDOVER, respect_assumptions=False, trace_path=str(tmp_path / "t.jsonl"))
    assert info.value.finding.inv == "INV-ORDER-1"
    assert "5.x" in str(info.value)


# Gaps of the spec that the machine finds on the unmodified reference are stepped around by a
# guard of the machine until the spec is fixed, and kept here as examples: name -> (profile,
# [(guard, its answer with the guard off)], steps). Each must still fail with its guard off
# (a strict xfail): when a spec fix makes one hold, the xfail fails, and the guard goes. None is
# open (2026-12-02); the closed ones follow as tests of their own.
SPEC_GAPS: dict = {}
GAP_PARAMS = sorted(SPEC_GAPS) or [pytest.param(None, marks=pytest.mark.skip("no open gap"))]


@pytest.mark.parametrize("gap", GAP_PARAMS)
def test_the_machine_steps_around_a_gap_of_the_spec(gap):
    profile, _, steps = SPEC_GAPS[gap]
    _play(profile, steps)


@pytest.mark.parametrize("gap", GAP_PARAMS)
@pytest.mark.xfail(strict=True, raises=SpecViolation, reason="a gap of the spec, see SPEC_GAPS")
def test_a_gap_of_the_spec_is_still_open(gap, tmp_path):
    from rocketspec.conformance.statemachine import ReferenceMachine

    profile, guards, steps = SPEC_GAPS[gap]
    with contextlib.ExitStack() as stack:
        for guard, answer in guards:      # that guard off (5.x's: also the slow orderly calls)
            stack.enter_context(mock.patch.object(ReferenceMachine, guard, lambda *a, _v=answer, **k: _v))
        _play(profile, steps, trace_path=str(tmp_path / "t.jsonl"))


# Once a gap of SPEC_GAPS (closed 2026-12-02): 5.x keeps an orderly ProcessQueue that a lost
# route dropped mid-call in its table (the call holds the consume lock); the queue comes back
# to the client, which holds it dropped. A reset then calls setDropped(true) on it again
# (MQClientInstance.resetOffset drops every queue of the topic in the table) and, 10 s later,
# sets the operator's offset. The reference reported no drop for a queue dropped already, and
# the reset's update matched a commit the dropped queue had computed but not made, so the spec
# took it for the dropped queue's (INV-DROP-1). Now the reset's drop shows, and an update of a
# dropped queue is first a reset's, from 10 s after its drop, and only then the queue's own.
RESET_OF_A_KEPT_DROPPED_QUEUE = ("rocketmq-5.3.3", """\
state.begin(clients=['o1'], count=4, orderly_batch=1)
state.application(concurrent_ms=None, failure=None, orderly_ms=5000)
state.await_call(group='GID_O')
state.route_lost(broker='broker-a', duration_ms=5000, queue=0)
state.advance(choices=[], ms=30000)
state.reset_offset(back_ms=0, group='GID_O')
""")


def test_a_reset_of_a_dropped_queue_kept_in_the_table_is_the_reset_s(tmp_path):
    import dataclasses

    from rocketspec.conformance.statemachine import ReferenceMachine
    from rocketspec.rocketmq.profiles import get_profile
    from rocketspec.spec.replay import check_trace
    from rocketspec.traces.io import read_events

    profile, steps = RESET_OF_A_KEPT_DROPPED_QUEUE
    # (a 5 s orderly call under 5.x, which the machine does not play for #7644's sake)
    with mock.patch.object(ReferenceMachine, "_orderly_call_allowed", lambda *a, **k: True):
        path = _trace_of(profile, steps, tmp_path / "t.jsonl")
    assert check_trace(path, profile).findings.error_count == 0
    drops = [ev["reason"] for _, ev in read_events(path) if ev["kind"] == "pq_dropped"
             and (ev["client"], ev["topic"], ev["broker"], ev["queue"]) == ("o1", "T", "broker-a", 0)]
    assert drops == ["reassigned", "reset"]      # dropped by the route's loss, then by the reset
    # the update is the reset's only once the reset's 10 s are up: with a longer wait it comes
    # too early, and it is the dropped queue's own
    slower = dataclasses.replace(get_profile(profile), reset_offset_wait_ms=20000)
    assert check_trace(path, slower).findings.counts.get("INV-DROP-1") == 1


# Once two gaps of SPEC_GAPS (closed 2026-12-02): a broker restart reloads its last flush of the
# offset table (ConsumerOffsetManager.load), and that holds an operator's write past the queue's
# end: the last write, or an older one whose successor was not flushed yet. The OFFSET_ILLEGAL
# correction then skips what was stored below it, the operator's loss (ANOM-RESET-SKIP); the
# spec forgot at the reload that the value was a write and reported INV-OFFSET-3 (5.3.3) or
# INV-START-1 (4.9.8). The reload now keeps a reset past the end pending when the value reloaded
# is one (spec.actions.offset_loaded), and the machine restarts brokers whatever was written.
RELOADED_WRITE_PAST_END = {
    # an unflushed write (past the end by 1) is lost; the flushed one (past by 1000) comes back
    "older-write-comes-back": ("rocketmq-5.3.3", """\
state.begin(clients=['c1'], count=0)
state.set_broker_offset(broker='broker-a', group='GID_O', past_end=1000, queue=1)
state.advance(choices=[], ms=30000)
state.set_broker_offset(broker='broker-a', group='GID_O', past_end=1, queue=1)
state.produce(count=3, tags='C')
state.restart_broker(broker='broker-a', downtime_ms=30000)
state.advance(choices=[], ms=30000)
state.start(client='o2')
state.advance(choices=[], ms=1)
state.produce(count=2, tags='A')
"""),
    # the restart comes before the flush of the client's correction: the write comes back
    "write-comes-back": ("rocketmq-4.9.8", """\
state.begin(clients=['c2'], count=0, orderly_batch=1)
state.application(concurrent_ms=15000, failure=None, orderly_ms=None)
state.set_broker_offset(broker='broker-b', group='GID_C', past_end=1000, queue=0)
state.produce(count=3, tags='A')
state.await_call(group='GID_C')
state.produce(count=3, tags='A')
state.advance(choices=[], ms=381)
state.advance(choices=[153, 240], ms=10000)
state.restart_during_call(every_broker=True, group='GID_C')
"""),
}


@pytest.mark.parametrize("name", sorted(RELOADED_WRITE_PAST_END))
def test_a_write_past_the_end_that_a_restart_reloads_skips_as_the_operator_s(name, tmp_path):
    from rocketspec.spec.replay import check_trace

    profile, steps = RELOADED_WRITE_PAST_END[name]
    rep = check_trace(_trace_of(profile, steps, tmp_path / "t.jsonl"))
    assert rep.findings.error_count == 0
    # what the correction skipped is reported, as the operator's (a warning), not lost silently
    assert "ANOM-RESET-SKIP" in rep.findings.counts


# Found by the machine on the unmodified reference (2026-12-02, the 1,265th derandomized 5.3.3
# example of `python -m bench.statemachine --examples 1500`, shrunk as far as its budget went):
# an operator's write past the end of a queue (1000), a member that reads it from the broker
# just before another member's OFFSET_ILLEGAL correction (2) lands there, and whose next pull
# carries 1000 as its commitOffset: the broker commits it (back over the correction), and that
# member's own correction then skips what was stored from 2 on. The reset's value, carried by a
# client that read it: the operator's loss (ANOM-RESET-SKIP), which the spec took for the
# client's skip (INV-OFFSET-3) because it excused only a persist of a reset's value, not a pull's.
RESET_CARRIED_BY_A_PULL = """\
state.application(concurrent_ms=None, failure=None, orderly_ms=None)
state.begin(clients=['c3', 'b1'], count=1, orderly_batch=1)
state.oneway_loss(probability=0.0)
state.set_broker_offset(broker='broker-a', group='GID_B', past_end=0, queue=0)
state.oneway_loss(probability=0.0)
state.oneway_loss(probability=0.0)
state.set_broker_offset(broker='broker-b', group='GID_B', past_end=0, queue=0)
state.set_broker_offset(broker='broker-a', group='GID_B', past_end=0, queue=0)
state.oneway_loss(probability=0.0)
state.set_broker_offset(broker='broker-a', group='GID_C', past_end=1000, queue=1)
state.reset_during_call(group='GID_C')
state.reset_offset(back_ms=1000000000, group='GID_C')
state.oneway_loss(probability=0.0)
state.set_broker_offset(broker='broker-a', group='GID_C', past_end=1, queue=0)
state.oneway_loss(probability=0.0)
state.set_broker_offset(broker='broker-b', group='GID_C', past_end=0, queue=1)
state.produce(count=1, tags='Aa')
state.produce(count=2, tags='BB')
state.oneway_loss(probability=0.0)
state.produce(count=2, tags='Aa')
state.produce(count=1, tags='B')
state.produce(count=1, tags=None)
state.reset_during_call(group='GID_C')
state.reset_offset(back_ms=1000000000, group='GID_C')
state.start(client='c1')
state.start(client='b1')
state.produce(count=2, tags='A')
state.produce(count=3, tags='C')
state.start(client='c1')
state.pause(client='o1', duration_ms='past_lease')
state.start(client='o1')
state.set_broker_offset(broker='broker-a', group='GID_O', past_end=1, queue=0)
state.produce(count=3, tags=None)
state.reset_during_call(group='GID_O')
"""


def test_a_pull_that_commits_an_operator_s_write_again_skips_as_the_operator_s(tmp_path):
    from rocketspec.spec.replay import check_trace

    rep = check_trace(_trace_of("rocketmq-5.3.3", RESET_CARRIED_BY_A_PULL, tmp_path / "t.jsonl"))
    assert rep.findings.error_count == 0
    assert "ANOM-RESET-SKIP" in rep.findings.counts


# Once a gap of SPEC_GAPS: a reset reaches an orderly client frozen mid-call. When it thaws it
# commits the call's batch, then MQClientInstance.resetOffset drops its ProcessQueues, sets the
# operator's offset 10 s later (updateOffset(mq, offset, false)) and persists it as it removes
# them. The spec took that update for a store read, and its persist for the client's stale
# offset after the pause (INV-ORDER-3). A client's first updateOffset of a queue after a reset's
# drop is the reset's (spec.actions.offset_updated).
RESET_REACHES_A_FROZEN_CALL = """\
state.begin(clients=['b1', 'c1', 'c2', 'c3', 'o1', 'o2'], count=0, orderly_batch=1)
state.await_call(group='GID_B')
state.produce(count=3, tags='B')
state.produce(count=1, tags='A')
state.await_call(group='GID_B')
state.pause_during_call(group='GID_O')
state.reset_offset(back_ms=1000, group='GID_O')
"""


def test_a_reset_that_reaches_a_paused_orderly_client_is_the_operator_s(tmp_path):
    """The example holds with the machine's guard off (it no longer steps around a paused
    member), and its trace shows the reset as the spec reads it: the thawed client's update
    is the reset's offset, and its persist moves the broker's offset back without INV-ORDER-3."""
    import orjson

    from rocketspec.spec.replay import check_trace

    path = Path(_trace_of("rocketmq-4.9.8", RESET_REACHES_A_FROZEN_CALL, tmp_path / "t.jsonl"))
    evs = [orjson.loads(x) for x in path.read_bytes().splitlines()]
    key = lambda e: (e.get("group"), e.get("topic"), e.get("broker"), e.get("queue"))  # noqa: E731
    q = ("GID_O", "T", "broker-a", 0)
    thaw = next(e["seq"] for e in evs if e["kind"] == "client_resumed" and e["client"] == "o1")
    drop = next(e for e in evs if e["kind"] == "pq_dropped" and key(e) == q and e["seq"] > thaw)
    assert drop["reason"] == "reset"
    upd = next(e for e in evs if e["kind"] == "offset_updated" and key(e) == q and e["seq"] > drop["seq"])
    assert (upd["increase_only"], upd["ts"] - drop["ts"]) == (False, 10_000)    # resetOffset's sleep
    back = [e for e in evs if e["kind"] == "offset_committed" and key(e) == q and e["offset"] < e.get("previous", 0)]
    assert back and back[0]["offset"] == upd["offset"]
    assert check_trace(str(path)).findings.error_count == 0


# Once a gap of SPEC_GAPS: an orderly client stops with a dropped ProcessQueue still in its table
# (5.x: the queue changed owner while a call held its consume lock) and starts again. The spec
# kept the old incarnation's pending offset updates and took the new one's store read for one
# of them, from a dropped ProcessQueue (INV-DROP-1). A new incarnation makes none of the old
# one's updates (spec.actions.client_started).
RESTART_AFTER_A_DROPPED_QUEUE = """\
state.begin(clients=['b1', 'c1', 'c2', 'c3', 'o1', 'o2'], count=4, orderly_batch=1)
state.application(concurrent_ms=None, failure=None, orderly_ms=15000)
state.join_during_call(group='GID_B')
state.crash(client='o2', mode='kill')
state.route_lost_during_call(group='GID_C')
state.pause_during_call(group='GID_C')
state.restart_during_call(every_broker=True, group='GID_B')
state.route_lost_during_call(group='GID_B')
state.pause_during_call(group='GID_C')
state.join_during_call(group='GID_O')
state.await_call(group='GID_C')
state.await_call(group='GID_C')
state.set_broker_offset(broker='broker-b', group='GID_O', past_end=0, queue=0)
state.crash(client='o2', mode='silent')
"""


def test_a_restarted_client_is_not_held_to_its_old_incarnation_s_updates(tmp_path):
    from rocketspec.conformance.statemachine import ReferenceMachine

    # (the example's 15 s orderly call is outside what the machine plays under 5.x, #7644)
    with mock.patch.object(ReferenceMachine, "_orderly_call_allowed", lambda *a, **k: True):
        _play("rocketmq-5.3.3", RESTART_AFTER_A_DROPPED_QUEUE, trace_path=str(tmp_path / "t.jsonl"))


# The same gap's second half: set_broker_offset restarts the orderly group's clients, one of them
# with an OFFSET_ILLEGAL correction scheduled that never ran; the new incarnation's store read of
# the same value was taken for that correction's updateAndFreeze (5.x), and its next commit for
# a write to a frozen offset (INV-OFFSET-1). The 457th derandomized 5.3.3 example of 2026-12-01.
RESTART_WITH_A_CORRECTION_PENDING = """\
state.application(concurrent_ms=None, failure=None, orderly_ms=None)
state.begin(clients=['b1', 'c1', 'c2', 'c3', 'o1', 'o2'], count=0, orderly_batch=1)
state.await_call(group='GID_B')
state.await_call(group='GID_B')
state.arm_fault(client='b1', fault=('crash', 'silent'))
state.arm_fault(client='b1', fault=('crash', 'silent'))
state.await_call(group='GID_B')
state.await_call(group='GID_B')
state.await_call(group='GID_B')
state.await_call(group='GID_B')
state.await_call(group='GID_B')
state.restart_during_call(every_broker=True, group='GID_B')
state.produce(count=3, tags='A')
state.set_broker_offset(broker='broker-b', group='GID_B', past_end=0, queue=0)
state.produce(count=1, tags='C')
state.restart_during_call(every_broker=True, group='GID_O')
state.restart_broker(broker='all', downtime_ms=30000)
state.restart_during_call(every_broker=False, group='GID_C')
state.restart_broker(broker='broker-a', downtime_ms=30000)
state.set_broker_offset(broker='broker-b', group='GID_B', past_end=1000, queue=1)
state.arm_fault(client='b1', fault=('crash', 'kill'))
state.restart_during_call(every_broker=False, group='GID_C')
state.restart_broker(broker='broker-a', downtime_ms=30000)
state.set_broker_offset(broker='broker-b', group='GID_B', past_end=1, queue=0)
state.restart_during_call(every_broker=False, group='GID_B')
state.restart_broker(broker='broker-a', downtime_ms=30000)
state.await_call(group='GID_B')
state.produce(count=3, tags='BB')
state.set_broker_offset(broker='broker-a', group='GID_O', past_end=1000, queue=0)
state.set_broker_offset(broker='broker-a', group='GID_O', past_end=1, queue=1)
state.produce(count=1, tags='BB')
state.arm_fault(client='c2', fault=('pause', 25000))
state.arm_fault(client='o1', fault=('crash', 'kill'))
state.set_broker_offset(broker='broker-b', group='GID_C', past_end=0, queue=0)
state.restart_during_call(every_broker=True, group='GID_O')
state.restart_broker(broker='all', downtime_ms=30000)
state.set_broker_offset(broker='broker-a', group='GID_O', past_end=1000, queue=0)
state.restart_during_call(every_broker=False, group='GID_B')
state.produce(count=3, tags='Aa')
state.await_call(group='GID_C')
state.restart_during_call(every_broker=True, group='GID_C')
state.restart_broker(broker='all', downtime_ms=30000)
state.pause(client='c1', duration_ms='past_lease')
state.await_call(group='GID_O')
"""


def test_a_restarted_client_is_not_held_to_its_old_incarnation_s_corrections(tmp_path):
    _play("rocketmq-5.3.3", RESTART_WITH_A_CORRECTION_PENDING, trace_path=str(tmp_path / "t.jsonl"))


# Found by the machine on the unmodified reference (2026-12-02, the 782nd derandomized 4.9.8
# example of `python -m bench.statemachine --examples 3000`, once the guards _frozen_member and
# _left_dropped were gone): an orderly client's pull, issued with the commitOffset it held (1)
# just before its call's commit moved it to 3, reaches the broker after the persist of 3, and
# the broker's offset falls back to 1 (PullMessageProcessor commits a pull's commitOffset). Of
# [1, 3), offset 1 was filtered by the broker (tags 'Aa' against 'A || B'): a pull from 1 skips
# it again, so only one consumed message comes again, the one batch a handover may repeat. The
# spec counted every handled offset as consumed and reported INV-ORDER-3.
FALLBACK_OVER_FILTERED = "orderly-fallback-over-a-filtered-message.jsonl"


def test_an_orderly_fallback_over_a_filtered_message_repeats_only_what_was_consumed(tmp_path):
    import json

    from rocketspec.spec.replay import check_trace

    path = Path(__file__).parent / "fixtures" / "statemachine" / FALLBACK_OVER_FILTERED
    rep = check_trace(str(path))
    assert rep.findings.error_count == 0 and rep.findings.counts.get("ANOM-OFFSET-BACK") == 1
    # the same run with offset 1 a message the subscription takes: it was consumed (an unfaithful
    # filter, INV-FILTER-1), and the fallback repeats two consumed messages, past one batch
    lines = []
    for line in path.read_text().splitlines():
        ev = json.loads(line)
        if ev["kind"] == "message_stored" and ev["msg_id"] == "broker-a:3":
            ev["tags"], ev["tags_code"] = "A", 65
        lines.append(json.dumps(ev))
    bad = tmp_path / "delivered.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    counts = check_trace(str(bad)).findings.counts
    assert counts.get("INV-ORDER-3") == 1 and counts.get("INV-FILTER-1")


# Found by the machine on the unmodified reference (2026-12-02, the 3,170th derandomized 5.3.3
# example of the same run): an operator writes an empty orderly queue's offset one past its end
# (1, all consumers stopped), and it is flushed; a message is then stored at 0, so the queue
# outgrows the write before any client pulls; the broker restarts and reloads 1
# (ConsumerOffsetManager.load), and the next owner starts there: no OFFSET_ILLEGAL correction
# comes (1 is the queue's end now), and offset 0 is never consumed. The operator's loss
# (ANOM-RESET-SKIP), as without the restart; the reload forgot that 1 was a write past the end,
# since it is no longer past it, and the spec reported INV-START-1.
def test_a_reloaded_write_that_the_queue_outgrew_skips_as_the_operator_s():
    from rocketspec.spec.replay import check_trace

    rep = check_trace(str(Path(__file__).parent / "fixtures" / "statemachine"
                          / "outgrown-write-reloaded-by-a-restart.jsonl"))
    assert rep.findings.error_count == 0 and rep.findings.counts.get("ANOM-RESET-SKIP") == 1


# Found by the machine on the unmodified reference (2026-12-02, the 3,118th derandomized 4.9.8
# example of `python -m bench.statemachine --examples 3000`): a reset ends on an orderly client
# (removeUnnecessaryMessageQueue unlocks the queue at the broker, one-way) and its rebalance locks
# the queue again at once. The reference's network let the unlock, sent first, reach the broker
# after the lock, and release it: the client consumed under its fresh lease, another client
# locked the free queue and consumed too (INV-ORDER-1). Both go over the client's one channel, so
# the reference delivers an unlock sent before a lock first (reference.network.deliver_unlocks).
# Real brokers run the two on a 16-thread executor and can reverse them (random real run 18125,
# named by the spec under INV-OWNER-2): the reference keeps the channel's order, a choice.
UNLOCK_BEFORE_LOCK = """\
state.begin(clients=['b1', 'c1', 'c2', 'c3', 'o1', 'o2'], count=3, orderly_batch=1)
state.application(concurrent_ms=15000, failure='EXCEPTION', orderly_ms=None)
state.await_call(group='GID_B')
state.restart_during_call(every_broker=False, group='GID_B')
state.reset_offset(back_ms=0, group='GID_B')
state.reset_offset(back_ms=0, group='GID_B')
state.restart_during_call(every_broker=True, group='GID_B')
state.await_call(group='GID_C')
state.crash(client='c1', mode='silent')
state.crash(client='c1', mode='silent')
state.pause(client='b1', duration_ms=500)
state.restart_during_call(every_broker=True, group='GID_C')
state.await_call(group='GID_B')
state.await_call(group='GID_B')
state.arm_fault(client='b1', fault=('crash', 'silent'))
state.arm_fault(client='b1', fault=('crash', 'silent'))
state.await_call(group='GID_B')
state.await_call(group='GID_B')
state.listener_fails(duration_ms=15000, failure='fail', group='GID_O', tags='A', until=None)
state.reset_offset(back_ms=1000000000, group='GID_O')
state.await_call(group='GID_B')
state.oneway_loss(probability=0.5)
state.reset_during_call(group='GID_B')
state.reset_offset(back_ms=0, group='GID_C')
state.reset_during_call(group='GID_B')
state.route_lost_during_call(group='GID_O')
state.route_lost(broker='broker-a', duration_ms=25000, queue=0)
state.start(client='o2')
"""


def test_a_one_way_unlock_sent_before_a_lock_reaches_the_broker_first():
    from rocketspec.reference.network import Network

    _play("rocketmq-4.9.8", UNLOCK_BEFORE_LOCK)

    # The rule itself, with nothing else in the way (the steps above no longer bring the two
    # calls together since the first rebalance waits for start() to return): an orderly client's
    # one-way unlock is on its way when it locks the queue; the unlock is read first, so the lock
    # stands. Left to arrive after the lock, it would release it for any other client to take.
    from rocketspec.reference.broker.broker import Broker
    from rocketspec.reference.client.push_consumer import PushConsumer
    from rocketspec.reference.sim import Simulator
    from rocketspec.rocketmq.profiles import get_profile

    def unlock_then_lock():
        events = []
        sim = Simulator(0, events.append)
        net = Network(sim)
        p = get_profile("rocketmq-4.9.8")
        b = Broker(sim, "b", p)
        net.add_broker(b)
        b.create_topic("T", 1)
        c = PushConsumer(sim, net, p, "o1", "g", {"consume_mode": "ORDERLY"}, {"T": "*"}, None, {})
        net.oneway_unlock(c, "b", [("T", 0)])
        assert c.consume_service.lock(("T", "b", 0))
        sim.run_until(sim.now + 1000)
        entry = b.locks.table.get("g", {}).get(("T", 0))
        return None if entry is None else entry.client, [e["kind"] for e in events if "lock" in e["kind"]]

    assert unlock_then_lock() == ("o1", ["lock_requested", "lock_release_ignored", "lock_acquired"])
    with mock.patch.object(Network, "deliver_unlocks", lambda *a, **k: None):
        assert unlock_then_lock() == (None, ["lock_requested", "lock_acquired", "lock_released"])


def test_a_differential_search_of_the_unpatched_reference_kills_nothing():
    """Outside the assumptions the unmutated reference loses guarantees (the spec reports the
    losses), so a differential search counts a failure only where the unpatched reference holds
    on the same moves. With nothing patched every failure is the original's own: none may count,
    and some must have been met (else this shows nothing)."""
    res = check_reference("rocketmq-4.9.8", max_examples=100,
                          reference_patch=lambda: contextlib.nullcontext(), respect_assumptions=False, differential=True)
    assert res.ok, res.summary()
    assert res.examples_run >= 90
    assert res.differential_same > 0


def test_a_differential_search_kills_a_mutant_the_assumptions_hide(tmp_path):
    """unlock-by-anyone (unlockBatch drops whoever's entry) needs a client that unlocks a queue
    another client locked: within the assumptions no such client exists, since a lock outlives
    every pause and no broker restarts under an orderly group (A-BROKER-LOCKS). Outside them
    the search finds one; the falsifying code fails with the mutant in place and holds without."""
    from rocketspec.conformance.mutants import BY_ID, applied

    m = BY_ID["unlock-by-anyone"]
    res = check_reference("rocketmq-5.3.3", max_examples=400, reference_patch=lambda: applied(m),
                          respect_assumptions=False, differential=True, shrink_budget_s=5,
                          trace_path=str(tmp_path / "kill.jsonl"))
    assert not res.ok and res.finding == "INV-LOCK-1", res.summary()
    assert "respect_assumptions=False" in res.falsifying_code

    def play():
        try:
            exec(res.falsifying_code.replace("machine_class('rocketmq-5.3.3'",
                                             f"machine_class('rocketmq-5.3.3', trace_path={str(tmp_path / 'r.jsonl')!r}"),
                 {})
        except SpecViolation as exc:
            return str(exc)
        return None

    with applied(m):
        assert "INV-LOCK-1" in (play() or "")
    assert play() is None


# A copy the client already sent back, handed to it again after a pause and a broker restart (the
# 5.3.3 search of 2026-12-06 found it): its second failure is a second failure, and its second
# retry copy is its own, not "two copies of one failure" (INV-RETRY-3 was reported).
REDELIVERED_AFTER_SEND_BACK = """\
state.application(concurrent_ms=5000, failure='EXCEPTION', orderly_ms=None)
state.begin(clients=['c2', 'b1'], count=0, orderly_batch=1)
state.await_call(group='GID_B')
state.await_call(group='GID_B')
state.await_call(group='GID_B')
state.start(client='c1')
state.await_call(group='GID_B')
state.await_call(group='GID_B')
state.await_call(group='GID_B')
state.await_call(group='GID_B')
state.await_call(group='GID_B')
state.await_call(group='GID_B')
state.await_call(group='GID_B')
state.await_call(group='GID_B')
state.await_call(group='GID_B')
state.produce(count=1, tags='A')
state.await_call(group='GID_B')
state.pause_during_call(group='GID_C')
state.restart_broker(broker='broker-a', downtime_ms=0)
"""


def test_a_copy_delivered_again_after_its_send_back_fails_anew():
    _play("rocketmq-5.3.3", REDELIVERED_AFTER_SEND_BACK)
