"""Random SimpleConsumer scenarios (conformance/random_scenarios.generate_simple), run by a gRPC
client program through the 5.5.0 proxy (`record --random N --pop --client CMD`): every scenario
is valid, holds only SimpleConsumer groups and steps the driver protocol runs, is accepted by
`rocketspec record`, and is one per seed; `record` refuses what cannot run; the oracle reads a
SimpleConsumer group's deliveries from the client program's reports (the gRPC client writes no
message trace), on random real run 25001 (5.5.0 broker and proxy, rocketmq-client-java 5.2.0)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketspec.commands.record import build_plan
from rocketspec.conformance.random_scenarios import (MAX_SIMPLE_CLIENTS, SIMPLE_TOPIC, generate,
                                                     generate_simple)
from rocketspec.conformance.verdicts import validate_checked

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "tests" / "fixtures" / "real" / "random" / "seed-25001-grpc-simple"
# what clients/grpc-java's driver program runs (docs/driver-protocol.md, "Writing a client program")
DRIVEN_STEPS = {"start", "shutdown", "crash", "pause"}
LISTENER_KEYS = {"duration_ms", "fail_rate", "null_rate", "exception_rate", "rules"}


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2 ** 31), st.booleans())
def test_every_simple_scenario_is_valid_and_runs_on_the_simple_path(seed, small):
    raw = generate_simple(seed, small)
    sc = validate_checked(json.loads(json.dumps(raw)), f"random-simple-{seed}")   # as the file is read back
    build_plan(sc, seed, 60, Path("."), Path("."))   # RecordError if the recorder could not run it
    assert raw["groups"] and all(g["client_type"] == "SIMPLE" for g in raw["groups"])
    assert all(g["message_model"] == "CLUSTERING" for g in raw["groups"])
    assert {x["action"] for x in raw["steps"]} <= DRIVEN_STEPS
    clients = {x["client"] for x in raw["steps"]}
    assert 1 <= len(clients) <= MAX_SIMPLE_CLIENTS
    for g in raw["groups"]:
        assert set(g["listener"]) <= LISTENER_KEYS
        assert 0 <= g["max_reconsume_times"] <= 2
        assert 1000 <= g["pop_invisible_time"] and 1 <= g["pop_batch_nums"] <= 32
        # each group keeps a client to the end: its first, which never leaves
        first = min((x for x in raw["steps"] if x.get("group") == g["name"]), key=lambda x: x["at_ms"])["client"]
        assert not any(x["client"] == first and x["action"] in ("shutdown", "crash") for x in raw["steps"])
    sent = {t for p in raw["producers"] for t in p["tags"]}
    for g in raw["groups"]:
        # something to consume: '*', or a tag the producer sends; no consume_from_where, which a
        # SimpleConsumer does not have
        sub = g["subscriptions"][SIMPLE_TOPIC]
        assert sub == "*" or set(sub.split(" || ")) & sent
        assert "consume_from_where" not in g
    if any(g["consume_mode"] == "ORDERLY" for g in raw["groups"]):
        # FIFO: the producer routes by sharding key, so a queue's order is a key's order
        assert all(p.get("sharding_keys") for p in raw["producers"] if p["topic"] == SIMPLE_TOPIC)
    assert raw["steps"] == sorted(raw["steps"], key=lambda x: x["at_ms"])


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2 ** 31))
def test_one_simple_scenario_per_seed(seed):
    assert generate_simple(seed) == generate_simple(seed)
    assert generate(seed, pop=True, simple=True) == generate_simple(seed)
    assert generate(seed, pop=True) != generate_simple(seed)


def test_the_simple_generator_draws_each_mechanism():
    seen = set()
    for seed in range(25001, 25101):
        sc = generate_simple(seed)
        for g in sc["groups"]:
            seen.add(g["consume_mode"])
            seen.add("change" if "retry_invisible_ms" in g else "no change")
            for rule in g["listener"].get("rules", []):
                if "status" in rule:
                    seen.add("poison")
                elif rule["duration_ms"][0] > g["pop_invisible_time"]:
                    seen.add("call past the invisible time")
        seen |= {x["action"] for x in sc["steps"]}
        seen |= {"restart" for x in sc["steps"] if "starts again" in x.get("note", "")}
        seen |= {"two groups" for _ in sc["groups"][1:]}
    assert seen >= {"ORDERLY", "CONCURRENTLY", "change", "no change", "poison", "call past the invisible time",
                    "start", "shutdown", "crash", "pause", "restart", "two groups"}


@pytest.mark.parametrize("args, says", [
    (["--random", "1", "--pop", "--release", "5.5.1", "--client", "true"],
     "--release 5.5.1: SimpleConsumers need RocketMQ's gRPC proxy, which is pinned for 5.5.0 only"),
    (["--random", "1", "--pop", "--release", "5.3.3", "--client", "true"], "pinned for 5.5.0 only"),
    (["--random", "1", "--pop", "--release", "4.9.8", "--client", "true"],
     "give --release 5.5.0 (the release whose gRPC proxy is pinned)"),
    (["--random", "1", "--pop", "--release", "5.5.0", "--client", "no-such-program-here"],
     "is not an executable file or a program on PATH"),
    (["--pop", "--release", "5.5.0", "--client", "true", "--scenario", "pop-orderly"], "--pop goes with --random"),
    (["--rejudge", "--release", "5.5.0", "--client", "true"], "--rejudge records nothing"),
])
def test_record_random_simple_refuses_what_cannot_run(tmp_path, args, says):
    from click.testing import CliRunner

    from rocketspec.cli import main

    r = CliRunner().invoke(main, ["record", "--out", str(tmp_path / "o"), *args])
    assert r.exit_code == 2, r.output
    assert says in r.output and "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_record_help_names_the_simple_runs():
    from click.testing import CliRunner

    from rocketspec.cli import main

    out = " ".join(CliRunner().invoke(main, ["record", "--help"]).output.split())
    assert "With --client: SimpleConsumer scenarios" in out and "--release 5.5.0" in out


# ----------------------------------------------------------------- the oracle of a real run

def _oracle(folder: Path) -> dict:
    from rocketspec.conformance.real_random import oracle_dict, oracle_report

    sc = json.loads((folder / "scenario.json").read_text())
    t0 = json.loads((folder / "run" / "steps.json").read_text())["t0"]
    return oracle_dict(oracle_report(sc, folder / "msgtrace.txt", folder / "run" / "store", t0, True))


def test_the_oracle_judges_a_simple_consumers_deliveries_from_its_reports():
    """Run 25001: 30 messages to TopicG, GID_s0 (maxReconsumeTimes 0) fails one, which the proxy
    dead-letters at its second pop. The message traces hold only the producer's 30 Pub records:
    read alone, every guarantee held on nothing (consumed 0, H-DELIVER-1 'not judged' for all).
    From the client program's reports: 29 consumed and 1 dead-lettered."""
    o = _oracle(RUN)
    assert o["consumed"] == 30
    g = {x["id"]: x for x in o["guarantees"]}
    assert g["H-DELIVER-1"]["status"] == "holds"
    assert g["H-DELIVER-1"]["counts"] == {"consumed": 29, "dead-lettered": 1}
    assert g["H-RETRY-1"]["counts"] == {"deliveries": 30}


