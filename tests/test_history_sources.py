"""History adapters: RocketMQ message-trace bodies and OpenChaos history files.

Fixtures are encoded from recorded real-RocketMQ traces (tests/fixtures/real) in each source's
own layout (TraceDataEncoder 4.9.8; OpenChaos's Recorder and RocketMQ driver), so the same run
is judged from a full trace and from the poorer source. Unreadable records are reported with
file and line and counted; none is skipped silently.
"""
import json
import os

import orjson
import pytest
from click.testing import CliRunner

from rocketspec.cli import main
from rocketspec.spec.history import check_history, load_history
from rocketspec.traces.history import msgtrace, openchaos
from rocketspec.traces.io import iter_trace

reference = pytest.importorskip("rocketspec.reference.runner")
from rocketspec.reference.scenario import load_scenario  # noqa: E402

HERE = os.path.dirname(__file__)
REAL = os.path.join(HERE, "fixtures", "real")
S, F = "\x01", "\x02"


def status(rep):
    return {v.id: v.status for v in rep.verdicts}


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def msgtrace_of(events, tmp_path, name="t.msgtrace"):
    return write(tmp_path, name, "\n".join(msgtrace.encode_trace(events)) + "\n")


def openchaos_of(events, tmp_path, name="t.history"):
    return write(tmp_path, name, "\n".join(openchaos.encode_trace(events)) + "\n")


# ------------------------------------------------------------------ message trace

@pytest.mark.parametrize("fixture", ["real-basic", "real-kill", "real-orderly-suspend", "real-retry-dlq"])
def test_msgtrace_of_a_clean_real_run_holds_and_names_what_it_cannot_judge(tmp_path, fixture):
    p = msgtrace_of(iter_trace(os.path.join(REAL, fixture + ".jsonl")), tmp_path)
    h = load_history(p)
    assert h.format == "msgtrace" and not h.complete and not h.problems
    rep = check_history(h)
    assert rep.ok
    st = status(rep)
    assert st["H-DELIVER-1"] == "holds"
    skipped = {v.id: v.missing for v in rep.verdicts if v.status == "skipped"}
    assert "consume.client" in skipped["H-DUP-1"] and "observes.dead_letters" in skipped["H-RETRY-3"]
    assert "group.max_reconsume_times" in skipped["H-RETRY-1"]


def test_msgtrace_retry_limit_judged_once_declared(tmp_path):
    p = msgtrace_of(iter_trace(os.path.join(REAL, "real-retry-dlq.jsonl")), tmp_path)
    groups = {"GID_real_retry": {"consume_mode": "CONCURRENTLY", "message_model": "CLUSTERING",
                                 "max_reconsume_times": 2, "subscriptions": {"Jobs": "*"}}}
    rep = check_history(load_history(p, groups=groups))
    v = {v.id: v for v in rep.verdicts}
    assert v["H-RETRY-1"].status == "holds"
    # the DLQ is not in message-trace records: the poison messages' last failure is at the limit
    assert v["H-DELIVER-1"].counts["presumed dead-lettered (the DLQ is not observed)"] == 6


def test_msgtrace_shows_bug_6163_once_the_limit_is_declared(tmp_path):
    evs = reference.run_to_list(load_scenario("orderly-dlq"), 1, "bug-6163-rocketmq-5.0.0")
    p = msgtrace_of(evs, tmp_path)
    groups = {"GID_dlq": {"consume_mode": "ORDERLY", "message_model": "CLUSTERING", "max_reconsume_times": 2}}
    assert status(check_history(load_history(p, groups=groups)))["H-RETRY-1"] == "violated"
    fixed = msgtrace_of(reference.run_to_list(load_scenario("orderly-dlq"), 1, "rocketmq-5.3.3"), tmp_path, "f")
    assert status(check_history(load_history(fixed, groups=groups)))["H-RETRY-1"] == "holds"


