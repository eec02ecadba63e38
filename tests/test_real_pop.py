"""pop-basic recorded end to end on real RocketMQ 5.5.0 (it stands in for 5.5.1; issue 45), marker
`real` (`make test-real`): two push consumers in POP mode on a real broker, observed by the
recorder's POP hooks (docs/recorder.md, "POP"), and `check`'s verdict under rocketmq-5.5.1. About
70 s. Prerequisites as tests/test_real_5x.py (a JDK 17 and the pinned 5.5.0 jars)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import realfacts as f
from test_real_5x import BIN, _require, record

from rocketspec.rocketmq import pop


@pytest.mark.real
def test_pop_basic_on_5_5_0_end_to_end(tmp_path: Path):
    _require("5.5.0")
    out, ev = record("pop-basic", "5.5.0", tmp_path)
    assert ev[0]["schema_version"] >= 3 and ev[0]["profile"] == "rocketmq-5.5.1"   # the POP kinds: 3 on
    # RocketMQ's facts in the run: the broker answered the group's assignment in POP mode, every
    # queue at once (popShareQueueNum -1: queue -1); every produced message was popped and acked
    # with a handle that took effect, and the broker's handles are the ones the listener got
    assign = f.by_kind(ev, "assignment_answered", topic="TopicPop")
    assert assign and all(a["mode"] == "POP" and a["allocated"] == [["TopicPop", "broker-a", -1]] for a in assign)
    produced = {(e["queue"], e["offset"]) for e in f.by_kind(ev, "message_stored", topic="TopicPop")}
    acked = {(e["queue"], e["offset"]) for e in f.by_kind(ev, "message_acked", topic="TopicPop", result="acked")}
    revived = {(e["queue"], e["offset"]) for e in f.by_kind(ev, "message_revived", topic="TopicPop")}
    assert produced and produced == acked | revived
    retry = pop.pop_retry_topic("GID_pop", "TopicPop")
    copies = {e["target_offset"] for e in f.by_kind(ev, "message_revived")}
    assert all(e["target_topic"] == retry for e in f.by_kind(ev, "message_revived"))
    # each copy revive stored was acked, or failed again and was revived again
    done = {e["offset"] for e in f.by_kind(ev, "message_acked", topic=retry, result="acked")} | \
        {e["offset"] for e in f.by_kind(ev, "message_revived", topic=retry)}
    assert copies == done
    handles = {e["handle"] for e in f.by_kind(ev, "message_popped")}
    assert handles == {h for e in f.by_kind(ev, "pop_consume_started") for h in e["handles"]}
    r = subprocess.run([str(BIN), "check", "--profile", "rocketmq-5.5.1", str(out)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-1000:]
    assert "HOLDS" in r.stdout and "ended quiescent" in r.stdout


def _record_grpc(scenario: str, tmp_path: Path) -> tuple[Path, list[dict]]:
    """`scenario` recorded on real 5.5.0 through the gRPC client under test (built if missing)."""
    _require("5.5.0")
    root = Path(__file__).resolve().parent.parent
    client = root / "build" / "grpc-client" / "rocketspec-grpc-client"
    if not client.exists():
        r = subprocess.run(["make", "-s", "grpc-client"], cwd=root, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    out = tmp_path / "t.jsonl"
    r = subprocess.run([str(BIN), "record", "--scenario", scenario, "--release", "5.5.0", "--client",
                        str(client), "--out", str(out), "--keep", str(tmp_path / "run")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    return out, f.load(out)


@pytest.mark.real
def test_pop_retry_dlq_through_the_grpc_client_on_5_5_0(tmp_path: Path):
    """pop-retry-dlq with the gRPC client under test (clients/grpc-java, rocketmq-client-java
    5.2.0's SimpleConsumer) on real 5.5.0 with its proxy in local mode: the poison messages reach
    the DLQ through the proxy at maxAttempts (retryMaxTimes 2 + 1), each acked by the proxy, and
    check holds. Needs `make grpc-client` and the 5.5.0/proxy pin (`make rocketmq-jars`)."""
    out, ev = _record_grpc("pop-retry-dlq", tmp_path)
    dead = f.by_kind(ev, "pop_dead_lettered")
    assert dead and all(d["max_attempts"] == pop.proxy_max_attempts(2) == d["reconsume_times"] for d in dead)
    acks = {e["handle"] for e in f.by_kind(ev, "message_acked", reason="dead_lettered", result="acked")}
    assert {d["handle"] for d in dead} == acks
    r = subprocess.run([str(BIN), "check", "--profile", "rocketmq-5.5.1", str(out)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-1000:]
    assert "HOLDS" in r.stdout and "ended quiescent" in r.stdout


@pytest.mark.real
def test_pop_grpc_push_through_the_grpc_client_on_5_5_0(tmp_path: Path):
    """pop-grpc-push, gRPC PushConsumers (client_type GRPC_PUSH) through real 5.5.0's proxy: the
    FIFO client retries a failed message under one handle and forwards it to the DLQ after its
    third failure; check holds. About 40 s. The committed run is
    tests/fixtures/real/pop/pop-grpc-push-5.5.0.jsonl.gz."""
    out, ev = _record_grpc("pop-grpc-push", tmp_path)
    assert {c["config"]["client_type"] for c in f.by_kind(ev, "client_started")} == {"GRPC_PUSH"}
    assert f.by_kind(ev, "pop_dead_lettered", group="GID_gf")
    r = subprocess.run([str(BIN), "check", "--profile", "rocketmq-5.5.1", str(out)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-1000:]
    assert "HOLDS" in r.stdout and "ended quiescent" in r.stdout


@pytest.mark.real
def test_pop_fifo_attempts_through_the_grpc_client_on_5_5_0(tmp_path: Path):
    """pop-fifo-attempts through the gRPC client on real 5.5.0: the proxy gives the poison message the
    queue's minimum count of its receive's offsets (0, then 1 beside the fresh ones), so it reaches the
    listener a third time with max attempts 2, and check fails INV-POP-DLQ-1 (exit 1) naming that
    reading. About 65 s. The committed run is tests/fixtures/real/pop/pop-fifo-attempts-5.5.0.jsonl.gz."""
    out, ev = _record_grpc("pop-fifo-attempts", tmp_path)
    # the step's tags reached RocketMQ one per message (the driver once sent the list as a string)
    stored = f.by_kind(ev, "message_stored", topic="Orders")
    assert [e["tags"] for e in stored] == ["Poison", "Ok", "Ok", "Ok"]
    calls = f.by_kind(ev, "pop_consume_started")
    assert [c["reconsume_list"] for c in calls] == [[0], [0], [1]]
    r = subprocess.run([str(BIN), "check", "--profile", "rocketmq-5.5.1", str(out)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-1000:]
    assert "INV-POP-DLQ-1" in r.stdout and "the proxy in local mode reads" in r.stdout