def test_the_oracle_sees_a_loss_in_a_simple_consumers_reports(tmp_path):
    """The same run with one successful call taken out of the client's reports (as if the
    application never got that message): H-DELIVER-1 names it."""
    import shutil

    run = tmp_path / "run25001"
    shutil.copytree(RUN, run)
    proto = run / "run" / "parts" / "client-g0c1.life-1.proto"
    lines = proto.read_text().splitlines()
    i = next(n for n, x in enumerate(lines) if '"pop_consume_started"' in x and '"reconsume_times":0' in x)
    gone = json.loads(lines[i])["messages"][0]["msg_id"]
    cid = json.loads(lines[i])["consume_id"]
    keep = [x for x in lines if not (('"consume_id":%d,' % cid) in x and '"pop_consume_' in x)]
    proto.write_text("\n".join(keep) + "\n")
    g = {x["id"]: x for x in _oracle(run)["guarantees"]}
    assert g["H-DELIVER-1"]["status"] == "violated"
    assert gone in json.dumps(g["H-DELIVER-1"]["listed"])


def test_the_oracle_takes_a_simple_deliverys_queue_from_its_receipt_handle():
    """rocketmq-client-java 5.2.0's MessageView names the receive request's queue (the driver
    program reported queue 3 for TopicG queue 1 offset 0); the proxy's handle names the popped
    copy's queue, as the trace's message_stored does."""
    from rocketspec.conformance.simple_reports import read_simple_consumes
    from rocketspec.conformance.store_contents import read_commit_log

    sc = json.loads((RUN / "scenario.json").read_text())
    consumes, ids, problems = read_simple_consumes(sc, RUN / "run", read_commit_log(RUN / "run" / "store"))
    assert not problems and set(ids) == {"g0c1", "g0c2"}
    (c,) = [c for c in consumes if c.id == "7F0000016CE94E0E2F2A22114C4B0004"]
    assert (c.queue, c.offset, c.copy) == (("TopicG", "broker-a", 1), 0, "7F00000100009C250000000000000232")
    assert c.deadline == 1796654760823 + 4000
    retried = [c for c in consumes if c.queue[0].startswith("%RETRY%")]
    assert all(c.queue[0] == "%RETRY%GID_s0_TopicG" for c in retried)


