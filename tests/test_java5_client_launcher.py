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
