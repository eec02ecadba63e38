"""An operator's offset reset and a broker that dies, as 4.9.8 does them, and what the spec makes
of them.

- Broker2Client.resetOffset (mqadmin resetOffsetByTime) refuses the call when the group has no
  committed offset on a queue of the topic ("THe consumer group <g> not exist"); otherwise, with
  the group's consumers online, it commits nothing and only tells them. Each client sets the
  operator's offset and persists it as it removes its ProcessQueues (MQClientInstance.resetOffset);
  the recording tests/fixtures/real/real-reset.jsonl shows no broker commit at the reset and the
  client's persist of 0 about 10 s later.
- A client's queryConsumerOffset reaches the broker after the one-way persists it sent before on
  the same channel.
- A broker that dies fails the pulls it held (NettyRemotingClient.failFast on the channel's
  close): the client pulls again at once, not after the 120 s pull expiry.
"""
from __future__ import annotations

import copy
from pathlib import Path

import orjson
import pytest

from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import load_scenario, validate
from rocketspec.rocketmq.profiles import get_profile
from rocketspec.spec.replay import check_events

PROFILE = "rocketmq-4.9.8"


def _check(events, profile=PROFILE):
    return check_events(enumerate(events, 1), get_profile(profile))


def _errors(rep):
    return sorted({f.inv for f in rep.findings.errors})


def test_reset_with_consumers_online_is_committed_by_the_client_not_the_broker():
    ev = run_to_list(load_scenario("real-reset"), 1, PROFILE)
    reset_ts = 4000
    assert not [e for e in ev if e["kind"] == "offset_committed" and e.get("source") == "reset"]
    dropped = [e for e in ev if e["kind"] == "pq_dropped" and e.get("reason") == "reset"]
    assert dropped and all(e["ts"] >= reset_ts for e in dropped)
    # the client persists the operator's offset (0) as it removes the ProcessQueue, 10 s later
    back = [e for e in ev if e["kind"] == "offset_committed" and e["topic"] == "TopicReset" and e["offset"] == 0
            and e.get("previous") not in (None, 0)]
    assert back and all(e["source"] == "persist" and e["ts"] >= reset_ts + 10000 for e in back)
    # and the new ProcessQueues start there: the messages are consumed again
    created = [e for e in ev if e["kind"] == "pq_created" and e["topic"] == "TopicReset" and e["ts"] > reset_ts]
    assert created and all(e["offset"] == 0 for e in created)
    rep = _check(ev)
    assert _errors(rep) == []


def _orderly_reset(profile):
    sc = validate({
        "name": "orderly-reset", "description": "an orderly group reset to the beginning", "duration_ms": 30000,
        "topics": [{"name": "T", "queues": 2}],
        "groups": [{"name": "G", "consume_mode": "ORDERLY", "subscriptions": {"T": "*"},
                    "listener": {"duration_ms": [1, 5]}}],
        "producers": [{"topic": "T", "count": 40, "rate_per_s": 10}],
        "steps": [{"at_ms": 0, "action": "start", "client": "c1", "group": "G"},
                  {"at_ms": 12000, "action": "reset_offset", "group": "G", "topic": "T", "timestamp_ms": 0}],
    }, "test:orderly-reset")
    return run_to_list(sc, 1, profile)


def test_an_orderly_reset_moves_the_offset_back_without_an_order_finding():
    for profile in ("rocketmq-4.9.8", "rocketmq-5.3.3"):
        ev = _orderly_reset(profile)
        starts = [e for e in ev if e["kind"] == "consume_started" and e["topic"] == "T" and 0 in e["offsets"]]
        assert len(starts) >= 2, profile     # offset 0 of a queue consumed again after the reset
        rep = _check(ev, profile)
        assert _errors(rep) == [], (profile, [f.message for f in rep.findings.errors][:2])


