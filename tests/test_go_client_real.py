"""A client rocketspec did not write, on real RocketMQ 4.9.8: upstream's rocketmq-client-go v2
(pinned in clients/go/go.mod) driven through the client driver protocol by clients/go
(`make go-client`), recorded with `rocketspec record --client` (marker `real`: about 35 s).

Facts of the run, read from the broker's exact events and the client's reports: every produced
message reaches the Go client's listener, as the broker stored it; the black-box history holds.
Skips without Java, RocketMQ or Go, unless ROCKETSPEC_REQUIRE_REAL=1 (then a failure)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from test_real_runs import real_env  # noqa: F401  (the fixture: Java and RocketMQ at hand)

ROOT = Path(__file__).resolve().parent.parent
CLIENT = ROOT / "build" / "go-client" / "rocketspec-go-client"
pytestmark = pytest.mark.real


@pytest.fixture(scope="module")
def go_client():
    if shutil.which("go") is None:
        if os.environ.get("ROCKETSPEC_REQUIRE_REAL") == "1":
            pytest.fail("ROCKETSPEC_REQUIRE_REAL=1 but Go is not on PATH (make go-client needs it)")
        pytest.skip("the Go client is not built: Go is not on PATH")
    r = subprocess.run(["make", "-s", "-C", str(ROOT), "go-client"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"make go-client failed: {r.stderr[-2000:]}"
    return CLIENT


def test_real_basic_through_the_go_client(real_env, go_client, tmp_path):  # noqa: F811
    out = tmp_path / "go-basic.jsonl"
    r = subprocess.run([str(ROOT / ".venv" / "bin" / "rocketspec"), "record", "--scenario", "real-basic", "--client",
                        str(go_client), "--out", str(out), "--keep", str(tmp_path / "run")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"record --client failed ({r.returncode}): {r.stderr[-3000:]}"
    ev = [json.loads(x) for x in out.read_text().splitlines()]
    assert ev[0]["config"]["client_under_test"]["observed"] == "client_reports"
    assert ev[0]["observed"] == ["broker", "client_reports"]      # the schema's own field
    started = [e for e in ev if e["kind"] == "client_started"]
    assert len(started) == 2
    # the Go library's own timing, reported by the client as the config in force
    assert {e["config"]["rebalance_interval_ms"] for e in started} == {20000}
    ids = {e["client"] for e in started}
    # the broker registered the very clients that reported (the ids the Go library built)
    assert {e["client"] for e in ev if e["kind"] == "consumer_registered"} == ids
    stored = {(e["queue"], e["offset"]): e["msg_id"] for e in ev
              if e["kind"] == "message_stored" and e["topic"] == "TopicTest"}
    assert len(stored) == 40
    consumed = {}
    for e in ev:
        if e["kind"] == "consume_started" and e["topic"] == "TopicTest":
            assert e["client"] in ids
            for off, mid in zip(e["offsets"], e["msg_ids"]):
                consumed[(e["queue"], off)] = mid
    assert consumed == stored       # each message reached a listener, with the id the broker stored
    def calls(kind):
        return {(e["client"], e["consume_id"]) for e in ev if e["kind"] == kind}
    assert calls("consume_finished") == calls("consume_started")
    h = subprocess.run([str(ROOT / ".venv" / "bin" / "rocketspec"), "history", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert h.returncode == 0, h.stdout + h.stderr
