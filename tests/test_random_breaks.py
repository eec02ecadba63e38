"""Assumptions the random scenarios break on purpose (conformance/random_scenarios.py, top-level
"breaks"), their validation (reference/scenario.py) and their classification by `record --random`
(conformance/real_random.py): a check failure on a break's expected invariants counts as an
expected loss only when check names the break's cause; anything else is judged as before."""
from __future__ import annotations

import json

import pytest

from rocketspec.conformance import real_random
from rocketspec.conformance.random_scenarios import (CLIENT_LEASE_MS, LEASE_MARGIN_MS, ORDERLY_BREAK_EXPECT,
                                                     generate)
from rocketspec.conformance.verdicts import validate_checked
from rocketspec.errors import UserError


def _kinds(n=300):
    out = {}
    for s in range(n):
        for b in generate(s).get("breaks", []):
            out.setdefault(b["kind"], []).append(s)
    return out


def test_the_generator_breaks_each_drivable_assumption_and_declares_it():
    kinds = _kinds()
    assert {"pause_past_lease", "lock_shorter_than_lease", "overlong_call", "subscriptions_differ"} <= set(kinds)
    for s in sorted({s for v in kinds.values() for s in v}):
        sc = generate(s)
        validate_checked(json.loads(json.dumps(sc)), f"random-{s}")   # the file as read back
        orderly = {g["name"] for g in sc["groups"] if g["consume_mode"] == "ORDERLY"
                   and g["message_model"] == "CLUSTERING"}
        group_of = {x["client"]: x["group"] for x in sc["steps"] if x["action"] == "start"}
        for b in sc["breaks"]:
            if b["kind"] == "subscriptions_differ":
                # a joiner subscribing one topic to one tag where its clustering group reads all of it
                g = next(g for g in sc["groups"] if g["name"] == b["target"])
                own = [x for x in sc["steps"] if x["action"] == "start" and "subscriptions" in x]
                assert b["expect"] == ["INV-SUB-1"] and g["message_model"] == "CLUSTERING" and len(own) == 1
                assert own[0]["group"] == g["name"] and own[0]["at_ms"] > min(
                    x["at_ms"] for x in sc["steps"] if x["action"] == "start" and x["group"] == g["name"])
                differ = {t for t, e in own[0]["subscriptions"].items() if e != g["subscriptions"][t]}
                assert len(differ) == 1 and g["subscriptions"][differ.pop()] == "*"
                assert set(own[0]["subscriptions"]) == set(g["subscriptions"])
                continue
            assert b["expect"] == ORDERLY_BREAK_EXPECT
            if b["kind"] == "pause_past_lease":
                assert group_of[b["target"]] in orderly
                assert any(x["action"] == "pause" and x["client"] == b["target"] and x["duration_ms"] > LEASE_MARGIN_MS
                           for x in sc["steps"])
            elif b["kind"] == "lock_shorter_than_lease":
                lock = sc["broker_config"]["lock_max_live_ms"]
                assert lock < sc["real"]["client_lock_max_live_ms"] == CLIENT_LEASE_MS
                pause = next(x for x in sc["steps"] if x["action"] == "pause" and "broker lock" in x["note"])
                assert lock < pause["duration_ms"] < CLIENT_LEASE_MS
                assert any(x["action"] == "start" and pause["at_ms"] < x["at_ms"] < pause["at_ms"] + pause["duration_ms"]
                           for x in sc["steps"])
            else:
                g = next(g for g in sc["groups"] if g["name"] == b["target"])
                assert g["name"] in orderly
                assert min(g["listener"]["rules"][0]["duration_ms"]) > LEASE_MARGIN_MS
    # every orderly pause past the margin is declared
    for s in range(300):
        sc = generate(s)
        orderly = {g["name"] for g in sc["groups"] if g["consume_mode"] == "ORDERLY"
                   and g["message_model"] == "CLUSTERING"}
        group_of = {x["client"]: x["group"] for x in sc["steps"] if x["action"] == "start"}
        long = {x["client"] for x in sc["steps"] if x["action"] == "pause" and group_of[x["client"]] in orderly
                and x["duration_ms"] > LEASE_MARGIN_MS}
        assert long <= {b["target"] for b in sc.get("breaks", []) if b["kind"] == "pause_past_lease"}, s


def test_small_scenarios_break_nothing():
    assert not any("breaks" in generate(s, small=True) for s in range(200))


