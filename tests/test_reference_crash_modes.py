"""A crash step's mode (issue 13): a killed process (the OS closes its sockets) against a silent
host (cut off or frozen). 4.9.8's ClientHousekeepingService.onChannelClose ->
ConsumerManager.doChannelCloseEvent unregisters a closed channel at once and notifies the group
(CHANGE -> NOTIFY_CONSUMER_IDS_CHANGED); a silent client stays until the channel expiry. The
real recording tests/fixtures/real/real-kill.jsonl shows `channel_closed` 14 ms after the kill
and the survivor's ProcessQueues 9 ms after that."""
import copy

import pytest

from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import ScenarioError, load_scenario, validate
from rocketspec.rocketmq.profiles import get_profile
from rocketspec.spec.replay import check_events

PROFILE = "rocketmq-4.9.8"


def run(mode):
    sc = copy.deepcopy(load_scenario("real-kill"))
    crash = next(s for s in sc["steps"] if s["action"] == "crash")
    if mode is None:
        crash.pop("mode", None)
    else:
        crash["mode"] = mode
    return run_to_list(sc, 1, PROFILE)


@pytest.fixture(scope="module")
def traces():
    return {m: run(m) for m in ("kill", "silent", None)}


def takeover(events):
    """(crash event, the killed client's unregistration, ms from the crash until the survivor
    has a ProcessQueue for each queue the crashed client held)."""
    crash = next(e for e in events if e["kind"] == "client_crashed")
    held = {e["queue"] for e in events if e["kind"] == "pq_created" and e["client"] == crash["client"]
            and e["topic"] == "Jobs" and e["ts"] <= crash["ts"]}
    gone = next(e for e in events if e["kind"] == "consumer_unregistered" and e["client"] == crash["client"])
    taken = {}
    for e in events:
        if (e["kind"] == "pq_created" and e["ts"] >= crash["ts"] and e["client"] != crash["client"]
                and e["topic"] == "Jobs" and e["queue"] in held):
            taken.setdefault(e["queue"], e["ts"] - crash["ts"])
    assert held and set(taken) == held, (held, taken)
    return crash, gone, max(taken.values())


def test_the_real_kill_scenario_says_kill():
    crash = next(s for s in load_scenario("real-kill")["steps"] if s["action"] == "crash")
    assert crash["mode"] == "kill"


def test_a_killed_client_is_unregistered_at_once_and_its_queues_move_within_the_notification(traces):
    crash, gone, ms = takeover(traces["kill"])
    assert gone["reason"] == "channel_closed"
    assert gone["ts"] - crash["ts"] <= 10
    # The survivor rebalances on NOTIFY_CONSUMER_IDS_CHANGED, not on its periodic rebalance
    # (2000 ms in this scenario) nor after the 120 s channel expiry.
    assert ms < 100


@pytest.mark.parametrize("mode", ["silent", None])
def test_a_silent_crash_still_waits_for_the_channel_expiry(traces, mode):
    crash, gone, ms = takeover(traces[mode])
    assert gone["reason"] == "channel_expired"
    expiry = get_profile(PROFILE).channel_expired_ms
    assert expiry <= gone["ts"] - crash["ts"] <= expiry + 10000 + 30000
    assert ms >= gone["ts"] - crash["ts"]


@pytest.mark.parametrize("mode", ["kill", "silent"])
def test_the_checker_holds_on_both_modes(traces, mode):
    rep = check_events(enumerate(traces[mode], 1), get_profile(PROFILE))
    assert not rep.findings.errors, [(f.inv, f.seq, f.message) for f in rep.findings.errors[:3]]


def test_an_unknown_crash_mode_is_refused_naming_the_field():
    sc = {"name": "x", "duration_ms": 1000, "topics": [{"name": "T", "queues": 1}],
          "groups": [{"name": "G", "subscriptions": {"T": "*"}}],
          "steps": [{"at_ms": 0, "action": "start", "client": "c1", "group": "G"},
                    {"at_ms": 10, "action": "crash", "client": "c1", "mode": "sigterm"}]}
    with pytest.raises(ScenarioError) as exc:
        validate(sc, "x.toml")
    assert "steps[1].mode" in str(exc.value) and "kill" in str(exc.value)
