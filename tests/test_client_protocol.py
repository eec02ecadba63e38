"""The client driver protocol's reports (traces/client_protocol.py, docs/driver-protocol.md):
a good client life becomes the trace events it reports; every bad line is exit 2 naming the
client, the file and line, and what was expected; `record --client` refuses a missing program."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from rocketspec.traces import client_protocol as cp

ROOT = Path(__file__).resolve().parent.parent
T0 = 1_796_607_297_929_361_843
START = {"consume_mode": "CONCURRENTLY", "message_model": "CLUSTERING", "rebalance_interval_ms": 2000,
         "subscriptions": {"TopicTest": {"type": "TAG", "expr": "*"}}}
MSG = {"offset": 7, "msg_id": "7F00000100008E97000000000000037E", "origin_msg_id": "7F00000100008E97000000000000037E",
       "reconsume_times": 0}


def life(tmp_path: Path, *reports) -> Path:
    path = tmp_path / "client-c1.life-1.proto"
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in reports))
    return path


def started(**kw):
    return {"type": "started", "ts_ns": T0, "client_id": "10.0.0.5@c1", "config": {"rebalance_interval_ms": 20000}} | kw


def call(i=1, t=1, **kw):
    return {"type": "consume_started", "ts_ns": T0 + t, "consume_id": i, "topic": "TopicTest", "broker": "broker-a",
            "queue": 2, "messages": [MSG]} | kw


def done(i=1, t=2, status="CONSUME_SUCCESS"):
    return {"type": "consume_finished", "ts_ns": T0 + t, "consume_id": i, "status": status}


def test_a_life_becomes_the_events_it_reports(tmp_path):
    cid, evs = cp.to_events(life(tmp_path, started(), call(), done(), {"type": "stopped", "ts_ns": T0 + 3}),
                            "c1", "G", START)
    assert cid == "10.0.0.5@c1"
    assert [e["kind"] for e in evs] == ["client_started", "client_start_returned", "consume_started", "consume_finished", "client_stopped"]
    st = evs[0]
    # the config in force is the client's word over what was asked; clustering adds the retry topic
    assert st["config"]["rebalance_interval_ms"] == 20000
    assert st["subscriptions"] == {"%RETRY%G": {"type": "TAG", "expr": "*"}, "TopicTest": {"type": "TAG", "expr": "*"}}
    assert evs[1] == {"seq": 0, "ts": T0 // 1_000_000, "kind": "client_start_returned", "client": "10.0.0.5@c1",
                      "group": "G", "_t": T0 + 1}
    c, f = evs[2], evs[3]
    assert (c["client"], c["group"], c["topic"], c["broker"], c["queue"]) == ("10.0.0.5@c1", "G", "TopicTest", "broker-a", 2)
    assert c["offsets"] == [7] and c["msg_ids"] == [MSG["msg_id"]] and c["reconsume_list"] == [0]
    assert f["offsets"] == [7] and f["status"] == "CONSUME_SUCCESS" and f["queue"] == 2
    # merge keys: the client's clock in ns, strictly increasing; ts in ms
    assert [e["_t"] for e in evs] == [T0, T0 + 1, T0 + 2, T0 + 3, T0 + 4]
    assert evs[0]["ts"] == T0 // 1_000_000
    assert all("obs" not in e for e in evs)    # listener calls are reported where they happen: exact


def test_equal_clocks_still_merge_in_line_order(tmp_path):
    _, evs = cp.to_events(life(tmp_path, started(), call(t=0), done(t=0)), "c1", "G", START)
    assert [e["_t"] for e in evs] == [T0, T0 + 1, T0 + 2, T0 + 3]


BAD = [
    ("not json", "expected one JSON object per line"),
    ("[1, 2]", "expected a JSON object"),
    ({"type": "hello", "ts_ns": T0}, "expected 'type' to be one of started, consume_started"),
    ({"type": "stopped"}, "expected 'ts_ns', the wall clock in ns"),
    ({"type": "stopped", "ts_ns": "now"}, "expected 'ts_ns', the wall clock in ns"),
    ({"type": "started", "ts_ns": T0}, "started: expected 'client_id', a string"),
    (call(queue="2"), "consume_started: expected 'queue', an integer"),
    (call(messages=[]), "expected 'messages' to list the batch"),
    (call(messages=[{"offset": 1}]), "expected messages[0].msg_id, a string"),
    (call(messages=[MSG | {"offset": True}]), "expected messages[0].offset, an integer"),
    (done(status="OK"), "expected 'status' to be one of"),
]


@pytest.mark.parametrize("line,expected", BAD, ids=[b[1][:30] for b in BAD])
def test_a_bad_line_names_the_client_the_line_and_what_was_expected(tmp_path, line, expected):
    path = life(tmp_path, started(), line)
    with pytest.raises(cp.ProtocolError) as e:
        cp.to_events(path, "c1", "G", START)
    msg = str(e.value)
    assert msg.startswith("client c1: client-c1.life-1.proto line 2: ")
    assert expected in msg
    shown = line if isinstance(line, str) else json.dumps(line)
    shown = shown if len(shown) <= 200 else shown[:200] + "..."
    assert msg.endswith(f"; got {shown!r}")     # the line itself, as the client wrote it


@pytest.mark.parametrize("reports,expected", [
    ([call()], "line 1: 'consume_started' before 'started'"),
    ([started(), done(5)], "line 2: consume_finished: consume_id 5 was not started"),
    ([started(), call(), call()], "line 3: consume_started: consume_id 1 is already started"),
    ([started(), started()], "line 2: a second 'started'"),
    ([started(), {"type": "error", "ts_ns": T0, "message": "subscribe: no route"}],
     "line 2: the client reported an error: subscribe: no route"),
])
def test_reports_out_of_order_are_refused(tmp_path, reports, expected):
    with pytest.raises(cp.ProtocolError, match="client c1: client-c1.life-1.proto " + expected):
        cp.to_events(life(tmp_path, *reports), "c1", "G", START)


def test_protocol_errors_are_exit_2():
    from rocketspec.errors import UserError
    assert issubclass(cp.ProtocolError, UserError)


def test_convert_parts_names_driver_events_by_the_reported_client_id(tmp_path):
    plan = {"steps": [{"action": "start", "client": "c1", "group": "G"}],
            "groups": {"G": {"config": {"consume_mode": "CONCURRENTLY", "message_model": "CLUSTERING"},
                             "subscriptions": {"T": {"type": "TAG", "expr": "*"}}}},
            "client": {"heartbeat_broker_interval_ms": 1000}, "client_subscriptions": {}}
    life(tmp_path, started(), call())
    (tmp_path / "driver.jsonl").write_text(
        json.dumps({"seq": 5, "ts": 1, "kind": "client_crashed", "client": "127.0.0.1@c1", "group": "G", "_t": T0 + 9}) + "\n")
    assert cp.convert_parts(tmp_path, plan) == {"c1": "10.0.0.5@c1"}
    assert json.loads((tmp_path / "driver.jsonl").read_text())["client"] == "10.0.0.5@c1"
    part = [json.loads(x) for x in (tmp_path / "client-c1.life-1.jsonl").read_text().splitlines()]
    assert [e["kind"] for e in part] == ["client_started", "client_start_returned", "consume_started"]
    assert part[0]["config"]["heartbeat_broker_interval_ms"] == 1000


def test_record_refuses_a_client_program_that_is_not_there(tmp_path):
    r = subprocess.run([str(ROOT / ".venv" / "bin" / "rocketspec"), "record", "--scenario", "real-basic", "--out",
                        str(tmp_path / "t.jsonl"), "--client", str(tmp_path / "no-such-client")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert "no-such-client is not an executable file or a program on PATH" in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "t.jsonl").exists()


def test_record_random_refuses_a_client_program_that_is_not_there_before_any_run(tmp_path):
    r = subprocess.run([str(ROOT / ".venv" / "bin" / "rocketspec"), "record", "--random", "1", "--out",
                        str(tmp_path / "runs"), "--client", str(tmp_path / "no-such-client")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "no-such-client is not an executable file or a program on PATH" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "runs").exists()


def test_msgtrace_asks_the_client_program_for_its_librarys_message_trace():
    from rocketspec.commands.record import driver_env
    assert driver_env(["/bin/client"], "/tmp/m.txt")["ROCKETSPEC_MSGTRACE"] == "1"
    assert driver_env(["/bin/client"], None) is None and driver_env(None, "/tmp/m.txt") is None