@pytest.mark.parametrize("bad, says", [
    ([{"kind": "fast_clock", "target": "c1", "expect": ["INV-ORDER-1"]}], "breaks[0].kind"),
    ([{"kind": "overlong_call", "target": "G", "expect": []}], "breaks[0].expect"),
    ([{"kind": "overlong_call", "target": "G", "expect": ["INV-NOPE-9"]}], "unknown invariant ids"),
    ([{"kind": "overlong_call", "expect": ["INV-ORDER-1"]}], "breaks[0].target"),
    ([{"kind": "overlong_call", "target": "G", "expect": ["INV-ORDER-1"], "why": "x"}], "breaks[0].why"),
    ({"kind": "overlong_call"}, "breaks: expected a list"),
])
def test_the_validator_refuses_a_bad_break(bad, says):
    with pytest.raises(UserError, match=None) as e:
        validate_checked({"breaks": bad}, "b.json")
    assert says in str(e.value) and "b.json" in str(e.value)


# ---------------------------------------------------------------------- classification
SC = {"real": {"client_lock_max_live_ms": 3000}, "broker_config": {"lock_max_live_ms": 2000}, "groups": [],
      "breaks": [{"kind": "pause_past_lease", "target": "g1c2", "expect": ORDERLY_BREAK_EXPECT}]}
ORDER1_PAUSE = ("two consumers inside the orderly queue: 127.0.0.1@g1c1 starts a batch while 127.0.0.1@g1c2's batch 7 "
                "(since ts 10) is still in its listener call; cause: 127.0.0.1@g1c2 was paused at ts 2300 for 5300 ms: "
                "the call outlived the lease margin (5400 ms > client lease 3000 ms, broker lock 6000 ms, margin 3000 ms)")
OWNER2 = "127.0.0.1@g1c1 consumes but the broker lock is held by 127.0.0.1@g1c2 (expires_at 9, now 8)"


def _check(*violations):
    counts = {}
    for inv, _ in violations:
        counts[inv] = counts.get(inv, 0) + 1
    return {"counts": counts, "violations": [{"invariant": i, "severity": "error", "message": m,
                                              "key": {"group": "GID_r1"}} for i, m in violations]}


def _oracle(**status):
    ids = ("H-DELIVER-1", "H-RETRY-1", "H-RETRY-3", "H-ORDER-1", "H-DUP-1")
    return {"complete": True, "guarantees": [{"id": g, "status": status.get(g.replace("-", "_"), "holds")}
                                             for g in ids]}


def test_a_failure_naming_the_breaks_cause_is_an_expected_loss():
    chk = _check(("INV-ORDER-1", ORDER1_PAUSE))
    named = real_random.break_named(chk, SC)
    assert named == {"INV-ORDER-1"}
    assert real_random.classify(chk["counts"], _oracle(), named=named) == (real_random.BREAK, ["INV-ORDER-1"])
    # the oracle sees the same loss: still the break's
    assert real_random.classify(chk["counts"], _oracle(H_ORDER_1="violated"), named=named)[0] == "agreed"
    assert real_random.exit_code([real_random.RunResult(1, real_random.BREAK)]) == 0


def test_an_expected_invariant_without_the_cause_stays_a_false_alarm():
    # INV-OWNER-2's message names no cause; the oracle judged H-ORDER-1 and saw nothing
    chk = _check(("INV-ORDER-1", ORDER1_PAUSE), ("INV-OWNER-2", OWNER2))
    named = real_random.break_named(chk, SC)
    assert named == {"INV-ORDER-1"}
    assert real_random.classify(chk["counts"], _oracle(), named=named) == ("false alarm", ["INV-OWNER-2"])
    # a cause naming another client is not this break's
    other = ORDER1_PAUSE.replace("cause: 127.0.0.1@g1c2", "cause: 127.0.0.1@g1c1")
    assert real_random.break_named(_check(("INV-ORDER-1", other)), SC) == set()


def test_an_invariant_no_break_expects_stays_a_false_alarm():
    chk = _check(("INV-ORDER-1", ORDER1_PAUSE), ("INV-LOSS-1", "message m lost; cause: g1c2 was paused"))
    named = real_random.break_named(chk, SC)
    assert named == {"INV-ORDER-1"}
    assert real_random.classify(chk["counts"], _oracle(), named=named) == ("false alarm", ["INV-LOSS-1"])
    # and an oracle loss check does not match is still a missed loss
    assert real_random.classify(chk["counts"], _oracle(H_RETRY_3="violated"), named=named)[0] == "missed loss"


