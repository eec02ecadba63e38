"""Liveness on runs that cycle forever (model_checks/liveness.py), not only on dead ends.

Each planted defect is one monkeypatched Generator method; its violating run goes round a cycle
of real moves (pulls, lock renewals, time, rebalances) while a stored message stays unconsumed or
a queue unheld. The tests show that check_liveness reports it as a lasso, that the lasso is a run
the spec accepts and whose cycle really closes and is fair, and that fairness is what keeps the
unfair cycles of the healthy model out of the report.
"""
from __future__ import annotations

import json
from dataclasses import replace

import networkx as nx
import pytest
from rocketspec.model_checks.explorer import Explorer, _move_class, write_trace
from rocketspec.model_checks.generator import BROKER, GROUP, E, Generator, Move, view_id
from rocketspec.model_checks.liveness import (
    FAIR,
    action_key,
    check_liveness,
    fair_components,
    graph_of,
    obligations,
)
from rocketspec.model_checks.scopes import load_scope
from rocketspec.reference.allocation import allocate
from rocketspec.reference.message_queue import MessageQueue
from rocketspec.spec.replay import check_trace

PROFILE = "rocketmq-5.3.3"

# small scopes (liveness turns symmetry off): one concurrent consumer; one orderly consumer;
# two orderly consumers on one queue, one of which may crash; two orderly consumers on two queues
# (one message, on T:0), c0 dead from the start (see c0_crashed_at_start)
TINY_QUIET = replace(load_scope("tiny"), faults=0, failures=0)
ORDERLY_ONE = replace(load_scope("small-orderly"), consumers=1, faults=0, failures=0)
ORDERLY_CRASH = replace(load_scope("small-orderly"), consumers=2, queues=1, messages=1, failures=0, faults=1,
                        fault_kinds=("crash",))
ORDERLY_TWO_C0_DEAD = load_scope("small-orderly", messages=1, failures=0, faults=0, fault_kinds=["crash"],
                                 pause_ms=[31000])
# the same with c0's crash a fault move anywhere in the run (either client): 43,907 states with the
# plant, 176,065 without (minutes with symmetry and sleep sets off); marked slow
ORDERLY_TWO_CRASH = replace(ORDERLY_TWO_C0_DEAD, faults=1)


# ---------------------------------------------------------------------------- environment

def c0_crashed_at_start(monkeypatch):
    """c0 crashes in the trace's fixed prefix, after both clients registered and before any move:
    the smallest run in which a queue (T:0, c0's under AVG) must be reassigned to the survivor c1.
    A crash as a fault move could come at any point, so the run without it, two live orderly
    clients, is explored too (17,000 states at least): ORDERLY_TWO_CRASH. (Forcing the crash as
    the first move instead would leave an initial state whose only move is a fault, a fair dead
    end of its own.)"""
    orig = Generator.setup_events
    monkeypatch.setattr(Generator, "setup_events",
                        lambda self: orig(self) + [E("client_crashed", client="c0", group=GROUP)])


# ---------------------------------------------------------------------------- planted defects

def plant_message_was_removing(monkeypatch):
    """The broker answers every pull that would find messages with MESSAGE_WAS_REMOVING
    (PULL_RETRY_IMMEDIATELY, seen by the client as NO_MATCHED_MSG) and nextBeginOffset = the
    request offset, forever; the client corrects its offset (correctTagsOffset) and pulls again.
    Nothing is lost or skipped, so the safety spec accepts every step: pull, answer, pull, ..."""
    orig = Generator._answer

    def _answer(self, st, now, c, key, qs, pq):
        out = []
        for m in orig(self, st, now, c, key, qs, pq):
            ev = m.events[0]
            if ev["status"] != "FOUND":
                out.append(m)
                continue
            base = {k: v for k, v in ev.items()
                    if k not in ("kind", "offsets", "msg_ids", "get_status", "status", "next_offset")}
            off = ev["offset"]
            evs = [E("pull_answered", **base, get_status="MESSAGE_WAS_REMOVING", status="NO_MATCHED_MSG",
                     next_offset=off)]
            if not pq.tree and not pq.consuming:
                evs.append(self._offset_update(key, qs, c, off, True))
            out.append(Move(f"{c} pull q{key[3]}@{off}: MESSAGE_WAS_REMOVING", evs))
        return out

    monkeypatch.setattr(Generator, "_answer", _answer)