def test_a_reset_is_refused_while_a_queue_has_no_committed_offset():
    sc = copy.deepcopy(load_scenario("real-reset"))
    sc["steps"][-1]["at_ms"] = 0          # before anything was consumed or persisted
    ev = run_to_list(sc, 1, PROFILE)
    assert not [e for e in ev if e["kind"] == "pq_dropped" and e.get("reason") == "reset"]
    assert not [e for e in ev if e["kind"] == "offset_committed" and e.get("source") == "reset"]


def test_a_broadcasting_group_cannot_be_reset():
    # it has no broker offsets, so Broker2Client.resetOffset refuses the call
    sc = copy.deepcopy(load_scenario("broadcast"))
    topic = next(iter(sc["groups"].values()))["subscriptions"]
    group = next(iter(sc["groups"]))
    sc["steps"].append({"at_ms": 20000, "action": "reset_offset", "group": group, "topic": next(iter(topic)),
                        "timestamp_ms": 0})
    ev = run_to_list(sc, 1, PROFILE)
    assert not [e for e in ev if e["kind"] == "pq_dropped" and e.get("reason") == "reset"]
    assert _errors(_check(ev)) == []


def test_a_dying_broker_fails_its_held_pulls_and_the_client_pulls_again():
    sc = validate({
        "name": "held-pulls", "description": "a broker restart while pulls are held", "duration_ms": 20000,
        "topics": [{"name": "T", "queues": 2}],
        "groups": [{"name": "G", "subscriptions": {"T": "*"}}],
        "steps": [{"at_ms": 0, "action": "start", "client": "c1", "group": "G"},
                  {"at_ms": 3000, "action": "restart_broker", "broker": "broker-a", "downtime_ms": 0},
                  {"at_ms": 8000, "action": "produce", "topic": "T", "count": 4}],
    }, "test:held-pulls")
    ev = run_to_list(sc, 1, PROFILE)
    held = {e["pull_id"] for e in ev if e["kind"] == "pull_held" and e["ts"] < 3000}
    assert held
    failed = {e["pull_id"]: e for e in ev if e["kind"] == "pull_failed"}
    assert held <= set(failed) and all(3000 <= failed[p]["ts"] <= 3010 for p in held)
    # pulling again, the client gets the messages produced at 8 s without a pull-expiry drop
    assert not [e for e in ev if e["kind"] == "pq_dropped"]
    consumed = {o for e in ev if e["kind"] == "consume_started" for o in e["offsets"]}
    assert len(consumed) >= 2
    assert _errors(_check(ev)) == []


def test_an_orderly_call_that_outlives_a_reset_commits_nothing_and_misleads_nothing():
    # resetOffset clears the ProcessQueue under a running call and removes it 10 s later; the
    # call then ends on an empty consuming map (no commit), and the new ProcessQueue's first
    # commit is its own, not the removed one's
    sc = validate({
        "name": "orderly-reset-call", "description": "a reset during a slow orderly call", "duration_ms": 60000,
        "drain_limit_ms": 600000,
        "topics": [{"name": "T", "queues": 1}],
        "groups": [{"name": "G", "consume_mode": "ORDERLY", "subscriptions": {"T": "*"},
                    "listener": {"duration_ms": [1, 5], "rules": [{"tags": ["slow"], "duration_ms": 25000}]}}],
        "steps": [{"at_ms": 0, "action": "start", "client": "c1", "group": "G"},
                  {"at_ms": 1000, "action": "produce", "topic": "T", "count": 2},
                  {"at_ms": 12000, "action": "produce", "topic": "T", "count": 1, "tags": "slow"},
                  {"at_ms": 14000, "action": "reset_offset", "group": "G", "topic": "T", "timestamp_ms": 0},
                  {"at_ms": 45000, "action": "produce", "topic": "T", "count": 2}],
    }, "test:orderly-reset-call")
    for profile in ("rocketmq-4.9.8", "rocketmq-5.3.3"):
        ev = run_to_list(sc, 1, profile)
        slow = next(e for e in ev if e["kind"] == "consume_started" and e["offsets"] == [2])
        removed = next(e for e in ev if e["kind"] == "pq_removed" and e["ts"] > slow["ts"])
        done = next(e for e in ev if e["kind"] == "consume_finished" and e["consume_id"] == slow["consume_id"])
        assert done["ts"] > removed["ts"], profile         # the call outlived its ProcessQueue
        later = [e for e in ev if e["kind"] == "pq_committed" and e["ts"] > done["ts"]]
        assert later, profile
        rep = _check(ev, profile)
        assert _errors(rep) == [], (profile, [f.message for f in rep.findings.errors][:2])


