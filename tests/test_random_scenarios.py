"""The random scenario generator (conformance/random_scenarios.py), the real-run oracle's pieces
(conformance/store_contents.py, conformance/real_random.py) and `rocketspec record --random`.

Every generated scenario must validate, be accepted by `rocketspec record` (the recorder runs
it) and simulate on the reference under both release profiles to a trace `check` reads; its
verdict there is recorded, not required. Two small seeded random runs on real RocketMQ run when
Java and RocketMQ are at hand (as test_real_runs' end-to-end test); `make test-real-random`
runs many.
"""
from __future__ import annotations

import collections
import json
import struct
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketspec.commands.record import build_plan
from rocketspec.conformance import real_random
from rocketspec.conformance.random_scenarios import generate, history_groups
from rocketspec.conformance.store_contents import (BLANK_MAGIC_CODE, MESSAGE_MAGIC_CODE, StoreReadError,
                                                   read_commit_log)
from rocketspec.conformance.verdicts import validate_checked
from rocketspec.reference.runner import run_to_list
from rocketspec.rocketmq.profiles import get_profile
from rocketspec.spec.replay import check_events

from test_real_runs import real_env  # noqa: F401  (the fixture: skip, or fail under ROCKETSPEC_REQUIRE_REAL=1)

ROOT = Path(__file__).resolve().parent.parent
RELEASES = ("rocketmq-4.9.8", "rocketmq-5.3.3")


# ---------------------------------------------------------------------- the generator
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), small=st.booleans())
def test_every_scenario_validates_records_and_simulates(seed, small):
    raw = generate(seed, small)
    sc = validate_checked(json.loads(json.dumps(raw)), f"random-{seed}")   # as the file is read back
    build_plan(sc, seed, 60, Path("."), Path("."))   # RecordError if the recorder could not run it
    for profile in RELEASES:
        events = run_to_list(sc, seed, get_profile(profile))
        assert events[-1]["kind"] == "trace_ended"
        rep = check_events(enumerate(events, 1), get_profile(profile))
        assert rep.events == len(events) and rep.ended == events[-1]["reason"]


def test_one_scenario_per_seed():
    assert generate(7) == generate(7)
    assert generate(7) != generate(8)
    assert generate(7, small=True) == generate(7, small=True)


def _features(sc: dict) -> set:
    f = set()
    for g in sc["groups"]:
        f |= {g["consume_mode"], g["message_model"], g["strategy"], g["consume_from_where"]}
        f.add(f"max_reconsume_times={g['max_reconsume_times']}")
        if g["consume_message_batch_max_size"] > 1:
            f.add("batch")
        if "pull_threshold_for_queue" in g or "pull_threshold_for_topic" in g:
            f.add("flow control")
        lst = g["listener"]
        for k in ("fail_rate", "null_rate", "exception_rate", "delay_level_when_next_consume", "suspend_ms",
                  "ack_index"):
            if k in lst:
                f.add(k)
        if g["consume_mode"] == "ORDERLY" and "fail_rate" in lst:
            f.add("SUSPEND")
        for rule in lst.get("rules", []):
            f.add("slow rule" if "duration_ms" in rule else "poison rule")
        for expr in g["subscriptions"].values():
            f.add("SQL92" if isinstance(expr, dict) else ("all" if expr == "*" else "tags"))
    if len(sc["groups"]) > 1:
        f.add("several groups")
    starts = collections.Counter()
    for s in sc["steps"]:
        f.add(s["action"])
        if s["action"] == "start":
            starts[s["client"]] += 1
            if s["at_ms"] > 0:
                f.add("join")
        if s["action"] == "pause":
            f.add("long pause" if s["duration_ms"] > real_random_margin() else "short pause")
    if any(n > 1 for n in starts.values()):
        f.add("restart")
    if "server_channel_max_idle_s" in sc["real"]:
        f.add("idle close")
    return f


