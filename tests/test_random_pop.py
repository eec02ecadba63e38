"""POP random scenarios (conformance/random_scenarios.generate_pop; issue 45's random POP runs):
every one is valid, accepted by `rocketspec record`, and holds on the reference under
rocketmq-5.5.1 (the release the scenarios are drawn for, 5.5.0 standing in for it on real runs);
the generator covers each mechanism it draws, and the mechanisms take effect on the reference;
`record --random --pop` refuses what cannot run. One small seed is recorded on real 5.5.0 and
judged (marker `real`)."""
from __future__ import annotations

import collections
import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketspec.commands.record import build_plan
from rocketspec.conformance.random_scenarios import POP_LONG_INVISIBLE_MS, generate, generate_pop
from rocketspec.conformance.verdicts import validate_checked
from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import runs_under
from rocketspec.rocketmq.pop import client_invisible_time
from rocketspec.rocketmq.profiles import get_profile
from rocketspec.spec.replay import check_events

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin" / "rocketspec"
PROFILE = "rocketmq-5.5.1"


UNHEARD = "no listener call ever received the message"


def _errors(events, profile=PROFILE) -> dict:
    """check's errors, but for RocketMQ's own drop of a message whose every pop ran out before its
    listener call (processPopResult acks it past the limit unseen; real POP run 20201, 5.5.0):
    the reference does what RocketMQ does, and that loss is the spec's to report, each time with
    that cause (checked here)."""
    d = check_events(enumerate(events, 1), get_profile(profile), max_listed=10 ** 6).to_dict()
    unheard = [v for v in d["violations"] if v["invariant"] == "INV-POP-LOSS-1" and UNHEARD in v["message"]]
    errors = {v["invariant"] for v in d["violations"]}
    out = {k: n for k, n in d["counts"].items() if k in errors}
    if unheard and out.get("INV-POP-LOSS-1") == len(unheard):
        del out["INV-POP-LOSS-1"]
    return out


def _unheard(events, profile=PROFILE) -> int:
    d = check_events(enumerate(events, 1), get_profile(profile), max_listed=10 ** 6).to_dict()
    return sum(1 for v in d["violations"] if v["invariant"] == "INV-POP-LOSS-1" and UNHEARD in v["message"])


def _simulate(seed: int, small: bool, profile: str = PROFILE):
    raw = generate(seed, small, pop=True)
    sc = validate_checked(json.loads(json.dumps(raw)), f"random-pop-{seed}")   # as the file is read back
    build_plan(sc, seed, 60, Path("."), Path("."))   # RecordError if the recorder could not run it
    assert runs_under(sc, profile)
    return raw, run_to_list(sc, seed, get_profile(profile))


def test_pop_scenarios_of_200_seeds_are_valid_and_hold_on_the_reference():
    """Each scenario validates, `record` accepts it, and its reference run under rocketmq-5.5.1
    reaches quiescence and holds but for RocketMQ's drop of messages no listener call received
    (_errors); over the seeds the drawn mechanisms take effect (the reference pops, acks, changes
    invisible times, revives, skips a timed-out call, acks a copy past the limit unconsumed, and
    check reports that drop), so the scenarios exercise POP, not just start it."""
    seen = collections.Counter()
    for seed in range(200):
        raw, events = _simulate(seed, seed % 4 == 0)
        assert events[-1]["kind"] == "trace_ended" and events[-1]["reason"] == "quiescent", seed
        assert _errors(events) == {}, seed
        seen["dropped unheard"] += _unheard(events)
        for e in events:
            seen[e["kind"]] += 1
            if e["kind"] == "message_acked" and e.get("reason") == "max_reconsume":
                seen["acked past the limit"] += 1
            if e["kind"] == "pop_consume_finished" and e.get("timed_out"):
                seen["call outlived its handle"] += 1
            if e["kind"] == "message_dead_lettered":
                seen["ordinary group's DLQ"] += 1
    for kind in ("message_popped", "message_acked", "invisible_time_changed", "message_revived",
                 "pop_checkpoint_written", "assignment_answered", "acked past the limit",
                 "call outlived its handle", "consume_started", "ordinary group's DLQ", "dropped unheard"):
        assert seen[kind], kind


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), small=st.booleans())
def test_every_pop_scenario_holds_on_the_reference(seed, small):
    _, events = _simulate(seed, small)
    assert events[-1]["reason"] == "quiescent"
    assert _errors(events) == {}


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), small=st.booleans())
def test_every_pop_scenario_holds_on_the_reference_kv_path(seed, small):
    """`record --random --pop --pop-kv`: the same scenarios on the broker's RocksDB POP path, whose
    records stand for the checkpoints."""
    raw = generate(seed, small, pop=True, kv=True)
    sc = validate_checked(json.loads(json.dumps(raw)), f"random-pop-kv-{seed}")
    build_plan(sc, seed, 60, Path("."), Path("."))
    events = run_to_list(sc, seed, get_profile(PROFILE))
    assert events[-1]["reason"] == "quiescent"
    assert _errors(events) == {}
    assert all(e.get("store") == "kv" for e in events if e["kind"] == "pop_checkpoint_written")


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_pop_scenarios_hold_under_5_3_3_too(seed):
    """`record --random --pop --release 5.3.3` names the 5.3.3 profile in its traces."""
    _, events = _simulate(seed, False, "rocketmq-5.3.3")
    assert _errors(events, "rocketmq-5.3.3") == {}


