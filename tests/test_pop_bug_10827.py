"""#10827 as a known-bug profile (docs/notes/pop-bugs.md), and the parts it needed: the gRPC
PushConsumer (reference.client.grpc_push_consumer, rocketmq-client-java 5.2.0), the proxy's
receipt-handle renewal (reference.client.proxy_handles, proxy 5.5.0), the KV path's group@topic
lock (PopConsumerService.popAsync), lost receive answers (schema v5 pop_response_lost) and the rule
INV-POP-ORDER-2.

The chain, read in the 5.5.0 and 5.5.1 sources: a FIFO receive's answer is lost; the client's
receive fails with DEADLINE_EXCEEDED and is retried under the same attempt id (ProcessQueueImpl);
on 5.3.3 to 5.5.0 popAsync fails fast when another pop holds the group@topic lock, so the retry
reads nothing and is held empty; its runs on arrival and at the end of its poll both meet the lock,
it is answered empty, and the client's next receive draws a new attempt id, which the lost batch
blocks. 5.5.1's tryLockForPop makes a pop whose attempt id the order info holds wait for the lock.
"""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketspec.model_checks.refexplore import RefExplorer
from rocketspec.model_checks.scopes import BUG_SCOPES, load_scope
from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import bug_scenario, load_scenario
from rocketspec.rocketmq import grpc_push as facts
from rocketspec.rocketmq import profiles
from rocketspec.spec.replay import check_events

BUG = "bug-10827-rocketmq-5.5.0"
RELEASE = "rocketmq-5.5.1"


def _kinds(events, kind, **match):
    return [e for e in events if e["kind"] == kind and all(e.get(k) == v for k, v in match.items())]


def _report(events, profile):
    return check_events(enumerate(events, 1), profiles.get_profile(profile))


def _invs(events, profile):
    return {f.inv for f in _report(events, profile).findings.errors}


def test_10827_is_registered_with_the_kv_path_and_the_fail_fast_lock():
    bug = profiles.PROFILES[BUG]
    assert bug in profiles.POP_BUG_PROFILES and "#10827" not in profiles.OPEN_BUG_FIXES
    assert bug.known_bug == "#10827" and bug.expected_violation == "INV-POP-ORDER-2" and bug.release == "5.5.0"
    release = profiles.PROFILES[RELEASE].switches()
    assert {k for k, v in bug.switches().items() if release[k] != v} == {
        "name", "release", "description", "known_bug", "expected_violation", "pop_consumer_kv_service",
        "pop_kv_lock_fails_same_attempt"}
    # the source: 5.3.3's popAsync fails fast as 5.5.0's does; 5.5.1 waits (tryLockForPop)
    assert profiles.PROFILES["rocketmq-5.3.3"].pop_kv_lock_fails_same_attempt
    assert not profiles.PROFILES[RELEASE].pop_kv_lock_fails_same_attempt
    assert "#10827" in BUG_SCOPES and bug_scenario("#10827") == "bug-10827"


# ---------------------------------------------------------------------- the scenario


def _reentry(events, client="g1"):
    """The lost pop's attempt, and the pops that carried it again with what each got."""
    [lost] = _kinds(events, "pop_response_lost", client=client)
    [first] = _kinds(events, "pop_requested", client=client, pop_id=lost["pop_id"])
    again = [e for e in _kinds(events, "pop_requested", client=client, attempt_id=first["attempt_id"])
             if e["pop_id"] != lost["pop_id"]]
    got = {e["pop_id"]: [m["offset"] for m in _kinds(events, "message_popped", client=client, pop_id=e["pop_id"])]
           for e in again}
    return first["attempt_id"], again, got


@pytest.mark.parametrize("profile", ["rocketmq-5.3.3", BUG])
def test_10827_the_retried_attempt_is_answered_empty_and_the_queue_stays_blocked(profile):
    evs = run_to_list(load_scenario("bug-10827"), 1, profile)
    attempt, again, got = _reentry(evs)
    assert again and all(not offs for offs in got.values())
    answers = [e for e in _kinds(evs, "pop_answered", client="g1") if e["pop_id"] in got]
    assert answers and all(a["count"] == 0 for a in answers)
    rep = _report(evs, profile)
    [f] = [f for f in rep.findings.errors if f.inv == "INV-POP-ORDER-2"]
    assert attempt in f.message and "apache/rocketmq#10827" in f.message
    # the proxy renews the lost batch's handle: it is changed for another invisible time, unseen by g1
    [lost_pop] = _kinds(evs, "message_popped", client="g1", pop_id=_kinds(evs, "pop_response_lost")[0]["pop_id"])
    renewed = _kinds(evs, "invisible_time_changed", client="g1", queue=lost_pop["queue"], offset=lost_pop["offset"])
    first = renewed[0]
    deadline = lost_pop["pop_time"] + lost_pop["invisible_time"]
    assert first["ts"] % facts.RENEW_SCHEDULE_PERIOD_MS == 0 and 0 < deadline - first["ts"] <= facts.RENEW_AHEAD_MS
    assert first["pop_time"] + first["invisible_time"] == first["ts"] + facts.RENEW_POLICY_MS[0]


