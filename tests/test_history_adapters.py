"""History adapters as real sources write them, and the streaming judge's memory.

Message-trace records follow TraceDataEncoder 4.9.8 (field counts of every record type and
client generation); OpenChaos lines follow its Recorder (7-field REQUEST, 10-field RESPONSE,
4-field fault). Every record an adapter cannot read is reported with its file and line and
counted, whatever is wrong with it (bad UTF-8, a body cut short, a wrong field count, an
unknown record type, a field that is not a number); gzip and zstd inputs read as plain ones.
"""
import gzip
import os

import orjson
import pytest
import zstandard
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketspec.cli import main
from rocketspec.errors import UserError
from rocketspec.spec.history import check_path, load_history
from rocketspec.traces.history.model import Consume, Disruption, Group, History, Produce
from rocketspec.spec.history.judge import WINDOW_MS

HERE = os.path.dirname(__file__)
HIST = os.path.join(HERE, "fixtures", "history")
REAL_MT = os.path.join(HIST, "real-retry-dlq.msgtrace")
REAL_TRACE = os.path.join(HERE, "fixtures", "real", "real-basic.jsonl")
S, F = "\x01", "\x02"


def rec(*fields, end=F):
    return S.join(map(str, fields)) + end


PUB = ["Pub", 1000, "R", "PID", "T", "m1", "TagA", "k1", "b:10911", 5, 2, 0, "OFF1", "true"]
BEFORE = ["SubBefore", 2000, "R", "G", "req1", "m1", 0, "k1"]
AFTER = ["SubAfter", "req1", "m1", 7, "true", "k1", 0, 2007, "G"]


def problems(h):
    return [(p.line, p.message) for p in h.problems]


# ------------------------------------------------------------------ message trace: layouts

def test_every_client_generations_field_counts_are_read(tmp_path):
    text = "".join([
        rec(*PUB[:12], "true"),                               # Pub, 13 fields: before offsetMsgId
        rec(*PUB[:5], "m2", *PUB[6:]),                        # 14: as 4.9.8 writes it
        rec(*PUB[:5], "m3", *PUB[6:], "10.0.0.9"),            # 15: a newer client's clientHost
        rec(*BEFORE),
        rec("SubAfter", "req1", "m1", 7, "true", "k1"),       # 6: before the context code
        rec("SubBefore", 3000, "R", "G", "req2", "m2", 2, "k2"),
        rec("SubAfter", "req2", "m2", 4, "false", "k2", 4),   # 7 (and \u0002): no timestamp or group
        rec("SubBefore", 4000, "R", "G", "req3", "m3", 0, "k3"),
        rec("SubAfter", "req3", "m3", 4, "true", "k3", 0, 4010, "G"),   # 9
    ])
    p = tmp_path / "gens.msgtrace"
    p.write_text(text)
    h = load_history(p)
    assert problems(h) == []
    prod = {x.id: x for x in h.produces}
    assert prod["m1"].stored_id is None and prod["m2"].stored_id == "OFF1" and prod["m3"].stored_id == "OFF1"
    assert prod["m1"].keys == "k1" and prod["m1"].tags == "TagA"
    got = {(c.group, c.id, c.reconsume_times, c.success, c.ts, c.end) for c in h.consumes}
    assert got == {("G", "m1", 0, True, 2000, 2007), ("G", "m2", 2, False, 3000, 3004),
                   ("G", "m3", 0, True, 4000, 4010)}


def test_cloud_sub_after_runs_into_the_next_record(tmp_path):
    # The CLOUD access channel: 4.9.8 writes SubAfter's context code, then \u0001 and no
    # \u0002, so the next record (or the next body) follows straight on.
    body1 = rec(*BEFORE) + rec(*BEFORE[:4], "req1", "m2", 0, "k2") + \
        rec("SubAfter", "req1", "m1", 3, "true", "k1", 0, end=S) + rec("SubAfter", "req1", "m2", 3, "true", "k2", 0,
                                                                        end=S)
    body2 = rec(*PUB)
    p = tmp_path / "cloud.msgtrace"
    p.write_text(body1 + "\n" + body2 + "\n" + rec(*BEFORE[:4], "req9", "m1", 1, "k1")
                 + rec("SubAfter", "req9", "m1", 3, "true", "k1", 0, end=S))
    h = load_history(p)
    assert problems(h) == []
    # costTime is per message: 3 ms x 2 messages of req1, 3 ms x 1 of req9, from 2000
    assert sorted((c.id, c.end, c.success) for c in h.consumes) == [
        ("m1", 2003, True), ("m1", 2006, True), ("m2", 2006, True)]


