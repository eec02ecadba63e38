"""Recorded traces (schema v2 `obs`): a clean real run validates; sampled observations are
judged as states, not steps (docs/trace-conventions.md)."""
import copy

import pytest

import handtraces
from handtraces import REAL


def load(name):
    return handtraces.load(REAL / name)


def check(evs):
    return handtraces.check(evs, "rocketmq-4.9.8", renumber=False)


# Every committed real trace's verdict: tests/test_real_verdicts.py.


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


reference = pytest.importorskip("rocketspec.reference.runner")

# What a recorder outside the client cannot see (docs/trace-conventions.md): ProcessQueue's
# takeMessages, commit, rollback and removeMessage; the offset store is polled (sampled).
UNOBSERVABLE = ("messages_taken", "pq_committed", "pq_rolled_back", "pq_messages_removed")


def as_recorded(evs):
    out = []
    for e in evs:
        if e["kind"] in UNOBSERVABLE:
            continue
        out.append(dict(e, obs="sampled") if e["kind"] == "offset_updated" else e)
    for i, e in enumerate(out):
        e["seq"] = i
    return out


@pytest.mark.parametrize("name", ["orderly", "orderly-pause-broker-lock", "orderly-dlq", "basic", "rebalance"])
def test_a_recorder_s_view_of_a_reference_run_gets_the_same_verdict(name):
    from rocketspec.reference.scenario import expected_failures, load_scenario

    sc = load_scenario(name)
    rep = check(as_recorded(reference.run_to_list(sc, 1, "rocketmq-4.9.8")))
    assert {f.inv for f in rep.findings.errors} == set(expected_failures(sc, "rocketmq-4.9.8")), \
        [(f.inv, f.message) for f in rep.findings.errors[:3]]


def test_a_recorder_s_view_still_catches_an_out_of_order_orderly_batch():
    from rocketspec.reference.scenario import load_scenario

    evs = as_recorded(reference.run_to_list(load_scenario("orderly"), 1, "rocketmq-4.9.8"))
    # an orderly batch of offset o while o + 1 was pulled too: consume o + 1 first instead

    def pulled_next(i, e):
        o = e["offsets"][0] + 1
        return any(p["kind"] == "pull_answered" and o in (p.get("offsets") or ()) and p["client"] == e["client"]
                   and p["queue"] == e["queue"] and p["topic"] == e["topic"] for p in evs[:i])
    i = next(i for i, e in enumerate(evs) if e["kind"] == "consume_started" and len(e["offsets"]) == 1
             and not e["topic"].startswith("%") and pulled_next(i, e))
    evs[i] = dict(evs[i], offsets=[evs[i]["offsets"][0] + 1])
    evs[i].pop("msg_ids")
    assert "INV-ORDER-2" in {f.inv for f in check(evs).findings.errors}
