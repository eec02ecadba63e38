"""`rocketspec record` without Java: what it refuses (exit 2), the plan it hands the driver,
and how it merges the trace parts of several JVMs."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from rocketspec.commands.record import RecordError, build_plan, merge_parts, record_cmd
from rocketspec.reference.scenario import load_scenario


def run(args, env=None):
    # Through the command line's one error path, as a user meets it.
    from rocketspec.cli import main

    return CliRunner().invoke(main, ["record", *args], env=env)


def test_unsupported_steps_are_refused_with_their_names(tmp_path):
    r = run(["--scenario", "faults", "--out", str(tmp_path / "t.jsonl")])
    assert r.exit_code == 2
    assert "cannot run on real RocketMQ" in r.output
    assert "restart_broker" in r.output or "oneway_loss" in r.output


def test_two_brokers_are_refused(tmp_path):
    r = run(["--scenario", "multi-broker", "--out", str(tmp_path / "t.jsonl")])
    assert r.exit_code == 2 and "one broker" in r.output


def test_missing_classpath_is_bad_configuration(tmp_path):
    r = run(["--scenario", "real-basic", "--out", str(tmp_path / "t.jsonl")],
            env={"ROCKETMQ_CLASSPATH": str(tmp_path / "nowhere" / "classpath.txt")})
    assert r.exit_code == 2 and "no such file" in r.output


def test_unknown_scenario_is_bad_input(tmp_path):
    r = run(["--scenario", "no-such-scenario", "--out", str(tmp_path / "t.jsonl")])
    assert r.exit_code == 2 and "no-such-scenario" in r.output


def test_a_silent_crash_is_refused_since_the_driver_kills(tmp_path):
    # The driver's crash is a SIGKILL (the broker sees the channel close); a scenario whose crash
    # means a cut-off host would mean something else on the real side.
    sc = load_scenario("real-kill")
    plan = build_plan(sc, 1, 60, tmp_path, tmp_path / "parts")
    assert plan["separate_clients"] == ["c2"]
    for mode in ("silent", None):
        crash = next(s for s in sc["steps"] if s["action"] == "crash")
        crash.pop("mode")
        if mode:
            crash["mode"] = mode
        with pytest.raises(RecordError) as exc:
            build_plan(sc, 1, 60, tmp_path, tmp_path / "parts")
        assert "steps[2] (crash, mode silent)" in str(exc.value) and 'mode = "kill"' in str(exc.value)
        crash["mode"] = "kill"


def test_plan_runs_killed_and_frozen_clients_in_their_own_jvm(tmp_path):
    plan = build_plan(load_scenario("real-freeze"), 1, 60, tmp_path, tmp_path / "parts")
    assert plan["separate_clients"] == ["c2"]
    assert plan["broker"]["server_channel_max_idle_s"] == 4
    plan = build_plan(load_scenario("real-orderly-takeover"), 1, 60, tmp_path, tmp_path / "parts")
    assert "-Drocketmq.broker.rebalance.lockMaxLiveTime=6000" in plan["jvm_args"]
    assert "-Drocketmq.client.rebalance.lockMaxLiveTime=3000" in plan["jvm_args"]
    assert plan["groups"]["GID_real_takeover"]["config"]["consume_mode"] == "ORDERLY"


def test_merge_orders_parts_by_clock_and_cuts_at_the_end(tmp_path):
    def part(name, events):
        (tmp_path / name).write_text("".join(json.dumps(e) + "\n" for e in events))

    part("driver.jsonl", [{"seq": 0, "ts": 1, "kind": "trace_started", "_t": 1_000_000},
                          {"seq": 1, "ts": 3, "kind": "trace_ended", "reason": "quiescent", "_t": 3_000_000}])
    part("client-c1.jsonl", [{"seq": 0, "ts": 2, "kind": "client_started", "_t": 2_000_000},
                             {"seq": 1, "ts": 4, "kind": "client_stopped", "_t": 4_000_000}])
    (tmp_path / "client-c2.jsonl").write_text('{"seq": 0, "ts": 2, "kind": "pull_iss')   # killed mid-line
    out = merge_parts(tmp_path)
    assert [e["kind"] for e in out] == ["trace_started", "client_started", "trace_ended"]
    assert [e["seq"] for e in out] == [0, 1, 2]
    assert all("_t" not in e for e in out)


def test_merge_keeps_every_life_of_a_client_in_order(tmp_path):
    # A killed client started again runs in a new JVM, which writes its own part
    # (client-NAME.life-N.jsonl): the first life's events stay, and the lives merge in order
    # (life 10 after life 9), ties in the clock broken by life.
    from rocketspec.commands.record import part_order

    def part(name, events):
        (tmp_path / name).write_text("".join(json.dumps(e) + "\n" for e in events))

    part("driver.jsonl", [{"seq": 0, "ts": 1, "kind": "trace_started", "_t": 1_000_000},
                          {"seq": 1, "ts": 5, "kind": "client_crashed", "client": "127.0.0.1@c2", "_t": 5_000_000},
                          {"seq": 2, "ts": 9, "kind": "trace_ended", "reason": "quiescent", "_t": 9_000_000}])
    part("client-c2.life-1.jsonl", [{"seq": 0, "ts": 2, "kind": "client_started", "life": 1, "_t": 2_000_000},
                                    {"seq": 1, "ts": 3, "kind": "consume_started", "life": 1, "_t": 3_000_000}])
    part("client-c2.life-2.jsonl", [{"seq": 0, "ts": 6, "kind": "client_started", "life": 2, "_t": 6_000_000},
                                    {"seq": 1, "ts": 7, "kind": "tie", "life": 2, "_t": 7_000_000}])
    part("client-c2.life-10.jsonl", [{"seq": 0, "ts": 7, "kind": "tie", "life": 10, "_t": 7_000_000}])
    out = merge_parts(tmp_path)
    assert [(e["kind"], e.get("life")) for e in out] == [
        ("trace_started", None), ("client_started", 1), ("consume_started", 1), ("client_crashed", None),
        ("client_started", 2), ("tie", 2), ("tie", 10), ("trace_ended", None)]
    names = ["client-c2.life-10.jsonl", "driver.jsonl", "client-c1.life-1.jsonl", "client-c2.life-9.jsonl"]
    assert [n for n in sorted(names, key=lambda n: part_order(tmp_path / n))] == [
        "driver.jsonl", "client-c1.life-1.jsonl", "client-c2.life-9.jsonl", "client-c2.life-10.jsonl"]
