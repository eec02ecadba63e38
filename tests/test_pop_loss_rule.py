"""INV-POP-LOSS-1's drop of a message no listener call received, on random real POP run 21262
(broker 5.5.1, the 5.5.0 push consumer), and how a run whose oracle cannot see that drop is
classified.

GID_p0 (maxReconsumeTimes 0, one consume thread, 5 s invisible time, every TopicP message TagC)
has three consumers. g0c1 pops TopicP offsets 32..37 (pops 43 and 45) and is SIGSTOPped for 6.9 s
before its single thread reaches them; on resume ConsumeRequest.run finds each handle past its
invisible time and returns without calling the listener (RocketMQ's client log: "the pop message
time out so abort consume", six times, pop times 1796628984296 and ...306). Revive puts copies
with reconsume times 1 into %RETRY%GID_p0_TopicP; DefaultMQPushConsumerImpl.processPopResult
(5.5.0 lines 653-668) acks each at once (1 > 0: "Reconsume times has reached 1, so ack msg"), and
POP mode has no DLQ. The message traces agree: GID_p1, GID_p2 and GID_r3 each have a SubBefore
for these six messages, GID_p0 none. So the six are lost to GID_p0; check's INV-POP-LOSS-1 x6 is
right. The oracle says H-DELIVER-1 holds only because g0c2 of the same group was SIGKILLed after
the messages were sent: it leaves every unconsumed message of the group "unobserved" (a killed
client's unsent trace records may be the missing ones), though the broker's pops show g0c2 never
received one. The run is a white-box-only finding, not a false alarm.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

from rocketspec.conformance.real_random import classify, unseen_invariants
from rocketspec.rocketmq.profiles import get_profile
from rocketspec.spec.replay import check_events

HERE = Path(__file__).parent / "fixtures" / "real" / "pop"
NAME = "random-21262-dropped-unheard-paused"
PROFILE = "rocketmq-5.5.1"
UNHEARD = "no listener call ever received the message"
KILLED = "unobserved: a consumer of the group was killed after it was sent (its unsent trace records are lost)"
# TopicP offsets 32..37 (message_stored), the six messages g0c1 popped before its pause
LOST = ["7F0000010000AE2100000000000115ED", "7F0000010000AE210000000000011BDC", "7F0000010000AE2100000000000124AC",
        "7F0000010000AE210000000000013A02", "7F0000010000AE210000000000013FF1", "7F0000010000AE2100000000000142BD"]


def _events() -> list[dict]:
    with gzip.open(HERE / f"{NAME}-5.5.1.jsonl.gz", "rt") as fh:
        return [json.loads(line) for line in fh]


def _check(events) -> dict:
    return check_events(enumerate(events, 1), get_profile(PROFILE), max_listed=1000).to_dict()


def _oracle(deliver_counts: dict, deliver="holds", unjudged=None) -> dict:
    """The oracle's report of run 21262 (oracle.json, version 5) as classify reads it; `unjudged`:
    {reason: [store ids]} of GID_p0's messages H-DELIVER-1 left unjudged (each its own message)."""
    status = {"H-DELIVER-1": deliver, "H-RETRY-1": "holds", "H-RETRY-2": "skipped", "H-RETRY-3": "holds",
              "H-ORDER-1": "skipped", "H-ORDER-2": "skipped", "H-DUP-1": "skipped"}
    listed = {"GID_p0": {why: [[f"UNIQ{i}", [sid], None] for i, sid in enumerate(ids)]
                         for why, ids in (unjudged or {}).items()}}
    return {"complete": True, "broadcast_named": {},
            "guarantees": [{"id": g, "status": s, "counts": deliver_counts if g == "H-DELIVER-1" else {},
                            **({"unjudged_messages": listed} if g == "H-DELIVER-1" else {})}
                           for g, s in status.items()]}


REAL_COUNTS = {KILLED: 38, "consumed": 106, "failed, retried: its retry copy is stored, the copy's delivery not recorded": 8}


def test_the_six_messages_were_popped_only_by_the_paused_consumer_and_never_reached_a_listener():
    ev = _events()
    stored = {e["offset"]: e["msg_id"] for e in ev if e["kind"] == "message_stored" and e["topic"] == "TopicP"}
    assert [stored[o] for o in range(32, 38)] == LOST
    pops = [e for e in ev if e["kind"] == "message_popped" and e["group"] == "GID_p0"
            and (e.get("origin_msg_id") or e["msg_id"]) in LOST]
    first = [e for e in pops if e["topic"] == "TopicP"]
    assert {e["client"] for e in first} == {"127.0.0.1@g0c1"} and len(first) == 6
    paused = next(e for e in ev if e["kind"] == "client_paused")
    assert paused["client"] == "127.0.0.1@g0c1" and all(e["ts"] < paused["ts"] for e in first)
    # the revived copies are popped at count 1 (above maxReconsumeTimes 0), by g0c1 and the restarted g0c3
    assert {e["reconsume_times"] for e in pops if e["topic"] != "TopicP"} == {1}
    # the killed consumer of the group was handed nothing
    assert not [e for e in ev if e["kind"] == "message_popped" and e["client"] == "127.0.0.1@g0c2"]
    called = {m for e in ev if e["kind"] == "pop_consume_started" and e["group"] == "GID_p0" for m in e["msg_ids"]}
    assert called and not called & set(LOST)
    d = _check(ev)
    drops = [v for v in d["violations"] if v["invariant"] == "INV-POP-LOSS-1"]
    assert d["counts"] == {"INV-POP-LOSS-1": 6} and all(UNHEARD in v["message"] for v in drops)
    assert sorted(v["message"].split("(", 2)[1].split(")")[0] for v in drops) == sorted(LOST)


def test_a_drop_the_oracle_leaves_unobserved_after_a_kill_is_a_white_box_finding_not_a_false_alarm():
    d = _check(_events())
    sc = json.loads((HERE / f"{NAME}.scenario.json").read_text())
    # the real oracle leaves 38 of GID_p0's messages unobserved for the kill, the six among them
    oracle = _oracle(REAL_COUNTS, unjudged={KILLED: LOST + [f"OTHER{i}" for i in range(32)]})
    assert unseen_invariants(d, sc, oracle) == {"INV-POP-LOSS-1"}
    assert classify(d["counts"], oracle, unseen_invariants(d, sc, oracle)) == ("finding", ["INV-POP-LOSS-1"])
    # without the kill the oracle judges the group's messages: holding there is a false alarm
    alive = dict(sc, steps=[s for s in sc["steps"] if s.get("action") != "crash"])
    plain = _oracle({"consumed": 106, "failed, retried: its retry copy is stored, the copy's delivery not recorded": 8})
    assert unseen_invariants(d, alive, plain) == set()
    assert classify(d["counts"], plain, set())[0] == "false alarm"
    # the kill does not blind the oracle to a message it judged: one of the six judged, seen
    few = _oracle({**REAL_COUNTS, KILLED: 5}, unjudged={KILLED: LOST[1:]})
    assert classify(d["counts"], few, unseen_invariants(d, sc, few))[0] == "false alarm"
    # and the oracle's own violation still decides: seen, it is agreed
    lost = _oracle({**REAL_COUNTS, "lost": 6}, deliver="violated", unjudged={KILLED: LOST})
    assert classify(d["counts"], lost, unseen_invariants(d, sc, lost))[0] == "agreed"
