"""`rocketspec minimize`: the minimized trace is rejected by the checker with the same invariant
(and guard), every remaining event is needed, the search is deterministic, and bad input takes
the CLI's one error path. Traces from the reference (known-bug scenarios), the explorer, a real
RocketMQ recording and Hypothesis."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from rocketspec.rocketmq.profiles import PROFILES, get_profile
from rocketspec.spec.replay import check_events
from rocketspec.traces.minimize import renumber
from rocketspec.traces.io import read_events
from rocketspec.traces.minimize.minimize import NotMinimizable, minimize, template

import test_spec_hypothesis as hyp

REAL = Path(__file__).parent / "fixtures" / "real"
INTRO = {"client_started": "client", "broker_started": "broker", "topic_created": "topic", "message_stored": "msg_id"}


def _cli(*args, env=None):
    """In another process (its own hash seed, when env sets one)."""
    return subprocess.run([sys.executable, "-c", "from rocketspec.cli import main; main()", *args],
                          capture_output=True, text=True, env=env, timeout=300)


def _run(*args):
    """In this process, through the CLI's own entry point and error path."""
    from click.testing import CliRunner

    from rocketspec.cli import main

    return CliRunner().invoke(main, [str(a) for a in args])


def _scenario_trace(name, profile):
    from rocketspec.reference.runner import run_to_list
    from rocketspec.reference.scenario import load_scenario

    return run_to_list(load_scenario(name), 1, profile)


def _explorer_trace(bug):
    from rocketspec.model_checks.refexplore import bug_counterexample

    p = next(p for p in PROFILES.values() if p.known_bug == bug)
    v = bug_counterexample(p)
    return v.events, v.invariant


def _real(name):
    return [ev for _, ev in read_events(REAL / name)]


def _errors(events, profile=None):
    prof = get_profile(profile or events[0]["profile"])
    return check_events(enumerate(events, 1), prof, max_listed=1000).findings.errors


def _first_signature(events):
    """(invariant, kind of the rejected event, message template) of the checker's first error."""
    errs = _errors(events)
    if not errs:
        return None
    e = errs[0]
    return e.inv, e.kind, template(e.message)


# Traces from every source minimize handles, each with the invariant it keeps (None: the first).
CASES = {
    "reference bug-2724": lambda: (_scenario_trace("bug-2724", "bug-2724-rocketmq-4.9.1"), "INV-DLQ-1"),
    "reference bug-5481": lambda: (_scenario_trace("bug-5481", "bug-5481-rocketmq-5.0.0"), "INV-RETRY-3"),
    "reference bug-1825": lambda: (_scenario_trace("bug-1825", "bug-1825-rocketmq-4.x"), "INV-START-1"),
    "explorer #2449": lambda: _explorer_trace("#2449"),
    "real orderly-pause": lambda: (_real("real-orderly-pause.jsonl"), None),
}
_MEMO: dict = {}


def _case(name):
    if name not in _MEMO:
        events, inv = CASES[name]()
        _MEMO[name] = (events, inv, minimize(events, invariant=inv))
    return _MEMO[name]


@pytest.mark.parametrize("name", list(CASES))
def test_minimized_trace_is_rejected_with_the_same_invariant_and_guard(name):
    events, inv, res = _case(name)
    before = _first_signature([ev for ev in events])
    errs = _errors(res.events)
    assert res.exact and errs, name
    # every event but the last is accepted; the last fails with the invariant asked for
    assert {e.seq for e in errs} == {res.events[-1]["seq"]}
    assert {e.inv for e in errs} == {res.invariant}
    if inv is None:
        assert res.invariant == before[0]
    else:
        assert res.invariant == inv
    assert len(res.events) < len(events) / 2
    # seq renumbered from 0, times never going back
    assert [ev["seq"] for ev in res.events] == list(range(len(res.events)))
    assert all(a["ts"] <= b["ts"] for a, b in zip(res.events, res.events[1:]))
    # the report accounts for every event removed
    assert sum(r.events for r in res.removed) == len(events) - len(res.events)


def _introduces_a_name_used_later(events, i):
    f = INTRO.get(events[i]["kind"])
    if f is None:
        return False
    name = events[i][f]
    if f == "msg_id":
        return any(name in (ev.get("msg_id"), ev.get("origin_msg_id")) or name in (ev.get("msg_ids") or ())
                   or name in (ev.get("origin_msg_ids") or ()) for ev in events[i + 1:])
    return any(ev.get(f) == name for ev in events[i + 1:])