def test_msgtrace_layout_variants(tmp_path):
    body = "".join([
        # Pub with offsetMsgId (14 fields), an older Pub without it (13), a failed send
        S.join(["Pub", "1000", "R", "PID", "T", "m1", "TagA", "k1", "b:10911", "5", "2", "0", "OFF1", "true"]) + F,
        S.join(["Pub", "1001", "R", "PID", "T", "m2", "null", "null", "b:10911", "5", "2", "0", "true"]) + F,
        S.join(["Pub", "1002", "R", "PID", "T", "m3", "TagA", "k3", "b:10911", "5", "2", "0", "", "false"]) + F,
        # a transactional half message, committed later; another rolled back
        S.join(["Pub", "1003", "R", "PID", "T", "m4", "TagA", "k4", "b:10911", "5", "2", "1", "OFF4", "true"]) + F,
        S.join(["Pub", "1004", "R", "PID", "T", "m5", "TagA", "k5", "b:10911", "5", "2", "1", "OFF5", "true"]) + F,
        S.join(["EndTransaction", "1500", "R", "PID", "T", "m4", "TagA", "k4", "b", "1", "tx4", "COMMIT_MESSAGE",
                "false"]) + F,
        S.join(["EndTransaction", "1500", "R", "PID", "T", "m5", "TagA", "k5", "b", "1", "tx5", "ROLLBACK_MESSAGE",
                "true"]) + F,
        "\n",
        # one listener call of two messages: SubBefore per message, SubAfter per message
        S.join(["SubBefore", "2000", "R", "G", "req1", "m1", "0", "k1"]) + F,
        S.join(["SubBefore", "2000", "R", "G", "req1", "m2", "0", ""]) + F,   # empty keys: dropped by split
        S.join(["SubAfter", "req1", "m1", "7", "true", "k1", "0", "2014", "G"]) + F,
        S.join(["SubAfter", "req1", "m2", "7", "true", "k1", "0"]) + F,       # CLOUD: no timestamp, no group
        S.join(["SubBefore", "3000", "R", "G", "req2", "m4", "0", "k4"]) + F,
        S.join(["SubAfter", "req2", "m4", "3", "false", "k4", "4", "3003", "G"]) + F,
        S.join(["SubBefore", "4000", "R", "G", "req3", "m4", "1", "k4"]) + F,
        S.join(["SubAfter", "req3", "m4", "3", "true", "k4", "0", "4003", "G"]) + F,
    ])
    h = load_history(write(tmp_path, "v.msgtrace", body))
    assert not h.problems, [str(p) for p in h.problems]
    prod = {p.id: p for p in h.produces}
    assert prod["m1"].ok and prod["m2"].tags is None and prod["m3"].ok is False
    assert prod["m4"].ok is True and prod["m4"].ts == 1500 and prod["m5"].ok is False
    cons = [(c.id, c.ts, c.end, c.success, c.reconsume_times) for c in h.consumes]
    assert ("m1", 2000, 2014, True, 0) in cons and ("m2", 2000, 2014, True, 0) in cons   # 7 ms x 2 messages
    assert ("m4", 3000, 3003, False, 0) in cons and ("m4", 4000, 4003, True, 1) in cons
    assert check_history(h).ok
    # subscriptions are not in the records: inferred, while judging, from what the group consumed
    assert h.groups["G"].subscriptions == {"T": ("TAG", "*")} and h.groups["G"].subscriptions_inferred


def test_msgtrace_unreadable_records_are_reported_with_their_line(tmp_path):
    good = S.join(["Pub", "1000", "R", "PID", "T", "m1", "TagA", "k1", "b", "5", "2", "0", "OFF1", "true"]) + F
    text = (good + "\n"
            + S.join(["Pub", "soon", "R", "PID", "T", "m2", "TagA", "k", "b", "5", "2", "0", "O", "true"]) + F + "\n"
            + "\n"
            + S.join(["Bogus", "1"]) + F + "\n"
            + S.join(["SubBefore", "2000", "R", "G", "req1", "m1", "0", "k1"]) + F + "\n"
            + S.join(["SubAfter", "req1", "m1"]))       # truncated, no terminator
    # more records read than not: a history read mostly (a file read mostly wrong is refused)
    text = "".join(S.join(["Pub", "1000", "R", "PID", "T", f"g{i}", "TagA", "k", "b", "5", "2", "0", "O", "true"]) + F
                   for i in range(4)) + text
    p = write(tmp_path, "bad.msgtrace", text)
    h = load_history(p, complete=None)
    where = [(pr.line, pr.message) for pr in h.problems]
    assert [ln for ln, _ in where] == [2, 4, 6], where
    assert "timestamp 'soon' is not an integer" in where[0][1] and "unknown record type 'Bogus'" in where[1][1]
    assert "no \\u0002 terminator" in where[2][1]
    res = CliRunner().invoke(main, ["history", str(p), "--json"])
    d = orjson.loads(res.stdout)
    assert d["unparseable"] == 3 and d["problems"][0].startswith(f"{p}:2: ")
    res = CliRunner().invoke(main, ["history", str(p), "--strict", "--json"])
    assert res.exit_code == 2 and orjson.loads(res.stdout)["line"] == 2