KILLED = ROOT / "tests" / "fixtures" / "real" / "random" / "seed-25028-grpc-simple-killed"


def test_a_killed_simple_consumer_hides_none_of_its_groups_deliveries(tmp_path):
    """Run 25028: GID_s0 (maxReconsumeTimes 1, failed calls change the invisible time to 1 s), g0c3
    SIGKILLed at 11.3 s and started again. A killed remoting client's unsent message-trace records
    make the oracle leave its group's unconsumed messages unobserved; a SimpleConsumer's calls are
    its program's reports, flushed line by line, so the oracle judges them all: with one message's
    only call taken out of the reports, H-DELIVER-1 names it (the old oracle: 'unobserved')."""
    import shutil

    run = tmp_path / "run25028"
    shutil.copytree(KILLED, run)
    o = _oracle(run)
    g = {x["id"]: x for x in o["guarantees"]}["H-DELIVER-1"]
    # every message judged: the proxy starts a SimpleConsumer group at the queue's first message
    # (the scenario's consume_from_where, LAST_OFFSET, is no setting of a SimpleConsumer)
    assert g["status"] == "holds" and g["counts"] == {"consumed": 26, "dead-lettered": 2}
    sc = json.loads((run / "scenario.json").read_text())
    t0 = json.loads((run / "run" / "steps.json").read_text())["t0"]
    kill = next(x for x in sc["steps"] if x["action"] == "crash")
    parts = sorted((run / "run" / "parts").glob("*.proto"))
    calls = {}
    for p in parts:
        for line in p.read_text().splitlines():
            e = json.loads(line)
            if e["type"] == "pop_consume_started":
                calls.setdefault(e["messages"][0]["msg_id"], []).append((p, e))
    first = min(c[1]["ts_ns"] for cs in calls.values() for c in cs) // 10 ** 6
    # a message sent after the group's first consumption (before it, where a group starts is unknown
    # to a history) and delivered once, before the kill
    mid, ((path, e),) = next((m, c) for m, c in sorted(calls.items()) if len(c) == 1
                             and first + 2000 < c[0][1]["ts_ns"] // 10 ** 6 < t0 + kill["at_ms"])
    lines = path.read_text().splitlines()
    keep = [x for x in lines if not ('"pop_consume_' in x and json.loads(x)["consume_id"] == e["consume_id"])]
    path.write_text("\n".join(keep) + "\n")
    g = {x["id"]: x for x in _oracle(run)["guarantees"]}["H-DELIVER-1"]
    assert g["status"] == "violated" and mid in json.dumps(g["listed"])


def test_record_random_pop_with_a_client_records_simple_scenarios(tmp_path, monkeypatch):
    """`record --random N --pop --client CMD` records generate_simple's scenarios with CMD on the
    release given (the recording itself stubbed: a run that cannot finish is incomplete, exit 4)."""
    from click.testing import CliRunner

    import rocketspec.commands.record as rec
    from rocketspec.cli import main

    calls = []

    def fake_record(scenario, out, timeout_s, seed, keep, msgtrace, release, client):
        calls.append((json.loads(Path(scenario).read_text()), seed, release, client, msgtrace is not None))
        return 4, "stubbed"

    monkeypatch.setattr(rec, "record", fake_record)
    monkeypatch.setattr(rec, "proxy_classpath", lambda root, release: "")
    r = CliRunner().invoke(main, ["record", "--random", "2", "--pop", "--client", "true", "--release", "5.5.0",
                                  "--seed", "25001", "--out", str(tmp_path / "o")])
    assert r.exit_code == 4, r.output
    assert [(c[1], c[2], c[3], c[4]) for c in calls] == [(25001, "5.5.0", "true", True), (25002, "5.5.0", "true", True)]
    assert [c[0] for c in calls] == [generate_simple(25001), generate_simple(25002)]


FIFO_STALE = ROOT / "tests" / "fixtures" / "real" / "random" / "seed-25081-grpc-fifo-stale-attempt"


def test_a_fifo_call_on_an_expired_attempt_may_overlap_the_next_attempt():
    """Run 25081: FIFO GID_s0 (4 s invisible time, slow TagA calls up to 1.5 s). g0c1's attempt on
    TopicG queue 1 (popped at 6539 ms, deadline 10539 ms) ran offset 1 to 10874 ms; g0c2 popped the
    queue at 10639 ms, its order info no longer blocked (ConsumerOrderInfoManager.checkBlock), and
    called offset 1 at 10742 ms; g0c1 went on through its received batch and called offset 2 at
    10904 ms, past its own deadline. Two consumers inside the queue at once, both allowed by the
    invisible time: H-ORDER-1 holds (the old oracle allowed only the earlier call's expiry)."""
    g = {x["id"]: x for x in _oracle(FIFO_STALE)["guarantees"]}
    assert g["H-ORDER-1"]["status"] == "holds", g["H-ORDER-1"]["listed"]


def test_an_orderly_call_inside_a_live_attempt_still_breaks_exclusivity():
    from rocketspec.spec.history.guarantees import orderly_exclusive

    q = ("G", ("T", "b", 1))
    # the later call starts before its own deadline, inside the earlier call, whose deadline is later
    assert orderly_exclusive(q, ["c2", 150, 200, "w2", 5000], ["c1", 100, 300, "w1", 5000]) is not None
    # it starts past its own deadline: the other attempt may hold the queue
    assert orderly_exclusive(q, ["c2", 150, 200, "w2", 120], ["c1", 100, 300, "w1", 5000]) is None


FIFO_COUNT = ROOT / "tests" / "fixtures" / "real" / "random" / "seed-25100-grpc-fifo-count-understated"


def test_a_fifo_message_past_its_max_attempts_is_found_by_the_oracle_and_by_check():
    """Run 25100. FIFO GID_s0, maxReconsumeTimes 1 (max attempts 2). TopicG queue 0 offset 7
    failed at reconsume times 0, came back in an attempt with the fresh offsets 8-10 and again said
    0, failed, and was delivered a third time (said 1), past max attempts. The 5.5.0 proxy in local
    mode sets an orderly message's reconsume times from the order count under the queue's key
    (LocalMessageService.popMessage: orderCountInfo.get(getStartOffsetInfoMapKey(topic, queueId)),
    the broker's minimum over the attempt's offsets), not the offset's own, so
    PopMessageResultFilterImpl's TO_DLQ never sees 2. The oracle finds it (H-RETRY-1), and so does
    check: it counts each orderly offset's attempts as the broker merges them, not from the
    reconsume times the pops carry (which say 0, 0, 1). Check also finds queue 1 offset 13, which
    the proxy handed out at three attempts (the first received by the client program but never
    given to its listener: the FIFO batch stopped at queue 0's failure) and the listener saw twice:
    RocketMQ counts receives, the oracle counts listener calls."""
    from rocketspec.spec.replay import check_trace

    g = {x["id"]: x for x in _oracle(FIFO_COUNT)["guarantees"]}
    assert g["H-RETRY-1"]["status"] == "violated"
    assert "7F00000123794E0E2F2A22494BA4002A" in json.dumps(g["H-RETRY-1"]["listed"])
    d = check_trace(str(FIFO_COUNT / "trace.jsonl.gz"), None).to_dict()
    found = d["violations"]
    assert [(v["invariant"], v["event"]["seq"]) for v in found] == [("INV-POP-DLQ-1", 168), ("INV-POP-DLQ-1", 248)]
    for v, mid, where in zip(found, ["7F00000123794E0E2F2A22494BA4002A", "7F00000123794E0E2F2A22494CCD0030"],
                             ["TopicG/broker-a/0 offset 7", "TopicG/broker-a/1 offset 13"]):
        assert mid in v["message"] and where in v["message"], v["message"]
        assert "at its attempt 3, past the group's max attempts 2" in v["message"]
        assert "the pop said 1 reconsumptions" in v["message"]
        assert "minimum over the attempt's offsets" in v["message"]


LATE_ACK = ROOT / "tests" / "fixtures" / "real" / "random" / "seed-26112-grpc-late-ack-refused"


def test_an_ack_the_proxy_refused_is_a_delivery_that_expired(tmp_path):
    """Run 26112: GID_s0 (invisible time 8 s) got message ...0015 in a call that returned CONSUME_SUCCESS
    8 ms before its handle's deadline; the client program's ack reached the proxy after it and was
    refused (INVALID_RECEIPT_HANDLE, 40013, in its stderr), so revive put the message back and it
    came again at reconsume times 1. The oracle counted no failed delivery at 0 and called the retry
    copy H-RETRY-2 (a missed loss). The client program now reports the refusal (pop_settle_failed,
    docs/driver-protocol.md); the run was recorded before that, and the fixture's report lines were
    rebuilt from its stderr, one per refused ack or change. With them the oracle holds; without
    them it finds the copy."""
    g = {x["id"]: x for x in _oracle(LATE_ACK)["guarantees"]}
    assert g["H-RETRY-2"]["status"] == "holds", g["H-RETRY-2"]
    bare = tmp_path / "run"
    shutil.copytree(LATE_ACK, bare)
    part = bare / "run" / "parts" / "client-g0c1.life-1.proto"
    lines = part.read_text().splitlines()
    part.write_text("\n".join(x for x in lines if '"pop_settle_failed"' not in x) + "\n")
    assert len(part.read_text().splitlines()) == len(lines) - 17
    g = {x["id"]: x for x in _oracle(bare)["guarantees"]}
    assert g["H-RETRY-2"]["status"] == "violated"
    assert "7F00000143524E0E2F2A22F525FB0015" in json.dumps(g["H-RETRY-2"]["listed"])


def test_the_protocol_takes_a_refused_settle_and_refuses_an_unknown_action(tmp_path):
    from rocketspec.traces.client_protocol import ProtocolError, read_reports

    p = tmp_path / "client-c1.life-1.proto"
    ok = {"type": "pop_settle_failed", "consume_id": 1, "msg_id": "M", "action": "ack", "ts_ns": 5}
    p.write_text(json.dumps(ok) + "\n")
    assert [r["action"] for _, r in read_reports(p, "c1")] == ["ack"]
    p.write_text(json.dumps(ok | {"action": "nack"}) + "\n")
    with pytest.raises(ProtocolError, match="'action' to be 'ack' or 'change'"):
        read_reports(p, "c1")
