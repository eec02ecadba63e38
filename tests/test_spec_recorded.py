"""Recorded traces (schema v2 `obs`): a clean real run validates; sampled observations are
judged as states, not steps (docs/trace-conventions.md)."""
import copy
import json
from pathlib import Path

import pytest

from rocketspec.spec.profiles import get_profile
from rocketspec.spec.replay import check_events, check_trace

REAL = Path(__file__).parent / "fixtures" / "real"


def load(name):
    return [json.loads(x) for x in (REAL / name).read_text().splitlines() if x.strip()]


def check(evs):
    return check_events(enumerate(evs, 1), get_profile("rocketmq-4.9.8"))


@pytest.mark.parametrize("path", sorted(REAL.glob("real-*.jsonl")), ids=lambda p: p.name)
def test_clean_real_runs_validate(path):
    rep = check_trace(path)
    assert rep.ok, [(f.inv, f.seq, f.message) for f in rep.findings.errors[:5]]


def test_a_sampled_offset_past_an_unconsumed_message_is_caught():
    evs = load("real-basic.jsonl")
    # the first sampled store value after consumption starts, raised past messages still pulled
    i = next(i for i, e in enumerate(evs) if e["kind"] == "offset_updated" and e.get("obs") == "sampled"
             and e["stored"] > 0)
    key = {k: evs[i][k] for k in ("client", "topic", "queue")}
    pulled = [e for e in evs[:i] if e["kind"] == "pull_answered" and all(e[k] == v for k, v in key.items())]
    top = pulled[-1]["next_offset"]
    bad = copy.deepcopy(evs)
    bad[i]["stored"] = bad[i]["offset"] = top + 5
    errs = {f.inv for f in check(bad).findings.errors}
    assert "INV-OFFSET-3" in errs or "INV-OFFSET-1" in errs, errs


def test_a_schedule_store_time_outside_the_send_back_is_caught():
    evs = load("real-basic.jsonl")
    bad = copy.deepcopy(evs)
    i = next(i for i, e in enumerate(bad) if e["kind"] == "message_scheduled")
    bad[i]["deliver_ts"] += 5000        # as if level 3 were 6 s on a broker configured with 1 s
    assert "INV-RETRY-2" in {f.inv for f in check(bad).findings.errors}


def test_the_delay_levels_of_the_recorded_broker_are_used():
    evs = load("real-basic.jsonl")
    assert evs[1]["config"]["message_delay_level"].split()[2] == "1s"
    stripped = copy.deepcopy(evs)
    stripped[1].pop("config")
    assert "INV-RETRY-2" in {f.inv for f in check(stripped).findings.errors}