# ------------------------------------------------------------------ OpenChaos

# Runs whose listeners always succeed and subscribe with "*", as OpenChaos's RocketMQ driver does.
OPENCHAOS_LIKE = ["real-basic", "real-kill", "real-freeze", "real-rebalance", "real-attach", "real-orderly-takeover",
                  "real-orderly-suspend"]


@pytest.mark.parametrize("fixture", OPENCHAOS_LIKE)
def test_openchaos_of_a_clean_real_run_holds(tmp_path, fixture):
    p = openchaos_of(iter_trace(os.path.join(REAL, fixture + ".jsonl")), tmp_path)
    h = load_history(p)
    assert h.format == "openchaos" and h.complete and not h.problems and h.produces[0].queue is not None
    rep = check_history(h)
    assert rep.ok, [(f.guarantee, f.message) for v in rep.verdicts for f in v.findings[:2]]
    assert status(rep)["H-DUP-1"] == "holds" and status(rep)["H-ORDER-1"] == "skipped"


def test_openchaos_shows_a_lost_message(tmp_path):
    evs = reference.run_to_list(load_scenario("bug-2708"), 1, "bug-2708-rocketmq-4.9.0")
    rep = check_history(load_history(openchaos_of(evs, tmp_path)))
    assert status(rep)["H-DELIVER-1"] == "violated"
    # the same loss read as lossy is only unobserved
    assert check_history(load_history(openchaos_of(evs, tmp_path, "l"), complete=False)).ok


def test_openchaos_sharding_key_order_and_faults(tmp_path):
    send = ("SendResult [sendStatus=SEND_OK, msgId=X, offsetMsgId=Y, messageQueue=MessageQueue [topic=T, "
            "brokerName=b, queueId=0], queueOffset={}]")
    recv = "receive status [ msgId = X, topic = T, group = G, queueId = 0, queueOffset = {}]"
    lines = [f"0\tenqueue\tREQUEST\tv{i}\tkey1\t{100 + i}\tnull" for i in range(2)]
    lines += [f"0\tenqueue\tRESPONSE\tSUCCESS\tv{i}\tkey1\t{110 + i}\t10\t{send.format(i)}\t0" for i in range(2)]
    lines += ["fault\tkill\tstart\t150", "fault\tkill\tend\t160",
              f"1\tdequeue\tRESPONSE\tSUCCESS\tv1\tkey1\t200\t0\t{recv.format(1)}\t90",
              f"1\tdequeue\tRESPONSE\tSUCCESS\tv0\tkey1\t210\t0\t{recv.format(0)}\t100",
              "1\tdequeue\tRESPONSE\tFAILURE\tnull\tnull\t220\t0\tnull\t0"]
    p = write(tmp_path, "o.history", "\n".join(lines) + "\n")
    groups = {"G": {"consume_mode": "ORDERLY"}}
    rep = check_history(load_history(p, groups=groups))
    assert status(rep)["H-ORDER-2"] == "violated"
    assert [d.detail for d in rep.history.disruptions if d.what == "fault"] == ["kill start", "kill end"]
    # the RocketMQ driver's listener is concurrent: no order to judge unless a group is declared ORDERLY
    v = {v.id: v for v in check_history(load_history(p)).verdicts}["H-ORDER-2"]
    assert v.status == "holds" and "no orderly group" in v.notes[0]