def test_one_pop_scenario_per_seed_apart_from_the_pull_ones():
    assert generate(7, pop=True) == generate_pop(7) == generate_pop(7)
    assert generate_pop(7) != generate_pop(8) and generate_pop(7, True) != generate_pop(7)
    assert generate(7) != generate_pop(7) and generate(7)["name"] == "random-7"
    assert generate_pop(7)["name"] == "random-pop-7"


def _features(sc: dict) -> set:
    f = set()
    pop = [g for g in sc["groups"] if g.get("client_type") == "POP_PUSH"]
    f.add(f"{len(pop)} POP groups")
    if len(pop) < len(sc["groups"]):
        f.add("ordinary group beside")
    starts = collections.Counter()
    for g in pop:
        inv = g["pop_invisible_time"]
        assert client_invisible_time(inv) == inv    # the push consumer refuses to start outside its range
        f.add("invisible long" if inv > POP_LONG_INVISIBLE_MS else "invisible short")
        f.add(f"max_reconsume_times={g['max_reconsume_times']}")
        f.add(f"pop_batch_nums={g['pop_batch_nums']}")
        for k in ("pop_threshold_for_queue", "consume_thread_max"):
            if k in g:
                f.add(k)
        f.add("all" if g["subscriptions"]["TopicP"] == "*" else "tags")
        lst = g["listener"]
        for k in ("fail_rate", "null_rate", "exception_rate"):
            if k in lst:
                f.add(k)
        for rule in lst.get("rules", []):
            if "status" in rule:
                f.add("poison recovering" if "until_reconsume_times" in rule else "poison past the limit")
            elif rule["duration_ms"][0] > inv:
                f.add("call past the invisible time")
            else:
                f.add("slow call")
        clients = {x["client"] for x in sc["steps"] if x.get("group") == g["name"]}
        f.add(f"{len(clients)} clients")
        for x in sc["steps"]:
            if x.get("client") not in clients:
                continue
            f.add(x["action"])
            if x["action"] == "start":
                starts[x["client"]] += 1
                if x["at_ms"] > 0:
                    f.add("join")
            if x["action"] == "pause":
                f.add("pause past the invisible time" if x["duration_ms"] > inv else "short pause")
    if any(n > 1 for n in starts.values()):
        f.add("restart")
    return f


def test_the_pop_generator_covers_what_it_draws():
    seen = set().union(*(_features(generate_pop(s)) for s in range(300)))
    want = {"1 POP groups", "2 POP groups", "3 POP groups", "ordinary group beside", "1 clients", "2 clients",
            "3 clients", "invisible short", "invisible long", "max_reconsume_times=0",
            "max_reconsume_times=1", "pop_batch_nums=1", "pop_batch_nums=32", "pop_threshold_for_queue",
            "consume_thread_max", "all", "tags", "fail_rate", "null_rate", "exception_rate", "poison recovering",
            "poison past the limit", "call past the invisible time", "slow call", "start", "join", "shutdown",
            "crash", "restart", "short pause", "pause past the invisible time"}
    assert want - seen == set()


def test_the_pop_generator_keeps_runs_short_and_recordable():
    """Only POP_PUSH (SimpleConsumers need --client), no orderly POP, batches of 1, at most one
    retry (a second failure waits 30 s), and a group whose held messages would wait out a long
    invisible time keeps its clients to the end."""
    for s in range(300):
        sc = generate_pop(s)
        assert sc["duration_ms"] <= 20000 and sum(p["count"] for p in sc["producers"]) <= 40
        for g in sc["groups"]:
            assert g.get("client_type", "PUSH") in ("PUSH", "POP_PUSH") and g["consume_mode"] == "CONCURRENTLY"
            assert g.get("consume_message_batch_max_size", 1) == 1 or g.get("client_type") != "POP_PUSH"
            if g.get("client_type") != "POP_PUSH":
                continue
            assert g["max_reconsume_times"] in (0, 1)
            inv = g["pop_invisible_time"]
            if client_invisible_time(inv) > POP_LONG_INVISIBLE_MS:
                clients = {x["client"] for x in sc["steps"] if x.get("group") == g["name"]}
                assert not any(x["action"] in ("shutdown", "crash", "pause") and x["client"] in clients
                               for x in sc["steps"]), (s, g["name"])