def plant_no_orderly_listener(monkeypatch):
    """The orderly client never starts its listener: it pulls, renews its locks every 20 s, and
    time passes, forever."""
    monkeypatch.setattr(Generator, "_orderly_consume", lambda self, *a, **k: [])


class _StaleDir:
    def __init__(self, d, cids):
        self._d, self.registered = d, {(BROKER, GROUP): set(cids)}

    def __getattr__(self, n):
        return getattr(self._d, n)


class _StaleState:
    def __init__(self, st, cids):
        self._st, self.dir = st, _StaleDir(st.dir, cids)

    def __getattr__(self, n):
        return getattr(self._st, n)


def plant_stale_consumer_list(monkeypatch):
    """Each client rebalances from the consumer list it saw at start (every client of the scope),
    never refreshed, and re-runs its periodic rebalance even when nothing changes. After c0 crashes
    and the broker expires its channel, c1 still computes T:0 as c0's: nobody holds T:0, and c1
    goes on rebalancing forever. (The spec accepts a stale view: the client's list is its own.)"""
    orig = Generator._rebalance

    def _rebalance(self, st, now, c, topic, faults_left):
        out = orig(self, _StaleState(st, self.clients), now, c, topic, faults_left)
        if not out:
            cids = list(self.clients)
            mqs = [[topic, BROKER, q] for q in range(self.topics[topic])]
            got = allocate(self.scope.strategy, c, [MessageQueue(*m) for m in mqs], cids) or []
            out = [Move(f"rebalance {c} {topic} (stale list, no change)", [
                E("allocation_computed", client=c, group=GROUP, topic=topic, strategy=self.scope.strategy, mqs=mqs,
                  cids=cids, allocated=[[m.topic, m.broker_name, m.queue_id] for m in got], view=view_id(cids),
                  ok=True)])]
        return out

    monkeypatch.setattr(Generator, "_rebalance", _rebalance)


def plant_no_channel_expiry(monkeypatch):
    """The broker never expires the channel of a crashed client: the survivor's allocation keeps
    giving the crashed client its queue. With one queue the survivor (holding nothing) has nothing
    left to do: a dead end, not a cycle. With two, the survivor holds its own queue and renews its
    broker lock (lockAll) whenever time comes near the unlock delay, forever: time, lockAll, time,
    ... while the crashed client's queue is never reassigned."""
    orig = Generator.moves

    def moves(self, st, now, aux, budget):
        return [m for m in orig(self, st, now, aux, budget) if not m.label.startswith("channel of")]

    monkeypatch.setattr(Generator, "moves", moves)


# plant, scope, reported invariant, action classes the cycle must go through, environment (or None:
# the scope as it is), applied with and without the plant
CYCLING = {
    "broker-message-was-removing": (plant_message_was_removing, TINY_QUIET, "INV-LIVE-1", {"pull", "pull_answer"},
                                    None),
    "orderly-listener-never-started": (plant_no_orderly_listener, ORDERLY_ONE, "INV-LIVE-1", {"lock", "time"}, None),
    "stale-consumer-list": (plant_stale_consumer_list, ORDERLY_CRASH, "LIVE-REASSIGN", {"rebalance"}, None),
    "no-channel-expiry-two-queues": (plant_no_channel_expiry, ORDERLY_TWO_C0_DEAD, "LIVE-REASSIGN", {"lock", "time"},
                                     c0_crashed_at_start),
}


def _explore(scope):
    ex = Explorer(scope, PROFILE, liveness=True)
    return ex, ex.run()


def _setup(name, monkeypatch, planted=True):
    """The scope of a CYCLING case, its environment and (planted) its defect in place."""
    plant, scope, inv, classes, env = CYCLING[name]
    if env is not None:
        env(monkeypatch)
    if planted:
        plant(monkeypatch)
    return scope, inv, classes


def _walk(ex, moves, node=None):
    """Apply move indices from `node` (default: the initial state); the nodes visited, first included."""
    if node is None:
        node, _ = ex.initial()
    nodes = [node]
    for mi in moves:
        nxt, bad = ex.apply_move(node, ex.gen.moves(node.st, node.now, node.aux, node.budget)[mi])
        assert nxt is not None, bad
        nodes.append(nxt)
        node = nxt
    return nodes