def test_openchaos_unreadable_lines_are_reported(tmp_path):
    lines = ["0\tenqueue\tREQUEST\tv0\tnull\t100\tnull", "0\tenqueue\tRESPONSE\tMAYBE\tv0\tnull\t110\t10\tnull\t0",
             "garbage", "fault\tkill", "x\tdequeue\tRESPONSE\tSUCCESS\tv0\tnull\t1\t0\tnull\t0"]
    lines += [f"0\tenqueue\tRESPONSE\tSUCCESS\tv{i}\tnull\t110\t10\tnull\t0" for i in range(1, 5)]  # read mostly
    h = load_history(write(tmp_path, "bad.history", "\n".join(lines) + "\n"), "openchaos")
    assert [(p.line, p.message.split(":")[0]) for p in h.problems] == [
        (2, "result 'MAYBE'"), (3, "expected clientId, operation, REQUEST|RESPONSE, ... or a fault line"),
        (4, "fault line with 2 fields"), (5, "clientId 'x' is not an integer")]
    assert not h.complete       # records are missing: judged as lossy


def test_groups_file_declares_sql_subscriptions(tmp_path):
    p = openchaos_of(iter_trace(os.path.join(REAL, "real-sql.jsonl")), tmp_path)
    assert not check_history(load_history(p)).ok          # '*' assumed: filtered messages look lost
    g = write(tmp_path, "g.json", json.dumps({"GID_real_sql": {"subscriptions": {
        "TopicSql": {"type": "SQL92", "expr": "a > 5 AND region = 'eu'"}}}}))
    res = CliRunner().invoke(main, ["history", str(p), "--groups", str(g), "--json"])
    d = orjson.loads(res.stdout)
    # OpenChaos records carry no properties: the filter cannot be evaluated, nothing is called lost
    assert res.exit_code == 0 and d["format"] == "openchaos"
    counts = {v["id"]: v["counts"] for v in d["guarantees"]}["H-DELIVER-1"]
    assert counts["consumed"] == 10 and counts["not consumed, filter unknown"] > 0 and "lost" not in counts


# ------------------------------------------------------------------ real message-trace records

# Recorded with `rocketspec record --scenario S --out S.trace.jsonl --msgtrace S.msgtrace` (real
# RocketMQ 4.9.8, enableMsgTrace on the producer and the consumers; the broker's
# RMQ_SYS_TRACE_TOPIC bodies dumped after the run): the same run at both levels.
HIST = os.path.join(HERE, "fixtures", "history")


@pytest.mark.parametrize("name", ["real-basic", "real-retry-dlq"])
def test_real_message_trace_records_match_the_trace_of_the_same_run(name):
    mt = load_history(os.path.join(HIST, name + ".msgtrace"))
    tr = load_history(os.path.join(HIST, name + ".trace.jsonl"))
    assert mt.format == "msgtrace" and not mt.problems and tr.complete
    # Pub's offsetMsgId is the stored message's id, the trace's msg_id
    to_stored = {p.id: p.stored_id for p in mt.produces}
    assert sorted(to_stored.values()) == sorted(p.id for p in tr.produces)
    assert all(p.ok and p.topic == q.topic for p, q in zip(sorted(mt.produces, key=lambda p: p.stored_id),
                                                            sorted(tr.produces, key=lambda p: p.id)))

    def deliveries(h, ids):
        return sorted((ids(c.id), c.reconsume_times, c.success) for c in h.consumes)

    assert deliveries(mt, to_stored.get) == deliveries(tr, lambda i: i)
    assert check_history(mt).ok and check_history(tr).ok


def test_real_message_trace_retry_limit_with_declared_groups():
    groups = {"GID_real_retry": {"consume_mode": "CONCURRENTLY", "message_model": "CLUSTERING",
                                 "max_reconsume_times": 2}}
    rep = check_history(load_history(os.path.join(HIST, "real-retry-dlq.msgtrace"), groups=groups))
    v = {v.id: v for v in rep.verdicts}
    assert v["H-RETRY-1"].status == "holds" and v["H-RETRY-1"].counts["deliveries"] == 32
    assert v["H-DELIVER-1"].counts == {"consumed": 14, "presumed dead-lettered (the DLQ is not observed)": 6}
    # the trace of the same run sees the six dead letters
    assert len(load_history(os.path.join(HIST, "real-retry-dlq.trace.jsonl")).dead_letters) == 6
