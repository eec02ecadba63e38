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
from rocketspec.rocketmq.profiles import get_profile
from rocketspec.spec.replay import check_events, check_trace

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


# ------------------------------------------------------------------ SimpleConsumers through the proxy
# Recorded with the gRPC client under test (clients/grpc-java: rocketmq-client-java 5.2.0's
# SimpleConsumer, `record --client build/grpc-client/rocketspec-grpc-client`) on real 5.5.0 with
# its gRPC proxy in local mode in the broker's JVM (docs/notes/real-pop.md, "The gRPC path").
GRPC = ["pop-retry-dlq", "pop-invisible-expiry", "pop-orderly", "pop-simple-change"]


@pytest.mark.parametrize("name", GRPC)
def test_the_real_grpc_run_holds(name):
    res = check_trace(str(HERE / f"{name}-5.5.0.jsonl.gz"), PROFILE)
    errors = {f.inv: f.message for f in res.findings.errors}
    assert errors == {}, errors
    assert res.ended == "quiescent"
    ev = _events(name)
    assert ev[0]["observed"] == ["broker", "client_reports"]
    ids = {c["client"] for c in _kind(ev, "client_started")}
    assert len(ids) == 2 and all(c["config"]["client_type"] == "SIMPLE" for c in _kind(ev, "client_started"))
    # the broker's POP events name the gRPC client the proxy served (ProxyContext's client id),
    # which is the id the client program reported
    assert {e["client"] for e in ev if e["kind"] in ("message_popped", "message_acked")} <= ids
    # each message the client got is one a pop handed out, under the receipt handle the recorder
    # wrote for it (POP_CK plus the copy's commit log offset, ConsumerProcessor.createHandle)
    popped = {e["handle"] for e in _kind(ev, "message_popped")}
    got = [h for e in _kind(ev, "pop_consume_started") for h in e["handles"]]
    assert got and set(got) <= popped
    # and every ack names a handle that was handed out
    assert {e["handle"] for e in _kind(ev, "message_acked")} <= popped


def test_pop_retry_dlq_the_proxy_dead_letters_at_max_attempts_and_acks():
    """A poison message is revived with one more reconsumption each time its 5 s run out; when a
    pop hands out a copy with reconsume times at the group's max attempts (retryMaxTimes 2 + 1,
    GrpcClientSettingsManager), the proxy sends it to the DLQ instead of to the client
    (PopMessageResultFilterImpl TO_DLQ, forwardMessageToDeadLetterQueue) and acks its handle."""
    ev = _events("pop-retry-dlq")
    dead = _kind(ev, "pop_dead_lettered")
    poison = len([e for e in _kind(ev, "message_stored", source="producer")
                  if e.get("tags") == "Poison"]) or len(dead)
    assert dead and len(dead) == poison
    for d in dead:
        assert d["max_attempts"] == pop.proxy_max_attempts(2) == 3
        assert d["reconsume_times"] == 3 and pop.proxy_dead_letters(d["reconsume_times"], d["max_attempts"])
        acks = [e for e in _kind(ev, "message_acked") if e["handle"] == d["handle"]]
        assert [(a["reason"], a["result"]) for a in acks] == [("dead_lettered", "acked")]
        assert acks[0]["ts"] >= d["ts"]
    # the client never received a copy at its limit
    assert all(max(e["reconsume_list"]) < 3 for e in _kind(ev, "pop_consume_started"))
    # each failed delivery came back through revive with one more reconsumption
    assert {e["reconsume_times"] for e in _kind(ev, "message_revived", outcome="retry")} == {1, 2, 3}


def test_pop_invisible_expiry_the_proxy_refuses_the_late_ack():
    """The Slow call (12 s) outlives its 5 s: revive brings the message back and the other client
    consumes the copy while the first call runs. The first call's late ack never reaches the
    broker: the proxy refuses an expired receipt handle (ConsumerProcessor.validateReceiptHandle,
    INVALID_RECEIPT_HANDLE), so no message_acked names its handle."""
    ev = _events("pop-invisible-expiry")
    first = _kind(ev, "message_popped", topic="Work", offset=0)[0]
    r = _kind(ev, "message_revived", topic="Work", offset=0)[0]
    assert r["outcome"] == "retry" and r["reconsume_times"] == 1
    assert r["ts"] >= pop.earliest_revive(first["pop_time"], first["invisible_time"])
    again = next(e for e in _kind(ev, "message_popped") if e["msg_id"] == r["target_msg_id"])
    assert again["client"] != first["client"]
    slow = next(f for f in _kind(ev, "pop_consume_finished", client=first["client"]) if f["timed_out"])
    assert again["ts"] < slow["ts"], "the copy is handed out while the first call runs"
    assert not [e for e in ev if e["kind"] == "message_acked" and e["pop_time"] == first["pop_time"]
                and e["offset"] == 0 and e["topic"] == "Work"]
    assert [e["result"] for e in _kind(ev, "message_acked") if e["handle"] == again["handle"]] == ["acked"]


