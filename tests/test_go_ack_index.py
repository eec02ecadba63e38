"""A concurrent listener's ackIndex through the Go client (docs/notes/go-client.md, Finding 2).

The driver program (clients/go) sets the scenario's `ack_index` on the library's
ConsumeConcurrentlyContext, as an application would, and reports it in `consume_finished`
(docs/driver-protocol.md); the protocol reader keeps it in the trace event, so the trace says which
messages the application declared consumed. rocketmq-client-go v2.1.2 never reads AckIndex
(consumer/push_consumer.go, consumeMessageConcurrently: a CONSUME_SUCCESS batch is removed whole,
nothing is sent back), so the messages past it are neither redelivered nor dead-lettered: the
recorded fixture's history is H-DELIVER-1 on exactly those, where 4.9.8's Java client, on the same
scenario, sends them back and consumes them all."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from rocketspec.traces import client_protocol as cp

ROOT = Path(__file__).resolve().parent.parent
GO = Path(__file__).parent / "fixtures" / "real" / "go"
T0 = 1_700_000_000_000_000_000
MSG = {"offset": 0, "msg_id": "M0", "origin_msg_id": "M0", "reconsume_times": 0}


def _life(tmp_path: Path, *reports: dict) -> Path:
    p = tmp_path / "client-c1.life-1.proto"
    p.write_text("".join(json.dumps(r) + "\n" for r in reports))
    return p


def _call(n: int, finished: dict) -> list[dict]:
    msgs = [dict(MSG, offset=i, msg_id=f"M{i}", origin_msg_id=f"M{i}") for i in range(n)]
    return [{"type": "started", "ts_ns": T0, "client_id": "@c1"},
            {"type": "consume_started", "ts_ns": T0 + 1, "consume_id": 1, "topic": "T", "broker": "broker-a",
             "queue": 0, "messages": msgs},
            {"type": "consume_finished", "ts_ns": T0 + 2, "consume_id": 1, "status": "CONSUME_SUCCESS", **finished}]


START = {"consume_mode": "CONCURRENTLY", "message_model": "CLUSTERING", "subscriptions": {"T": {"type": "TAG", "expr": "*"}}}


def test_consume_finished_keeps_the_ack_index_the_client_reported(tmp_path):
    _, evs = cp.to_events(_life(tmp_path, *_call(4, {"ack_index": 1})), "c1", "G", START)
    fin = [e for e in evs if e["kind"] == "consume_finished"][0]
    assert fin["ack_index"] == 1 and fin["offsets"] == [0, 1, 2, 3]
    # as processConsumeResult reads it: an ackIndex past the batch acknowledges the whole batch
    _, evs = cp.to_events(_life(tmp_path, *_call(2, {"ack_index": 7})), "c1", "G", START)
    assert [e for e in evs if e["kind"] == "consume_finished"][0]["ack_index"] == 1
    # none reported: none written (the whole batch is the status's)
    _, evs = cp.to_events(_life(tmp_path, *_call(2, {})), "c1", "G", START)
    assert "ack_index" not in [e for e in evs if e["kind"] == "consume_finished"][0]


@pytest.mark.parametrize("bad", ["1", -2, 1.5, True, None])
def test_a_bad_ack_index_is_a_protocol_error_naming_the_line(tmp_path, bad):
    with pytest.raises(cp.ProtocolError, match=r"client-c1\.life-1\.proto line 3: consume_finished: expected 'ack_index'"):
        cp.to_events(_life(tmp_path, *_call(2, {"ack_index": bad})), "c1", "G", START)


# A Go test of the driver's listener, run in a copy of clients/go: what it hands the library in the
# ConsumeConcurrentlyContext, and what it reports.
GO_TEST = r'''
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

func call(t *testing.T, spec string, n int) (int32, map[string]interface{}) {
	var buf bytes.Buffer
	out = bufio.NewWriter(&buf)
	var ls listenerSpec
	if err := json.Unmarshal([]byte(spec), &ls); err != nil {
		t.Fatal(err)
	}
	cc := primitive.NewConsumeConcurrentlyContext()
	ctx := primitive.WithConcurrentlyCtx(context.Background(), cc)
	msgs := make([]*primitive.MessageExt, n)
	for i := range msgs {
		msgs[i] = &primitive.MessageExt{Message: primitive.Message{Topic: "T"}, QueueOffset: int64(i)}
	}
	listen(ctx, newListener(&ls, false, 1), 1, false, msgs)
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]interface{}
		json.Unmarshal([]byte(line), &m)
		if m["type"] == "consume_finished" {
			return cc.AckIndex, m
		}
	}
	t.Fatalf("no consume_finished in %q", buf.String())
	return 0, nil
}

func TestListenerSetsAndReportsAckIndex(t *testing.T) {
	got, fin := call(t, `{"duration_ms": 0, "ack_index": 1}`, 4)
	if got != 1 || fin["ack_index"] != 1.0 || fin["status"] != "CONSUME_SUCCESS" {
		t.Fatalf("ack_index 1 on 4 messages: context %d, report %v", got, fin)
	}
	got, fin = call(t, `{"duration_ms": 0, "ack_index": 5}`, 2)
	if got != 5 || fin["ack_index"] != 1.0 {
		t.Fatalf("ack_index 5 on 2 messages: context %d, report %v", got, fin)
	}
	got, fin = call(t, `{"duration_ms": 0, "ack_index": 1, "fail_rate": 1}`, 3)
	if fin["ack_index"] != -1.0 || fin["status"] != "RECONSUME_LATER" {
		t.Fatalf("a failed call: report %v", fin)
	}
	got, fin = call(t, `{"duration_ms": 0}`, 3)
	if _, ok := fin["ack_index"]; ok || got != primitive.NewConsumeConcurrentlyContext().AckIndex {
		t.Fatalf("no ack_index asked: context %d, report %v", got, fin)
	}
}
'''


def test_the_go_driver_sets_the_scenarios_ack_index_and_reports_it(tmp_path):
    if shutil.which("go") is None:
        if os.environ.get("ROCKETSPEC_REQUIRE_REAL") == "1":
            pytest.fail("ROCKETSPEC_REQUIRE_REAL=1 but Go is not on PATH")
        pytest.skip("Go is not on PATH")
    src = tmp_path / "go"
    shutil.copytree(ROOT / "clients" / "go", src)
    (src / "ack_index_test.go").write_text(GO_TEST)
    env = dict(os.environ, GOFLAGS="-mod=readonly", GOPROXY="off")
    r = subprocess.run(["go", "test", "-count=1", "-run", "TestListenerSetsAndReportsAckIndex", "."], cwd=src,
                       capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


def _events(name: str) -> list[dict]:
    return [json.loads(x) for x in (GO / name).read_text().splitlines()]


def _history(name: str) -> tuple[int, dict]:
    r = subprocess.run([str(ROOT / ".venv" / "bin" / "rocketspec"), "history", str(GO / name), "--json"],
                       capture_output=True, text=True, timeout=300)
    return r.returncode, json.loads(r.stdout)


def test_go_acks_the_messages_past_the_ack_index_and_never_redelivers_them():
    ev = _events("ack-index.jsonl")
    assert ev[-1]["reason"] == "quiescent"
    fins = [e for e in ev if e["kind"] == "consume_finished"]
    # four batches of four, each CONSUME_SUCCESS with ackIndex 1: offsets 2, 3 of each declared unconsumed
    assert sorted(tuple(e["offsets"]) for e in fins) == [(0, 1, 2, 3), (4, 5, 6, 7), (8, 9, 10, 11), (12, 13, 14, 15)]
    assert {(e["status"], e["ack_index"]) for e in fins} == {("CONSUME_SUCCESS", 1)}
    past = {o for e in fins for o in e["offsets"][2:]}
    # the broker's side: nothing sent back, no retry copy stored, the whole queue committed
    assert not [e for e in ev if e["kind"] in ("message_sent_back", "message_dead_lettered")]
    assert not [e for e in ev if e["kind"] == "message_stored" and e["topic"].startswith("%")]
    assert max(e["offset"] for e in ev if e["kind"] == "offset_committed") == 16
    rc, h = _history("ack-index.jsonl")
    assert rc == 1 and h["complete"]
    assert {g["id"] for g in h["guarantees"] if g["status"] == "violated"} == {"H-DELIVER-1"}
    lost = [g for g in h["guarantees"] if g["id"] == "H-DELIVER-1"][0]
    stored = {e["msg_id"]: e["offset"] for e in ev if e["kind"] == "message_stored"}
    assert lost["findings"] == 8
    assert {stored[x["key"]["msg"]] for x in lost["listed"]} == past


def test_java_sends_the_messages_past_the_ack_index_back_and_consumes_them():
    # the same scenario on 4.9.8's Java client: the contrast that makes Go's behaviour a loss
    ev = _events("ack-index-java.jsonl")
    assert ev[-1]["reason"] == "quiescent"
    first = [e for e in ev if e["kind"] == "consume_finished" and e["topic"] == "TopicAck"]
    assert {(e["status"], e["ack_index"]) for e in first} == {("CONSUME_SUCCESS", 1)}
    back = {e["offset"] for e in ev if e["kind"] == "send_back_requested" and e["topic"] == "TopicAck"}
    assert back == {o for e in first for o in e["offsets"][2:]}
    rc, h = _history("ack-index-java.jsonl")
    assert rc == 0 and h["verdict"] == "holds" and h["complete"]