@pytest.mark.parametrize("args, says", [
    (["--random", "1", "--pop"], "--pop: POP consumption exists only in RocketMQ 5.x, not 4.9.8"),
    (["--random", "1", "--pop", "--release", "4.9.8"], "give --release 5.5.1, 5.5.0 or 5.3.3"),
    (["--pop", "--scenario", "pop-basic", "--release", "5.5.0"], "--pop goes with --random"),
    (["--random", "1", "--pop-kv", "--release", "5.5.1"], "--pop-kv goes with --random --pop"),
    # with --client, --pop runs SimpleConsumers through the proxy (tests/test_random_simple.py)
    (["--random", "1", "--pop", "--release", "5.5.1", "--client", "true"], "pinned for 5.5.0 only"),
])
def test_record_random_pop_refuses_what_cannot_run(tmp_path, args, says):
    from click.testing import CliRunner

    from rocketspec.cli import main

    r = CliRunner().invoke(main, ["record", "--out", str(tmp_path / "o"), *args])
    assert r.exit_code == 2, r.output
    assert says in r.output and "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def _pop_limit_records(tmp_path, revived: bool):
    """A POP push group with maxReconsumeTimes 0 (random POP run 20002 on 5.5.0, group GID_p2): the
    listener fails M1's first delivery; at the limit the client sends nothing (checkNeedAckOrDelay),
    the handle runs out, revive stores a copy with reconsume times 1 in the group's POP retry
    topic, and the client acks that copy unconsumed, past the limit (processPopResult): no further
    listener call, no DLQ. `revived`: the store holds that copy."""
    from test_random_scenarios import _entry

    from rocketspec.rocketmq.pop import pop_retry_topic
    from rocketspec.traces.history.msgtrace import encode_trace

    ev = [{"kind": "message_stored", "source": "producer", "ts": 1000, "topic": "TopicP", "msg_id": "M1",
           "tags": "TagA", "broker": "broker-a", "offset": 0},
          {"kind": "consume_started", "ts": 1100, "client": "c1", "consume_id": 0, "group": "GID_p0",
           "msg_ids": ["M1"], "reconsume_list": [0]},
          {"kind": "consume_finished", "ts": 1105, "client": "c1", "consume_id": 0, "group": "GID_p0",
           "status": "RECONSUME_LATER"}]
    msgtrace = tmp_path / "msgtrace.txt"
    msgtrace.write_text("\n".join(encode_trace(ev)) + "\n")
    log = tmp_path / "store" / "commitlog"
    log.mkdir(parents=True)
    data = _entry("TopicP", 0, 0, 0, 0, {"UNIQ_KEY": "M1"})
    if revived:
        data += _entry(pop_retry_topic("GID_p0", "TopicP"), 0, 0, len(data), 1, {"UNIQ_KEY": "M1"}, store_ts=8000)
    (log / "00000000000000000000").write_bytes(data + b"\0" * 64)
    sc = {"topics": [{"name": "TopicP"}], "steps": [], "producers": [{"topic": "TopicP"}],
          "groups": [{"name": "GID_p0", "client_type": "POP_PUSH", "consume_mode": "CONCURRENTLY",
                      "message_model": "CLUSTERING", "max_reconsume_times": 0, "subscriptions": {"TopicP": "*"},
                      "listener": {"duration_ms": [1, 5]}}]}
    return sc, msgtrace, tmp_path / "store"


@pytest.mark.parametrize("revived", [True, False])
def test_the_oracle_names_a_pop_retry_copy_by_its_group(tmp_path, revived):
    """The copy revive stored in %RETRY%GID_p0_TopicP is GID_p0's retry of M1 (it was read as
    group GID_p0_TopicP's): M1 failed and went on to its retry, as RocketMQ does, and is no loss
    (the copy past the limit is acked unconsumed). Without that copy in the store, M1 is lost."""
    from rocketspec.conformance import real_random

    sc, msgtrace, store = _pop_limit_records(tmp_path, revived)
    rep = real_random.oracle_report(sc, msgtrace, store, 0, True)
    status = {v.id: v.status for v in rep.verdicts}
    assert status["H-DELIVER-1"] == ("holds" if revived else "violated")
    assert real_random.pop_retry_groups(sc)["%RETRY%GID_p0_TopicP"] == "GID_p0"