def test_pop_orderly_fifo_comes_back_after_its_invisible_time():
    """A FIFO group (consumeMessageOrderly) pops orderly: a failed message is not acked, the queue
    waits until its invisible time ends, then the same offsets come back, in order, before any
    later one. The reconsume times the client gets is the proxy's reading of the broker's
    orderCountInfo under the queue's key (LocalMessageService.popMessage): the queue-level count,
    the minimum over the attempt's offsets, so a batch that also holds fresh offsets says 0."""
    ev = _events("pop-orderly")
    popped = _kind(ev, "message_popped")
    assert popped and all(e["order"] for e in popped)
    seen: dict = {}
    again = []
    for e in popped:
        if _copy(e) in seen:
            again.append(e)
            before = seen[_copy(e)]
            assert e["ts"] >= before["pop_time"] + before["invisible_time"]
        seen[_copy(e)] = e
    assert again, "a failed FIFO message came back"
    by_pop: dict = {}
    for e in popped:
        by_pop.setdefault((e["client"], e["pop_id"]), []).append(e)
    for batch in by_pop.values():
        offsets = [e["offset"] for e in batch if e["queue"] == batch[0]["queue"]]
        assert offsets == sorted(offsets)
        fresh = [e for e in batch if e in again] and [e for e in batch if e not in again]
        if fresh:
            assert {e["reconsume_times"] for e in batch} == {0}
    stored = {(e["topic"], e["queue"], e["offset"]) for e in _kind(ev, "message_stored", source="producer")}
    acked = {(e["topic"], e["queue"], e["offset"]) for e in _kind(ev, "message_acked", result="acked")}
    assert stored == acked


def test_pop_fifo_attempts_the_proxy_passes_a_fifo_message_beyond_its_max_attempts():
    """The built-in pop-fifo-attempts on real 5.5.0 (gRPC client, proxy in local mode): FIFO group,
    maxReconsumeTimes 1 (max attempts 2), one queue, a poison message at offset 0 and three more
    stored after the first receive. RocketMQ's facts: the broker counts each offset's attempts
    (mergeOffsetConsumedCount: 0, then 1 for offset 0, then 2 for it and 1 for the others), and
    the proxy hands out the minimum over the receive's offsets (0 with fresh offsets beside it, then
    1), so the listener gets the poison message at its third receive; at the fourth all four are at
    2 and the proxy dead-letters them, the three that never reached the listener too. Check finds
    the third delivery (INV-POP-DLQ-1, naming the proxy's reading); the reference under the 5.x
    profile makes the same run, and under fix-proxy-fifo-count-rocketmq-5.5.1 it holds."""
    from rocketspec.reference.runner import run_to_list
    from rocketspec.reference.scenario import load_scenario

    ev = _events("pop-fifo-attempts")
    popped = _kind(ev, "message_popped")
    receives: dict = {}
    for e in popped:
        receives.setdefault(e["pop_time"], []).append((e["offset"], e["reconsume_times"]))
    assert list(receives.values()) == [[(0, 0)], [(0, 0), (1, 0), (2, 0), (3, 0)],
                                       [(0, 1), (1, 1), (2, 1), (3, 1)], [(0, 2), (1, 2), (2, 2), (3, 2)]]
    calls = _kind(ev, "pop_consume_started")
    assert [c["reconsume_list"] for c in calls] == [[0], [0], [1]]
    assert sorted(e["offset"] for e in _kind(ev, "pop_dead_lettered")) == [0, 1, 2, 3]
    assert {e["max_attempts"] for e in _kind(ev, "pop_dead_lettered")} == {2}
    res = check_trace(str(HERE / "pop-fifo-attempts-5.5.0.jsonl.gz"), PROFILE)
    errors = [(f.inv, f.event.get("seq")) for f in res.findings.errors]
    assert errors == [("INV-POP-DLQ-1", calls[2]["seq"])], errors
    assert "at its attempt 3, past the group's max attempts 2" in res.findings.errors[0].message
    # the reference: the same receives and readings under the release, the clean side under the fix
    for profile, want in (("rocketmq-5.5.1", ["INV-POP-DLQ-1"]), ("fix-proxy-fifo-count-rocketmq-5.5.1", [])):
        sim = run_to_list(load_scenario("pop-fifo-attempts"), 1, profile)
        got = check_events(enumerate(sim, 1), get_profile(profile))
        assert [f.inv for f in got.findings.errors] == want, profile
        if profile == "rocketmq-5.5.1":
            ref: dict = {}
            for e in sim:
                if e["kind"] == "message_popped":
                    ref.setdefault(e["pop_time"], []).append((e["offset"], e["reconsume_times"]))
            assert list(ref.values()) == list(receives.values())


