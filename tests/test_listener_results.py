"""The parts of INV-RETRY-1 and INV-OFFSET-3 a trace of the broker plus a client's reports can judge
(spec/actions/listener_results.py, observation.PART_NEEDS), held to the real traces of
rocketmq-client-go v2.1.2 (docs/notes/go-client.md, Findings 1 and 2) and of 4.9.8's Java client.

- real-orderly-dlq (Go): each poison message reaches the orderly listener at reconsume_times 3 with
  maxReconsumeTimes 2 (Go's checkReconsumeTimes compares with '>', 4.9.8's with '>=').
- ack-index (Go): every call returns CONSUME_SUCCESS with ackIndex 1 on four messages; Go never
  reads AckIndex, acks the batch, and the broker commits past the eight messages declared not
  consumed, none sent back. The same scenario on the Java client (ack-index-java) sends them back.
"""
from __future__ import annotations

import glob
import json
import os

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from rocketspec.cli import main
from rocketspec.spec import observation
from rocketspec.spec.replay import check_trace

REAL = os.path.join(os.path.dirname(__file__), "fixtures", "real")
GO = os.path.join(REAL, "go")
LEVEL = ("broker", "client_reports")


def read(path: str) -> list[dict]:
    with open(path, "rb") as fh:
        return [orjson.loads(x) for x in fh if x.strip()]


def judge(tmp_path, events, name="t.jsonl"):
    for i, e in enumerate(events):
        e["seq"] = i
    p = tmp_path / name
    p.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    return check_trace(str(p), max_listed=10_000)


def errors(rep) -> list:
    return [f for f in rep.findings.errors]


def cut(events: list[dict]) -> list[dict]:
    """The events of a whole recording a trace of the broker and the client's reports holds."""
    out = [dict(e) for e in events if observation.side_of(e) in (None, *LEVEL)]
    out[0]["observed"] = list(LEVEL)
    return out


def test_go_orderly_past_max_reconsume_times_fails_check_with_inv_retry_1():
    r = CliRunner().invoke(main, ["check", "--json", os.path.join(GO, "real-orderly-dlq.jsonl")])
    assert r.exit_code == 1, r.output
    d = json.loads(r.output)
    assert d["counts"] == {"INV-RETRY-1": 6}
    assert {"rule": "INV-RETRY-1", "part": observation.PART_ORDERLY_LIMIT} in d["rules_judged_in_part"]
    # the six deliveries at count 3 are the trace's own: one per poison message
    ev = read(os.path.join(GO, "real-orderly-dlq.jsonl"))
    over = sorted(e["seq"] for e in ev if e["kind"] == "consume_started" and 3 in e["reconsume_list"])
    assert sorted(v["seq"] for v in d["violations"]) == over
    for v in d["violations"]:
        assert "reconsume_times 3 > maxReconsumeTimes 2" in v["message"]
        assert "cause: the client's orderly retry check compares reconsume_times with '>'" in v["message"]


def test_go_ack_index_fails_check_with_inv_offset_3_on_the_messages_past_it():
    r = CliRunner().invoke(main, ["check", "--json", os.path.join(GO, "ack-index.jsonl")])
    assert r.exit_code == 1, r.output
    d = json.loads(r.output)
    assert d["counts"] == {"INV-OFFSET-3": 8}
    past = {o for e in read(os.path.join(GO, "ack-index.jsonl")) if e["kind"] == "consume_finished"
            for o in e["offsets"][e["ack_index"] + 1:]}
    assert past == {2, 3, 6, 7, 10, 11, 14, 15}
    assert {int(v["message"].split("past offset ")[1].split()[0]) for v in d["violations"]} == past
    for v in d["violations"]:
        assert v["event_kind"] == "trace_ended" and "past ack_index 1 of its CONSUME_SUCCESS" in v["message"]
        assert "cause: the client ignored the listener's ConsumeConcurrentlyContext.ackIndex" in v["message"]


def test_a_commit_past_a_message_its_own_client_still_held_then_failed_is_a_loss():
    """Library mutant lib-commit-batch-max (bench/go_library_mutants.py) on real 4.9.8: the Go client
    commits past each batch, not its ProcessQueue's first unconsumed message, so its commit passes
    failing calls still running (1.5 s); c2's join drops two of c1's queues, c1 discards those
    calls' failures (no send-back), and c2 starts past them. check names each such message, and
    exactly the ones RocketMQ's own history of the run shows lost (H-DELIVER-1)."""
    path = os.path.join(GO, "commit-batch-max.jsonl")
    r = CliRunner().invoke(main, ["check", "--json", path])
    assert r.exit_code == 1, r.output
    d = json.loads(r.output)
    assert set(d["counts"]) == {"INV-OFFSET-3"}
    named = set()
    for v in d["violations"]:
        assert " held it; the call then declared it not consumed (its listener returned RECONSUME_LATER)" in v["message"]
        assert "cause: the client committed past a message its own listener call had not finished" in v["message"]
        named.add(v["message"].split("past offset ")[1].split("(")[1].split(")")[0])
    h = CliRunner().invoke(main, ["history", "--json", path])
    assert h.exit_code == 1, h.output
    lost = {m for g in json.loads(h.output)["guarantees"] if g["id"] == "H-DELIVER-1"
            for m in _messages_named(g)}
    assert named == lost and len(named) == 6


def _messages_named(guarantee: dict) -> set:
    return {x["key"]["msg"] for x in guarantee["listed"]}


def test_the_unmutated_go_client_on_the_same_scenario_holds():
    """The same scenario with the unmutated client: it commits below its running calls, sends each
    failure back, and what it discards for a dropped queue c2 consumes again."""
    rep = check_trace(os.path.join(GO, "concurrent-fail-join.jsonl"))
    assert rep.ok, [(f.inv, f.message) for f in errors(rep)]