@pytest.mark.parametrize("bad, message", [
    (rec(*PUB[:11]), "Pub record with 11 fields: expected 13"),
    (rec(*BEFORE[:6]), "SubBefore record with 6 fields: expected 8 (at least 7)"),
    (rec(*AFTER[:4]), "SubAfter record with 4 fields: expected 6 (at least 5)"),
    (rec("EndTransaction", 1500, "R", "PID", "T", "m1", "TagA", "k1", "b", 1, "tx", "COMMIT_MESSAGE"),
     "EndTransaction record with 12 fields: expected 13"),
    (rec("EndTransaction", 1500, "R", "PID", "T", "m1", "TagA", "k1", "b", 1, "tx", "MAYBE", "false"),
     "transactionState 'MAYBE'"),
    (rec("Publish", 1), "unknown record type 'Publish'"),
    (rec(*PUB[:11], 9, "OFF1", "true"), "msgType 9 is not one of 0 to 3"),
    (rec(*PUB[:9], "big", *PUB[10:]), "bodyLength 'big' is not an integer"),
    (rec(*AFTER[:4], "yes", *AFTER[5:]), "success 'yes': expected true or false"),
    (rec(*AFTER[:7], "soon", "G"), "timestamp 'soon' is not an integer"),
    (rec(*AFTER[:6], "x"), "contextCode 'x' is not an integer"),
])
def test_an_unreadable_record_is_reported_at_its_line_and_counted(tmp_path, bad, message):
    p = tmp_path / "bad.msgtrace"
    p.write_text(rec(*PUB) + "\n" + rec(*BEFORE) + "\n" + bad + "\n" + rec(*AFTER) + "\n")
    h = load_history(p)
    assert len(h.problems) == h.problem_count == 1
    assert h.problems[0].line == 3 and message in h.problems[0].message, problems(h)
    assert str(h.problems[0]).startswith(f"{p}:3: ")
    assert not h.complete and len(h.consumes) == 1 and h.records == 4


def test_bad_utf8_and_bodies_cut_short_are_reported_not_replaced(tmp_path):
    raw = (rec(*PUB).encode() + b"\n"
           + rec(*BEFORE[:5], "m\xff\xfe", 0, "k").encode("latin-1") + b"\n"       # not UTF-8
           + S.join(["Pub", "1001", "R", "PID"]).encode() + b"\n"                    # a body cut short
           + rec(*BEFORE).encode() + b"\n"
           + rec(*AFTER).encode() + b"\n"
           + S.join(["SubAfter", "req1"]).encode())                                  # the last, truncated
    p = tmp_path / "bytes.msgtrace"
    p.write_bytes(raw)
    h = load_history(p)
    got = problems(h)
    assert [ln for ln, _ in got] == [2, 3, 6], got
    assert "not UTF-8: byte 0xc3" not in got[0][1] and "not UTF-8" in got[0][1]
    assert "broken by a line end" in got[1][1] and "no \\u0002 terminator" in got[2][1]
    assert [(c.id, c.success) for c in h.consumes] == [("m1", True)]
    res = CliRunner().invoke(main, ["history", str(p), "--strict", "--json"])
    assert res.exit_code == 2 and orjson.loads(res.stdout)["line"] == 2


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_damaged_message_trace_bodies_never_crash_and_every_record_is_accounted(tmp_path_factory, data):
    raw = bytearray(open(REAL_MT, "rb").read())
    for _ in range(data.draw(st.integers(1, 6))):
        i = data.draw(st.integers(0, len(raw) - 1))
        what = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        if what == "flip":
            raw[i] = data.draw(st.integers(0, 255))
        elif what == "cut":
            del raw[i:i + data.draw(st.integers(1, 40))]
        else:
            raw[i:i] = data.draw(st.sampled_from([b"\n", b"\x01", b"\x02", b"\xff", b"SubAfter\x01"]))
    p = tmp_path_factory.mktemp("mt") / "d.msgtrace"
    p.write_bytes(bytes(raw))
    try:
        rep = check_path(p, "msgtrace")
    except UserError as exc:
        assert str(p) in str(exc)
        return
    h = rep.history
    lines = bytes(raw).count(b"\n") + 1
    assert all(1 <= pr.line <= lines and pr.file == str(p) for pr in h.problems)
    # every record was read or reported: none vanished
    records = len([r for r in bytes(raw).replace(b"\n", b"").split(b"\x02") if r.strip()])
    assert h.records >= records - 1 and h.problem_count <= h.records