def real_random_margin():
    from rocketspec.conformance.random_scenarios import LEASE_MARGIN_MS
    return LEASE_MARGIN_MS


def test_the_generator_covers_the_mechanism_space():
    seen = set().union(*(_features(generate(s)) for s in range(300)))
    want = {"CONCURRENTLY", "ORDERLY", "CLUSTERING", "BROADCASTING", "AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH",
            "CONSUME_FROM_FIRST_OFFSET", "CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_TIMESTAMP",
            "max_reconsume_times=-1", "max_reconsume_times=0", "max_reconsume_times=3", "batch", "flow control",
            "fail_rate", "null_rate", "exception_rate", "delay_level_when_next_consume", "suspend_ms", "SUSPEND",
            "slow rule", "poison rule", "SQL92", "tags", "all", "several groups", "start", "join", "shutdown",
            "crash", "restart", "short pause", "long pause", "produce", "reset_offset", "ack_index", "idle close"}
    assert want - seen == set()


def test_the_generator_never_emits_what_real_runs_cannot_do():
    restarted_after_kill = 0
    for s in range(300):
        sc = generate(s)
        assert sc["brokers"] if "brokers" in sc else True
        assert all(st_["action"] in ("start", "shutdown", "crash", "pause", "produce", "reset_offset")
                   for st_ in sc["steps"])
        assert all(st_.get("mode", "kill") == "kill" for st_ in sc["steps"] if st_["action"] == "crash")
        assert all(isinstance(st_.get("tags", ""), str) for st_ in sc["steps"] if st_["action"] == "produce")
        # ackIndex only on a concurrent group's batches, within -1 .. batch - 1
        assert all(g["consume_mode"] == "CONCURRENTLY" and -1 <= g["listener"]["ack_index"]
                   < g["consume_message_batch_max_size"] for g in sc["groups"] if "ack_index" in g["listener"])
        # the broker's idle close: a pause past it, and none near it (the close would race the thaw)
        idle = sc["real"].get("server_channel_max_idle_s")
        if idle is not None:
            pauses = [x["duration_ms"] for x in sc["steps"] if x["action"] == "pause"]
            assert 3 <= idle <= 5 and any(d >= idle * 1000 + 1000 for d in pauses), (s, idle, pauses)
            assert not any(idle * 1000 - 1500 < d < idle * 1000 + 1000 for d in pauses), (s, idle, pauses)
        # a reset: see test_resets_come_in_the_shapes_resetoffset_may_refuse
        # a killed client may start again (each of its JVM lives writes its own trace part)
        killed = set()
        for x in sc["steps"]:
            restarted_after_kill += x["action"] == "start" and x["client"] in killed
            if x["action"] == "crash":
                killed.add(x["client"])
        # a group keeps a consumer to the end: its first client never stops or is killed
        for g in sc["groups"]:
            first = next(x["client"] for x in sc["steps"] if x["action"] == "start" and x["group"] == g["name"])
            assert not any(x["action"] in ("shutdown", "crash") and x["client"] == first for x in sc["steps"])
    assert restarted_after_kill, "no killed client started again in 300 seeds"


def _reset_not_online(sc: dict, x: dict):
    """Why the reset step `x` would fail the driver, restated from 4.9.8's Broker2Client.resetOffset
    apart from the generator's own rule: a broadcasting group (the broker holds no offset of it:
    always refused, so a reset of it tests nothing) or a group with no client registered then
    (CONSUMER_NOT_ONLINE, which the driver does not take as a refusal). None when neither."""
    g = next(g for g in sc["groups"] if g["name"] == x["group"])
    if g["message_model"] != "CLUSTERING":
        return "a broadcasting group"
    own = {y["client"] for y in sc["steps"] if y["action"] in ("crash", "pause")}
    idle = sc["real"].get("server_channel_max_idle_s")
    for y in sc["steps"]:
        if y["action"] != "start" or y["group"] != g["name"] or \
                y["at_ms"] + (4000 if y["client"] in own else 1000) > x["at_ms"]:
            continue
        if any(z.get("client") == y["client"] and z["action"] in ("shutdown", "crash")
               and y["at_ms"] <= z["at_ms"] <= x["at_ms"] for z in sc["steps"]):
            continue
        if idle and any(z.get("client") == y["client"] and z["action"] == "pause"
                        and z["at_ms"] <= x["at_ms"] <= z["at_ms"] + z["duration_ms"] + 2000
                        and z["duration_ms"] > idle * 1000 - 2000 for z in sc["steps"]):
            continue
        return None
    return "no client of the group registered at the reset"


