"""The real-run oracle's own records (conformance.real_random, oracle version 2): membership
changes from RocketMQ's client log, the broker's and the broadcasting clients' offset files.

tests/fixtures/real/random/seed-103 is random real run 103 of 2026-12-06 (real 4.9.8): its
scenario, message traces, the used part of its commit log, the broker's consumerOffset.json and
the lines of rocketmq_client.log the oracle reads. GID_r0 (maxReconsumeTimes 0) failed a
message, which went to the DLQ; g0c2's shutdown moved its queue to g0c1, which pulled the
original copy again from the broker's lagging offset 10 ms later.
"""
import json
import shutil
from pathlib import Path

from rocketspec.conformance.client_log import read_changes
from rocketspec.conformance.real_random import classify, oracle_dict, oracle_report, unseen_invariants
from rocketspec.conformance.store_contents import read_broker_offsets, read_local_offsets

SEED_103 = Path(__file__).parent / "fixtures" / "real" / "random" / "seed-103"
T0 = 1796601005564      # the run's trace_started
# check's verdict on the run's trace (its check.json): INV-DLQ-1 on the DLQ copy of the send-back
# that g0c2's shutdown interrupted (the fallback send at delay level 3, 1 s here)
CHECK = {"counts": {"INV-DLQ-1": 1}, "violations": [
    {"invariant": "INV-DLQ-1", "key": {"group": "GID_r0"}, "message": "a dead-lettered copy of "
     "7F0000010000A371000000000000B367 goes through the schedule (delay level 3) instead of straight to %DLQ%GID_r0 (#2724)"}]}


def judge(folder):
    sc = json.loads((folder / "scenario.json").read_text())
    o = oracle_dict(oracle_report(sc, folder / "msgtrace.txt", folder / "run" / "store", T0, True))
    return sc, o, {g["id"]: g["status"] for g in o["guarantees"]}


def test_seed_103_membership_read_from_the_client_log_in_epoch_time():
    changes, note = read_changes(SEED_103 / "run")
    assert "16 membership change(s)" in note and "+0 min" in note
    left = [c for c in changes if c.what == "left"]
    assert [(c.ts, c.group, c.client) for c in left] == [(1796601009906, "GID_r0", "127.0.0.1@g0c2")]
    assert any(c.what == "rebalanced" and c.client == "127.0.0.1@g0c1" and c.ts == 1796601009915 for c in changes)


def test_seed_103_is_agreed_on_retries_with_membership_and_missed_without(tmp_path):
    sc, o, st = judge(SEED_103)
    assert o["oracle_version"] >= 3 and st["H-RETRY-1"] == "holds" and st["H-DELIVER-1"] == "holds"
    # the INV-DLQ-1 copy waited one 1 s level: within H-RETRY-3's window, which the oracle cannot see
    assert classify({"INV-DLQ-1": 1}, o, unseen_invariants(CHECK, sc, o)) == ("finding", ["INV-DLQ-1"])
    # the same run without RocketMQ's log: the redelivery reads as a retry past the limit
    bare = tmp_path / "seed-103"
    shutil.copytree(SEED_103, bare)
    shutil.rmtree(bare / "run" / "logs")
    _, o2, st2 = judge(bare)
    assert st2["H-RETRY-1"] == "violated"
    assert any("no logs/rocketmqlogs/rocketmq_client.log" in n for n in o2["notes"])


def test_a_log_with_no_clock_reading_is_not_read(tmp_path):
    log = tmp_path / "logs" / "rocketmqlogs" / "rocketmq_client.log"
    log.parent.mkdir(parents=True)
    log.write_text("2026-12-06 23:50:09,906 INFO RocketmqBroker - unregister a consumer[G] from consumerGroupInfo "
                   "ClientChannelInfo [channel=x, clientId=127.0.0.1@c1, language=JAVA, version=409]\n")
    changes, note = read_changes(tmp_path)
    assert changes == [] and "not placed in time" in note


