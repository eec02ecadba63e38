"""Traces of upstream's rocketmq-client-go v2.1.2 on real RocketMQ 4.9.8, recorded through the
client driver protocol (`rocketspec record --client build/go-client/rocketspec-go-client`;
docs/notes/go-client.md), judged at the black-box level."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GO = Path(__file__).parent / "fixtures" / "real" / "go"


def history(name: str) -> tuple[int, dict]:
    r = subprocess.run([str(ROOT / ".venv" / "bin" / "rocketspec"), "history", str(GO / name), "--json"],
                       capture_output=True, text=True, timeout=300)
    return r.returncode, json.loads(r.stdout)


def test_go_orderly_delivers_once_more_than_max_reconsume_times():
    # Go's orderly checkReconsumeTimes sends a message back only when its count is > max (4.9.8's
    # Java client: >=), so each poison message reaches the listener with counts 0, 1, 2 and 3
    # under maxReconsumeTimes = 2 before it is dead-lettered: H-RETRY-1, a lost guarantee.
    rc, h = history("real-orderly-dlq.jsonl")
    assert rc == 1
    status = {g["id"]: g["status"] for g in h["guarantees"]}
    assert status["H-RETRY-1"] == "violated"
    assert {g["id"] for g in h["guarantees"] if g["status"] == "violated"} == {"H-RETRY-1"}
    over = [g for g in h["guarantees"] if g["id"] == "H-RETRY-1"][0]
    assert over["findings"] == 6 and all("reconsume_times 3 > maxReconsumeTimes 2" in x["message"] for x in over["listed"])
    # the trace's own facts: six poison messages, each given to the listener four times
    ev = [json.loads(x) for x in (GO / "real-orderly-dlq.jsonl").read_text().splitlines()]
    counts = sorted(n for e in ev if e["kind"] == "consume_started" for n in e["reconsume_list"] if n > 0)
    assert counts == [1] * 6 + [2] * 6 + [3] * 6
    assert sum(e["kind"] == "message_dead_lettered" for e in ev) == 6


def test_go_concurrent_basic_holds_once_the_retry_route_is_polled():
    # real-basic with a 60 s drain: the retry copies reach the Go listener only after the
    # library's 30 s route poll, then everything is consumed and the run is quiescent
    rc, h = history("real-basic-long.jsonl")
    assert rc == 0 and h["verdict"] == "holds"
    ev = [json.loads(x) for x in (GO / "real-basic-long.jsonl").read_text().splitlines()]
    assert ev[-1]["reason"] == "quiescent"
    t_delivered = min(e["ts"] for e in ev if e["kind"] == "schedule_delivered")
    t_consumed = min(e["ts"] for e in ev if e["kind"] == "consume_started" and e["topic"].startswith("%RETRY%"))
    assert t_consumed - t_delivered > 30_000