def test_resets_come_in_the_shapes_resetoffset_may_refuse():
    """The driver records a reset 4.9.8 refuses for a queue with no offset of the group
    (run/refused-steps.json), so the generator resets groups reading part of a topic, topics of
    sharding-keyed producers and groups just started, which a522067 left out; never a group with
    no client online, which would fail the driver."""
    resets, shapes = 0, collections.Counter()
    for s in range(600):
        for small in (False, True):
            sc = generate(s, small)
            for x in sc["steps"]:
                if x["action"] != "reset_offset":
                    continue
                resets += 1
                assert _reset_not_online(sc, x) is None, (s, small, x, _reset_not_online(sc, x))
                g = next(g for g in sc["groups"] if g["name"] == x["group"])
                p = next(p for p in sc["producers"] if p["topic"] == x["topic"])
                shapes["filtered"] += g["subscriptions"][x["topic"]] != "*"
                shapes["keyed"] += bool(p.get("sharding_keys"))
                shapes["orderly"] += g["consume_mode"] == "ORDERLY"
                shapes["paused group"] += any(y["action"] == "pause" and y["at_ms"] < x["at_ms"] for y in sc["steps"])
    assert resets >= 200
    assert all(shapes[k] >= 20 for k in ("filtered", "keyed", "orderly", "paused group")), shapes


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**63 - 1), small=st.booleans())
def test_every_reset_has_a_client_online(seed, small):
    sc = generate(seed, small)
    for x in sc["steps"]:
        if x["action"] == "reset_offset":
            assert _reset_not_online(sc, x) is None, _reset_not_online(sc, x)


def test_history_groups_declare_what_message_traces_lack():
    sc = generate(3)
    groups = history_groups(sc)
    assert set(groups) == {g["name"] for g in sc["groups"]}
    assert all(set(v) == {"consume_mode", "message_model", "max_reconsume_times", "subscriptions"}
               for v in groups.values())


# ---------------------------------------------------------------------- the store reader
def _entry(topic: str, queue_id: int, queue_offset: int, phys: int, reconsume: int, props: dict,
           store_ts: int = 2000) -> bytes:
    body = b"xyz"
    ptext = "".join(f"{k}\x01{v}\x02" for k, v in props.items()).encode()
    t = topic.encode()
    rest = (struct.pack(">iiqqiq", queue_id, 0, queue_offset, phys, 0, 1000) + b"\x7f\x00\x00\x01" + struct.pack(">i", 9)
            + struct.pack(">q", store_ts) + b"\x7f\x00\x00\x01" + struct.pack(">i", 10911)
            + struct.pack(">iqi", reconsume, 0, len(body)) + body + bytes([len(t)]) + t
            + struct.pack(">h", len(ptext)) + ptext)
    size = 4 + 4 + 4 + len(rest)
    return struct.pack(">iii", size, MESSAGE_MAGIC_CODE, 0) + rest