def test_pop_simple_change_a_change_issues_a_new_handle_and_revive_follows_it():
    """pop-simple-change (the scenario file beside the fixture): a failed call changes the message's
    invisible time to 2 s (changeInvisibleDuration). The broker writes a new checkpoint popped at
    the change's time and the old handle is retired; revive follows the new deadline, with one
    more reconsumption, and at max attempts (maxReconsumeTimes 1 + 1) the proxy dead-letters."""
    ev = _events("pop-simple-change")
    changes = _kind(ev, "invisible_time_changed", result="changed")
    assert changes
    for c in changes:
        assert c["invisible_time"] == 2000 and c["new_pop_time"] >= c["pop_time"] and not c["order"]
        cks = [k for k in _kind(ev, "pop_checkpoint_written", cause="change_invisible", topic=c["topic"])
               if k["pop_time"] == c["new_pop_time"] and c["offset"] in k["offsets"]]
        assert cks and cks[0]["ts"] <= c["ts"], "the change's checkpoint is written first"
        r = [e for e in _kind(ev, "message_revived", topic=c["topic"], offset=c["offset"])
             if e["pop_time"] == c["new_pop_time"]]
        assert r and r[0]["ts"] >= pop.earliest_revive(c["new_pop_time"], 2000)
    dead = _kind(ev, "pop_dead_lettered")
    assert dead and all(d["max_attempts"] == 2 == d["reconsume_times"] for d in dead)


def test_the_client_protocol_reads_a_pop_clients_reports(tmp_path):
    """A POP client's listener calls (pop_consume_started with each message's receipt handle,
    pop_consume_finished with timed_out) become the trace's pop_consume_* events."""
    from rocketspec.traces.client_protocol import ProtocolError, to_events

    proto = tmp_path / "client-s1.life-1.proto"
    lines = [
        {"type": "started", "client_id": "vm@1@0@x", "ts_ns": 10},
        {"type": "pop_consume_started", "consume_id": 1, "topic": "Work", "broker": "broker-a", "queue": 0,
         "messages": [{"offset": 0, "msg_id": "M", "origin_msg_id": "M", "reconsume_times": 0,
                       "handle": "0 1 5000 2 0 broker-a 0 0 0"}], "ts_ns": 20},
        {"type": "pop_consume_finished", "consume_id": 1, "status": "CONSUME_SUCCESS", "timed_out": True, "ts_ns": 30},
    ]
    proto.write_text("".join(json.dumps(x) + "\n" for x in lines))
    cfg = {"subscriptions": {"Work": {"type": "TAG", "expr": "*"}}, "client_type": "SIMPLE"}
    cid, events = to_events(proto, "s1", "G", cfg)
    assert cid == "vm@1@0@x"
    assert [e["kind"] for e in events[:2]] == ["client_started", "client_start_returned"]   # "started": v4
    s, f = events[2], events[3]
    assert s["kind"] == "pop_consume_started" and s["handles"] == ["0 1 5000 2 0 broker-a 0 0 0"]
    assert s["msg_ids"] == ["M"] and s["reconsume_list"] == [0]
    assert f["kind"] == "pop_consume_finished" and f["timed_out"] is True and f["status"] == "CONSUME_SUCCESS"
    lines[1]["messages"][0].pop("handle")
    proto.write_text("".join(json.dumps(x) + "\n" for x in lines))
    with pytest.raises(ProtocolError, match=r"messages\[0\]\.handle"):
        to_events(proto, "s1", "G", cfg)


def test_the_proxy_and_grpc_client_pins():
    """The proxy and the gRPC client are pinned as the releases are (pom.xml, jars.lock with
    sha256), below third_party/rocketmq/ but not as releases of their own; the proxy's lock holds
    its own dependencies (a lock made from a jar without its pom had none, and the proxy did not
    start: io.grpc.protobuf missing)."""
    from traces import rocketmq_jars as rj

    assert "5.5.0" in rj.releases() and not [r for r in rj.releases() if "/" in r or "proxy" in r]
    _, proxy = rj.read_lock(rj.PINS / "5.5.0" / "proxy" / "jars.lock")
    coords = {j.coordinate for j in proxy}
    _, release = rj.read_lock(rj.PINS / "5.5.0" / "jars.lock")
    assert "org.apache.rocketmq:rocketmq-proxy:jar:5.5.0" in coords
    assert {"io.grpc:grpc-protobuf:jar:1.53.0", "io.grpc:grpc-services:jar:1.53.0"} <= coords
    assert {j.coordinate.rsplit(":", 1)[0] for j in release} <= {c.rsplit(":", 1)[0] for c in coords}
    _, client = rj.read_lock(rj.PINS / "client-java" / "5.2.0" / "jars.lock")
    assert "org.apache.rocketmq:rocketmq-client-java:jar:5.2.0" in {j.coordinate for j in client}
    assert rj.out_dir("5.5.0/proxy").name == "rocketmq-5.5.0-proxy"
    assert "org.apache.rocketmq.proxy.ProxyStartup" in rj.probed_classes("5.5.0/proxy")
    assert rj.probed_classes("client-java/5.2.0") == rj.PIN_PROBES["client-java"]
    assert rj.probed_classes("5.5.0") == rj.PROBED_CLASSES


