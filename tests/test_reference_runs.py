"""Whole simulated runs, with faults: what RocketMQ promises at quiescence, checked on traces."""
import io

import orjson
import pytest

from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import load_scenario
from rocketspec.rocketmq.profiles import get_profile

from tracefacts import increase_only_violations, schedule_violations, unaccounted

PROFILES = ["rocketmq-5.3.3", "rocketmq-4.9.8"]
CONCURRENT = ["basic", "rebalance", "faults", "retry-dlq", "broadcast", "multi-broker", "offsets", "tags",
              "long-pause", "sql-filter"]


@pytest.fixture(scope="module")
def traces():
    cache = {}

    def get(name, seed, profile):
        key = (name, seed, profile)
        if key not in cache:
            cache[key] = run_to_list(load_scenario(name), seed, profile)
        return cache[key]

    return get


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("name", CONCURRENT)
@pytest.mark.parametrize("seed", [1, 2])
def test_every_message_consumed_or_dead_lettered_at_quiescence(traces, name, seed, profile):
    events = traces(name, seed, profile)
    assert events[-1] == {**events[-1], "kind": "trace_ended", "reason": "quiescent"}
    assert unaccounted(events) == []


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("name", ["basic", "faults", "retry-dlq"])
def test_retries_follow_the_delay_schedule(traces, name, profile):
    events = traces(name, 1, profile)
    assert schedule_violations(events, get_profile(profile).delay_levels) == []
    assert any(e["kind"] == "schedule_delivered" for e in events)


@pytest.mark.parametrize("profile", PROFILES)
def test_poison_messages_reach_the_dlq_after_16_retries(traces, profile):
    events = traces("retry-dlq", 1, profile)
    poison = {e["msg_id"] for e in events if e["kind"] == "message_stored" and e["source"] == "producer"
              and e.get("tags") == "Poison"}
    assert poison
    deliveries = {}
    for e in events:
        if e["kind"] == "consume_started":
            for origin, r in zip(e["origin_msg_ids"], e["reconsume_list"]):
                if origin in poison:
                    deliveries.setdefault(origin, []).append(r)
    dlq = {e["origin_msg_id"]: e for e in events if e["kind"] == "message_dead_lettered"}
    assert set(dlq) == poison
    for origin in poison:
        assert deliveries[origin] == list(range(17))      # r = 0..16: 17 deliveries
        assert dlq[origin]["reconsume_times"] == 17
    consumed_dlq = [e for e in events if e["kind"] == "consume_started" and e["topic"].startswith("%DLQ%")]
    assert consumed_dlq == []


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("name", ["rebalance", "faults", "offsets"])
def test_client_offsets_only_rise_on_consumption(traces, name, profile):
    assert increase_only_violations(traces(name, 1, profile)) == []


def test_broker_offsets_are_overwritten_not_maxed(traces):
    """A client frozen past channel expiry persists its stale offset when it thaws: the broker
    stores it although it is smaller (overwrite), so the offset moves back. Allowed by
    RocketMQ (duplicates follow), and the reference must show it, not hide it."""
    events = traces("long-pause", 1, "rocketmq-5.3.3")
    back = [e for e in events if e["kind"] == "offset_committed" and e.get("previous") is not None
            and e["offset"] < e["previous"]]
    assert back and {e["client"] for e in back} == {"c1"}
    thaw = next(e for e in events if e["kind"] == "client_resumed")
    assert all(e["ts"] >= thaw["ts"] for e in back)


def test_broker_restart_reloads_last_flush(traces):
    events = traces("faults", 1, "rocketmq-5.3.3")
    restart = next(i for i, e in enumerate(events) if e["kind"] == "broker_restarted")
    flushed = {}
    for e in events[:restart]:
        if e["kind"] == "offset_flushed" and e["store"] == "broker":
            flushed[(e["group"], e["topic"], e["queue"])] = e["offset"]
    loaded = {(e["group"], e["topic"], e["queue"]): e["offset"] for e in events[restart:]
              if e["kind"] == "offset_loaded"}
    assert loaded == flushed and loaded


def test_crash_persists_nothing_and_shutdown_persists(traces):
    events = traces("rebalance", 1, "rocketmq-5.3.3")
    crash = next(e for e in events if e["kind"] == "client_crashed")
    stop = next(e for e in events if e["kind"] == "client_stopped")
    assert not [e for e in events if e["kind"] == "offset_persisted" and e["client"] == crash["client"]
                and e["ts"] == crash["ts"]]
    assert [e for e in events if e["kind"] == "offset_persisted" and e["client"] == stop["client"]
            and e["ts"] == stop["ts"]]
    expired = [e for e in events if e["kind"] == "consumer_unregistered" and e["client"] == crash["client"]]
    assert expired and expired[0]["reason"] == "channel_expired"
    # The broker counts 120 s from the last heartbeat (every 30 s) and scans every 10 s.
    beats = [e["ts"] for e in events if e["kind"] == "client_started" and e["client"] == crash["client"]]
    assert 120000 - 30000 < expired[0]["ts"] - crash["ts"] <= 120000 + 10000
    assert beats