def test_each_break_kind_has_its_cause():
    lock = dict(SC, breaks=[{"kind": "lock_shorter_than_lease", "target": "broker-a", "expect": ORDERLY_BREAK_EXPECT}])
    msg = ("two consumers ...; cause: c1 was paused at ts 1 for 2300 ms; configuration: the broker lock is not longer "
           "than the client lease (client lease 3000 ms, broker lock 2000 ms, margin -1000 ms (A-LEASE-MARGIN))")
    assert real_random.break_named(_check(("INV-ORDER-1", msg)), lock) == {"INV-ORDER-1"}
    long_call = dict(SC, breaks=[{"kind": "overlong_call", "target": "GID_r1", "expect": ORDERLY_BREAK_EXPECT}])
    msg = ("two consumers ...; cause: 127.0.0.1@g1c1's listener call has run 4100 ms: the call outlived the lease "
           "margin (4100 ms > client lease 3000 ms, broker lock 6000 ms, margin 3000 ms (A-LEASE-MARGIN))")
    assert real_random.break_named(_check(("INV-ORDER-1", msg)), long_call) == {"INV-ORDER-1"}
    assert real_random.break_named(_check(("INV-ORDER-1", ORDER1_PAUSE)), long_call) == set()
    # no breaks: nothing is a break's
    assert real_random.break_named(_check(("INV-ORDER-1", ORDER1_PAUSE)), dict(SC, breaks=[])) == set()


def test_the_table_shows_breaks_and_named_causes():
    r = real_random.RunResult(4, real_random.BREAK, {"INV-ORDER-1": 1}, blamed=["INV-ORDER-1"],
                              breaks=["pause_past_lease:g1c2"], named=["INV-ORDER-1"])
    table = real_random.render_table([r, real_random.RunResult(5, "agreed")])
    assert "| 2 | 1 | 1 | 0 | 0 | 0 | 0 | 0 |" in table
    assert "| 4 | expected loss (break) | pause_past_lease:g1c2 | INV-ORDER-1 1 | INV-ORDER-1 |" in table
    assert real_random.summary([r])["breaks"] == {4: ["pause_past_lease:g1c2"]}


def _one_group(**start):
    return {"name": "subs", "duration_ms": 2000,
            "topics": [{"name": "T", "queues": 2}, {"name": "U", "queues": 1}],
            "groups": [{"name": "G", "subscriptions": {"T": "*"}}],
            "producers": [{"topic": "T", "count": 20, "rate_per_s": 100, "tags": ["TagA", "TagB"]}],
            "steps": [{"at_ms": 0, "action": "start", "client": "c1", "group": "G"},
                      {"at_ms": 500, "action": "start", "client": "c2", "group": "G", **start}]}


def test_a_start_step_may_subscribe_its_client_differently():
    """A start step's own subscriptions: validated as a group's, run by the reference for that
    client, and given to the recorder's client in the plan."""
    from pathlib import Path

    from rocketspec.commands.record import build_plan
    from rocketspec.reference.runner import run_to_list
    from rocketspec.rocketmq.profiles import get_profile

    sc = validate_checked(_one_group(subscriptions={"T": "TagA"}), "subs")
    plan = build_plan(sc, 1, 60, Path("."), Path("."))
    assert plan["client_subscriptions"] == {"c2": {"T": {"type": "TAG", "expr": "TagA"}}}
    assert plan["groups"]["G"]["subscriptions"] == {"T": {"type": "TAG", "expr": "*"}}
    events = run_to_list(sc, 1, get_profile("rocketmq-4.9.8"))
    started = {e["client"]: e["subscriptions"] for e in events if e["kind"] == "client_started"}
    assert "TagA" in json.dumps(started["c2"]) and "TagA" not in json.dumps(started["c1"])


@pytest.mark.parametrize("subs, says", [
    ({"V": "*"}, "steps[1].subscriptions.V: topic is not declared"),
    ({}, "steps[1].subscriptions: expected at least one"),
    ({"T": 3}, "steps[1].subscriptions.T: expected a tag expression"),
    ("TagA", "steps[1].subscriptions: expected a table"),
])
def test_the_validator_refuses_bad_start_subscriptions(subs, says):
    with pytest.raises(UserError, match=says.replace("[", r"\[").replace("]", r"\]")):
        validate_checked(_one_group(subscriptions=subs), "subs")


def test_subscriptions_on_another_step_are_refused():
    raw = _one_group()
    raw["steps"].append({"at_ms": 900, "action": "shutdown", "client": "c2", "subscriptions": {"T": "*"}})
    with pytest.raises(UserError, match="shutdown does not take"):
        validate_checked(raw, "subs")


def test_a_loss_check_names_as_differing_subscriptions_is_the_oracles_missing_message():
    """INV-SUB-1 reports messages lost to the group (the broker filtered a member's pulls with
    another member's subscription): what the oracle sees as H-DELIVER-1, not a missed loss."""
    oracle = {"complete": True, "guarantees": [{"id": "H-DELIVER-1", "status": "violated"},
                                               {"id": "H-DUP-1", "status": "holds"}]}
    assert real_random.classify({"INV-SUB-1": 3}, oracle) == ("agreed", ["H-DELIVER-1"])