def _illegal_correction_after_removal():
    """bug-4215's run under 4.9.8, changed so that the ProcessQueue the OFFSET_ILLEGAL answer
    dropped is removed (persist, removeOffset, remove: RebalanceImpl's removal path) before the
    correction task runs. DefaultMQPushConsumerImpl schedules that task on the client
    (executeTaskLater, 10 s): it runs updateOffset(mq, nextBeginOffset, false) and persist
    whether or not the ProcessQueue is still there, and updateOffset puts the entry back."""
    ev = run_to_list(load_scenario("bug-4215"), 1, PROFILE)
    i = next(i for i, e in enumerate(ev) if e["kind"] == "offset_updated" and e["client"] == "c2"
             and not e["increase_only"] and e["offset"] < 5000 and e["topic"] == "Ledger")
    upd, fix, rm_persist, removed, pq_removed, commit_fix, commit_rm = ev[i:i + 7]
    assert [e["kind"] for e in (upd, fix, rm_persist, removed, pq_removed, commit_fix, commit_rm)] == [
        "offset_updated", "offset_persisted", "offset_persisted", "offset_removed", "pq_removed",
        "offset_committed", "offset_committed"]
    held = 5000                                   # what the store held before the correction
    rm_persist = dict(rm_persist, offset=held)
    commit_rm = dict(commit_rm, offset=held, previous=held)
    commit_fix = dict(commit_fix, previous=held)
    out = ev[:i] + [rm_persist, removed, pq_removed, upd, fix, commit_rm, commit_fix] + ev[i + 7:]
    for n, e in enumerate(out):
        e["seq"] = n
    return out, upd["offset"]


def test_illegal_offset_correction_runs_after_the_process_queue_is_gone():
    events, fixed = _illegal_correction_after_removal()
    assert fixed == next(e["next_offset"] for e in events if e["kind"] == "pull_answered"
                         and e["status"] == "OFFSET_ILLEGAL")
    assert "INV-OFFSET-1" not in _errors(_check(events))


def test_a_crashed_client_runs_no_illegal_offset_correction():
    events, fixed = _illegal_correction_after_removal()
    j = next(n for n, e in enumerate(events) if e["kind"] == "offset_updated" and e["offset"] == fixed
             and e["topic"] == "Ledger" and not e["increase_only"] and e["client"] == "c2")
    crash = {"seq": 0, "ts": events[j]["ts"], "kind": "client_crashed", "client": "c2"}
    out = events[:j] + [crash] + events[j:]
    for n, e in enumerate(out):
        e["seq"] = n
    assert "INV-OFFSET-1" in _errors(_check(out))



BLIND = Path(__file__).parent / "fixtures" / "reset-after-illegal-blind.jsonl"


def test_a_reset_by_time_on_a_queue_an_illegal_offset_dropped_is_a_reset():
    # The explorer of the reference (tiny, one queue, one message, faults reset and
    # reset_by_time, rocketmq-4.9.8) made this run: the operator's write past the end makes the
    # first pull OFFSET_ILLEGAL, which drops the ProcessQueue; resetOffsetByTime reaches the
    # client in the same millisecond, finds it dropped already (so no pq_dropped of reason
    # reset), and 10 s later sets the operator's offset 0 before the correction runs. Nothing
    # in the trace shows the reset: the spec takes an update that the reset could have set
    # (in [minOffset, maxOffset]) on a dropped ProcessQueue as one.
    ev = [orjson.loads(line) for line in BLIND.read_text().splitlines()]
    kinds = [(e["kind"], e.get("reason"), e.get("status")) for e in ev]
    assert ("pull_answered", None, "OFFSET_ILLEGAL") in kinds and ("pq_dropped", "offset_illegal", None) in kinds
    assert not [k for k in kinds if k[0] == "pq_dropped" and k[1] == "reset"]
    last = ev[-1]
    assert last["kind"] == "offset_updated" and last["offset"] == 0 and not last["increase_only"]
    assert _errors(_check(ev)) == []
    # a value no reset could set (past maxOffset) on the dropped ProcessQueue is still a finding
    bad = ev[:-1] + [dict(last, offset=7, stored=7)]
    assert "INV-OFFSET-1" in _errors(_check(bad))