# ------------------------------------------------------------------ OpenChaos: the Recorder's layout

SEND = ("SendResult [sendStatus=SEND_OK, msgId=X{0}, offsetMsgId=Y{0}, messageQueue=MessageQueue [topic=T, "
        "brokerName=b, queueId=0], queueOffset={0}]")
RECV = "receive status [ msgId = X{0}, topic = T, group = ChaosTest_ConsumerGroup, queueId = 0, queueOffset = {0}]"


def oc_lines(n=3):
    out = []
    for i in range(n):
        out.append(f"0\tenqueue\tREQUEST\t{i}\tnull\t{100 + i}\tnull")
        out.append(f"0\tenqueue\tRESPONSE\tSUCCESS\t{i}\tnull\t{101 + i}\t1\t{SEND.format(i)}\t0")
    for i in range(n):
        out.append(f"1\tdequeue\tRESPONSE\tSUCCESS\t{i}\tnull\t{200 + i}\t0\t{RECV.format(i)}\t{99}")
    return out


@pytest.mark.parametrize("bad, message", [
    ("0\tenqueue\tREQUEST\t9\tnull", "REQUEST line with 5 fields: expected 6 or 7"),
    ("0\tenqueue\tREQUEST\t9\tnull\t100\tnull\tmore", "REQUEST line with 8 fields: expected 6 or 7"),
    ("0\tenqueue\tRESPONSE\tSUCCESS\t9\tnull\t101", "RESPONSE line with 7 fields: expected 8 or 9 or 10"),
    ("0\tenqueue\tRESPONSE\tSUCCESS\t9\tnull\t101\t1\tnull\t0\tx", "RESPONSE line with 11 fields: expected 8"),
    ("0\tput\tREQUEST\t9\tnull\t100\tnull", "operation 'put': expected enqueue or dequeue"),
    ("fault\trandom-kill\tstart", "fault line with 3 fields: expected 4"),
    ("fault\trandom-kill\tmiddle\t150", "fault operation 'middle'"),
    ("1\tdequeue\tRESPONSE\tSUCCESS\tnull\tnull\t220\t0\tnull\t0", "a dequeue SUCCESS without a value"),
    ("1\tdequeue\tRESPONSE\tSUCCESS\t0\tnull\t220\tlate\tnull\t0", "sendLatency 'late' is not an integer"),
    ("x\tdequeue\tRESPONSE\tSUCCESS\t0\tnull\t1\t0\tnull\t0", "clientId 'x' is not an integer"),
    ("0 enqueue REQUEST 9 null 100 null", "expected clientId, operation, REQUEST|RESPONSE"),
])
def test_openchaos_unreadable_lines_are_reported_and_counted(tmp_path, bad, message):
    lines = oc_lines()
    lines.insert(2, bad)
    p = tmp_path / "x-chaos-history-file"
    p.write_text("\n".join(lines) + "\n")
    h = load_history(p, "openchaos")
    assert problems(h) and h.problems[0].line == 3 and message in h.problems[0].message, problems(h)
    assert h.problem_count == 1 and not h.complete and len(h.produces) == 3