def test_broadcast_consumers_each_see_every_message(traces):
    events = traces("broadcast", 1, "rocketmq-5.3.3")
    # A new broadcast consumer without a local offset file starts at the queue's end
    # (LAST_OFFSET): messages stored before both consumers started are not theirs to see.
    last_start = max(e["seq"] for e in events if e["kind"] == "client_started" and e["group"] == "GID_bcast"
                     and e["client"] in ("b1", "b2") and e["ts"] == 0)
    stored = {e["msg_id"] for e in events if e["kind"] == "message_stored" and e["source"] == "producer"
              and e["seq"] > last_start}
    seen = {}
    for e in events:
        if e["kind"] == "consume_started" and e["group"] == "GID_bcast":
            seen.setdefault(e["client"], set()).update(e["msg_ids"])
    assert set(seen) == {"b1", "b2"} and all(s >= stored for s in seen.values())
    assert not [e for e in events if e["kind"] == "send_back_requested" and e["group"] == "GID_bcast"]
    assert not [e for e in events if e["kind"] == "offset_persisted" and e["group"] == "GID_bcast"]


def test_same_seed_same_bytes_different_seed_differs():
    sc = load_scenario("faults")

    def dump(seed):
        return b"".join(orjson.dumps(e) + b"\n" for e in run_to_list(sc, seed, "rocketmq-5.3.3"))

    assert dump(7) == dump(7)
    assert dump(7) != dump(8)


@pytest.mark.parametrize("profile", PROFILES)
def test_sql92_group_consumes_exactly_the_matching_messages(traces, profile):
    """`amount > 100 AND region = 'eu'` over string properties: "150" and "1000" convert and
    match; "99.5" and "abc" cannot become the Integer 100's class (an evaluation error: no
    match); "50" is smaller; region compares exactly ("EU" is not "eu")."""
    events = traces("sql-filter", 1, profile)
    want = {e["msg_id"] for e in events if e["kind"] == "message_stored" and e["source"] == "producer"
            and e["props"]["amount"] in ("150", "1000") and e["props"]["region"] == "eu"}
    got_ok, seen = set(), set()
    started = {}
    for e in events:
        if e["kind"] == "consume_started" and e["group"] == "GID_sql":
            started[(e["client"], e["consume_id"])] = e
            seen.update(e["origin_msg_ids"])
        elif e["kind"] == "consume_finished" and e["group"] == "GID_sql" and e["status"] == "CONSUME_SUCCESS":
            got_ok.update(started[(e["client"], e["consume_id"])]["origin_msg_ids"])
    assert want and seen == want and got_ok == want
    tag_seen = {m for e in events if e["kind"] == "consume_started" and e["group"] == "GID_tag"
                for m in e["msg_ids"]}
    tagged = {e["msg_id"] for e in events if e["kind"] == "message_stored" and e["source"] == "producer"
              and e.get("tags") in ("card", "wire")}
    assert tag_seen == tagged


@pytest.mark.parametrize("profile", PROFILES)
def test_a_broker_that_forgets_its_flushed_offsets_at_restart_is_found(profile):
    """ConsumerOffsetManager.load reads consumerOffset.json: a restarted broker has its last
    flush back. The spec knows that flush, so a broker that comes back with an empty table (and
    says nothing of it) answers the next owner's read wrongly, and INV-START-1 says so. Without
    head retention the forgotten queue starts at 0 and nothing is lost, so only the spec's own
    record of the flush can tell (restart-retention without its delete_messages steps)."""
    from rocketspec.conformance.mutants import BY_ID, applied
    from rocketspec.spec.replay import check_events

    sc = load_scenario("restart-retention")
    sc["steps"] = [s for s in sc["steps"] if s["action"] != "delete_messages"]
    clean = run_to_list(sc, 1, profile)
    assert check_events(enumerate(clean, 1), get_profile(profile)).findings.errors == []
    with applied(BY_ID["broker-offsets-not-reloaded"]):
        forgot = run_to_list(load_scenario("restart-retention") | {"steps": sc["steps"]}, 1, profile)
    errs = {f.inv for f in check_events(enumerate(forgot, 1), get_profile(profile)).findings.errors}
    assert "INV-START-1" in errs