@pytest.mark.real
def test_one_small_random_pop_run_on_5_5_0_is_judged_agreed(tmp_path):
    """A small POP seed recorded on real 5.5.0 with message tracing, checked under rocketmq-5.5.1
    and judged against RocketMQ's own records: the run holds and the classes agree (seed 20001:
    one POP group of a poison tag that recovers on its first retry). About 30 s."""
    from test_real_5x import _require

    _require("5.5.0")
    out = tmp_path / "runs"
    r = subprocess.run([str(BIN), "record", "--random", "1", "--pop", "--small", "--seed", "20001", "--release",
                        "5.5.0", "--out", str(out)], capture_output=True, text=True, timeout=600)
    summary = json.loads((out / "summary.json").read_text())
    assert r.returncode == 0 and summary["runs"] == 1 and summary["agreed"] == 1, r.stdout + r.stderr[-3000:]
    folder = out / "seed-20001"
    res = json.loads((folder / "result.json").read_text())
    assert res["class"] == "agreed" and res["ended"] == "quiescent" and res["check"] == {}
    events = [json.loads(line) for line in (folder / "trace.jsonl").open()]
    assert events[0]["schema_version"] >= 3 and events[0]["profile"] == PROFILE   # 3 brought the POP kinds
    assert any(e["kind"] == "message_popped" for e in events) and any(e["kind"] == "message_acked" for e in events)
    oracle = json.loads((folder / "oracle.json").read_text())
    assert oracle["produced"] > 0 and oracle["verdict"] == "holds"


@pytest.mark.real
def test_one_small_random_pop_run_on_the_kv_path_of_5_5_1_is_judged_agreed(tmp_path):
    """`--pop-kv`: the broker's RocksDB POP path on real 5.5.1, its records recorded as checkpoints
    (store kv) and its revives as revives; the run holds and agrees with RocketMQ's records. About
    40 s."""
    from test_real_5x import _require

    _require("5.5.1")
    out = tmp_path / "runs"
    r = subprocess.run([str(BIN), "record", "--random", "1", "--pop", "--pop-kv", "--small", "--seed", "27104",
                        "--release", "5.5.1", "--out", str(out)], capture_output=True, text=True, timeout=600)
    summary = json.loads((out / "summary.json").read_text())
    assert r.returncode == 0 and summary["agreed"] == 1, r.stdout + r.stderr[-3000:]
    events = [json.loads(line) for line in (out / "seed-27104" / "trace.jsonl").open()]
    started = [e for e in events if e["kind"] == "broker_started"]
    assert started and started[0]["config"]["pop_consumer_kv_service"] is True
    cks = [e for e in events if e["kind"] == "pop_checkpoint_written"]
    assert cks and all(e["store"] == "kv" and len(e["offsets"]) == 1 for e in cks)


@pytest.mark.real
def test_revive_is_recorded_on_5_3_3(tmp_path):
    """5.3.3's PopReviveService.reviveRetry puts no ORIGIN_GROUP on the copy it stores in the POP
    retry topic (5.5.0's does): the recorder matches a revived copy by the revive it saw read the
    message, not by that property. Before, a 5.3.3 run wrote no message_revived, the copy read as
    an ordinary stored message, the revived message stayed held to the recorder, and the run never
    reached quiescence (random POP run 20103 on 5.3.3: ended by duration). pop-push-expiry: one
    call outlives its 5 s handle, revive hands the message out again. About 50 s."""
    from test_real_5x import _require

    from rocketspec.rocketmq import pop

    _require("5.3.3")
    out = tmp_path / "t.jsonl"
    r = subprocess.run([str(BIN), "record", "--scenario", str(ROOT / "tests/fixtures/real/pop/pop-push-expiry.toml"),
                        "--release", "5.3.3", "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    events = [json.loads(line) for line in out.open()]
    retry = pop.pop_retry_topic("GID_pop_slow", "Work")
    revived = [e for e in events if e["kind"] == "message_revived"]
    assert revived and all(e["outcome"] == "retry" and e["target_topic"] == retry for e in revived)
    assert not any(e["kind"] == "message_stored" and e.get("topic") == retry for e in events)
    assert events[-1]["reason"] == "quiescent"
    c = subprocess.run([str(BIN), "check", str(out)], capture_output=True, text=True, timeout=300)
    assert c.returncode == 0, c.stdout[-3000:]