def test_openchaos_bad_utf8_line(tmp_path):
    raw = "\n".join(oc_lines()).encode().replace(b"\tnull\t101\t", b"\tn\xffll\t101\t") + b"\n"
    p = tmp_path / "u-chaos-history-file"
    p.write_bytes(raw)
    h = load_history(p, "openchaos")
    assert [(pr.line, pr.message[:10]) for pr in h.problems] == [(2, "not UTF-8:"), (3, "not UTF-8:")]


def test_openchaos_rocketmq_driver_facts(tmp_path):
    p = tmp_path / "f-chaos-history-file"
    p.write_text("\n".join(oc_lines() + ["fault\trandom-kill\tstart\t300", "fault\trandom-kill\tend\t310",
                                         "1\tdequeue\tREQUEST\tnull\tnull\t320\tnull",
                                         "1\tdequeue\tRESPONSE\tFAILURE\tnull\tnull\t321\t1\tnull\t0"]) + "\n")
    rep = check_path(p)
    h = rep.history
    g = h.groups["ChaosTest_ConsumerGroup"]
    # one clustering group, concurrent listener, '*' on the chaos topic, started before the first invocation
    assert (g.message_model, g.consume_mode, g.subscriptions, g.started_ts) == (
        "CLUSTERING", "CONCURRENTLY", {"T": ("TAG", "*")}, 100)
    assert h.complete and rep.ok
    st = {v.id: v.status for v in rep.verdicts}
    assert st["H-ORDER-1"] == "skipped" and st["H-RETRY-1"] == "skipped" and st["H-DELIVER-1"] == "holds"


# ------------------------------------------------------------------ compressed inputs, several paths

@pytest.mark.parametrize("source", [REAL_MT, REAL_TRACE, "openchaos"])
@pytest.mark.parametrize("comp", ["gzip", "zstd"])
def test_gzip_and_zstd_read_as_the_plain_file(tmp_path, source, comp):
    if source == "openchaos":
        source = tmp_path / "o-chaos-history-file"
        source.write_text("\n".join(oc_lines(20)) + "\n")
    raw = open(source, "rb").read()
    p = tmp_path / ("h." + comp)
    p.write_bytes(gzip.compress(raw) if comp == "gzip" else zstandard.ZstdCompressor().compress(raw))
    plain, packed = check_path(source).to_dict(), check_path(p).to_dict()
    plain.pop("path"), packed.pop("path")
    assert packed == plain


