"""Real RocketMQ 4.9.8 runs recorded end to end (`rocketspec record`), and facts of them.

The facts are RocketMQ's, taken from the real run (every produced message is consumed, a killed
client is unregistered, ...), not the checker's verdict. One short scenario runs in the default
test run when Java and RocketMQ are at hand; `make test-real` runs them all (marker `real`).
Without Java or the RocketMQ sources these tests skip and say why, unless
ROCKETSPEC_REQUIRE_REAL=1 (CI), where a missing prerequisite is a failure.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

import realfacts as f

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "real"


def _missing() -> str | None:
    for tool in ("java", "javac"):
        if shutil.which(tool) is None:
            return f"{tool} is not on PATH (real runs need a JDK 17)"
    if os.environ.get("ROCKETMQ_CLASSPATH") or (ROOT / "build" / "rocketmq" / "classpath.txt").exists():
        return None
    shared = ROOT.parent / "shared" / "rocketmq" / "build.sh"
    if not shared.exists():
        return f"no RocketMQ: ROCKETMQ_CLASSPATH is unset and {shared} does not exist"
    r = subprocess.run(["make", "-s", "-C", str(ROOT), "rocketmq"], capture_output=True, text=True)
    if r.returncode != 0:
        return f"building RocketMQ from {shared.parent} failed: {r.stderr[-500:]}"
    return None


@pytest.fixture(scope="session")
def real_env():
    reason = _missing()
    if reason is not None:
        if os.environ.get("ROCKETSPEC_REQUIRE_REAL") == "1":
            pytest.fail(f"ROCKETSPEC_REQUIRE_REAL=1 but real runs are not possible: {reason}")
        pytest.skip(f"real RocketMQ runs skipped: {reason}")


def record(name: str, tmp_path: Path) -> list[dict]:
    out = tmp_path / f"{name}.jsonl"
    r = subprocess.run([str(ROOT / ".venv" / "bin" / "rocketspec"), "record", "--scenario", name, "--out", str(out),
                        "--keep", str(tmp_path / "run")], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"rocketspec record {name} failed ({r.returncode}): {r.stderr[-3000:]}"
    return f.load(out)


# ---------------------------------------------------------------------- facts per scenario
def facts_basic(ev):
    assert f.well_formed(ev) == []
    assert ev[-1]["reason"] == "quiescent"
    assert len(f.produced(ev)) == 40
    assert f.every_message_consumed(ev) == []
    assert f.stored_before_pulled(ev) == []
    assert f.pulls_end(ev) == []
    # The broker carries its real configuration; both clients registered and rebalanced.
    cfg = f.by_kind(ev, "broker_started")[0]["config"]
    assert cfg["message_delay_level"].split() == ["1s"] * 18
    assert len(f.by_kind(ev, "consumer_registered")) == 2
    # A failed call goes back through the schedule and is consumed again.
    backs = f.by_kind(ev, "message_sent_back")
    assert backs, "a 10% failure rate over 40 messages sent nothing back"
    retried = {e["origin_msg_id"] for e in f.by_kind(ev, "message_stored", source="schedule")}
    assert {b["origin_msg_id"] for b in backs} <= retried


def test_real_basic_end_to_end(real_env, tmp_path):
    """The smoke test of the default run: a two-consumer concurrent scenario on real 4.9.8."""
    facts_basic(record("real-basic", tmp_path))


# ---------------------------------------------------------------------- committed fixtures (no Java)
def fixtures():
    return sorted(FIXTURES.glob("*.jsonl"))


@pytest.mark.parametrize("path", fixtures(), ids=lambda p: p.stem)
def test_fixture_is_a_real_trace(path):
    ev = f.load(path)
    assert f.well_formed(ev) == []
    assert f.stored_before_pulled(ev) == []
    assert ev[0]["profile"] == "rocketmq-4.9.8"


def test_fixture_basic_facts():
    facts_basic(f.load(FIXTURES / "real-basic.jsonl"))