def _fair_enabled(ex, node):
    """The fair action instances enabled in a state, computed afresh from the generator."""
    out = set()
    for m in ex.gen.moves(node.st, node.now, node.aux, node.budget):
        cls = _move_class(m)
        if cls in FAIR and ex.apply_move(node, m)[0] is not None:
            out.add(action_key(m, cls))
    return out


# ---------------------------------------------------------------------------- (a) reported

@pytest.mark.parametrize("name", sorted(CYCLING))
def test_unplanted_scope_has_no_liveness_violation(name, monkeypatch):
    # the control: without the plant the same scope is clean, so the reports below come from the plants
    scope, _, _ = _setup(name, monkeypatch, planted=False)
    ex, res = _explore(scope)
    assert res.violations == []
    assert check_liveness(ex, res)["violations"] == []


@pytest.mark.parametrize("name", sorted(CYCLING))
def test_planted_cycling_defect_is_reported_as_a_fair_lasso(name, monkeypatch):
    scope, inv, classes = _setup(name, monkeypatch)
    ex, res = _explore(scope)
    live = check_liveness(ex, res)
    v = next((v for v in live["violations"] if v.invariant == inv), None)
    assert v is not None, [x.to_dict() for x in live["violations"]]
    assert v.kind == "liveness"
    lasso = v.detail["lasso"]
    assert lasso["cycle_moves"] > 0 and len(lasso["cycle"]) == lasso["cycle_moves"]
    # the cycle is made of the defect's moves, not stuttering
    cycle_classes = set()
    for n, mi in zip(_walk(ex, lasso["prefix"] + lasso["cycle"])[len(lasso["prefix"]):], lasso["cycle"]):
        cycle_classes.add(_move_class(ex.gen.moves(n.st, n.now, n.aux, n.budget)[mi]))
    assert classes <= cycle_classes, (lasso["cycle_labels"], cycle_classes)


def test_message_was_removing_is_caught_only_by_the_cycle_check(monkeypatch):
    # pull and answer go round forever: no state is quiescent, so the quiescence check never looks
    plant_message_was_removing(monkeypatch)
    ex, res = _explore(TINY_QUIET)
    assert res.complete and res.quiescent == 0 and res.violations == []
    (v,) = check_liveness(ex, res)["violations"]
    assert v.invariant == "INV-LIVE-1" and v.detail["lasso"]["cycle_moves"] == 4   # pull + answer, two queues


def test_dead_ends_are_fair_stuttering_runs(monkeypatch):
    # no channel expiry: runs stop with T:0 unheld. The quiescence check does not know
    # LIVE-REASSIGN, and it skips dead ends where a crashed client's broker lock is still recorded
    # (it waits for the lock to go). Liveness sees every dead end through stuttering: a run may
    # stay in a state forever when no fair action is enabled there.
    plant_no_channel_expiry(monkeypatch)
    ex, res = _explore(ORDERLY_CRASH)
    assert "LIVE-REASSIGN" not in [x.invariant for x in res.violations]
    v = next(v for v in check_liveness(ex, res)["violations"] if v.invariant == "LIVE-REASSIGN")
    assert v.kind == "liveness" and v.detail["lasso"]["cycle_moves"] == 0
    assert _fair_enabled(ex, _walk(ex, v.detail["lasso"]["prefix"])[-1]) == set()

    o = ("unheld", "T", 0)
    dead = [n for n, (obl, en) in ex.live_info.items() if o in obl and not en]
    g = graph_of(res, ex.live_info)
    fair = set().union(*(c for c, _, _ in fair_components(g, [n for n, (obl, _) in ex.live_info.items() if o in obl],
                                                          ex.live_info)))
    assert dead and set(dead) <= fair
    skipped = [n for n in dead if not ex._quiescent_ok(ex.trace_of(ex._parents, ex._moves, n, ex.setup)[1])]
    assert skipped      # dead ends the quiescence check never examines