def test_a_corrupted_compressed_history_is_bad_input(tmp_path):
    raw = gzip.compress(open(REAL_MT, "rb").read())
    p = tmp_path / "c.gz"
    p.write_bytes(raw[: len(raw) // 2])
    res = CliRunner().invoke(main, ["history", str(p), "--format", "msgtrace", "--json"])
    assert res.exit_code == 2 and orjson.loads(res.stdout)["file"] == str(p)


def test_several_paths_are_judged_each_on_its_own(tmp_path):
    res = CliRunner().invoke(main, ["history", REAL_TRACE, REAL_MT, "--json"])
    d = orjson.loads(res.stdout)
    assert res.exit_code == 0 and d["ok"] and [x["format"] for x in d["histories"]] == ["trace", "msgtrace"]
    lost = tmp_path / "lost-chaos-history-file"
    # message 3, sent after the consumer's first dequeue, never dequeued
    lost.write_text("\n".join(oc_lines(3) + [f"0\tenqueue\tRESPONSE\tSUCCESS\t3\tnull\t300\t1\t{SEND.format(3)}\t0"])
                    + "\n")
    res = CliRunner().invoke(main, ["history", REAL_TRACE, str(lost)])
    assert res.exit_code == 1 and "H-DELIVER-1  VIOLATED" in res.stdout and "HOLDS" in res.stdout


# ------------------------------------------------------------------ the streaming judge's memory

def steady(n_msgs, lost=None, dup_at=None, fault_at=None):
    """A steady run: a send every ms, each consumed 20 ms later, one queue."""
    h = History("mem", "openchaos", True, observes=frozenset({"disruptions"}))
    h.groups["G"] = Group("G", "CONCURRENTLY", "CLUSTERING", {"T": ("TAG", "*")}, started_ts=0)
    out = []
    q = ("T", "b", 0)
    for i in range(n_msgs + 20):
        if i < n_msgs:
            out.append(Produce(f"m{i}", "T", i, True, q, i))
        if i >= 20 and i - 20 != lost:
            out.append(Consume("G", f"m{i - 20}", i, i + 1, "c1", q, i - 20, 0, True, None, f"b{i}"))
        if fault_at is not None and i == fault_at:
            out.append(Disruption(i, "crashed", "G", "c1"))
        if dup_at is not None and i == dup_at[1]:
            out.append(Consume("G", f"m{dup_at[0]}", i, i + 1, "c1", q, dup_at[0], 0, True, None, f"d{i}"))
    return h, out


def judged(h, records, **kw):
    from rocketspec.spec.history import judge

    return judge(h, records, window_ms=20_000, sweep_every=1000, **kw)


def test_the_judge_holds_the_live_messages_not_the_history():
    h, recs = steady(100_000)
    rep = judged(h, recs)
    assert rep.ok and rep.sizes["consumed"] == 100_000
    # a window of 20 s at one message per ms, plus one sweep's worth: not the 100,000 sent
    assert rep.sizes["peak_live"] < 20_000 + 2_000, rep.sizes


def test_a_message_lost_long_ago_is_still_reported():
    h, recs = steady(60_000, lost=5_000)
    rep = judged(h, recs)
    v = {v.id: v for v in rep.verdicts}["H-DELIVER-1"]
    assert v.status == "violated" and v.n_findings == 1 and "m5000" in v.findings[0].message


def test_a_redelivery_beyond_the_window_needs_a_reason():
    # message 1000 consumed at ts 1020, delivered again 40 s later: retired from the window by
    # then, recognised by its queue and offset
    h, recs = steady(60_000, dup_at=(1000, 41_000))
    v = {v.id: v for v in judged(h, recs).verdicts}["H-DUP-1"]
    assert v.status == "violated" and "m1000" in v.findings[0].message
    h, recs = steady(60_000, dup_at=(1000, 41_000), fault_at=20_000)
    v = {v.id: v for v in judged(h, recs).verdicts}["H-DUP-1"]
    assert v.status == "holds" and v.counts["allowed: after a fault (crashed)"] == 1


def test_window_is_above_every_rules_reach():
    from rocketspec.spec.history.guarantees import DISRUPTION_REACH_MS, DLQ_PROMPT_MS

    assert WINDOW_MS > DISRUPTION_REACH_MS and WINDOW_MS > DLQ_PROMPT_MS


OPENCHAOS_FIXTURE = os.path.join(HIST, "2026-11-24-00-00-00-rocketmq-chaos-history-file")


def test_an_openchaos_run_in_the_harness_layout_with_its_own_result_file():
    # The real-kill recording as OpenChaos's Recorder and RocketMQ driver would write it (file
    # name, values, SendResult and receipt strings, random-kill fault lines), with the
    # QueueChecker's result file beside it: both verdicts agree, and each of the harness's
    # duplicates is judged by its reason.
    rep = check_path(OPENCHAOS_FIXTURE)
    d = rep.to_dict()
    assert d["format"] == "openchaos" and d["ok"] and d["unparseable"] == 0 and d["complete"]
    own = next(n for n in d["notes"] if n.startswith("OpenChaos's own QueueChecker"))
    assert "lostMessageCount 0" in own and "duplicateMessageCount 3" in own
    v = {v["id"]: v for v in d["guarantees"]}
    assert v["H-DELIVER-1"]["counts"] == {"consumed": 100}
    dup = v["H-DUP-1"]["counts"]
    assert sum(n for k, n in dup.items() if k.startswith("allowed") or k == "not allowed") == 3
    assert dup.get("allowed: after a fault (random-kill start)") == 2
