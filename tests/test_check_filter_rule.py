"""INV-FILTER-1 on reference traces mutated the three ways a pull answer can filter wrongly."""
import pytest

from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import load_scenario
from rocketspec.rocketmq.profiles import get_profile
from rocketspec.spec.replay import check_events


@pytest.fixture(scope="module")
def tags_trace():
    return run_to_list(load_scenario("tags"), 1, "rocketmq-5.3.3")


def first_answer(events, field):
    return next(e for e in events if e["kind"] == "pull_answered" and e.get(field) and e["group"] == "GID_tagA")


def filter_errors(events):
    rep = check_events(enumerate(events, 1), get_profile("rocketmq-5.3.3"))
    return [f.message for f in rep.findings.errors if f.inv == "INV-FILTER-1"]


def test_clean_trace_has_no_filter_error(tags_trace):
    assert filter_errors([dict(e) for e in tags_trace]) == []


@pytest.mark.parametrize("mutation,needle", [
    ("hand_over_client_filtered", "but was handed to the ProcessQueue"),
    ("client_drops_a_match", "wrongly dropped by the client's re-check"),
    ("broker_drops_a_match", "at the broker but was filtered"),
])
def test_wrong_filtering_is_flagged(tags_trace, mutation, needle):
    events = [dict(e) for e in tags_trace]
    if mutation == "hand_over_client_filtered":
        e = first_answer(events, "client_filtered")
        e["offsets"] = sorted(e["offsets"] + e["client_filtered"])
        e["client_filtered"] = []
    else:
        e = first_answer(events, "offsets")
        o = e["offsets"][0]
        e["offsets"] = e["offsets"][1:]
        e["msg_ids"] = e["msg_ids"][1:]
        field = "client_filtered" if mutation == "client_drops_a_match" else "broker_filtered"
        e[field] = sorted((e.get(field) or []) + [o])
    assert any(needle in m for m in filter_errors(events))
