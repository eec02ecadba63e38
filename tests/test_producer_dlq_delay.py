"""The DELAY of a producer send to %RETRY% that the broker dead-letters (docs/rocketmq-facts.md §7).

4.9.8's SendMessageProcessor clears the level in handleRetryAndDLQ, then reinstalls the request's
properties, DELAY among them: the orderly consumer's DLQ copy (checkReconsumeTimes, delay level
3 + r) waits in SCHEDULE_TOPIC_XXXX before it lands in %DLQ%. 5.0.0+ writes DELAY=-1 first: the
copy goes straight to the DLQ. #2724's fix (consumerSendMsgBack) is a different path.

The reference reproduces the release's path (profile switch producer_dlq_keeps_delay); the spec
flags the late dead letter on every release (INV-DLQ-1; the history level sees it as H-RETRY-3),
naming the path's cause, and checks the copy waits at the send's level.
"""
import pytest

from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import load_scenario
from rocketspec.rocketmq.profiles import PROFILES, get_profile
from rocketspec.rocketmq.retry import retry_delay_level
from rocketspec.spec.replay import check_events

MAX = 2   # orderly-dlq's maxReconsumeTimes


def _run(profile):
    return run_to_list(load_scenario("orderly-dlq"), 1, profile)


def _check(events, profile):
    return check_events(enumerate(events, 1), get_profile(profile))


@pytest.mark.parametrize("profile", ["rocketmq-4.9.8", "rocketmq-5.3.3"])
def test_the_orderly_dlq_copy_waits_in_the_schedule_only_where_the_release_keeps_delay(profile):
    events = _run(profile)
    keeps = get_profile(profile).producer_dlq_keeps_delay
    dlq_scheduled = [e for e in events if e["kind"] == "message_scheduled" and e["real_topic"].startswith("%DLQ%")]
    dead = [e for e in events if e["kind"] == "message_dead_lettered"]
    assert len(dead) == 1
    rep = _check(events, profile)
    if keeps:
        # the client's level 3 + r (r = max) comes back; the copy lands when the schedule delivers it
        assert [e["delay_level"] for e in dlq_scheduled] == [retry_delay_level(MAX)]
        assert dead[0]["ts"] >= dlq_scheduled[0]["deliver_ts"]
        assert {k for k, n in rep.findings.counts.items() if not k.startswith("ANOM-")} == {"INV-DLQ-1"}
        (f,) = [f for f in rep.findings.errors if f.inv == "INV-DLQ-1"]
        assert "send path puts the producer send's DELAY back" in f.message and "#3978" in f.message
    else:
        assert dlq_scheduled == []
        assert rep.ok, rep.findings.counts


def test_a_consumer_send_back_s_scheduled_dlq_copy_is_named_2724():
    events = run_to_list(load_scenario("bug-2724"), 1, "bug-2724-rocketmq-4.9.1")
    assert any(e["kind"] == "message_scheduled" and e["real_topic"].startswith("%DLQ%") for e in events)
    rep = _check(events, "rocketmq-4.9.8")
    msgs = [f.message for f in rep.findings.errors if f.inv == "INV-DLQ-1"]
    assert msgs and all("(#2724)" in m and "send path" not in m for m in msgs)


def test_the_dlq_copy_must_wait_at_the_send_level():
    events = _run("rocketmq-4.9.8")
    assert "INV-RETRY-2" not in _check(events, "rocketmq-4.9.8").findings.counts
    for e in events:
        if e["kind"] == "message_scheduled" and e["real_topic"].startswith("%DLQ%"):
            e["delay_level"] = 1
    assert "INV-RETRY-2" in _check(events, "rocketmq-4.9.8").findings.counts


def test_every_4_9_x_profile_keeps_delay_and_every_5_x_clears_it():
    for p in PROFILES.values():
        assert p.producer_dlq_keeps_delay == p.release.startswith("4."), p.name
