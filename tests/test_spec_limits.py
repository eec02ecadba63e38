"""Timing and limits come from the trace's recorded configuration (broker_started.config,
client_started.config); the profile supplies only the defaults (spec.limits)."""
import copy

import pytest

from rocketspec.spec import limits
from rocketspec.rocketmq.profiles import get_profile
from rocketspec.spec.replay import check_events
from rocketspec.traces.io import TraceInputError

reference = pytest.importorskip("rocketspec.reference.runner")
from rocketspec.reference.scenario import load_scenario  # noqa: E402

P = "rocketmq-4.9.8"
FAST_LEVELS = " ".join(["1s"] * 18)     # a real test broker's messageDelayLevel


def run(name, **broker_config):
    sc = load_scenario(name)
    sc["broker_config"] = {**sc.get("broker_config", {}), **broker_config}
    return reference.run_to_list(sc, 1, P)


def check(evs):
    return check_events(enumerate(evs, 1), get_profile(P))


def without_config(evs, kind):
    out = copy.deepcopy(evs)
    for e in out:
        if e["kind"] == kind:
            e.pop("config", None)
    return out


def test_delay_levels_come_from_the_broker():
    evs = run("retry-dlq", message_delay_level=FAST_LEVELS)
    started = next(e for e in evs if e["kind"] == "broker_started")
    assert started["config"]["message_delay_level"] == FAST_LEVELS
    assert check(evs).ok
    # the same run judged by the profile's default levels (10 s for level 3) is wrong
    rep = check(without_config(evs, "broker_started"))
    assert "INV-RETRY-2" in {f.inv for f in rep.findings.errors}


def test_broker_lock_lifetime_comes_from_the_broker():
    evs = run("orderly", lock_max_live_ms=90000)
    assert next(e for e in evs if e["kind"] == "broker_started")["config"]["broker_lock_max_live_ms"] == 90000
    assert check(evs).ok
    rep = check(without_config(evs, "broker_started"))
    assert "INV-LOCK-1" in {f.inv for f in rep.findings.errors}


def test_client_lease_comes_from_the_client():
    evs = run("orderly")
    # a client that says it runs with a 1 s lease cannot consume 20 s after its last lock
    short = copy.deepcopy(evs)
    for e in short:
        if e["kind"] == "client_started":
            e["config"]["client_lock_max_live_ms"] = 1
    assert check(evs).ok
    assert "INV-OWNER-2" in {f.inv for f in check(short).findings.errors}


def test_defaults_are_the_profile_s():
    p = get_profile(P)
    b = limits.BrokerLimits(p, None)
    c = limits.ClientLimits(p, {})
    assert (b.lock_max_live_ms, b.channel_expired_ms, len(b.delay_ms) - 1) == (60000, 120000, 18)
    assert (c.lease_ms, c.lock_interval_ms, c.rebalance_interval_ms, c.max_continuous_ms) == (30000, 20000, 20000, 60000)


def test_delay_table_reads_rocketmq_s_string():
    assert limits.delay_table("1s 5s 1m 2h 1d") == (0, 1000, 5000, 60000, 7200000, 86400000)
    with pytest.raises(limits.BadConfig):
        limits.delay_table("1s 5x")


def test_bad_config_is_bad_input_naming_the_event():
    evs = run("basic")
    for e in evs:
        if e["kind"] == "broker_started":
            e["config"]["broker_lock_max_live_ms"] = "sixty"
    with pytest.raises(TraceInputError, match="broker_started.config.broker_lock_max_live_ms"):
        check(evs)