def test_10827_on_5_5_1_the_retry_waits_for_the_lock_and_gets_its_batch_back():
    evs = run_to_list(load_scenario("bug-10827"), 1, RELEASE)
    attempt, again, got = _reentry(evs)
    [lost] = _kinds(evs, "pop_response_lost", client="g1")
    [lost_pop] = _kinds(evs, "message_popped", client="g1", pop_id=lost["pop_id"])
    assert any(lost_pop["offset"] in offs for offs in got.values())
    # within the lost batch's invisible time: the retry, not the deadline, gave it back
    back = [m for m in _kinds(evs, "message_popped", client="g1", offset=lost_pop["offset"], queue=lost_pop["queue"])
            if m["pop_id"] != lost["pop_id"]][0]
    assert back["ts"] < lost_pop["pop_time"] + lost_pop["invisible_time"] and back["attempt_id"] == attempt
    assert _kinds(evs, "message_acked", client="g1", offset=lost_pop["offset"], result="acked")
    assert _invs(evs, RELEASE) == set()


def test_10827_without_the_lost_answer_every_release_holds():
    sc = load_scenario("bug-10827")
    sc["steps"] = [s for s in sc["steps"] if s["action"] != "lose_pop_responses"]
    for profile in ("rocketmq-5.3.3", RELEASE, BUG):
        evs = run_to_list(sc, 1, profile)
        assert not _kinds(evs, "pop_response_lost") and _invs(evs, profile) == set()


# ---------------------------------------------------------------------- the explorer


def test_10827_the_explorer_finds_it_in_its_scope():
    name, over = BUG_SCOPES["#10827"]
    r = RefExplorer(load_scope(name, **over), BUG, stop_at_first=True).run()
    assert [v.invariant for v in r.violations] == ["INV-POP-ORDER-2"]
    assert "#10827" in r.violations[0].message


def test_10827_5_5_1_exhausts_the_scope_clean():
    name, over = BUG_SCOPES["#10827"]
    r = RefExplorer(load_scope(name, **over), RELEASE).run()
    assert r.complete and not r.violations


def test_the_lost_answer_is_a_fault_only_a_scope_that_names_it_has():
    from rocketspec.model_checks.scopes import DEFAULT_FAULT_KINDS, FAULT_KINDS, Scope

    assert "pop_response_lost" in FAULT_KINDS and "pop_response_lost" not in DEFAULT_FAULT_KINDS
    assert "pop_response_lost" not in Scope().fault_kinds
    named = [b for b, (n, over) in BUG_SCOPES.items() if "pop_response_lost" in load_scope(n, **over).fault_kinds]
    assert named == ["#10827"]


def test_10827_the_scope_needs_the_other_clients_read():
    """With one message the other client has nothing to read: no lock is held across the retry's
    runs, and the bug side exhausts the scope clean too (the loss alone is no finding)."""
    name, over = BUG_SCOPES["#10827"]
    r = RefExplorer(load_scope(name, **{**over, "messages": 1, "produce_queues": [0]}), BUG).run()
    assert r.complete and not r.violations


# ---------------------------------------------------------------------- the state machine


def test_10827_the_state_machine_finds_it_in_the_grpc_environment(tmp_path):
    from rocketspec.conformance.statemachine import POP_GRPC, PopGrpcMachine, check_reference, machine_class

    assert issubclass(machine_class(RELEASE, scenario=POP_GRPC), PopGrpcMachine)
    res = check_reference(BUG, max_examples=150, scenario=POP_GRPC, trace_path=str(tmp_path / "f.jsonl"),
                          shrink_budget_s=10)
    assert not res.ok and res.crash is None and res.finding == "INV-POP-ORDER-2", res.summary()
    assert "POP_GRPC" in res.falsifying_code and "cold_read_over_a_retry" in res.falsifying_code
    fixed = check_reference(RELEASE, max_examples=100, scenario=POP_GRPC)
    assert fixed.ok and fixed.crashes_ignored == 0 and fixed.runaway == 0, fixed.summary()


