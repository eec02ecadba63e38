"""POP consumption recorded on real RocketMQ 5.5.0 (it stands in for 5.5.1; issue 45), checked under
rocketmq-5.5.1. The traces (gzip JSON Lines, as `rocketspec record` wrote them) are
tests/fixtures/real/pop/: pop-basic (the built-in scenario: two push consumers in POP mode, one call
in ten fails) and pop-push-expiry (the scenario file beside it: a listener call outlives its
invisible time). What each run showed is in docs/notes/real-pop.md; where each event comes from is
docs/recorder.md ("POP"). The facts asserted are RocketMQ's (rocketspec/rocketmq/pop.py, read in the
5.5.0 source), seen in the real run, besides check's verdict.

The refusals at the end (SIMPLE clients without a client program, POP under 4.9.8) are `record`'s,
without Java.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from rocketspec.rocketmq import pop
from rocketspec.spec.replay import check_trace

HERE = Path(__file__).parent / "fixtures" / "real" / "pop"
PROFILE = "rocketmq-5.5.1"


def _events(name: str) -> list[dict]:
    with gzip.open(HERE / f"{name}-5.5.0.jsonl.gz", "rt") as fh:
        return [json.loads(line) for line in fh]


def _kind(ev, kind, **match):
    return [e for e in ev if e["kind"] == kind and all(e.get(k) == v for k, v in match.items())]


def _copy(e) -> tuple:
    return e["group"], e["topic"], e["queue"], e["offset"]


@pytest.mark.parametrize("name", ["pop-basic", "pop-push-expiry"])
def test_the_real_pop_run_holds(name):
    res = check_trace(str(HERE / f"{name}-5.5.0.jsonl.gz"), PROFILE)
    errors = {f.inv: f.message for f in res.findings.errors}
    assert errors == {}, errors
    assert res.ended == "quiescent"
    ev = _events(name)
    assert ev[0]["schema_version"] == 3
    for c in _kind(ev, "client_started"):
        assert c["config"]["message_request_mode"] == "POP"


def test_pop_basic_hands_out_every_message_and_acks_it_once():
    """Every produced message is popped and acked with a handle that took effect; each broker
    handle is the one the client's listener got (the client builds it from the same answer)."""
    ev = _events("pop-basic")
    stored = {(e["topic"], e["queue"], e["offset"]) for e in _kind(ev, "message_stored", source="producer")}
    assert len(stored) == 100
    acked = [e for e in _kind(ev, "message_acked") if e["result"] == "acked"]
    assert len(acked) == len({_copy(e) for e in acked}), "a copy acked twice"
    popped = _kind(ev, "message_popped")
    assert {(e["topic"], e["queue"], e["offset"]) for e in popped} >= stored
    given = {h for e in _kind(ev, "pop_consume_started") for h in e["handles"]}
    assert {e["handle"] for e in popped} == given
    for e in popped:
        h = pop.parse_handle(e["handle"])
        assert (h["pop_time"], h["invisible_time"], h["queue"], h["offset"]) == (
            e["pop_time"], e["invisible_time"], e["queue"], e["offset"])
        # retry flag: 0 for the topic itself, 1 for the group's POP retry topic (v1 naming)
        assert h["retry_flag"] == ("1" if e["topic"] == pop.pop_retry_topic("GID_pop", "TopicPop") else "0")