def test_offset_files_as_fastjson_writes_them(tmp_path):
    b = read_broker_offsets(SEED_103 / "run" / "store")
    assert b.table[("TopicR", "GID_r0")] == {0: 11, 1: 12, 2: 12, 3: 11, 4: 11, 5: 11, 6: 11, 7: 11}
    assert b.table[("%RETRY%GID_r0", "GID_r0")] == {0: 0}
    # a broadcasting client's offsets.json (random real run 111): MessageQueue objects as keys
    f = tmp_path / ".rocketmq_offsets" / "127.0.0.1@g0c1" / "GID_r0" / "offsets.json"
    f.parent.mkdir(parents=True)
    f.write_text('{\n\t"offsetTable":{{\n\t\t\t"brokerName":"broker-a",\n\t\t\t"queueId":2,\n\t\t\t"topic":"TopicR"\n'
                 '\t\t}:9,{\n\t\t\t"brokerName":"broker-a",\n\t\t\t"queueId":0,\n\t\t\t"topic":"TopicR"\n\t\t}:10\n\t}\n}')
    (o,) = read_local_offsets(tmp_path)
    assert (o.client, o.group) == ("127.0.0.1@g0c1", "GID_r0")
    assert o.table == {("TopicR", "broker-a", 2): 9, ("TopicR", "broker-a", 0): 10}


def test_a_broadcasting_send_back_is_no_loss_a_user_sees():
    """An orderly broadcasting client sending a message past maxReconsumeTimes to a group-wide DLQ
    (4.9.8's checkReconsumeTimes; random real runs 208 and 1008) takes no message from any
    client: with the oracle holding, the run is a white-box finding, not a false alarm."""
    from rocketspec.conformance.real_random import SEEN_AS
    assert not any("INV-BCAST-1" in invs for invs in SEEN_AS.values())


SEED_3041 = Path(__file__).parent / "fixtures" / "real" / "random" / "seed-3041"
# the clients' offsets.json as the run wrote them (git keeps no modification times): g0c2's at
# its shutdown, 2.1 s into the run, the others' at the run's end
WRITTEN_3041 = {"127.0.0.1@g0c1": 1796608011862, "127.0.0.1@g0c2": 1796608001230, "127.0.0.1@g0c3": 1796608012230}


def _judge_3041(folder, written):
    import os
    for client, ms in written.items():
        os.utime(folder / "run" / ".rocketmq_offsets" / client / "GID_r0" / "offsets.json", ns=(ms * 10**6,) * 2)
    sc = json.loads((folder / "scenario.json").read_text())
    o = oracle_dict(oracle_report(sc, folder / "msgtrace.txt", folder / "run" / "store", 1796607998099, True))
    return o, next(g for g in o["guarantees"] if g["id"] == "H-DELIVER-1")


def test_a_broadcasting_client_that_shut_down_is_owed_what_is_above_its_position(tmp_path):
    """Random real run 3041 (4.9.8): broadcasting g0c2 was shut down 2.1 s in. Its last pull was
    answered with TopicR queue 1 offset 18 while its consume service was already shut down
    (submitConsumeRequestLater refused: RejectedExecutionException), so its offsets.json kept 18.
    Nothing is lost: the position is the client's own, and its next start would read 18. Judged
    again from a copy whose files carry later times, the oracle took g0c2's file for a final
    position and reported H-DELIVER-1; a client that ended the run out of its group is not judged."""
    folder = tmp_path / "seed-3041"
    shutil.copytree(SEED_3041, folder)
    _, v = _judge_3041(folder, WRITTEN_3041)
    assert v["status"] == "holds"
    o, v = _judge_3041(folder, dict.fromkeys(WRITTEN_3041, 1796608534411))
    assert v["status"] == "holds", v["listed"]
    assert any("127.0.0.1@g0c2 left group GID_r0" in n for n in o["notes"])
    # the two clients still in the group at the end are judged from their positions
    assert any("127.0.0.1@g0c1 (GID_r0), 127.0.0.1@g0c3 (GID_r0)" in n for n in v["notes"])


SEED_6034 = Path(__file__).parent / "fixtures" / "real" / "random" / "seed-6034"


def test_seed_6034_a_resumed_members_stale_delivery_is_excused_by_its_return():
    """Random real run 6034 (real 4.9.8): GID_r0 (maxReconsumeTimes 0). g0c1 was stopped (SIGSTOP)
    for 8.7 s; the broker closed its idle channel and g0c2 took its queues, failed message ...0075
    and dead-lettered it. g0c1 resumed, and 4 ms later handed out the same original, which a pull
    of its stale ProcessQueue had brought in, before its heartbeat made it a member again and the
    group rebalanced (its return is in the client log just after). A rebalance duplicate, not a
    retry past the limit: the membership change after the copy excuses it as one before does."""
    sc = json.loads((SEED_6034 / "scenario.json").read_text())
    o = oracle_dict(oracle_report(sc, SEED_6034 / "msgtrace.txt", SEED_6034 / "run" / "store", 1796609854078, True))
    st = {g["id"]: g["status"] for g in o["guarantees"]}
    assert st["H-RETRY-1"] == "holds", [g for g in o["guarantees"] if g["id"] == "H-RETRY-1"]
    assert st["H-DELIVER-1"] == "holds"
    ret = next(g for g in o["guarantees"] if g["id"] == "H-RETRY-1")
    assert ret["counts"].get("delivered again after its dead letter, the queue having changed hands") == 1, ret["counts"]