# ---------------------------------------------------------------------- the rule, on hand-made traces


def _head():
    """The reference's own start of bug-10827 (a broker on the KV path, the topic of two queues,
    its message on queue 0, g1 started), and the message of queue 1."""
    evs = run_to_list(load_scenario("bug-10827"), 1, RELEASE)
    head = evs[:[e["kind"] for e in evs].index("pop_requested")]
    q0 = next(e for e in head if e["kind"] == "message_stored")
    return head + [{**q0, "queue": 1, "msg_id": "m1", "origin_msg_id": "m1"}]


def _trace(*events):
    out = [dict(e) for e in _head()] + [dict(e) for e in events]
    ts = 0
    for i, e in enumerate(out):
        ts = max(ts, e.get("ts", 0))
        e["seq"], e["ts"] = i, ts
    return out


G, T = "GID_10827", "Orders"


def _req(pop_id, attempt, ts, max_nums=1):
    return {"ts": ts, "kind": "pop_requested", "client": "g1", "group": G, "topic": T, "broker": "broker-a",
            "queue": -1, "pop_id": pop_id, "invisible_time": 60000, "max_nums": max_nums, "order": True,
            "attempt_id": attempt, "expr": "*", "expr_type": "TAG"}


def _popped(pop_id, attempt, ts, queue, offset, msg_id):
    h = f"{offset} {ts} 60000 999 0 broker-a {queue} {offset}"
    return {"ts": ts, "kind": "message_popped", "client": "g1", "group": G, "topic": T, "broker": "broker-a",
            "queue": queue, "offset": offset, "msg_id": msg_id, "pop_id": pop_id, "handle": h, "pop_time": ts,
            "invisible_time": 60000, "reconsume_times": 0, "order": True, "origin_msg_id": msg_id,
            "attempt_id": attempt, "revive_qid": 999, "ck_offset": offset}


def _answered(pop_id, ts, count):
    return {"ts": ts, "kind": "pop_answered", "client": "g1", "group": G, "topic": T, "broker": "broker-a",
            "pop_id": pop_id, "status": "FOUND" if count else "POLLING_NOT_FOUND", "count": count}


def _lost_then(*after):
    return _trace(_req(1, "a1", 10), _popped(1, "a1", 11, 0, 0, "broker-a:1"), _answered(1, 11, 1),
                  {"ts": 11, "kind": "pop_response_lost", "client": "g1", "group": G, "topic": T,
                   "broker": "broker-a", "pop_id": 1},
                  _req(2, "a1", 9000), *after)


def test_the_rule_a_retried_attempt_answered_without_its_batch_is_reported():
    evs = _lost_then(_answered(2, 14000, 0))
    rep = _report(evs, BUG)
    [f] = rep.findings.errors
    assert f.inv == "INV-POP-ORDER-2" and "Orders/broker-a/0 offset 0" in f.message and "#10827" in f.message
    # the same answer under the release names no cause: the rule is the same, the profile says why
    [g] = _report(evs, RELEASE).findings.errors
    assert g.inv == "INV-POP-ORDER-2" and "#10827" not in g.message


def test_the_rule_a_retried_attempt_given_its_batch_back_holds():
    assert _report(_lost_then(_popped(2, "a1", 9001, 0, 0, "broker-a:1"), _answered(2, 9001, 1)), BUG).ok


def test_the_rule_a_full_answer_is_not_judged():
    """A retry whose one message came from the other queue filled its room before the blocked one
    was read (popMsgFromTopic stops at maxMsgNums)."""
    assert _report(_lost_then(_popped(2, "a1", 9001, 1, 0, "m1"), _answered(2, 9001, 1)), BUG).ok


def test_the_rule_a_new_attempt_is_not_a_retry():
    evs = _trace(_req(1, "a1", 10), _popped(1, "a1", 11, 0, 0, "broker-a:1"), _answered(1, 11, 1),
                 _req(2, "a2", 9000, max_nums=2), _popped(2, "a2", 9001, 1, 0, "m1"), _answered(2, 9001, 1))
    assert _report(evs, BUG).ok