def test_pop_basic_a_failed_call_changes_the_invisible_time_and_revive_brings_it_back():
    """ConsumeMessagePopConcurrentlyService: a failed call's message gets the invisible time of
    popDelayLevel[reconsume times] (10 s at 0) under a new handle popped now; nothing acks it, so
    revive puts a copy with one more consumption into %RETRY%GID_pop_TopicPop, no earlier than
    the new deadline + ackTimeInterval + 1 s, and a later pop hands the copy out."""
    ev = _events("pop-basic")
    changes = [e for e in _kind(ev, "invisible_time_changed") if e["result"] == "changed"]
    assert changes
    revived = {_copy(e): e for e in _kind(ev, "message_revived", outcome="retry")}
    popped_at = {(e["group"], e["topic"], e["queue"], e["offset"]): e for e in _kind(ev, "message_popped")}
    for c in changes:
        first = popped_at[_copy(c)]
        assert c["invisible_time"] == pop.pop_delay_ms(0, first["reconsume_times"])
        assert c["new_pop_time"] >= c["pop_time"]
        r = revived[_copy(c)]
        assert r["pop_time"] == c["new_pop_time"], "revive fired the changed handle's checkpoint"
        assert r["ts"] >= pop.earliest_revive(c["new_pop_time"], c["invisible_time"])
        assert r["target_topic"] == pop.revive_target(c["topic"], c["group"])
        assert r["reconsume_times"] == pop.revived_reconsume_times(first["reconsume_times"])
        again = popped_at[(c["group"], r["target_topic"], r["target_queue"], r["target_offset"])]
        assert again["msg_id"] == r["target_msg_id"] and again["ts"] > r["ts"]
        # the changed checkpoint is written before the change is answered
        ck = [e for e in _kind(ev, "pop_checkpoint_written", cause="change_invisible")
              if e["pop_time"] == c["new_pop_time"] and e["offsets"] == [c["offset"]]]
        assert ck and ck[0]["seq"] < c["seq"]


def test_pop_push_expiry_a_call_past_the_invisible_time_is_delivered_again_and_not_acked():
    """#8332 on the remoting push consumer: the Slow call (12 s) outlives its 5 s handle; revive
    brings the message back after the deadline + 2 s and a consumer gets the copy while the first
    call still runs; the first call returns past its deadline (isPopTimeout), so the client sends
    neither an ack nor a change for its handle."""
    ev = _events("pop-push-expiry")
    slow = next(e for e in _kind(ev, "message_stored") if e["tags"] == "Slow")
    first = next(e for e in _kind(ev, "message_popped") if e["msg_id"] == slow["msg_id"])
    call = next(e for e in _kind(ev, "pop_consume_started") if first["handle"] in e["handles"])
    done = next(e for e in _kind(ev, "pop_consume_finished", consume_id=call["consume_id"], client=call["client"]))
    assert done["timed_out"] is True
    assert done["ts"] - first["pop_time"] >= first["invisible_time"]
    assert not [e for e in ev if e.get("handle") == first["handle"] and e["kind"] in ("message_acked", "invisible_time_changed")]
    r = next(e for e in _kind(ev, "message_revived") if e["msg_id"] == slow["msg_id"])
    assert r["ts"] >= pop.earliest_revive(first["pop_time"], first["invisible_time"])
    assert r["target_topic"] == pop.pop_retry_topic("GID_pop_slow", "Work") and r["reconsume_times"] == 1
    again = next(e for e in _kind(ev, "message_popped") if e["msg_id"] == r["target_msg_id"])
    assert again["ts"] < done["ts"], "the copy is handed out while the first call runs"
    assert [e["result"] for e in ev if e["kind"] == "message_acked" and e["handle"] == again["handle"]] == ["acked"]


def test_record_runs_a_simple_consumer_only_through_a_client_program(tmp_path):
    """A SimpleConsumer is a gRPC client of the proxy: the recorder has none of its own, so a
    scenario with one needs --client (a gRPC client program); the plan itself is accepted."""
    from rocketspec.commands.record import RecordError, build_plan, record
    from rocketspec.conformance.verdicts import load_checked_scenario

    build_plan(load_checked_scenario("pop-invisible-expiry"), 1, 60, Path("."), Path("."))
    with pytest.raises(RecordError, match=r"client_type: SIMPLE.*--client CMD"):
        record("pop-invisible-expiry", str(tmp_path / "t.jsonl"), 60, 1, None, release="5.5.0")


def test_record_refuses_pop_under_4_9_8(tmp_path):
    from rocketspec.commands.record import RecordError, record

    with pytest.raises(RecordError, match="consumes by POP"):
        record("pop-basic", str(tmp_path / "t.jsonl"), 60, 1, None, release="4.9.8")