def test_steps_are_placed_by_the_drivers_log_of_when_each_was_issued(tmp_path):
    """The scenario's at_ms count from the driver's t0, taken after the cluster started: on 5.x
    seconds after the trace's first event (random 5.5.0 run 10029: a reset at 4800 ms reached the
    broker 10.4 s after trace_started, and the oracle, placing it at 4.8 s, read the redeliveries
    it caused as retries past the limit). The driver's steps.json gives each step's own time."""
    from rocketspec.conformance.real_random import step_clock
    st = {"at_ms": 4800, "action": "reset_offset", "group": "G", "topic": "T"}
    other = {"at_ms": 900, "action": "start", "group": "G", "client": "c1"}
    assert step_clock(tmp_path, 1000)(st) == 5800          # no log: the trace's start + at_ms
    (tmp_path / "steps.json").write_text(json.dumps({"t0": 6600, "issued": [
        {"at_ms": 4800, "action": "reset_offset", "group": "G", "client": None, "topic": "T", "ts": 11441}]}))
    when = step_clock(tmp_path, 1000)
    assert when(st) == 11441 and when(other) == 7500       # logged, else the log's origin + at_ms
    (tmp_path / "steps.json").write_text("{}")
    import pytest

    from rocketspec.conformance.store_contents import StoreReadError
    with pytest.raises(StoreReadError, match="steps.json"):
        step_clock(tmp_path, 1000)


SEED_11013 = Path(__file__).parent / "fixtures" / "real" / "random" / "seed-11013"


def test_seed_11013_a_failure_whose_retry_copy_is_stored_is_not_judged_lost():
    """Random real run 11013 (real 4.9.8): GID_r0's last batch of message-trace records (three
    %RETRY% deliveries, 8.0 s into the run, all CONSUME_SUCCESS in the white-box trace) never
    reached RMQ_SYS_TRACE_TOPIC: the commit log's last GID_r0 trace body is from 6.4 s, GID_r1's
    went on to 8.9 s. Four messages then showed failed calls and nothing after. The commit log
    holds each one's %RETRY% copy at the next count: the send-back reached the broker, and what is
    missing is the copy's delivery record, not the message."""
    sc = json.loads((SEED_11013 / "scenario.json").read_text())
    o = oracle_dict(oracle_report(sc, SEED_11013 / "msgtrace.txt", SEED_11013 / "run" / "store", 1796615344133, True))
    g = next(g for g in o["guarantees"] if g["id"] == "H-DELIVER-1")
    assert g["status"] == "holds", g["listed"]
    assert g["counts"].get("failed, retried: its retry copy is stored, the copy's delivery not recorded") == 4, g["counts"]


SEED_13014 = Path(__file__).parent / "fixtures" / "real" / "random" / "seed-13014"


def test_seed_13014_records_a_dispatcher_failed_to_send_are_read_from_rocketmqs_log(tmp_path):
    """Random real run 13014 (real 5.3.3): g0c1 of orderly GID_r0 consumed offsets 37-42 of queue 0
    in the 50 ms before its SIGSTOP (8.6 s). Its AsyncTraceDispatcher held their records (5.x
    flushes every 5 s) and its first send after the resume timed out: RocketMQ's log says
    "send trace data failed, the traceData is <the records>" and drops them. The oracle reads
    those records from the log; without them five messages read as never delivered. (The
    fixture's commit log is left empty: the run had no dead letter and no retry copy.)"""
    sc = json.loads((SEED_13014 / "scenario.json").read_text())

    def deliver(folder):
        o = oracle_dict(oracle_report(sc, folder / "msgtrace.txt", folder / "run" / "store", 1796616640335, True))
        return next(g for g in o["guarantees"] if g["id"] == "H-DELIVER-1"), o["notes"]

    g, notes = deliver(SEED_13014)
    assert g["status"] == "holds", g["listed"]
    assert any("failed to send" in n for n in notes), notes
    bare = tmp_path / "seed-13014"
    shutil.copytree(SEED_13014, bare)
    log = bare / "run" / "logs" / "rocketmqlogs" / "rocketmq_client.log"
    log.write_text("".join(ln for ln in log.read_text(errors="replace").splitlines(keepends=True)
                           if "send trace data failed" not in ln))
    g2, _ = deliver(bare)
    assert g2["status"] == "violated" and g2["counts"].get("lost") == 5, g2["counts"]


