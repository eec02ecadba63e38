"""The Java 5.x client program's bad input (clients/java5, `make java5-client`): each refusal is
one driver-protocol `error` line on stdout, naming what was expected, and exit 2, never a Java
stack trace on the protocol stream. Quick (a JVM start per case, no broker); skips without a JDK
or the pinned 5.5.0 jars, unless ROCKETSPEC_REQUIRE_REAL=1."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from test_real_5x import _require
from rocketspec.traces import client_protocol

ROOT = Path(__file__).resolve().parent.parent
CLIENT = ROOT / "build" / "java5-client" / "rocketspec-java5-client"


@pytest.fixture(scope="module")
def java5_client():
    _require("5.5.0")
    r = subprocess.run(["make", "-s", "-C", str(ROOT), "java5-client"], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"make java5-client failed: {r.stderr[-2000:]}"
    return CLIENT


def run(argv, stdin: str, tmp_path: Path):
    r = subprocess.run([str(a) for a in argv], input=stdin, capture_output=True, text=True, timeout=120)
    lines = [x for x in r.stdout.splitlines() if x.strip()]
    assert len(lines) == 1, f"expected one protocol line on stdout, got {r.stdout!r} (stderr {r.stderr[-500:]!r})"
    rep = json.loads(lines[0])
    # a well-formed report: the checker rocketspec record runs accepts the line as written
    part = tmp_path / "client-c1.life-1.proto"
    part.write_text(lines[0] + "\n")
    assert client_protocol.read_reports(part, "c1")[0][1] == rep
    assert rep["type"] == "error" and "Exception" not in rep["message"]
    return r.returncode, rep["message"]


START = {"type": "start", "protocol": 1, "client": "c1", "group": "G", "namesrv": "127.0.0.1:1", "seed": 1,
         "subscriptions": {"T": {"type": "TAG", "expr": "*"}}, "config": {}, "listener": None}


@pytest.mark.parametrize("argv, stdin, expected", [
    (["--bogus"], "", 'unknown argument "--bogus" (known: --mutant NAME)'),
    (["--mutant", "nope"], "", 'unknown mutant "nope"; known: ack-before-listener, ack-failed'),
    ([], "", "stdin closed before the start request"),
    ([], "hello\n", 'first line: expected a start request (a JSON object with "type": "start"), got "hello"'),
    ([], json.dumps(START | {"protocol": 2}) + "\n", "start: protocol 2; this client speaks 1"),
    ([], json.dumps(START | {"group": ""}) + "\n", "start: expected 'group', a non-empty string"),
    ([], json.dumps(START | {"subscriptions": {}}) + "\n", "start: expected 'subscriptions'"),
    ([], json.dumps(START | {"config": {"strategy": "MACHINE_ROOM"}}) + "\n",
     "strategy MACHINE_ROOM is not driven by this program"),
    ([], json.dumps(START | {"config": {"client_type": "POP_PUSH"}}) + "\n",
     "client_type POP_PUSH is not driven by this program"),
])
def test_bad_input_is_one_error_line_and_exit_2(java5_client, tmp_path, argv, stdin, expected):
    rc, msg = run([java5_client, *argv], stdin, tmp_path)
    assert rc == 2
    assert expected in msg, msg


def test_a_launcher_without_the_pinned_jars_says_so(java5_client, tmp_path):
    # the launcher moved where no build/rocketmq-5.5.0 sits beside it
    moved = tmp_path / "build" / "java5-client"
    moved.mkdir(parents=True)
    shutil.copy(java5_client, moved / java5_client.name)
    rc, msg = run([moved / java5_client.name], "", tmp_path)
    assert rc == 2
    assert "the pinned RocketMQ 5.5.0 jars are not installed" in msg and "make rocketmq-jars" in msg


def test_the_gate_config_names_a_client_and_scenarios_the_gate_can_run(java5_client):
    """examples/java5-client/gate.toml as the gate reads it: the built launcher, release 5.5.0,
    every scenario runnable for real (the kill-while-consuming one beside it included)."""
    import tomllib

    from rocketspec.commands.record import build_plan
    from rocketspec.conformance import client_gate
    from rocketspec.conformance.verdicts import load_checked_scenario

    path = ROOT / "examples" / "java5-client" / "gate.toml"
    cl = client_gate.resolve(tomllib.loads(path.read_text())["client"], path.parent)
    cl = client_gate.validate(cl, str(path))
    assert cl["command"] == str(java5_client) and cl["release"] == "5.5.0" and cl["expect"] == {}
    assert [client_gate.label(s) for s in cl["scenarios"]] == [
        "real-basic", "real-retry-dlq", "real-orderly-dlq", "real-broadcast", "real-rebalance", "real-kill",
        "real-kill-consuming"]
    sc = load_checked_scenario(cl["scenarios"][-1])
    build_plan(sc, 1, 60.0, Path("."), Path("."))     # runnable on real RocketMQ
    crash = [st for st in sc["steps"] if st["action"] == "crash"]
    # the kill comes while the producer still sends
    assert crash[0]["at_ms"] == 20000 and sc["producers"][0]["count"] / sc["producers"][0]["rate_per_s"] * 1000 >= crash[0]["at_ms"]