def test_survivor_renews_its_own_lock_forever_while_a_dead_clients_queue_stays_unheld(monkeypatch, tmp_path):
    # two queues, c0 dead and its channel never expired: c1's allocation (view c0+c1) keeps giving
    # T:0 to c0, and c1 renews the broker lock of T:1, its own queue, turn after turn (lockAll when
    # time reaches the unlock delay), while T:0 and its message are held by nobody. A cycle of
    # real moves, not a dead end: lockAll is enabled everywhere, so stuttering is not fair.
    c0_crashed_at_start(monkeypatch)
    plant_no_channel_expiry(monkeypatch)
    ex, res = _explore(ORDERLY_TWO_C0_DEAD)
    assert res.complete
    v = next(v for v in check_liveness(ex, res)["violations"] if v.invariant == "LIVE-REASSIGN")
    assert v.kind == "liveness" and v.detail["obligation"] == ["unheld", "T", 0]
    lasso = v.detail["lasso"]
    labels = lasso["cycle_labels"]
    assert lasso["cycle_moves"] > 0
    assert "lockAll c1" in labels and any(lab.startswith("time +") for lab in labels)
    assert all(lab == "lockAll c1" or lab.startswith("time +") for lab in labels), labels

    # the trace: the spec accepts it; in the cycle c1 renews its own lock on T:1 and nothing touches T:0
    path = tmp_path / "reassign.jsonl"
    write_trace(path, v.events)
    rep = check_trace(str(path))
    assert rep.ok, [f.to_dict() for f in rep.findings.errors]
    cyc = v.events[lasso["cycle_starts_at_seq"]:-1]
    renewals = [e for e in cyc if e["kind"] == "lock_acquired"]
    assert renewals and all((e["client"], e["topic"], e["queue"], e["reason"]) == ("c1", "T", 1, "renewed")
                            for e in renewals)
    assert not any(e.get("topic") == "T" and e.get("queue") == 0 for e in cyc)

    # turn after turn: the same state (fingerprint) with the clock further on, c1's lease and
    # broker lock renewed at the turn's lockAll, c0 crashed and still registered, T:0 unheld
    start = _walk(ex, lasso["prefix"])[-1]
    fp, t0 = ex.fingerprint(start), start.now
    period = None
    node = start
    for i in range(1, 4):
        turn = _walk(ex, lasso["cycle"], node)
        node = turn[-1]
        assert ex.fingerprint(node) == fp
        period = period or node.now - t0
        assert period > 0 and node.now == t0 + i * period
        renewed = [n for n in turn[1:] if n.st.queues[(GROUP, "T", BROKER, 1)].pqs["c1"].last_lock_ts == n.now]
        assert renewed and renewed[-1].st.queues[(GROUP, "T", BROKER, 1)].holder == "c1"
        for n in turn:
            assert n.st.dir.clients["c0"].status == "crashed"
            assert "c0" in n.st.dir.registered[(BROKER, GROUP)]
            assert ("unheld", "T", 0) in obligations(n.st)


@pytest.mark.slow
@pytest.mark.parametrize("planted", [True, False])
def test_survivor_renewal_cycle_with_the_crash_as_a_fault_move(planted, monkeypatch):
    # the same without the shortcut: one crash fault that may hit either client at any point
    # (~40 s planted, ~2.5 min for the control: two live orderly clients, symmetry and sleep sets off)
    if planted:
        plant_no_channel_expiry(monkeypatch)
    ex, res = _explore(ORDERLY_TWO_CRASH)
    live = check_liveness(ex, res)["violations"]
    if not planted:
        assert res.violations == [] and live == []
        return
    v = next(v for v in live if v.invariant == "LIVE-REASSIGN")
    lasso = v.detail["lasso"]
    assert lasso["cycle_moves"] > 0 and "lockAll c1" in lasso["cycle_labels"]
    assert any(e["kind"] == "client_crashed" and e["client"] == "c0" for e in v.events)


def test_broadcasting_progress_is_each_clients_own():
    # a broadcasting client keeps its own progress (unit = its id, not the group's ""): once it
    # has consumed everything nothing is pending, and its dead ends are not reported
    ex, res = _explore(replace(load_scope("bugs-broadcast"), faults=0, failures=0))
    assert res.violations == []
    assert check_liveness(ex, res)["violations"] == []
    ends = [n for n, (obl, en) in ex.live_info.items() if not en]
    assert ends and all(not ex.live_info[n][0] for n in ends)


# ---------------------------------------------------------------------------- (b) the lasso replays

