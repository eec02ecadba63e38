"""The inert kinds (spec.kinds.INERT, route none) change no state and judge nothing, so a replay
may take one of their events as its envelope alone (the scoped replay does:
traces/spark/spark_scoped.py). Checked two ways: the action itself, on the states of reference runs,
with whatever fields the event carries; and whole traces whose inert events are cut to their
envelope, which get the same report."""
from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import load_scenario
from rocketspec.spec.actions import HANDLERS
from rocketspec.traces.kinds import INERT, KINDS
from rocketspec.rocketmq.profiles import get_profile
from rocketspec.spec.replay import Findings, check_events
from rocketspec.spec.state import SpecState
from rocketspec.traces.schema import ENVELOPE

RUNS = [("basic", 1, "rocketmq-5.3.3"), ("faults", 2, "rocketmq-5.3.3"), ("faults", 3, "rocketmq-4.9.8")]


def _report(events, profile):
    rep = check_events(enumerate(events, 1), get_profile(profile))
    d = rep.to_dict()
    d.pop("seconds", None)
    return d


def test_the_inert_kinds_are_those_that_route_nowhere():
    assert INERT == {"pull_held", "oneway_lost",
                     # POP: a listener call's end and a lost receive answer (a call's start is not
                     # inert: INV-POP-LOSS-1 reads which messages were heard; nor are an orderly pop's
                     # request and answer: INV-POP-ORDER-2 reads the attempt id and the count)
                     "pop_consume_finished", "pop_response_lost"}
    assert all(KINDS[k].route == "none" for k in INERT)


@pytest.mark.parametrize("scenario,seed,profile", RUNS)
def test_a_trace_whose_inert_events_are_cut_to_their_envelope_gets_the_same_report(scenario, seed, profile):
    events = run_to_list(load_scenario(scenario), seed, profile)
    assert any(e["kind"] in INERT for e in events)
    lean = [{k: e[k] for k in ENVELOPE} if e["kind"] in INERT else e for e in events]
    assert _report(lean, profile) == _report(events, profile)


class _Recording(Findings):
    def __init__(self, st):
        super().__init__(st)
        self.said = []

    def report(self, *a, **k):
        self.said.append(a)

    def example(self, *a, **k):
        self.said.append(a)


_STATES: dict = {}


def _states(profile):
    """Spec states met along a reference run with faults (its first 40 events, then every 25th)."""
    if profile not in _STATES:
        st_ = SpecState(get_profile(profile))
        out = Findings(st_)
        got = []
        for i, ev in enumerate(run_to_list(load_scenario("faults"), 2, profile)):
            out.ev = ev
            HANDLERS[ev["kind"]](st_, ev, out)
            if i < 40 or i % 25 == 0:
                got.append(pickle.dumps(st_))
        _STATES[profile] = got
    return _STATES[profile]


fields = st.dictionaries(st.sampled_from(["client", "group", "topic", "broker", "queue", "pull_id", "offset",
                                          "call", "to", "reason"]),
                         st.one_of(st.integers(-3, 3), st.text(max_size=3), st.none()), max_size=6)


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(sorted(INERT)), fields, st.integers(0, 10**6), st.sampled_from(["rocketmq-5.3.3",
                                                                                     "rocketmq-4.9.8"]))
def test_an_inert_action_changes_no_state_and_reports_nothing(kind, extra, pick, profile):
    states = _states(profile)
    s = pickle.loads(states[pick % len(states)])
    before = pickle.dumps(s)
    out = _Recording(s)
    ev = {"seq": 10**6, "ts": 10**6, "kind": kind, **extra}
    out.ev = ev
    HANDLERS[kind](s, ev, out)
    assert out.said == [] and pickle.dumps(s) == before