def test_two_attempts_with_one_pop_time_are_two_attempts():
    """On 5.5.1 a pop takes its time on arrival and may wait for the lock: two attempts can share a
    pop time. The second replaces the order info; its own retry later is no new attempt while the
    first one's offsets are held (a search of 5.5.1 met a false INV-POP-ORDER-1 here)."""
    evs = _trace(_req(1, "a1", 10), _req(2, "b1", 10),
                 _popped(1, "a1", 10, 0, 0, "broker-a:1"), _answered(1, 10, 1),
                 {"ts": 20, "kind": "message_acked", "client": "g1", "group": G, "topic": T, "broker": "broker-a",
                  "queue": 0, "offset": 0, "handle": "0 10 60000 999 0 broker-a 0 0", "pop_time": 10,
                  "result": "acked", "reason": "consumed", "response_code": None, "order": True},
                 {**_head()[3], "ts": 30, "offset": 1, "msg_id": "m2", "origin_msg_id": "m2"},
                 _popped(2, "b1", 10, 0, 1, "m2"), _answered(2, 40, 1),
                 _req(3, "b1", 50), _popped(3, "b1", 50, 0, 1, "m2"), _answered(3, 50, 1))
    rep = _report(evs, RELEASE)
    assert rep.ok, [f.message for f in rep.findings.errors]


# ---------------------------------------------------------------------- facts


@given(attempt=st.integers(1, 100))
def test_the_retry_policy_delay_is_the_customized_table_then_its_last(attempt):
    d = facts.next_attempt_delay_ms(attempt)
    table = [1000 * s for s in facts.CUSTOMIZED_BACKOFF_S]
    assert d == (table[attempt - 1] if attempt <= len(table) else table[-1])
    assert facts.next_attempt_delay_ms(1) == 1000 and facts.next_attempt_delay_ms(4) == 30_000


@given(times=st.integers(-3, 50))
def test_the_renew_policy_climbs_to_an_hour(times):
    d = facts.renew_invisible_ms(times)
    assert facts.renew_invisible_ms(0) == 60_000 and d in facts.RENEW_POLICY_MS
    assert d == 3_600_000 or times < len(facts.RENEW_POLICY_MS) - 1


@given(reconsume=st.integers(-2, 40))
def test_the_stop_renew_nack_is_the_retry_table_two_on(reconsume):
    """CustomizedRetryPolicy.nextDelayDuration: index reconsumeTimes + 2 (the old delay levels)."""
    assert facts.retry_policy_delay_ms(reconsume) == 1000 * facts.CUSTOMIZED_BACKOFF_S[
        min(max(reconsume, 0) + 2, len(facts.CUSTOMIZED_BACKOFF_S) - 1)]
    assert facts.retry_policy_delay_ms(0) == 10_000


@given(deadline=st.integers(0, 10**6), now=st.integers(0, 10**6))
def test_a_handle_is_renewed_within_ten_seconds_of_its_deadline(deadline, now):
    assert facts.renew_due(deadline, now) == (deadline - now <= 10_000)


def test_a_receive_is_retried_under_its_attempt_id_only_after_deadline_exceeded():
    assert facts.retried_attempt_id("a", True) == "a" and facts.retried_attempt_id("a", False) is None
    assert facts.receive_timeout_ms() == 23_000 and facts.receive_timeout_ms(5000) == 8000


def test_the_schema_carries_the_lost_answer_from_version_5():
    from rocketspec.traces.schema import SCHEMA_VERSION, SUPPORTED_VERSIONS, kinds

    assert SCHEMA_VERSION == 5 and 4 in SUPPORTED_VERSIONS
    assert kinds()["pop_response_lost"]["required"] == ["client", "group", "topic", "broker", "pop_id"]
    assert json.loads(json.dumps(kinds()["pop_response_lost"]))["doc"].startswith("v5.")


def test_record_refuses_what_no_real_run_can_do(tmp_path):
    """The two faults of the reference, named in one error, exit 2; a GRPC_PUSH group needs the gRPC
    client program (--client), as a SimpleConsumer group does."""
    from click.testing import CliRunner

    from rocketspec.cli import main

    res = CliRunner().invoke(main, ["record", "--scenario", "bug-10827", "--release", "5.5.1",
                                    "--out", str(tmp_path / "t.jsonl")])
    assert res.exit_code == 2, res.output
    for what in ("slow_store_reads", "lose_pop_responses"):
        assert what in res.output
    assert "Traceback" not in res.output
    res = CliRunner().invoke(main, ["record", "--scenario", "pop-grpc-push", "--release", "5.5.0",
                                    "--out", str(tmp_path / "t.jsonl")])
    assert res.exit_code == 2 and "GRPC_PUSH consumes through the gRPC proxy" in res.output and "--client" in res.output
