"""Hypothesis strategies for the environment of a RocketMQ consumer, for state machines.

The environment's moves are the scenario steps (docs/scenarios.md): dicts such as
`{"action": "pause", "client": "c1", "duration_ms": 25000}`, which the reference runs with
`Run.do_step` and which a user's adapter can map onto their own client and cluster. Clock
advances and choice scripts (`reference.choice.ScriptChooser`: which of the open decisions
go which way) complete them. `conformance.statemachine` is built from these; a user writes a
state machine against their own client from the same pieces, with
`conformance.monitor.TraceMonitor` as the judge.
"""
from __future__ import annotations

from hypothesis import strategies as st

from ..reference.scenario import CRASH_MODES

# Times that matter to RocketMQ's consumer (ms): the rebalance and lock intervals (20 s), the
# client's lock lease (30 s), the broker's (60 s), the persist interval (5 s), the pull
# suspension (1 s orderly suspend, 3 s pull back-off): a clock advance or a pause near them
# crosses a boundary, one far from them crosses several.
KEY_TIMES_MS = (1, 100, 1000, 3000, 5000, 10000, 20000, 30000, 31000, 60000, 61000)


def clock_advances(max_ms: int = 60000) -> st.SearchStrategy[int]:
    """How far the clock moves in one step: a key time or any time up to max_ms."""
    return st.one_of(st.sampled_from([t for t in KEY_TIMES_MS if t <= max_ms]), st.integers(1, max_ms))


def choice_scripts(max_size: int = 24) -> st.SearchStrategy[list[int]]:
    """Scripts for a ScriptChooser: index i of the script picks option i mod n of the i-th open
    choice; choices past the end take their defaults. Shrinks towards the defaults."""
    return st.lists(st.integers(0, 255), max_size=max_size)


def pause_durations(max_ms: int = 70000) -> st.SearchStrategy[int]:
    """A GC pause or a frozen host: short, around the leases, or longer than them."""
    return st.one_of(st.sampled_from([t for t in (500, 3000, 25000, 35000, 65000) if t <= max_ms]),
                     st.integers(1, max_ms))


def crash_modes() -> st.SearchStrategy[str]:
    """silent (the channel stays until the broker's expiry) or kill (the OS closes it)."""
    return st.sampled_from(CRASH_MODES)


def restart_downtimes() -> st.SearchStrategy[int]:
    return st.sampled_from([0, 1000, 10000, 30000])


def oneway_loss_probabilities() -> st.SearchStrategy[float]:
    return st.sampled_from([0.0, 0.5])


def produce_moves(topics, tags=("A", "B", None), max_count: int = 3) -> st.SearchStrategy[dict]:
    def move(topic, count, tag):
        d = {"action": "produce", "topic": topic, "count": count}
        if tag is not None:
            d["tags"] = tag
        return d

    return st.builds(move, st.sampled_from(list(topics)), st.integers(1, max_count), st.sampled_from(list(tags)))


def client_moves(clients: dict) -> st.SearchStrategy[dict]:
    """Start, stop, crash or pause one of `clients` ({client id: group})."""
    ids = sorted(clients)
    cid = st.sampled_from(ids)
    return st.one_of(
        st.builds(lambda c: {"action": "start", "client": c, "group": clients[c]}, cid),
        st.builds(lambda c: {"action": "shutdown", "client": c}, cid),
        st.builds(lambda c, m: {"action": "crash", "client": c, "mode": m}, cid, crash_modes()),
        st.builds(lambda c, d: {"action": "pause", "client": c, "duration_ms": d}, cid, pause_durations()),
    )


def broker_moves(brokers) -> st.SearchStrategy[dict]:
    return st.builds(lambda b, d: {"action": "restart_broker", "broker": b, "downtime_ms": d},
                     st.sampled_from(list(brokers)), restart_downtimes())


def network_moves() -> st.SearchStrategy[dict]:
    return st.builds(lambda p: {"action": "oneway_loss", "probability": p}, oneway_loss_probabilities())


def environment_moves(clients: dict, topics, brokers, tags=("A", "B", None)) -> st.SearchStrategy[dict]:
    """Any move of the environment, as a scenario step dict (without at_ms), or a clock advance
    {"action": "advance", "ms": N, "choices": [...]}."""
    return st.one_of(
        produce_moves(topics, tags), client_moves(clients), broker_moves(brokers), network_moves(),
        st.builds(lambda ms, ch: {"action": "advance", "ms": ms, "choices": ch}, clock_advances(), choice_scripts()),
    )