@pytest.mark.parametrize("name", list(CASES))
def test_every_remaining_event_is_needed(name):
    _, _, res = _case(name)
    target = _first_signature(res.events)
    assert _first_signature(res.events[:-1]) != target        # the violation is the last event
    for i in range(1, len(res.events) - 1):
        without = res.events[:i] + res.events[i + 1:]
        if _first_signature(without) == target and _errors(without)[0].seq == without[-1]["seq"]:
            # the spec does not need it: only a character's introduction is kept for the story
            assert _introduces_a_name_used_later(res.events, i), (name, res.events[i])
            assert res.reasons[i].role == "cast"
        else:
            assert res.reasons[i].role in ("needed", "other-cause"), res.reasons[i]


@pytest.mark.parametrize("name", list(CASES))
def test_each_remaining_event_has_its_reason(name):
    _, _, res = _case(name)
    assert [r.seq for r in res.reasons] == [ev["seq"] for ev in res.events]
    assert res.reasons[0].role == "header" and res.reasons[-1].role == "violation"
    assert res.reasons[-1].inv == res.invariant
    for r in res.reasons[1:-1]:
        if r.role == "needed" and r.inv is not None:
            # the guard or invariant that fails without it, with its key and the event it rejects
            assert r.at_seq is not None and r.message and r.inv in r.text()


def test_real_trace_shrinks_to_at_most_five_percent():
    events, _, res = _case("real orderly-pause")
    assert res.invariant == "INV-ORDER-3"
    assert len(res.events) <= 0.05 * len(events)


def test_deterministic_across_processes(tmp_path):
    src = REAL / "real-orderly-pause.jsonl"
    outs = []
    for seed in ("1", "2"):
        out = tmp_path / f"m{seed}.jsonl"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        r = _cli("minimize", str(src), "-o", str(out), "--quiet", env=env)
        assert r.returncode == 1, r.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    events, _, res = _case("real orderly-pause")
    assert [json.loads(line) for line in outs[0].splitlines()] == res.events


def test_cli_writes_a_trace_check_rejects(tmp_path):
    out = tmp_path / "min.jsonl"
    r = _run("minimize", str(REAL / "real-orderly-pause.jsonl"), "-o", str(out))
    assert r.exit_code == 1, r.stderr
    assert "INV-ORDER-3 kept: 1003 ->" in r.stdout
    assert "removed:" in r.stdout and "why each event stays" in r.stdout
    c = _run("check", str(out), "--json")
    assert c.exit_code == 1
    assert {v["invariant"] for v in json.loads(c.stdout)["violations"]} == {"INV-ORDER-3"}
    j = _run("minimize", str(REAL / "real-orderly-pause.jsonl"), "-o", str(tmp_path / "j.jsonl"), "--json")
    d = json.loads(j.stdout)
    assert j.exit_code == 1 and d["exit_code"] == 1 and d["invariant"] == "INV-ORDER-3"
    assert d["events"] == len(d["reasons"]) and d["output"].endswith("j.jsonl")


def test_cli_bad_input(tmp_path):
    holds = _run("minimize", str(REAL / "real-basic.jsonl"), "-o", str(tmp_path / "x.jsonl"))
    assert holds.exit_code == 2 and "holds" in holds.stderr and "nothing to minimize" in holds.stderr
    assert not (tmp_path / "x.jsonl").exists()
    other = _run("minimize", str(REAL / "real-orderly-pause.jsonl"), "--invariant", "INV-PULL-1", "--json",
                 "-o", str(tmp_path / "y.jsonl"))
    d = json.loads(other.stdout)
    assert other.exit_code == 2 and d["verdict"] == "bad_input" and "INV-ORDER-3" in d["message"]
    unknown = _run("minimize", str(REAL / "real-orderly-pause.jsonl"), "--invariant", "INV-NOPE")
    assert unknown.exit_code == 2 and "unknown invariant 'INV-NOPE'" in unknown.stderr
    anomaly = _run("minimize", str(REAL / "real-orderly-pause.jsonl"), "--invariant", "ANOM-DUP-1")
    assert anomaly.exit_code == 2 and "allowed anomaly" in anomaly.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"seq":0,"ts":0,"kind":"trace_started","schema_version":2,"profile":"rocketmq-4.9.8"}\n'
                   '{"seq":1,"ts":0,"kind":"pull_issued"}\n')
    r = _run("minimize", str(bad))
    assert r.exit_code == 2 and f"{bad}:2:" in r.stderr and "pull_issued" in r.stderr
    r = _run("minimize", str(tmp_path / "missing.jsonl"))
    assert r.exit_code == 2 and "missing.jsonl" in r.stderr
    r = _run("minimize", "-")
    assert r.exit_code == 2 and "-o/--out" in r.stderr


def test_library_refuses_a_trace_that_holds():
    with pytest.raises(NotMinimizable, match="holds"):
        minimize(_real("real-basic.jsonl"))