@pytest.mark.slow
def test_both_operator_resets_in_one_scope_hold_on_the_reference():
    # the scope that found the blind reset (about 30 s of CPU under 4.9.8): exhausted, holds
    from rocketspec.model_checks.refexplore import RefExplorer
    from rocketspec.model_checks.scopes import load_scope

    scope = load_scope("tiny", queues=1, messages=1, failures=0, faults=2, fault_kinds=["reset", "reset_by_time"])
    for profile in ("rocketmq-4.9.8", "rocketmq-5.3.3"):
        r = RefExplorer(scope, profile, max_states=60000).run()
        assert r.complete and r.violations == [], profile


AFTER_REMOVAL = Path(__file__).parent / "fixtures" / "illegal-answer-after-removal.jsonl"


def test_an_illegal_answer_to_a_removed_process_queue_still_schedules_the_correction():
    # The explorer of the reference found this run exhausting `small` under 4.9.8 (a reset past
    # the end of queue 1, two consumers): c0's pull of queue 1 is on its way when a rebalance
    # gives the queue to c1 and c0 removes its ProcessQueue; the answer, OFFSET_ILLEGAL, still
    # runs PullCallback.onSuccess on the old PullRequest, which schedules updateOffset(mq,
    # nextBeginOffset, false) and persist 10 s later (DefaultMQPushConsumerImpl, 4.9.8: no
    # dropped check). The spec used to discard an answer whose ProcessQueue was gone, and so
    # rejected the correction as an offset no ProcessQueue produced (INV-OFFSET-1).
    ev = [orjson.loads(line) for line in AFTER_REMOVAL.read_text().splitlines()]
    q1 = [e for e in ev if e.get("client") == "c0" and e.get("topic") == "T" and e.get("queue") == 1]
    kinds = [e["kind"] for e in q1]
    removed = kinds.index("pq_removed")
    answer = next(i for i, e in enumerate(q1) if e["kind"] == "pull_answered" and e["status"] == "OFFSET_ILLEGAL")
    assert removed < answer
    fix = q1[-1]
    assert fix["kind"] == "offset_updated" and fix["offset"] == q1[answer]["next_offset"]
    assert _errors(_check(ev)) == []
    # the correction sets nextBeginOffset, nothing else
    wrong = [dict(e, offset=0) if e is fix else e for e in ev]
    assert "INV-OFFSET-1" in _errors(_check(wrong))


OUTGROWN = Path(__file__).parent / "fixtures" / "reset-ahead-outgrown.jsonl"