def test_commit_log_entries_read_as_4_9_8_writes_them(tmp_path):
    log = tmp_path / "commitlog"
    log.mkdir()
    a = _entry("Topic", 1, 0, 0, 0, {"UNIQ_KEY": "K1", "TAGS": "TagA"})
    b = _entry("%DLQ%G", 0, 0, len(a), 3, {"UNIQ_KEY": "K1"}, store_ts=5000)
    blank = struct.pack(">ii", 64, BLANK_MAGIC_CODE) + b"\0" * 56
    (log / "00000000000000000000").write_bytes(a + b + blank + b"\0" * 100)
    c = _entry("Topic", 1, 1, 1024, 0, {"UNIQ_KEY": "K2"})
    (log / "00000000000000001024").write_bytes(c + b"\0" * 50)
    ms = read_commit_log(tmp_path)
    assert [(m.topic, m.queue_id, m.queue_offset, m.reconsume_times, m.properties.get("UNIQ_KEY")) for m in ms] == [
        ("Topic", 1, 0, 0, "K1"), ("%DLQ%G", 0, 0, 3, "K1"), ("Topic", 1, 1, 0, "K2")]
    assert ms[1].store_ts == 5000 and ms[0].properties["TAGS"] == "TagA"


def test_a_commit_log_that_is_not_4_9_8s_is_refused(tmp_path):
    with pytest.raises(StoreReadError):
        read_commit_log(tmp_path)
    (tmp_path / "commitlog").mkdir()
    (tmp_path / "commitlog" / "00000000000000000000").write_bytes(struct.pack(">ii", 40, 12345) + b"\0" * 40)
    with pytest.raises(StoreReadError, match="bad entry"):
        read_commit_log(tmp_path)


# ---------------------------------------------------------------------- classification
def _oracle(complete=True, **status):
    ids = ("H-DELIVER-1", "H-RETRY-1", "H-RETRY-2", "H-RETRY-3", "H-ORDER-1", "H-ORDER-2", "H-DUP-1")
    default = {"H-DELIVER-1": "holds", "H-RETRY-1": "holds", "H-RETRY-3": "holds"}
    return {"complete": complete, "guarantees": [
        {"id": g, "status": status.get(g.replace("-", "_"), default.get(g, "skipped"))} for g in ids]}


def test_classification():
    c = real_random.classify
    assert c({}, _oracle()) == ("agreed", [])
    # both fail on the same loss
    assert c({"INV-LOSS-1": 2}, _oracle(H_DELIVER_1="violated")) == ("agreed", ["H-DELIVER-1"])
    # a loss the oracle sees and check does not report
    assert c({}, _oracle(H_DELIVER_1="violated")) == ("missed loss", ["H-DELIVER-1"])
    assert c({"INV-OFFSET-1": 1}, _oracle(H_RETRY_1="violated")) == ("missed loss", ["H-RETRY-1"])
    # check fails on an effect the oracle judges, and the oracle holds
    assert c({"INV-RETRY-1": 1, "INV-OFFSET-1": 4}, _oracle()) == ("false alarm", ["INV-RETRY-1"])
    assert c({"INV-LIVE-1": 1}, _oracle()) == ("false alarm", ["INV-LIVE-1"])
    # a lossy oracle cannot see a loss: a loss invariant alone is white-box only
    assert c({"INV-LIVE-1": 1}, _oracle(complete=False)) == ("finding", ["INV-LIVE-1"])
    # internal state and orderly duplicates the message traces cannot show
    assert c({"INV-OFFSET-1": 3, "INV-ORDER-3": 1}, _oracle()) == ("finding", ["INV-OFFSET-1", "INV-ORDER-3"])
    assert c({real_random.CHECK_REFUSED: 1}, _oracle()) == ("false alarm", [real_random.CHECK_REFUSED])
    # both see the DLQ detour; a loss check reports beside it is judged on its own
    both = {"INV-DLQ-1": 11, "INV-LIVE-1": 1}
    assert c(both, _oracle(H_RETRY_3="violated")) == ("false alarm", ["INV-LIVE-1"])
    # ... unless it concerns what the message traces cannot show (a broadcasting group's consumer)
    assert c(both, _oracle(H_RETRY_3="violated"), {"INV-LIVE-1"}) == ("finding", ["INV-LIVE-1"])


