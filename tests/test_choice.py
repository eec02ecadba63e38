"""The reference's one source of nondeterminism (reference.choice) and its drivers."""
from __future__ import annotations

import hashlib
import random

import orjson
import pytest
from hypothesis import given, settings, strategies as st

from rocketspec.conformance.monitor import TraceMonitor
from rocketspec.reference.choice import (POINTS, DataChooser, ScriptChooser, SeededChooser,
                                         enumerate_scripts)
from rocketspec.reference.runner import run
from rocketspec.reference.scenario import load_scenario, validate
from rocketspec.reference.sim import Simulator


def _digest(sc, seed, profile, chooser=None) -> str:
    h = hashlib.sha256()
    run(sc, seed, profile, lambda ev: h.update(orjson.dumps(ev)), chooser)
    return h.hexdigest()


class _SeededChoosing(SeededChooser):
    """The seeded driver, but through the simulator's choosing loop (task_order asked)."""
    fifo = False


@pytest.mark.parametrize("name", ["basic", "faults", "orderly-pause-lease", "retry-dlq"])
def test_choosing_loop_in_scheduling_order_is_the_fast_loop(name):
    # The loop that asks which due task runs first, answered "the first scheduled", must run the
    # very same tasks in the same order as the FIFO loop: same trace, byte for byte.
    sc = load_scenario(name)
    assert _digest(sc, 3, "rocketmq-4.9.8") == _digest(sc, 3, "rocketmq-4.9.8", _SeededChoosing(3))


def test_seeded_driver_draws_as_random_random():
    # simulate's traces stayed byte-identical because each typed choice draws as the call it
    # replaced: choice -> randrange, uniform ints -> randint, chance -> random() < p.
    a, b = SeededChooser(7), random.Random(7)
    assert a.pick("producer_tags", ["x", "y", "z"]) == ["x", "y", "z"][b.randrange(3)]
    assert a.pick("route_broker", ["only"]) == "only" and b.randrange(1) == 0   # draws even for one
    assert a.integer("consume_duration", 1, 20) == b.randint(1, 20)
    assert a.integer("consume_duration", 5, 5) == 5                             # no draw
    assert a.chance("oneway_loss", 0.3) == (b.random() < 0.3)
    assert a.chance("oneway_loss", 0.0) is False                                # no draw
    r = b.random()
    want = "E" if r < 0.1 else "N" if r - 0.1 < 0.2 else "F" if r - 0.1 - 0.2 < 0.3 else "S"
    assert a.weighted("listener_status", ("E", "N", "F", "S"), (0.1, 0.2, 0.3)) == want
    assert a.order("task_order", 5) == 0                                        # FIFO, no draw
    assert a.rng.random() == b.random()


def test_script_chooser_domains_and_defaults():
    ch = ScriptChooser([5, 1, 2])
    assert ch.integer("consume_duration", 10, 13) == 11     # 5 mod 4 -> 10 + 1
    assert ch.chance("oneway_loss", 0.5) is True            # 1 -> the non-default
    assert ch.chance("oneway_loss", 0.0) is False           # one option: no choice consumed
    # weighted: the most likely option is the default; zero-weight options are not in the domain
    assert ch.weighted("listener_status", ("E", "N", "F", "S"), (0.0, 0.1, 0.2)) == "F"  # domain (S, N, F): 2 -> F
    assert ch.weighted("listener_status", ("E", "N", "F", "S"), (0.0, 0.1, 0.2)) == "S"  # script ran out
    assert ch.order("task_order", 4) == 0 and ch.strike("fault_strike", ["crash c1"]) == 0
    assert [(p, n) for p, n, _ in ch.trail] == [("consume_duration", 4), ("oneway_loss", 2),
                                                ("listener_status", 3), ("listener_status", 3),
                                                ("task_order", 4), ("fault_strike", 2)]
    assert all(p in POINTS for p, _, _ in ch.trail)


def test_enumerate_scripts_visits_every_combination_once():
    def prog(ch):
        a = ch.integer("consume_duration", 1, 3)
        b = ch.chance("oneway_loss", 0.5) if a != 2 else None    # the domain depends on earlier choices
        return a, b

    results = [r for _, _, r in enumerate_scripts(prog)]
    assert sorted(results, key=repr) == sorted([(1, False), (1, True), (2, None), (3, False), (3, True)], key=repr)


TINY = validate({
    "name": "tiny", "duration_ms": 3000, "drain_limit_ms": 60000,
    "topics": [{"name": "T", "queues": 1}],
    "groups": [{"name": "G", "max_reconsume_times": 1, "subscriptions": {"T": "*"},
                "listener": {"duration_ms": [1, 2], "fail_rate": 0.5}}],
    "producers": [{"topic": "T", "count": 2, "rate_per_s": 1000}],
    "steps": [{"at_ms": 0, "action": "start", "client": "c1", "group": "G"}],
}, "test:tiny")


def test_exhaustive_replay_of_the_reference_holds_on_every_run():
    # An exhaustive driver is replay over choice scripts: every run of a tiny deployment (two
    # messages, one retry) is a different run, and every one holds under the spec.
    seen = set()
    n = 0
    for script, trail, mon in enumerate_scripts(_run_tiny, max_runs=40):
        assert mon.first_error is None, (script, mon.first_error)
        seen.add(tuple(script))
        n += 1
    assert n == 40 and len(seen) == 40


def _run_tiny(ch):
    mon = TraceMonitor("rocketmq-5.3.3")
    run(TINY, 0, "rocketmq-5.3.3", mon, ch)
    return mon


@settings(max_examples=15, deadline=None)
@given(st.data())
def test_every_choice_hypothesis_draws_gives_a_trace_that_holds(data):
    mon = TraceMonitor("rocketmq-4.9.8")
    run(TINY, 0, "rocketmq-4.9.8", mon, DataChooser(data))
    assert mon.first_error is None, mon.first_error


def test_armed_fault_strikes_before_a_chosen_task():
    events = []
    sim = Simulator(0, events.append, ScriptChooser([0, 0, 1]))   # strike before the third task
    ran = []
    for i in range(4):
        sim.schedule(i, ran.append, i)
    sim.arm("crash", lambda: ran.append("crash"))
    sim.run_until(10)
    assert ran == [0, 1, "crash", 2, 3]
    assert sim.armed == []


def test_task_order_choice_reorders_tasks_due_together():
    sim = Simulator(0, lambda e: None, ScriptChooser([2, 1]))
    ran = []
    for name in "abc":
        sim.schedule(5, ran.append, name)
    sim.schedule(6, ran.append, "d")
    sim.run_until(10)
    assert ran == ["c", "b", "a", "d"]