# ---------------------------------------------------------------------------- the rewrites

def _ev(kind, **f):
    return {"seq": 0, "ts": 0, "kind": kind, **f}


Q = {"topic": "T", "broker": "b", "queue": 0}
G = {"client": "c", "group": "G", **Q}


def test_dropping_a_message_renumbers_its_queue():
    events = [
        _ev("message_stored", **Q, offset=0, msg_id="m0", origin_msg_id="m0", source="producer"),
        _ev("message_stored", **Q, offset=1, msg_id="m1", origin_msg_id="m1", source="producer"),
        _ev("message_stored", **Q, offset=2, msg_id="m2", origin_msg_id="m2", source="producer"),
        _ev("pull_issued", **G, offset=0, pull_id=1),
        _ev("pull_answered", **G, pull_id=1, offset=0, status="FOUND", next_offset=3, min_offset=0, max_offset=3,
            offsets=[0, 1, 2], msg_ids=["m0", "m1", "m2"]),
        _ev("consume_started", **G, consume_id=7, offsets=[0, 1, 2], msg_ids=["m0", "m1", "m2"],
            reconsume_list=[0, 0, 0]),
        _ev("consume_finished", **G, consume_id=7, status="RECONSUME_LATER", ack_index=1),
        _ev("pq_messages_removed", **G, offsets=[0, 1, 2], offset=3),
        _ev("offset_updated", **G, offset=3, increase_only=True, stored=3),
        _ev("pull_issued", **G, offset=3, pull_id=2),
        _ev("offset_committed", broker="b", group="G", topic="T", queue=0, offset=3, source="pull", client="c"),
    ]
    out = renumber.drop_messages(events, [("T", "b", 0, 1)])
    kinds = [e["kind"] for e in out]
    assert kinds.count("message_stored") == 2 and out[1]["offset"] == 1 and out[1]["msg_id"] == "m2"
    ans = out[kinds.index("pull_answered")]
    assert ans["offsets"] == [0, 1] and ans["msg_ids"] == ["m0", "m2"] and ans["next_offset"] == 2
    assert ans["max_offset"] == 2
    start = out[kinds.index("consume_started")]
    assert start["offsets"] == [0, 1] and start["reconsume_list"] == [0, 0]
    assert out[kinds.index("consume_finished")]["ack_index"] == 0      # the acked prefix lost its 2nd message
    assert out[kinds.index("offset_updated")]["offset"] == 2
    assert out[-1]["offset"] == 2 and out[-2]["offset"] == 2
    # a pull left with no message goes with its issue; an untouched event is the same object
    out = renumber.drop_messages(events, [("T", "b", 0, 0), ("T", "b", 0, 1), ("T", "b", 0, 2)])
    assert "pull_answered" not in [e["kind"] for e in out] and "consume_started" not in [e["kind"] for e in out]
    assert renumber.drop_messages(events, [("U", "b", 0, 0)])[3] is events[3]


def test_time_cuts_map_every_absolute_time_alike():
    f = renumber.time_map([(100, 50), (400, 100)])
    assert [f(x) for x in (0, 100, 120, 150, 300, 450, 1000)] == [0, 100, 100, 100, 250, 350, 850]
    evs = [_ev("lock_acquired", broker="b", group="G", topic="T", queue=0, client="c", reason="new",
               expires_at=60_000), {**_ev("trace_ended", reason="duration"), "ts": 70_000}]
    out = renumber.compress_time(evs, [(1000, 59_000)])
    assert out[0]["expires_at"] == 1000 and out[1]["ts"] == 11_000


# ---------------------------------------------------------------------------- Hypothesis traces

@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hs.lists(hyp.action, min_size=5, max_size=40), hs.integers(0, 10 ** 6), hs.integers(1, 10))
def test_hypothesis_traces_minimize_with_their_invariant(actions, pick, bump):
    # test_spec_hypothesis's correct consumer, one offset update moved past a pending message
    g = hyp.build([("produce", 0), ("produce", 0), ("pull", 0, 4)] + list(actions)
                  + [("start", 0, 0), ("start", 0, 1), ("finish", 1, True)])
    if not g.pending_mutations:
        return
    idx, pending_min, _ = g.pending_mutations[pick % len(g.pending_mutations)]
    evs = [dict(e) for e in g.ev]
    evs[idx]["offset"] = evs[idx]["stored"] = pending_min + bump
    sig = _first_signature(evs)
    assert sig is not None and sig[0] in ("INV-OFFSET-1", "INV-OFFSET-3")
    res = minimize(evs)
    assert res.exact and _first_signature(res.events) == sig
    assert len(res.events) <= len(evs)