def test_violations_of_broadcasting_groups_are_unseen_by_message_traces():
    sc = {"groups": [{"name": "B", "message_model": "BROADCASTING"}, {"name": "C"}]}
    v = lambda inv, g: {"invariant": inv, "key": {"group": g}}  # noqa: E731
    chk = {"counts": {"INV-LIVE-1": 2, "INV-LOSS-1": 2, "INV-DLQ-1": 3},
           "violations": [v("INV-LIVE-1", "B"), v("INV-LIVE-1", "B"), v("INV-LOSS-1", "B"), v("INV-LOSS-1", "C"),
                          v("INV-DLQ-1", "B"), v("INV-DLQ-1", "B")]}
    # INV-DLQ-1: one of its 3 violations is not listed, so it is not known to be unseen
    assert real_random.unseen_invariants(chk, sc) == {"INV-LIVE-1"}


def test_exit_code_and_table():
    R = real_random.RunResult
    ok = [R(1, "agreed"), R(2, "finding", {"INV-OFFSET-1": 1}, blamed=["INV-OFFSET-1"])]
    assert real_random.exit_code(ok) == 0
    assert real_random.exit_code(ok + [R(3, "incomplete")]) == 4
    assert real_random.exit_code(ok + [R(3, "incomplete"), R(4, "false alarm", blamed=["INV-LIVE-1"])]) == 1
    assert real_random.exit_code([R(5, "missed loss", blamed=["H-DELIVER-1"])]) == 1
    assert real_random.exit_code(ok + [R(3, "incomplete"), R(6, "error")]) == 3
    table = real_random.render_table(ok + [R(4, "false alarm", {"INV-LIVE-1": 2}, blamed=["INV-LIVE-1"])])
    assert "| 3 | 1 | 0 | 1 | 0 | 1 | 0 | 0 |" in table
    assert "false alarms by invariant: INV-LIVE-1 1 (seeds 4)" in table
    assert "white-box-only findings by invariant: INV-OFFSET-1 1 (seeds 2)" in table