def test_a_reset_past_the_end_that_the_queue_outgrows_skips_what_was_stored_below_it():
    # The state machine (5.3.3, CI) made this run: an operator writes GID_O's offset of T/1 as 3
    # when the queue ends at 2 (updateConsumeOffset, unchecked). Before the client pulls, the
    # queue grows past 3 (offsets 2 and 3 stored), so the pull at 3 finds a message and no
    # OFFSET_ILLEGAL correction comes: offset 2, stored after the reset and below it, is never
    # consumed. The operator caused that loss; the spec names it (ANOM-RESET-SKIP) when the
    # pull at the reset's offset is answered, instead of failing the client's later commit of 4
    # as passing an unconsumed offset (INV-OFFSET-3).
    ev = [orjson.loads(line) for line in OUTGROWN.read_text().splitlines()]
    q = [e for e in ev if e.get("topic") == "T" and e.get("queue") == 1 and e.get("group") in (None, "GID_O")]
    reset = next(e for e in q if e["kind"] == "offset_committed" and e.get("source") == "reset")
    stored_below = [e for e in q if e["kind"] == "message_stored" and e["seq"] > reset["seq"]
                    and e["offset"] < reset["offset"]]
    assert stored_below
    assert _errors(_check(ev, "rocketmq-5.3.3")) == []
    from rocketspec.spec import initial_state, step
    st = initial_state(get_profile("rocketmq-5.3.3"))
    named = []
    for e in ev:
        named += [(e["kind"], f) for f in step(st, e) if f.inv == "ANOM-RESET-SKIP" and f.key[0] == "GID_O"]
    assert any(kind == "pull_answered" and "stored meanwhile below it" in f.message for kind, f in named)


HELD = Path(__file__).parent / "fixtures" / "reset-ahead-held.jsonl"
IN_FLIGHT = Path(__file__).parent / "fixtures" / "reset-ahead-in-flight.jsonl"


@pytest.mark.parametrize("path,profile", [(HELD, "rocketmq-5.3.3"), (IN_FLIGHT, "rocketmq-4.9.8")], ids=["held", "in-flight"])
def test_a_run_ending_with_a_pull_at_a_reset_past_the_end_skips_what_was_stored_below_it(path, profile):
    # `rocketspec explore` made both runs (2026-12-04): the operator writes G's offset of T/0 as 1
    # while the queue is empty (updateConsumeOffset), c0 takes the queue at 1, and message 0 is
    # stored before c0's pull at 1 reaches the broker. That pull finds maxOffset 1: nothing new
    # (OFFSET_OVERFLOW_ONE), so the broker holds it and no OFFSET_ILLEGAL correction comes, unlike
    # a pull of the still empty queue (4.9.8's immediate pull, corrected to 0). Under 5.3.3 (small)
    # the first pull comes 500 ms after the queue is taken and the run ends quiescent with it held;
    # under 4.9.8 (tiny, one message, no failure) the store comes between the queue's creation and
    # its pull, and the run ends in that millisecond with the pull on its way. Message 0 is never
    # consumed: the operator's skip (ANOM-RESET-SKIP), named at the end. The old spec judged only
    # an answered pull and failed both runs with INV-LIVE-1.
    ev = [orjson.loads(line) for line in path.read_text().splitlines()]
    reset = next(e for e in ev if e["kind"] == "offset_committed" and e.get("source") == "reset")
    stored = next(e for e in ev if e["kind"] == "message_stored" and e["topic"] == "T" and e["queue"] == 0)
    assert stored["seq"] > reset["seq"] and stored["offset"] < reset["offset"]
    pull = [e for e in ev if e["kind"] == "pull_issued" and e["topic"] == "T" and e["queue"] == 0]
    assert pull and pull[-1]["offset"] == reset["offset"] and pull[-1]["seq"] > stored["seq"]
    assert not [e for e in ev if e["kind"] == "pull_answered" and e["topic"] == "T" and e["queue"] == 0]
    assert ev[-1]["kind"] == "trace_ended" and ev[-1]["reason"] == "quiescent"
    assert _errors(_check(ev, profile)) == []
    from rocketspec.spec import initial_state, step
    st = initial_state(get_profile(profile))
    named = []
    for e in ev:
        named += [(e["kind"], f) for f in step(st, e) if f.inv == "ANOM-RESET-SKIP"]
    assert [kind for kind, _ in named] == ["trace_ended"]
    # with no pull on its way at the reset's offset, message 0 is owed at the end (INV-LIVE-1)
    no_pull = [e for e in ev if not (e["kind"] in ("pull_issued", "pull_held") and e["topic"] == "T" and e["queue"] == 0)]
    assert "INV-LIVE-1" in _errors(_check(no_pull, profile))