@pytest.mark.parametrize("name", sorted(CYCLING))
def test_lasso_trace_is_accepted_by_the_spec_and_its_cycle_closes(name, monkeypatch, tmp_path):
    scope, inv, _ = _setup(name, monkeypatch)
    ex, res = _explore(scope)
    v = next(v for v in check_liveness(ex, res)["violations"] if v.invariant == inv)
    lasso = v.detail["lasso"]

    # the finite prefix of an infinite run is a valid trace: the safety spec accepts every step
    path = tmp_path / "lasso.jsonl"
    write_trace(path, v.events)
    evs = [json.loads(line) for line in path.read_text().splitlines()]
    assert evs[0]["kind"] == "trace_started" and evs[-1] == dict(evs[-1], kind="trace_ended", reason="duration")
    assert [e["seq"] for e in evs] == list(range(len(evs)))
    assert 0 < lasso["cycle_starts_at_seq"] < len(evs) - 1
    rep = check_trace(str(path))
    assert rep.ok, [f.to_dict() for f in rep.findings.errors]

    # the cycle returns to the state where it started, turn after turn (fingerprints, as the
    # explorer identifies states), and so does its trace: three turns are accepted too
    nodes = _walk(ex, lasso["prefix"])
    start = ex.fingerprint(nodes[-1])
    turns = [nodes[-1]]
    for _ in range(3):
        turn = _walk(ex, lasso["cycle"], turns[-1])
        assert ex.fingerprint(turn[-1]) == start
        turns.append(turn[-1])
    node, setup = ex.initial()
    long_run = list(setup)
    for mi in lasso["prefix"] + 3 * lasso["cycle"]:
        move = ex.gen.moves(node.st, node.now, node.aux, node.budget)[mi]
        node, _ = ex.apply_move(node, move)
        long_run.extend(dict(e, ts=node.now) for e in move.events)
    long_run.append({"kind": "trace_ended", "reason": "duration", "ts": node.now})
    path3 = tmp_path / "three-turns.jsonl"
    write_trace(path3, [{"seq": i, **e} for i, e in enumerate(long_run)])
    rep3 = check_trace(str(path3))
    assert rep3.ok, [f.to_dict() for f in rep3.findings.errors]
    assert rep3.events == len(long_run)

    # and the cycle is fair (strong fairness, recomputed from the generator): every fair action
    # enabled in a state of the cycle is taken in it; the obligation stays pending throughout
    cyc = _walk(ex, lasso["cycle"], nodes[-1])[:-1]
    taken = set()
    enabled = set()
    for n, mi in zip(cyc, lasso["cycle"]):
        m = ex.gen.moves(n.st, n.now, n.aux, n.budget)[mi]
        taken.add(action_key(m, _move_class(m)))
        enabled |= _fair_enabled(ex, n)
    assert enabled <= taken, enabled - taken
    o = tuple(v.detail["obligation"])
    assert all(o in obligations(n.st) for n in cyc)


# ---------------------------------------------------------------------------- (c) fairness matters

def test_unfair_cycles_of_the_healthy_orderly_model_are_not_reported():
    ex, res = _explore(ORDERLY_ONE)
    assert res.violations == []
    assert check_liveness(ex, res)["violations"] == []

    # yet the graph has cycles on which m0.0 stays pending while its consume is enabled in
    # every state and never taken (lockAll renewals and time): unfair, and only fairness rules them out
    o = ("msg", "T", 0, 0)
    consume = ("consume", "c0", "T", 0)
    g = graph_of(res)
    keep = [n for n, (obl, en) in ex.live_info.items() if o in obl and consume in en]
    sub = nx.DiGraph((u, v, d) for u, v, d in g.subgraph(keep).edges(data=True) if consume not in d["moves"])
    cycle = nx.find_cycle(sub)
    assert cycle and all(consume in ex.live_info[u][1] for u, _ in cycle)
    none = check_liveness(ex, res, fairness="none")["violations"]
    assert [x.invariant for x in none] == ["INV-LIVE-1"] and none[0].detail["lasso"]["cycle_moves"] > 0

    # weak fairness is enough here: lockAll runs on its fixed-rate schedule, every
    # REBALANCE_LOCK_INTERVAL (20 s) < the client lease (30 s), so a running client's lease never
    # lapses and its consume stays enabled until taken (a lapse needs a pause, which is a fault)
    assert ex.profile.client_lock_interval_ms < ex.profile.client_lock_max_live_ms
    assert check_liveness(ex, res, fairness="weak")["violations"] == []