# ---------------------------------------------------------------------- the command
@pytest.mark.parametrize("args, says", [
    (["--random", "2", "--scenario", "real-basic"], "--scenario does not go with --random"),
    (["--random", "2", "--msgtrace", "m.txt"], "--msgtrace does not go with --random"),
    (["--small"], "--small goes with --random"),
    ([], "give --scenario NAME_OR_FILE, or --random N"),
])
def test_record_random_refuses_bad_options(tmp_path, args, says):
    r = subprocess.run([str(ROOT / ".venv" / "bin" / "rocketspec"), "record", "--out", str(tmp_path / "o"), *args],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert says in r.stderr and "Traceback" not in r.stderr


def test_two_small_random_real_runs(real_env, tmp_path):
    """Two seeded random scenarios on real RocketMQ 4.9.8, end to end: recorded, checked, judged
    against RocketMQ's records, classified; the exit code follows the classes."""
    out = tmp_path / "runs"
    r = subprocess.run([str(ROOT / ".venv" / "bin" / "rocketspec"), "record", "--random", "2", "--seed", "4242",
                        "--small", "--out", str(out)], capture_output=True, text=True, timeout=900)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["runs"] == 2 and summary["incomplete"] == 0, r.stderr[-3000:]
    bad = summary["false alarm"] + summary["missed loss"]
    assert r.returncode == (1 if bad else 0), r.stderr[-3000:]
    assert "| runs | agreed | expected losses (breaks) | false alarms |" in r.stdout
    for seed in (4242, 4243):
        folder = out / f"seed-{seed}"
        for name in ("scenario.json", "trace.jsonl", "msgtrace.txt", "check.json", "history.json", "oracle.json",
                     "result.json"):
            assert (folder / name).stat().st_size > 0, name
        oracle = json.loads((folder / "oracle.json").read_text())
        assert oracle["produced"] > 0 and "dead_letters" in oracle["observes"]
        res = json.loads((folder / "result.json").read_text())
        assert res["class"] in real_random.CLASSES and res["ended"] in ("quiescent", "duration")


# ---------------------------------------------------------------------- the oracle
def _run_records(tmp_path, stored_only=(), model="CLUSTERING", topics=("TopicR", "TopicS")):
    """Message traces of an orderly group reading two topics whose producers use the same key
    names, and the store of that run (with `stored_only`: messages no Pub record names)."""
    from rocketspec.traces.history.msgtrace import encode_trace

    ev = []
    for topic, mid, ts in ((topics[0], "M1", 1000), (topics[1], "M2", 1010)):
        ev.append({"kind": "message_stored", "source": "producer", "ts": ts, "topic": topic, "msg_id": mid,
                   "tags": "TagA", "keys": "order-1", "broker": "broker-a", "offset": 0})
    # TopicS's message is delivered first: another stream than TopicR's, so no order is broken
    for n, (mid, ts) in enumerate((("M2", 1100), ("M1", 1200))):
        ev.append({"kind": "consume_started", "ts": ts, "client": "c1", "consume_id": n, "group": "G",
                   "msg_ids": [mid]})
        ev.append({"kind": "consume_finished", "ts": ts + 5, "client": "c1", "consume_id": n, "group": "G",
                   "status": "SUCCESS"})
    msgtrace = tmp_path / "msgtrace.txt"
    msgtrace.write_text("\n".join(encode_trace(ev)) + "\n")
    log = tmp_path / "store" / "commitlog"
    log.mkdir(parents=True)
    data, phys = b"", 0
    for topic, key in ((topics[0], "M1"), (topics[1], "M2"), *((topics[0], k) for k in stored_only)):
        e = _entry(topic, 0, 0, phys, 0, {"UNIQ_KEY": key})
        data, phys = data + e, phys + len(e)
    (log / "00000000000000000000").write_bytes(data + b"\0" * 64)
    sc = {"topics": [{"name": "TopicR"}, {"name": "TopicS"}], "steps": [],
          "producers": [{"topic": "TopicR", "sharding_keys": 4}, {"topic": "TopicS", "sharding_keys": 4}],
          "groups": [{"name": "G", "consume_mode": "ORDERLY", "message_model": model, "max_reconsume_times": 2,
                      "subscriptions": {"TopicR": "*", "TopicS": "*"}}]}
    return sc, msgtrace, tmp_path / "store"


def _status(rep):
    return {v.id: v.status for v in rep.verdicts}


def test_the_oracle_orders_each_topics_sharding_keys_apart(tmp_path):
    sc, msgtrace, store = _run_records(tmp_path)
    rep = real_random.oracle_report(sc, msgtrace, store, 0, True)
    assert _status(rep)["H-ORDER-2"] == "holds" and rep.history.complete
    assert _status(rep)["H-DELIVER-1"] == "holds" and "dead_letters" in rep.history.observes


def test_the_oracle_is_lossy_when_the_store_holds_a_message_no_pub_names(tmp_path):
    sc, msgtrace, store = _run_records(tmp_path, stored_only=("M3",))
    rep = real_random.oracle_report(sc, msgtrace, store, 0, True)
    assert rep.history.complete is False
    assert any("no Pub record" in n for n in rep.history.notes)


def test_the_oracle_gives_no_sharding_keys_to_an_orderly_broadcasting_groups_topic(tmp_path):
    # one topic, its second message delivered first: out of order for one stream of keys, but a
    # broadcasting group's streams are its consumers, which message-trace bodies do not name
    sc, msgtrace, store = _run_records(tmp_path, model="BROADCASTING", topics=("TopicR", "TopicR"))
    rep = real_random.oracle_report(sc, msgtrace, store, 0, True)
    assert _status(rep)["H-ORDER-2"] == "skipped"


def test_reclassify_reports_an_interrupted_run_as_incomplete(tmp_path):
    (tmp_path / "seed-7").mkdir()   # a run stopped before its result was written
    (tmp_path / "seed-7" / "scenario.json").write_text("{}")
    (tmp_path / "seed-3").mkdir()
    (tmp_path / "seed-3" / "result.json").write_text(json.dumps(
        real_random.RunResult(3, "incomplete", note="the driver failed").to_dict()))
    got = real_random.reclassify(tmp_path)
    assert [(r.seed, r.cls) for r in got] == [(3, "incomplete"), (7, "incomplete")]
    assert "interrupted" in got[1].note and real_random.exit_code(got) == 4


def _ack_index_records(tmp_path, ack_index, retried=True):
    """One concurrent call on a batch of M1..M3 that returns CONSUME_SUCCESS, the listener's
    ackIndex `ack_index`; then (`retried`) the %RETRY% copy 4.9.8 sends back for each message past
    it, consumed alone with reconsume count 1 (a batch of one: within any ackIndex >= 0). The
    message traces are written as 4.9.8's hook writes them: every message of a CONSUME_SUCCESS
    call's SubAfter says success."""
    from rocketspec.traces.history.msgtrace import encode_trace

    ids = ["M1", "M2", "M3"]
    ev = [{"kind": "message_stored", "source": "producer", "ts": 1000 + i, "topic": "TopicR", "msg_id": m,
           "tags": "TagA", "broker": "broker-a", "offset": i} for i, m in enumerate(ids)]
    ev.append({"kind": "consume_started", "ts": 1100, "client": "c1", "consume_id": 0, "group": "G", "msg_ids": ids})
    ev.append({"kind": "consume_finished", "ts": 1105, "client": "c1", "consume_id": 0, "group": "G",
               "status": "CONSUME_SUCCESS"})
    for n, m in enumerate(ids[ack_index + 1:] if retried else []):
        ev.append({"kind": "consume_started", "ts": 2200 + 10 * n, "client": "c1", "consume_id": 1 + n, "group": "G",
                   "msg_ids": [f"R-{m}"], "origin_msg_ids": [m], "reconsume_list": [1]})
        ev.append({"kind": "consume_finished", "ts": 2205 + 10 * n, "client": "c1", "consume_id": 1 + n, "group": "G",
                   "status": "CONSUME_SUCCESS"})
    msgtrace = tmp_path / "msgtrace.txt"
    msgtrace.write_text("\n".join(encode_trace(ev)) + "\n")
    log = tmp_path / "store" / "commitlog"
    log.mkdir(parents=True)
    data, phys = b"", 0
    for i, m in enumerate(ids):
        e = _entry("TopicR", 0, i, phys, 0, {"UNIQ_KEY": m})
        data, phys = data + e, phys + len(e)
    (log / "00000000000000000000").write_bytes(data + b"\0" * 64)
    sc = {"topics": [{"name": "TopicR"}], "steps": [], "producers": [{"topic": "TopicR"}],
          "groups": [{"name": "G", "consume_mode": "CONCURRENTLY", "message_model": "CLUSTERING",
                      "max_reconsume_times": 3, "consume_message_batch_max_size": 4,
                      "subscriptions": {"TopicR": "*"}, "listener": {"duration_ms": [1, 5], "ack_index": ack_index}}]}
    return sc, msgtrace, tmp_path / "store"


@pytest.mark.parametrize("ack_index", [-1, 0, 1, 2])
def test_the_oracle_reads_the_messages_past_ack_index_as_failed(tmp_path, ack_index):
    """4.9.8's ConsumeMessageTraceHookImpl writes success = (status == CONSUME_SUCCESS) for every
    message of a call, while processConsumeResult sends back those past ackIndex: the oracle takes
    the scenario's ackIndex, so each message's first delivery reads as what it was, and the
    retried ones are consumed by their copies."""
    sc, msgtrace, store = _ack_index_records(tmp_path, ack_index)
    rep = real_random.oracle_report(sc, msgtrace, store, 0, True)
    ok = {c.id: c.success for c in rep.history.consumes if c.reconsume_times == 0}
    assert ok == {m: i <= ack_index for i, m in enumerate(("M1", "M2", "M3"))}
    # (at -1 the copies' own calls fail too)
    failed = 2 - ack_index + (3 if ack_index == -1 else 0)
    assert any(f"{failed} delivery(ies) past the listener's ackIndex" in n for n in rep.history.notes)
    if ack_index >= 0:      # (at -1 every call fails, the copies' too)
        assert _status(rep)["H-DELIVER-1"] == "holds" and _status(rep)["H-RETRY-1"] == "holds"


def test_a_message_past_ack_index_never_redelivered_is_lost(tmp_path):
    """Read as the hook writes it (every message of the call a success), the message sent back
    past ackIndex and never delivered again would pass as consumed: a loss the oracle hid."""
    sc, msgtrace, store = _ack_index_records(tmp_path, 0, retried=False)
    rep = real_random.oracle_report(sc, msgtrace, store, 0, True)
    assert _status(rep)["H-DELIVER-1"] == "violated"
    lost = {f["key"]["msg"] for v in rep.to_dict()["guarantees"] if v["id"] == "H-DELIVER-1" for f in v["listed"]}
    assert lost == {"M2", "M3"}


def test_rejudge_reclassifies_a_folder_of_runs_and_refuses_anything_else(tmp_path):
    """`record --rejudge --out DIR` classifies earlier runs again without recording: the table and
    the exit code of --random; a folder without runs, or --rejudge with a scenario, is exit 2."""
    rs = str(ROOT / ".venv" / "bin" / "rocketspec")
    (tmp_path / "runs" / "seed-7").mkdir(parents=True)
    (tmp_path / "runs" / "seed-7" / "result.json").write_text(json.dumps(
        {"seed": 7, "class": "incomplete", "note": "the driver failed", "events": 0, "seconds": 1.0}))
    r = subprocess.run([rs, "record", "--rejudge", "--out", str(tmp_path / "runs")], capture_output=True, text=True)
    assert r.returncode == 4, r.stderr
    assert "| 1 | 0 | 0 | 0 | 0 | 0 | 1 | 0 |" in r.stdout and (tmp_path / "runs" / "table.md").exists()
    for args, says in ((["--out", str(tmp_path / "none")], "no folder of random runs"),
                       (["--out", str(tmp_path / "runs"), "--scenario", "real-basic"], "records nothing")):
        r = subprocess.run([rs, "record", "--rejudge", *args], capture_output=True, text=True)
        assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_a_run_whose_client_broke_the_protocol_is_incomplete_and_the_batch_goes_on(tmp_path):
    """A client program that broke the driver protocol in one run (random Go run 17036: a restarted
    client reported a listener call before `started`) raised out of run_one and ended the whole
    batch. That run is incomplete, with the reason, and the next run is made."""
    from rocketspec.traces.client_protocol import ProtocolError

    calls = []

    def record(scenario, out, timeout_s, seed, keep, msgtrace):
        calls.append(seed)
        raise ProtocolError("client g0c3: client-g0c3.life-2.proto line 1: 'consume_started' before 'started'")

    got = [real_random.run_one(record, s, tmp_path) for s in (1, 2)]
    assert calls == [1, 2] and [r.cls for r in got] == ["incomplete", "incomplete"]
    assert "'consume_started' before 'started'" in got[0].note
    assert json.loads((tmp_path / "seed-1" / "result.json").read_text())["class"] == "incomplete"
    assert real_random.exit_code(got) == 4
