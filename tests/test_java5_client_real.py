"""The 5.x Java remoting client from Maven Central on real RocketMQ 5.5.0: upstream's
rocketmq-client 5.5.0 DefaultMQPushConsumer driven through the client driver protocol by
clients/java5 (`make java5-client`), recorded with `rocketspec record --client --release 5.5.0`
(marker `real`: about 40 s).

Facts of the run, read from the broker's exact events and the client's reports: the clients the
broker registered are the ones that reported; every produced message reaches a listener with
the id the broker stored; the failed calls' retry copies come back from %RETRY% with their
origin's id; the run's timing knob reached the library; check (at the trace's level) and the
black-box history hold. Skips without Java or the pinned 5.5.0 jars, unless
ROCKETSPEC_REQUIRE_REAL=1 (then a failure)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from test_java5_client_launcher import java5_client  # noqa: F401  (the fixture: make java5-client)

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin" / "rocketspec"
pytestmark = pytest.mark.real


def test_real_basic_through_the_java5_client(java5_client, tmp_path):  # noqa: F811
    out = tmp_path / "java5-basic.jsonl"
    r = subprocess.run([str(BIN), "record", "--scenario", "real-basic", "--release", "5.5.0", "--client",
                        str(java5_client), "--out", str(out), "--keep", str(tmp_path / "run")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"record --client failed ({r.returncode}): {r.stdout[-1000:]} {r.stderr[-3000:]}"
    assert "real RocketMQ 5.5.0" in r.stdout
    ev = [json.loads(x) for x in out.read_text().splitlines()]
    assert ev[0]["observed"] == ["broker", "client_reports"]
    assert ev[0]["config"]["client_under_test"]["cmd"] == [str(java5_client)]
    started = [e for e in ev if e["kind"] == "client_started"]
    # the library's ids (ClientConfig.buildMQClientId: clientIP@instanceName), as the broker registered them
    assert sorted(e["client"] for e in started) == ["127.0.0.1@c1", "127.0.0.1@c2"]
    assert {e["client"] for e in ev if e["kind"] == "consumer_registered"} == {"127.0.0.1@c1", "127.0.0.1@c2"}
    for e in started:
        # real-basic's [real] rebalance_interval_ms = 2000 reached the library (its system property),
        # the batch size and offset persist interval of the start request too
        assert e["config"]["rebalance_interval_ms"] == 2000
        assert e["config"]["consume_message_batch_max_size"] == 1
        assert e["config"]["persist_consumer_offset_interval_ms"] == 1000
        assert e["subscriptions"] == {"%RETRY%GID_real_basic": {"type": "TAG", "expr": "*"},
                                      "TopicTest": {"type": "TAG", "expr": "*"}}
    stored = {(e["topic"], e["queue"], e["offset"]): e["msg_id"] for e in ev if e["kind"] == "message_stored"}
    sent = {k: v for k, v in stored.items() if k[0] == "TopicTest"}
    assert len(sent) == 40
    first, retried = {}, []
    for e in ev:
        if e["kind"] != "consume_started":
            continue
        assert e["client"] in {"127.0.0.1@c1", "127.0.0.1@c2"}
        for off, mid, origin, n in zip(e["offsets"], e["msg_ids"], e["origin_msg_ids"], e["reconsume_list"]):
            # each call names the copy the broker stored at that queue offset
            assert stored[(e["topic"], e["queue"], off)] == mid
            if e["topic"] == "TopicTest":
                first[(e["topic"], e["queue"], off)] = mid
                assert origin == mid and n == 0
            else:
                assert e["topic"] == "%RETRY%GID_real_basic" and n >= 1
                retried.append(origin)
    assert first == sent        # every message reached a listener, with the id the broker stored
    assert set(retried) <= set(sent.values())   # a retry copy names the message it copies
    calls = {(e["client"], e["consume_id"]): e for e in ev if e["kind"] == "consume_finished"}
    assert set(calls) == {(e["client"], e["consume_id"]) for e in ev if e["kind"] == "consume_started"}
    statuses = {e["status"] for e in calls.values()}
    assert statuses <= {"CONSUME_SUCCESS", "RECONSUME_LATER"} and "CONSUME_SUCCESS" in statuses
    for args in (["check", str(out)], ["history", str(out)]):
        h = subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=300)
        assert h.returncode == 0, h.stdout[-3000:] + h.stderr[-1000:]
    chk = subprocess.run([str(BIN), "check", str(out)], capture_output=True, text=True, timeout=300).stdout
    assert "observed broker, client_reports" in chk and "rules not judged" in chk