SEED_12097 = Path(__file__).parent / "fixtures" / "real" / "random" / "seed-12097"


def test_seed_12097_a_message_before_the_start_first_delivered_after_a_reset_back_keeps_order():
    """Random real run 12097 (real 5.5.0): orderly GID_r0 starts CONSUME_FROM_LAST_OFFSET. Its
    first offset query for TopicR queue 0 answered -1 a millisecond before order-7's first message
    was stored there (offset 0), and the ProcessQueue started at the queue's then end, 1
    (RebalancePushImpl: maxOffset). order-7's messages 1-5 were consumed in order; the operator's
    reset to timestamp 0 (8.8 s) took the group back to offset 0, and message 0 was first
    delivered then, 18.5 s after message 1. Not owed before the reset, it breaks no order; the
    same deliveries with no reset, or from FIRST_OFFSET (which owes it), do."""
    def order(folder, edit=None):
        sc = json.loads((folder / "scenario.json").read_text())
        if edit is not None:
            edit(sc)
        o = oracle_dict(oracle_report(sc, folder / "msgtrace.txt", folder / "run" / "store", 1796619062074, True))
        return {g["id"]: g for g in o["guarantees"]}

    gs = order(SEED_12097)
    assert gs["H-ORDER-2"]["status"] == "holds", gs["H-ORDER-2"]["listed"]
    assert gs["H-DELIVER-1"]["status"] == "holds" and gs["H-RETRY-1"]["status"] == "holds"
    assert sum(n for k, n in gs["H-ORDER-2"]["counts"].items() if k.startswith("pairs out of order, allowed")) == 5

    def no_reset(sc):
        sc["steps"] = [s for s in sc["steps"] if s["action"] != "reset_offset"]

    def from_first(sc):
        next(g for g in sc["groups"] if g["name"] == "GID_r0")["consume_from_where"] = "CONSUME_FROM_FIRST_OFFSET"

    for edit in (no_reset, from_first):
        o2 = order(SEED_12097, edit)["H-ORDER-2"]
        assert o2["status"] == "violated" and o2["findings"] == 5, (edit.__name__, o2["counts"])
        assert all("TopicR/order-7" in f["message"] for f in o2["listed"])


# ------------------------------------------------------------------ a call's two records in any order

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketspec.traces.history.msgtrace import CONTENT, FIELD, read_msgtrace, records


@st.composite
def _calls_in_any_order(draw):
    """Listener calls (requestId, [(msgId, count)], success) and their trace bodies in any order:
    each call's SubBefore context and SubAfter context is a body of its own
    (ConsumeMessageTraceHookImpl appends two contexts), sent by whichever dispatcher thread took
    it (AsyncTraceDispatcher), so the store may hold the SubAfter first. One call may hold two
    copies of a message."""
    calls, bodies = [], []
    for i in range(draw(st.integers(1, 6))):
        rid, ts = f"REQ{i}", 1_000_000 + 10 * i
        msgs = draw(st.lists(st.tuples(st.sampled_from(["M1", "M2", "M3"]), st.integers(0, 3)),
                             min_size=1, max_size=4))
        ok = draw(st.booleans())
        calls.append((rid, msgs, ok))
        bodies.append("".join(CONTENT.join(("SubBefore", str(ts), "DefaultRegion", "G", rid, m, str(k), "null"))
                              + FIELD for m, k in msgs))
        bodies.append("".join(CONTENT.join(("SubAfter", rid, m, "3", str(ok).lower(), "null", "0", str(ts + 5), "G"))
                              + FIELD for m, _ in msgs))
    return calls, draw(st.permutations(bodies))


@settings(max_examples=200, deadline=None)
@given(_calls_in_any_order())
def test_a_calls_records_are_paired_whichever_body_is_read_first(case):
    """Random real run 18132 (5.5.1): the client logged a call's SubAfter body as failed to send
    before its SubBefore body; read in that order the call was a delivery of unknown count and a
    call of unknown result, and H-RETRY-1 lost a failure. Each call's records pair up whatever
    the bodies' order: every message of it is one delivery at its count with the call's result."""
    import tempfile

    calls, bodies = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "msgtrace.txt"
        path.write_text("\n".join(bodies) + "\n")
        h = read_msgtrace(path, list(records(path)))
    got = sorted(((c.batch, c.id, c.reconsume_times, c.success) for c in h.consumes), key=repr)
    want = sorted(((rid, m, k, ok) for rid, msgs, ok in calls for m, k in msgs), key=repr)
    assert got == want
    assert not any("without their SubBefore" in n for n in h.notes), h.notes