def test_java_on_the_ack_index_scenario_holds_whole_and_at_the_client_reports_level(tmp_path):
    path = os.path.join(GO, "ack-index-java.jsonl")
    assert check_trace(path).ok
    rep = judge(tmp_path, cut(read(path)))
    assert rep.ok, [f.message for f in errors(rep)]
    assert ("INV-OFFSET-3", observation.PART_DECLARED_UNCONSUMED) in rep.level.parts


def _java_fixtures():
    return sorted(p for p in glob.glob(os.path.join(REAL, "**", "*.jsonl"), recursive=True)
                  if os.sep + "go" + os.sep not in p)


@pytest.mark.parametrize("path", _java_fixtures(), ids=lambda p: os.path.relpath(p, REAL))
def test_a_java_recording_cut_to_the_client_reports_level_gives_neither_part_an_error(tmp_path, path):
    """4.9.8's Java client dead-letters an orderly message at maxReconsumeTimes and sends back what
    a call declared not consumed: its real recordings, cut to the broker and the client's reports,
    never fail a part (a failed send-back, the one Java path past either, is in no recording)."""
    rep = judge(tmp_path, cut(read(path)))
    assert not [f.message for f in errors(rep) if f.inv in ("INV-RETRY-1", "INV-OFFSET-3")]


def test_neither_part_runs_where_the_whole_rule_is_judged():
    # the Go trace declared whole (a recording with the client's internals would be): the whole
    # rules judge it from the client's own steps, and the parts stay out
    lv = observation.level(observation.ALL)
    assert not lv.parts and lv.whole


def _with_sent_back(events, pick):
    """The Go ack-index trace with the broker accepting a send-back of each message of `pick`
    right after the call that declared it not consumed, before the commit."""
    out = []
    starts = {e["consume_id"]: e for e in events if e["kind"] == "consume_started"}
    for e in events:
        out.append(e)
        if e["kind"] == "consume_finished":
            st = starts[e["consume_id"]]
            for o, mid in zip(st["offsets"], st["msg_ids"]):
                if o in pick:
                    out.append({"seq": 0, "ts": e["ts"], "kind": "message_sent_back", "broker": e["broker"],
                                "group": e["group"], "msg_id": mid, "origin_msg_id": mid, "reconsume_times": 0,
                                "outcome": "retry", "delay_level": 3, "via": "consumer_send_back", "client": e["client"]})
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(pick=hs.sets(hs.sampled_from([2, 3, 6, 7, 10, 11, 14, 15])))
def test_a_message_the_broker_took_back_is_not_lost(tmp_path, pick):
    """For any of the eight lost messages whose send-back the broker accepted before the commit,
    INV-OFFSET-3 reports exactly the others."""
    ev = read(os.path.join(GO, "ack-index.jsonl"))
    rep = judge(tmp_path, _with_sent_back(ev, pick))
    got = {int(f.message.split("past offset ")[1].split()[0]) for f in errors(rep)}
    assert got == {2, 3, 6, 7, 10, 11, 14, 15} - pick
    assert {f.inv for f in errors(rep)} <= {"INV-OFFSET-3"}


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(pick=hs.sets(hs.integers(0, 5)), data=hs.data())
def test_an_over_retry_is_excused_by_a_pause_or_a_broker_restart_in_its_window(tmp_path, pick, data):
    """A failed send to the DLQ is what brings a Java client's orderly message back past its limit;
    the level sees what can fail it: a pause of the client or a restart of the broker between the
    failed call at the limit and the call past it. Each over-retry with one in its window is
    excused, every other one is still reported."""
    ev = read(os.path.join(GO, "real-orderly-dlq.jsonl"))
    over = [e for e in ev if e["kind"] == "consume_started" and 3 in e["reconsume_list"]]
    assert len(over) == 6
    window = []     # each over-retry's window: the end of the call that failed it at the limit, its start
    for start in over:
        mid = start["msg_ids"][start["reconsume_list"].index(3)]
        prev = [e for e in ev if e["kind"] == "consume_started" and mid in e["msg_ids"]
                and e["reconsume_list"][e["msg_ids"].index(mid)] == 2][0]
        end = next(e for e in ev if e["kind"] == "consume_finished" and e["consume_id"] == prev["consume_id"])
        window.append((end, start))
    out = list(ev)
    excused = set()
    for i in sorted(pick):
        end = window[i][0]
        if data.draw(hs.booleans(), label="pause (else broker restart)"):
            extra = [{"seq": 0, "ts": end["ts"], "kind": "client_paused", "client": end["client"],
                      "group": end["group"], "duration": 0},
                     {"seq": 0, "ts": end["ts"], "kind": "client_resumed", "client": end["client"], "group": end["group"]}]
            # a pause excuses every over-retry whose window holds its time
            excused |= {s["consume_id"] for e, s in window if e["ts"] <= end["ts"] <= s["ts"]}
        else:
            extra = [{"seq": 0, "ts": end["ts"], "kind": "broker_restarted", "broker": end["broker"]}]
            # a restart, every over-retry whose window holds it in the trace's order
            excused |= {s["consume_id"] for e, s in window if e["seq"] <= end["seq"] < s["seq"]}
        at = out.index(end) + 1
        out[at:at] = extra
    rep = judge(tmp_path, [dict(e) for e in out])
    retry = [f for f in errors(rep) if f.inv == "INV-RETRY-1"]
    assert pick == set() or excused
    assert {f.event["consume_id"] for f in retry} == {e["consume_id"] for e in over} - excused
