"""Persistent sets (model_checks/persistent.py) cut states, not behaviours that matter: compared
with the full breadth-first search, the reduced one keeps a subset of the states, reaches exactly
the same quiescent states (where INV-LIVE-1 is checked), finds the same violations, and still
finds each known bug. And it does cut: two orderly clients on two queues lose most of their
interleavings."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from rocketspec.model_checks.explorer import Explorer
from rocketspec.model_checks.persistent import persistent_subset
from rocketspec.model_checks.scopes import ScopeError, load_scope
from rocketspec.spec.profiles import PROFILES

from test_explore import BUG_PROFILES, BUG_SCOPES


def _explore(scope, profile, por, **kw):
    ex = Explorer(replace(scope, persistent_sets=por), profile, **kw)
    quiescent = set()
    ok = ex._quiescent_ok

    def record(node):
        r = ok(node)
        if r:
            quiescent.add(ex.fingerprint(node))
        return r

    ex._quiescent_ok = record
    res = ex.run()
    return res, set(ex._seen), quiescent


CASES = [
    # two orderly clients, two queues and the retry queue; one listener failure, no fault
    pytest.param("small-orderly", "rocketmq-5.3.3", {"messages": 1, "failures": 1, "faults": 0}, id="orderly-2c-fail"),
    pytest.param("small-orderly", "rocketmq-4.9.8", {"messages": 1, "failures": 0, "faults": 1,
                                                     "fault_kinds": ["crash", "pause"], "pause_ms": [61000]},
                 id="orderly-2c-crash-pause"),
    # concurrent: two clients, a failure that goes through %RETRY%, a lost persist
    pytest.param("small", "rocketmq-5.3.3", {"messages": 1, "faults": 1, "fault_kinds": ["persist_lost"]},
                 id="concurrent-2c"),
    pytest.param("tiny", "rocketmq-4.9.8", {}, id="tiny"),
    pytest.param("bugs-orderly", "bug-6163-rocketmq-5.0.0", {"faults": 0}, id="bug-6163-no-fault"),
    pytest.param("small-orderly", "rocketmq-5.3.3", {"failures": 1, "faults": 0}, id="orderly-2c-2m-fail",
                 marks=pytest.mark.slow),   # ~45 s
]


@pytest.mark.parametrize("name,profile,over", CASES)
def test_reduced_search_keeps_quiescent_states_and_violations(name, profile, over):
    scope = load_scope(name, **over)
    full, full_states, full_q = _explore(scope, profile, False)
    red, red_states, red_q = _explore(scope, profile, True)
    assert full.complete and red.complete
    assert red_states <= full_states                  # nothing the full search does not reach
    assert red_q == full_q and red.quiescent == full.quiescent and full_q
    assert sorted(v.invariant for v in red.violations) == sorted(v.invariant for v in full.violations)
    assert red.distinct <= full.distinct


def test_two_orderly_clients_lose_most_interleavings():
    scope = load_scope("small-orderly", messages=1, failures=1, faults=0)
    full, _, _ = _explore(scope, "rocketmq-5.3.3", False)
    red, _, _ = _explore(scope, "rocketmq-5.3.3", True)
    assert red.reduced > 0 and red.persistent_sets
    assert red.distinct < 0.6 * full.distinct, (red.distinct, full.distinct)


def test_the_bug_is_found_before_and_after_the_fault():
    # #6163 shows with no fault at all: the reduction is active from the first state on
    prof = PROFILES["bug-6163-rocketmq-5.0.0"]
    res, _, _ = _explore(load_scope("bugs-orderly", faults=0), prof, True)
    assert res.reduced > 0 and prof.expected_violation in [v.invariant for v in res.violations]


@pytest.mark.parametrize("profile", [p for p in BUG_PROFILES if BUG_SCOPES[p.known_bug][0] != "bugs-broadcast"],
                         ids=lambda p: p.known_bug)
def test_known_bugs_still_found_with_persistent_sets(profile):
    name, over = BUG_SCOPES[profile.known_bug]
    res = Explorer(load_scope(name, persistent_sets=True, **over), profile, stop_at_first=True,
                   max_states=300000).run()
    assert profile.expected_violation in [v.invariant for v in res.violations]


def test_subsets_only_once_the_fault_is_spent(monkeypatch):
    # a crash is dependent with everything its client does (and changes the view): no state with
    # the fault still in the budget is reduced; after it, states are
    import rocketspec.model_checks.explorer as explorer_mod

    calls = []

    def spy(gen, node, moves, fps):
        sub = persistent_subset(gen, node, moves, fps)
        calls.append((node.budget[0], sub is not None and len(sub) < len(moves)))
        return sub

    monkeypatch.setattr(explorer_mod, "persistent_subset", spy)
    scope = load_scope("small-orderly", messages=1, failures=0, faults=1, fault_kinds=["crash"])
    _explore(scope, "rocketmq-5.3.3", True)
    assert not any(reduced for faults_left, reduced in calls if faults_left)
    assert any(reduced for faults_left, reduced in calls if not faults_left)


@pytest.mark.parametrize("over,why", [({"adversary": True}, "adversary"),
                                      ({"message_model": "BROADCASTING"}, "clustering"),
                                      ({"max_depth": 5}, "max_depth")])
def test_scope_errors(over, why):
    with pytest.raises(ScopeError, match=why):
        load_scope("tiny", persistent_sets=True, **over)


def _plant(monkeypatch, kind, predicate):
    """Make the spec reject `kind` events where `predicate(st, ev)` holds (id PLANTED): a stand-in
    for a bug that shows only in some interleavings, which the reduction must not lose."""
    from rocketspec.spec import actions as A

    orig = A.HANDLERS[kind]

    def planted(st, ev, out):
        if predicate(st, ev):
            out.report("PLANTED", "planted", None)
        return orig(st, ev, out)

    monkeypatch.setitem(A.HANDLERS, kind, planted)


def _lock_age_at_consume(st, ev):
    qs = st.queues.get((ev["group"], ev["topic"], ev["broker"], ev["queue"]))
    return qs is not None and qs.holder == ev["client"] and ev["ts"] - qs.lock_ts >= 20000


def _retry_answered_while_held(st, ev):
    # a retry copy answered to c0 while its main queue still has a pull in flight
    if not ev["topic"].startswith("%RETRY%") or not ev.get("offsets"):
        return False
    qs = st.queues.get((ev["group"], "T", ev["broker"], 0))
    pq = qs.pqs.get(ev["client"]) if qs is not None else None
    return pq is not None and pq.pull_id is not None


def _two_retry_copies_in_one_answer(st, ev):
    return ev["topic"].startswith("%RETRY%") and len(ev.get("offsets") or ()) >= 2


@pytest.mark.parametrize("kind,predicate,name,over", [
    # an orderly batch that starts 20 s after its lock was taken: only when time passes between
    # the scheduled lockAll run and the batch (the consume start reads the clock: never reduced)
    ("consume_started", _lock_age_at_consume, "small-orderly", {"messages": 1, "failures": 0, "faults": 0}),
    # concurrent: a failure's retry copy delivered and pulled in one interleaving of two queues
    ("pull_answered", _retry_answered_while_held, "small",
     {"consumers": 1, "messages": 2, "faults": 0, "failures": 1}),
    # two retry copies delivered before the retry queue's pull is answered: the second delivery
    # waits for the clock while the first copy's answer is enabled
    ("pull_answered", _two_retry_copies_in_one_answer, "small",
     {"consumers": 1, "messages": 2, "faults": 0, "failures": 2}),
], ids=["time", "retry-delivery", "retry-batch"])
def test_planted_interleaving_bugs_are_still_found(monkeypatch, kind, predicate, name, over):
    _plant(monkeypatch, kind, predicate)
    scope = load_scope(name, **over)
    full, _, _ = _explore(scope, "rocketmq-5.3.3", False)
    red, _, _ = _explore(scope, "rocketmq-5.3.3", True)
    assert "PLANTED" in [v.invariant for v in full.violations]     # the full search shows it
    assert red.reduced > 0
    assert "PLANTED" in [v.invariant for v in red.violations]


def test_cli_persistent_sets(tmp_path):
    from test_explore import _cli

    r = _cli("explore", "--scope", "tiny", "--persistent-sets", "--quiet")
    assert r.returncode == 0, r.stderr
    assert "REDUCED (persistent sets)" in r.stdout and "liveness not checked" in r.stdout
    r = _cli("explore", "--scope", "tiny", "--persistent-sets", "--json", "--quiet")
    d = json.loads(r.stdout)
    assert d["persistent_sets"] is True and d["states_reduced"] > 0 and d["verdict"] == "holds"
    assert d["liveness"] == "not checked (the graph is reduced (persistent sets))"
    # a known bug: exit 1, and the trace it writes is rejected by `rocketspec check`
    scope = tmp_path / "orderly.toml"
    scope.write_text('consumers = 2\nqueues = 1\nmessages = 1\nmode = "ORDERLY"\nmax_reconsume_times = 1\n'
                     'failures = 2\nfaults = 0\n')
    r = _cli("explore", "--scope", str(scope), "--profile", "bug-6163-rocketmq-5.0.0", "--persistent-sets", "--quiet",
             "--out-dir", str(tmp_path))
    assert r.returncode == 1 and "INV-RETRY-1" in r.stdout, r.stdout
    chk = _cli("check", *[str(p) for p in tmp_path.glob("*INV-RETRY-1*.jsonl")])
    assert chk.returncode == 1 and "INV-RETRY-1" in chk.stdout
    # exclusive with a depth bound, and with adversary or broadcasting scopes: bad input
    r = _cli("explore", "--scope", "tiny", "--persistent-sets", "--max-depth", "5", "--quiet")
    assert r.returncode == 2 and "exclude each other" in r.stderr
    r = _cli("explore", "--scope", "bugs-broadcast", "--persistent-sets", "--quiet")
    assert r.returncode == 2 and "clustering" in r.stderr


def test_planted_state_predicate_is_still_found(monkeypatch):
    # a per-queue state predicate: both retry copies stored while the retry queue's ProcessQueue
    # still waits at offset 0 (it holds in some interleavings of the deliveries and the pulls)
    from rocketspec.spec import invariants

    def both_copies_waiting(st):
        for key, qs in st.queues.items():
            sq = st.stored.get(key[1:])
            if key[1].startswith("%RETRY%") and sq is not None and sq.next >= 2:
                if any(pq.next_pull == 0 for pq in qs.pqs.values()):
                    yield key, "planted"

    monkeypatch.setitem(invariants.STATE_PREDICATES, "PLANTED-STATE", both_copies_waiting)
    scope = load_scope("small", consumers=1, messages=2, faults=0, failures=2)
    full, _, _ = _explore(scope, "rocketmq-5.3.3", False)
    red, _, _ = _explore(scope, "rocketmq-5.3.3", True)
    assert "PLANTED-STATE" in [v.invariant for v in full.violations]
    assert red.reduced > 0 and "PLANTED-STATE" in [v.invariant for v in red.violations]


def _lock_events(scope, profile):
    ex = Explorer(scope, profile)
    seen = set()
    apply = ex.apply_move

    def record(node, move):
        nxt, bad = apply(node, move)
        if nxt is not None:
            for e in move.events:
                if e["kind"] == "lock_expired" or (e["kind"] == "lock_acquired" and e["reason"] != "renewed"):
                    seen.add((e["kind"], e.get("reason")))
        return nxt, bad

    ex.apply_move = record
    return ex.run(), seen


@pytest.mark.parametrize("profile", ["rocketmq-5.3.3", "rocketmq-4.9.8"])
def test_small_lock_explores_lock_expiry(profile):
    # the named scope with one message and no failure (the whole scope is the slow test below):
    # the 61 s pause lets the broker entry expire, and the client takes it over after resuming
    res, seen = _lock_events(load_scope("small-lock", messages=1, failures=0), profile)
    assert res.complete and res.persistent_sets and res.reduced > 0
    assert res.violations == [], [v.to_dict() for v in res.violations]
    assert {("lock_expired", None), ("lock_acquired", "takeover")} <= seen


@pytest.mark.slow
@pytest.mark.parametrize("profile", ["rocketmq-5.3.3", "rocketmq-4.9.8"])
def test_small_lock_exhausts_clean(profile):
    # ~4 min of CPU each: 543,786 states, depth 36 (docs/notes/explorer-findings.md)
    res, seen = _lock_events(load_scope("small-lock"), profile)
    assert res.complete and res.distinct > 500_000
    assert res.violations == [], [v.to_dict() for v in res.violations]
    assert {("lock_expired", None), ("lock_acquired", "takeover")} <= seen
