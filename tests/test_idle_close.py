"""The broker's idle close (NettyServerConfig.serverChannelMaxIdleTimeSeconds) in the reference.

Real RocketMQ's broker pipeline carries IdleStateHandler(0, 0, N): a channel with no read and no
write for N seconds is closed, and ClientHousekeepingService unregisters its client
(doChannelCloseEvent), as for a killed client. A frozen (SIGSTOPped) client is silent: it loses
its queues to the others while frozen, and after SIGCONT its next request opens a new channel and
its next heartbeat registers it again (tests/fixtures/real/real-freeze.jsonl on 4.9.8).
"""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import ScenarioError, validate
from rocketspec.reference.sim import Process, Simulator
from rocketspec.rocketmq.profiles import get_profile
from rocketspec.spec.replay import check_trace

PROFILES = ("rocketmq-4.9.8", "rocketmq-5.3.3")
PAUSE_AT = 5000


def freeze_scenario(pause_ms: int, idle_s: int | None = 8, duration: int = 60000) -> dict:
    """Two consumers of a 4-queue topic fed 10 messages a second per queue; c2 frozen at 5 s.
    Heartbeats and persists every second, so a running client is never idle for 8 s."""
    real = {"heartbeat_broker_interval_ms": 1000, "persist_consumer_offset_interval_ms": 1000,
            "rebalance_interval_ms": 2000}
    if idle_s is not None:
        real["server_channel_max_idle_s"] = idle_s
    return validate({
        "name": "idle-close", "duration_ms": duration, "real": real,
        "topics": [{"name": "Jobs", "queues": 4}],
        "groups": [{"name": "G", "subscriptions": {"Jobs": "*"}, "listener": {"duration_ms": [5, 30]}}],
        "producers": [{"topic": "Jobs", "count": (duration - 5000) * 40 // 1000, "rate_per_s": 40}],
        "steps": [{"at_ms": 0, "action": "start", "client": "c1", "group": "G"},
                  {"at_ms": 0, "action": "start", "client": "c2", "group": "G"},
                  {"at_ms": PAUSE_AT, "action": "pause", "client": "c2", "duration_ms": pause_ms}],
    }, "<test>")


def held_queues(events, client: str, until: int) -> set:
    """The Jobs queues whose ProcessQueue the client holds at `until` (by its pq events)."""
    held = set()
    for e in events:
        if e["ts"] > until:
            break
        if e.get("client") == client and e.get("topic") == "Jobs":
            if e["kind"] == "pq_created":
                held.add(e["queue"])
            elif e["kind"] in ("pq_dropped", "pq_removed"):
                held.discard(e["queue"])
    return held


def unregistrations(events, client: str) -> list:
    return [e for e in events if e["kind"] == "consumer_unregistered" and e["client"] == client]


def checked(events, tmp_path, profile):
    path = tmp_path / f"trace-{profile}.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return check_trace(path, profile)


@pytest.mark.parametrize("profile", PROFILES)
def test_frozen_client_loses_its_queues_and_gets_them_back(profile, tmp_path):
    """A 25 s freeze with the idle time at 8 s (the recorder's setting): the broker closes c2's
    channel while it is frozen, c1 takes all four queues, and after the thaw c2 registers again
    and holds its share again. (The old reference kept c2 registered: c1 never took its queues.)"""
    resume = PAUSE_AT + 25000
    events = run_to_list(freeze_scenario(25000), 1, profile)
    before = held_queues(events, "c2", PAUSE_AT)
    assert len(before) == 2
    [gone] = unregistrations(events, "c2")
    assert gone["reason"] == "channel_closed"
    # no read or write on the channel for 8 s: within 8 s +- the last I/O around the freeze
    assert PAUSE_AT + 8000 - 1100 <= gone["ts"] <= PAUSE_AT + 8000 + 1100
    assert held_queues(events, "c1", resume - 1) == {0, 1, 2, 3}
    back = [e for e in events if e["kind"] == "consumer_registered" and e["client"] == "c2" and e["ts"] >= resume]
    assert back and back[0]["ts"] <= resume + 1000       # its next heartbeat (every second here)
    assert len(held_queues(events, "c2", 60000)) == 2
    assert len(held_queues(events, "c1", 60000)) == 2
    rep = checked(events, tmp_path, profile)
    assert not rep.findings.errors, rep.findings.errors


@pytest.mark.parametrize("profile", PROFILES)
def test_default_idle_time_keeps_a_25s_freeze_registered(profile):
    """RocketMQ's default (120 s) is not reached by a 25 s freeze: nothing changes hands."""
    events = run_to_list(freeze_scenario(25000, idle_s=None), 1, profile)
    assert unregistrations(events, "c2") == []
    assert held_queues(events, "c2", PAUSE_AT + 25000) == held_queues(events, "c2", PAUSE_AT)
    from rocketspec.rocketmq.profiles import SERVER_CHANNEL_MAX_IDLE_S
    assert SERVER_CHANNEL_MAX_IDLE_S == 120
    [started] = [e for e in events if e["kind"] == "broker_started"]
    assert "server_channel_max_idle_ms" not in started["config"]   # the default is not written


def test_configured_idle_time_travels_with_the_broker():
    events = run_to_list(freeze_scenario(1000, idle_s=8, duration=6000), 1, "rocketmq-4.9.8")
    [started] = [e for e in events if e["kind"] == "broker_started"]
    assert started["config"]["server_channel_max_idle_ms"] == 8000


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(profile=st.sampled_from(PROFILES), pause=st.integers(8000 - 4000, 8000 + 4000))
def test_queues_are_lost_iff_the_freeze_outlasts_the_idle_time(profile, pause):
    """Netty's all-idle check is due at the last I/O plus the idle time exactly (it re-arms for
    the time left, it has no period), so the close comes idle_time after the channel's last read
    or write. Here the last read precedes the freeze by at most a heartbeat period (1 s) and the
    last write (the answer to a waiting pull) follows it by at most a message interval (100 ms):
    a freeze shorter than 8 s - 1.1 s keeps the queues, one longer than 8 s + 1.1 s loses them,
    and either way the frozen client holds its share again by the end."""
    idle = 8000
    events = run_to_list(freeze_scenario(pause, duration=PAUSE_AT + pause + 12000), 1, profile)
    gone = unregistrations(events, "c2")
    if pause < idle - 1100:
        assert gone == []
    if pause > idle + 1100:
        assert len(gone) == 1 and gone[0]["ts"] < PAUSE_AT + pause
    for e in gone:   # whenever it closes, it is idle_time after an I/O around the freeze
        assert PAUSE_AT + idle - 1100 <= e["ts"] <= PAUSE_AT + idle + 1100
    end = PAUSE_AT + pause + 12000
    assert len(held_queues(events, "c2", end)) == 2


def channel_closes(io_times: list, idle: int) -> list:
    """Drive ClientChannels alone: a read or write at each of io_times; the times it closes."""
    from rocketspec.reference.broker.channels import ClientChannels

    closes = []

    class Broker:
        proc = Process("broker:b")
        name = "b"
        on_reconnect = None

        def idle_closed(self, client):   # as reference.broker.Broker: the close, then the unregistration
            closes.append(sim.now)
            channels.close(client)

    sim = Simulator(1, lambda ev: None)
    broker = Broker()
    broker.sim = sim
    channels = ClientChannels(broker, idle)
    for t in io_times:
        sim.schedule(t, channels.io, "c")
    sim.run_until(max(io_times) + 3 * idle)
    return closes


@settings(max_examples=200, deadline=None)
@given(idle=st.integers(1, 5000),
       gaps=st.lists(st.integers(0, 12000), min_size=1, max_size=12))
def test_channel_closes_exactly_idle_time_after_its_last_io(idle, gaps):
    """IdleStateHandler(0, 0, N): the close is at last I/O + N, never earlier, whatever the I/O
    before it; the next I/O opens a new channel whose clock starts there."""
    gaps = [g for g in gaps if g != idle]   # an I/O in the very millisecond of the close is a race
    times, t = [], 0
    for g in gaps:
        t += g
        times.append(t)
    if not times:
        return
    expected = [a + idle for a, b in zip(times, times[1:] + [None]) if b is None or b - a > idle]
    assert channel_closes(times, idle) == expected


def test_idle_time_is_validated():
    with pytest.raises(ScenarioError) as exc:
        freeze_scenario(1000, idle_s=0)
    assert "server_channel_max_idle_s" in str(exc.value.path)


def test_profile_default_is_rocketmq_s():
    for name in PROFILES:
        assert get_profile(name).server_channel_max_idle_s == 120


@pytest.mark.parametrize("profile", PROFILES)
def test_the_thawed_client_registers_again_on_its_new_channel(profile):
    """RocketMQ's default periods (heartbeat 30 s, rebalance 20 s); frozen from 5 s to 19 s, so
    neither comes due meanwhile (one that does runs at the thaw). 5.1.4+ sends a heartbeat on the
    new channel as soon as its first request after the thaw opens it (onChannelActive, #7296)
    and keeps its queues; 4.9.8 stays unregistered until its rebalance at 20 s finds it missing
    from the group, drops its queues, and heartbeats because its assignment changed."""
    sc = freeze_scenario(14000, duration=60000)
    sc["real"].update(heartbeat_broker_interval_ms=30000, rebalance_interval_ms=20000)
    resume = PAUSE_AT + 14000
    events = run_to_list(sc, 1, profile)
    assert len(unregistrations(events, "c2")) == 1
    [back] = [e for e in events if e["kind"] == "consumer_registered" and e["client"] == "c2" and e["ts"] >= resume]
    dropped = [e for e in events if e["kind"] == "pq_dropped" and e["client"] == "c2" and e["ts"] >= resume]
    if get_profile(profile).heartbeat_on_reconnect:
        assert back["ts"] <= resume + 2 and dropped == []
    else:
        assert back["ts"] >= 20000 and len(dropped) == 2 and dropped[0]["seq"] < back["seq"]
    assert len(held_queues(events, "c2", 60000)) == 2