def test_a_jar_resolved_without_its_pom_is_never_a_classpath(tmp_path, monkeypatch):
    """Offline, Maven resolves a jar that ~/.m2 holds without its pom as having no dependencies
    (it only warns): the first proxy lock was written so. Such a resolution is retried online, and
    refused when the pom is still missing."""
    import subprocess as sp

    from traces import rocketmq_jars as rj

    m2 = tmp_path / "m2" / "x"
    m2.mkdir(parents=True)
    (m2 / "lonely-1.0.jar").write_bytes(b"jar")
    calls = []

    def fake_mvn(cmd, **kw):
        calls.append("-o" in cmd)
        out = next(a for a in cmd if a.startswith("-DoutputFile=")).split("=", 1)[1]
        Path(out).write_text(f"The following files have been resolved:\n   x:lonely:jar:1.0:compile:{m2}/lonely-1.0.jar\n")
        return sp.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(rj.shutil, "which", lambda name: "/usr/bin/" + name)
    monkeypatch.setattr(rj.subprocess, "run", fake_mvn)
    with pytest.raises(rj.JarsError, match="x:lonely:jar:1.0 without its pom") as e:
        rj.maven_resolve(tmp_path / "pom.xml")
    assert e.value.code == rj.EXIT_MISMATCH and calls == [True, False]
    (m2 / "lonely-1.0.pom").write_text("<project/>")
    calls.clear()
    assert rj.maven_resolve(tmp_path / "pom.xml") == [("x:lonely:jar:1.0", m2 / "lonely-1.0.jar")]
    assert calls == [True]


def test_a_message_every_pop_of_which_ran_out_before_its_call_is_dropped_unheard():
    """Random POP run 20201 (5.5.0). GID_p1 (maxReconsumeTimes 0, one consume thread, 5 s invisible
    time, slow TagA calls) pops TopicP queue 0 offsets 28..; its single thread is busy past their
    handles' deadlines, so ConsumeRequest.run skips them (isPopTimeout) without calling the
    listener; revive puts copies with reconsume times 1 into %RETRY%GID_p1_TopicP, and when they
    are popped DefaultMQPushConsumerImpl.processPopResult (5.5.0 lines 656-666) acks them at once,
    reconsumeTimes 1 > 0, with no DLQ in POP mode. Six messages never reached a listener: the
    message traces say so (H-DELIVER-1, six messages never reached GID_p1), and check now does."""
    from rocketspec.conformance.real_random import classify, unseen_invariants

    name = "random-20201-dropped-unheard-5.5.0"
    res = check_trace(str(HERE / f"{name}.jsonl.gz"), PROFILE, max_listed=1000)
    errors = [f for f in res.findings.errors]
    assert {f.inv for f in errors} == {"INV-POP-LOSS-1"} and len(errors) == 6, res.findings.counts
    assert all("no listener call ever received the message" in f.message for f in errors)
    check_json = res.to_dict()
    status = {"H-DELIVER-1": "violated", "H-RETRY-1": "holds", "H-RETRY-2": "skipped", "H-RETRY-3": "holds",
              "H-ORDER-1": "skipped", "H-ORDER-2": "skipped", "H-DUP-1": "skipped"}
    oracle = {"complete": True, "guarantees": [{"id": g, "status": s} for g, s in status.items()]}
    sc = json.loads((HERE / "random-20201-dropped-unheard.scenario.json").read_text())
    assert classify({"INV-POP-LOSS-1": 6}, oracle, unseen_invariants(check_json, sc, oracle))[0] == "agreed"
    # without the listener calls (a broker-side cut) the part is not judged, and said so
    ev = [e for e in _events("random-20201-dropped-unheard") if e["kind"] not in ("pop_consume_started", "pop_consume_finished")]
    cut = check_events(enumerate(ev, 1), get_profile(PROFILE)).to_dict()
    assert "INV-POP-LOSS-1" not in cut["counts"]
    assert any(p["rule"] == "INV-POP-LOSS-1" for p in cut["parts_not_judged"])
