"""The differential report's figures (traces/reports/stats.py) on small hand-written traces whose
figures can be counted by hand, and rules that hold for every trace (Hypothesis)."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketspec.traces.reports.differential import compare
from rocketspec.traces.reports.stats import CAUSES, stats_of_events

G, T, B = "G", "T", "b"
RETRY = "%RETRY%G"
SUBS = {T: {"type": "TAG", "expr": "*"}, RETRY: {"type": "TAG", "expr": "*"}}


class Trace:
    """Builds a trace: each call appends one event with the next seq."""

    def __init__(self, model="CLUSTERING", mode="CONCURRENTLY", subs=None):
        self.ev = []
        self.model, self.mode, self.subs = model, mode, subs or SUBS
        self.cid = 0
        self.add(0, "trace_started", schema_version=2, profile="rocketmq-4.9.8")

    def add(self, ts, kind, **f):
        self.ev.append({"seq": len(self.ev), "ts": ts, "kind": kind, **f})
        return self

    def start(self, ts, client):
        return self.add(ts, "client_started", client=client, group=G, consume_mode=self.mode,
                        message_model=self.model, subscriptions=self.subs)

    def store(self, ts, queue, offset, msg_id, origin=None, topic=T, source="producer", tags=None):
        return self.add(ts, "message_stored", topic=topic, broker=B, queue=queue, offset=offset, msg_id=msg_id,
                        origin_msg_id=origin or msg_id, source=source, tags=tags)

    def consume(self, ts, client, queue, offsets, ids, origins=None, status="CONSUME_SUCCESS", topic=T, ack=None):
        self.cid += 1
        self.add(ts, "consume_started", client=client, group=G, topic=topic, broker=B, queue=queue,
                 consume_id=self.cid, offsets=offsets, msg_ids=ids, origin_msg_ids=origins or ids)
        extra = {} if ack is None else {"ack_index": ack}
        return self.add(ts + 1, "consume_finished", client=client, group=G, topic=topic, broker=B, queue=queue,
                        consume_id=self.cid, status=status, **extra)

    def pq(self, ts, kind, client, queue, offset=0, topic=T, **f):
        extra = {"offset": offset} if kind == "pq_created" else {}
        return self.add(ts, kind, client=client, group=G, topic=topic, broker=B, queue=queue, **extra, **f)

    def stats(self):
        return stats_of_events(self.ev)["groups"][G]


def test_retry_rebalance_dlq_never_consumed_and_a_reassignment():
    t = Trace()
    t.start(0, "c1").start(0, "c2")
    for i in range(3):
        t.store(1, 0, i, f"m{i}")
    t.pq(2, "pq_created", "c1", 0)
    t.consume(10, "c1", 0, [0], ["m0"])
    t.consume(20, "c1", 0, [1], ["m1"], status="RECONSUME_LATER")
    t.add(22, "send_back_requested", client="c1", group=G, msg_id="m1", origin_msg_id="m1", reconsume_times=0,
          delay_level=0)
    t.add(23, "message_sent_back", broker=B, group=G, msg_id="m1", origin_msg_id="m1", reconsume_times=1,
          outcome="retry")
    t.store(30, 0, 0, "m1r", origin="m1", topic=RETRY, source="schedule")
    t.consume(40, "c1", 0, [0], ["m1r"], origins=["m1"], topic=RETRY)
    t.add(50, "offset_committed", broker=B, group=G, topic=T, queue=0, offset=1)
    t.add(60, "offset_committed", broker=B, group=G, topic=T, queue=0, offset=2)
    t.pq(100, "pq_dropped", "c1", 0, reason="reassigned")
    t.pq(350, "pq_created", "c2", 0, offset=1)
    t.consume(360, "c2", 0, [1], ["m1"])               # m1 again, at another client: a rebalance duplicate
    t.store(400, 0, 0, "d0", origin="m0", topic="%DLQ%G", source="dlq")
    t.add(500, "trace_ended", reason="quiescent")
    g = t.stats()
    assert g["deliveries"] == 4 and g["listener_calls"] == 4
    assert g["delivered"] == 2                         # m0 and m1; m2 never
    assert g["duplicates"] == 2
    assert (g["duplicates_retry"], g["duplicates_rebalance"]) == (1, 1)
    assert g["failed_calls"] == 1
    assert g["send_backs_requested"] == 1 and g["send_backs_accepted"] == 1
    assert g["retry_topic_deliveries"] == 1
    assert g["dlq"] == 1
    assert g["never_consumed"] == 1                    # m2, at offset 2 >= the start offset 0
    assert g["committed"] == {"T/b/0": 2}              # the last value, not the largest
    assert g["reassign_ms"]["list"] == [250]
    assert g["reassign_detail"][0]["from"] == "c1" and g["reassign_detail"][0]["to"] == "c2"
    assert g["notes"] == {}


def test_a_crash_and_a_pause_are_their_own_causes():
    t = Trace()
    t.start(0, "c1").start(0, "c2").start(0, "c3")
    t.store(1, 0, 0, "m0").store(1, 1, 0, "m1")
    t.pq(2, "pq_created", "c1", 0).pq(2, "pq_created", "c2", 1)
    t.consume(10, "c1", 0, [0], ["m0"])
    t.consume(10, "c2", 1, [0], ["m1"])
    t.add(20, "client_crashed", client="c1", group=G)
    t.add(20, "client_paused", client="c2", group=G, duration=200000)
    t.pq(1020, "pq_created", "c3", 0)
    t.consume(1030, "c3", 0, [0], ["m0"])
    t.add(120020, "consumer_unregistered", broker=B, group=G, client="c2", reason="channel_expired")
    t.pq(121000, "pq_created", "c3", 1)
    t.consume(121010, "c3", 1, [0], ["m1"])
    g = t.stats()
    assert (g["duplicates"], g["duplicates_crash"], g["duplicates_pause"]) == (2, 1, 1)
    assert sorted(r["ms"] for r in g["reassign_detail"]) == [980, 1000]
    assert {r["after"] for r in g["reassign_detail"]} == {"client_crashed", "consumer_unregistered"}


def test_a_new_owner_before_the_old_one_lets_go_is_a_negative_time():
    t = Trace()
    t.start(0, "c1").start(0, "c2")
    t.pq(100, "pq_created", "c1", 0)
    t.pq(300, "pq_created", "c2", 0)        # c2 has the queue while c1 still holds it
    t.pq(450, "pq_dropped", "c1", 0, reason="reassigned")
    t.pq(460, "pq_removed", "c1", 0)
    t.pq(500, "pq_created", "c1", 1)        # first owner of queue 1: no reassignment
    g = t.stats()
    assert g["reassign_ms"]["list"] == [-150]
    assert (g["overlaps"], g["overlap_max_ms"]) == (1, 150)     # both held queue 0 from 300 to 450


def test_the_same_client_taking_a_queue_back_is_no_reassignment():
    t = Trace()
    t.start(0, "c1")
    t.pq(100, "pq_created", "c1", 0).pq(200, "pq_dropped", "c1", 0, reason="reassigned")
    t.pq(300, "pq_created", "c1", 0)
    assert t.stats()["reassign_ms"]["list"] == []


def test_absent_event_kinds_are_reported_not_zero():
    t = Trace()
    t.start(0, "c1")
    t.store(1, 0, 0, "m0")
    g = t.stats()
    for k in ("deliveries", "delivered", "duplicates", "never_consumed", "failed_calls", "committed",
              "send_backs_requested", "reassign_ms"):
        assert g[k] is None, k
    assert "consume_started" in g["notes"]["deliveries"]
    assert "offset_committed" in g["notes"]["committed"]
    assert "pq_created" in g["notes"]["reassign_ms"]
    assert g["dlq"] == 0          # every stored message is in the trace: no %DLQ% one is a true zero


def test_send_backs_unknown_when_calls_failed_but_the_trace_has_no_send_back_events():
    t = Trace()
    t.start(0, "c1").store(1, 0, 0, "m0")
    t.consume(10, "c1", 0, [0], ["m0"], status="RECONSUME_LATER")
    g = t.stats()
    assert g["failed_calls"] == 1
    assert g["send_backs_requested"] is None and "send_back_requested" in g["notes"]["send_backs_requested"]
    t2 = Trace()
    t2.start(0, "c1").store(1, 0, 0, "m0")
    t2.consume(10, "c1", 0, [0], ["m0"])
    assert t2.stats()["send_backs_requested"] == 0      # nothing failed: nothing to send back


def test_ack_index_splits_a_batch():
    t = Trace()
    t.start(0, "c1")
    for i in range(3):
        t.store(1, 0, i, f"m{i}")
    t.consume(10, "c1", 0, [0, 1, 2], ["m0", "m1", "m2"], ack=0)    # m1, m2 failed
    t.consume(20, "c1", 0, [1, 2], ["m1", "m2"])
    g = t.stats()
    assert g["failed_calls"] == 1
    assert g["duplicates_retry"] == 2 and g["duplicates"] == 2


def test_broadcasting_counts_per_client_and_has_no_reassignment():
    t = Trace(model="BROADCASTING", subs={T: {"type": "TAG", "expr": "*"}})
    t.start(0, "c1").start(0, "c2")
    t.store(1, 0, 0, "m0").store(1, 0, 1, "m1")
    t.pq(2, "pq_created", "c1", 0).pq(2, "pq_created", "c2", 0)
    t.consume(10, "c1", 0, [0], ["m0"])
    t.consume(10, "c2", 0, [0], ["m0"])
    t.consume(11, "c1", 0, [1], ["m1"])
    g = t.stats()
    assert (g["deliveries"], g["delivered"], g["duplicates"]) == (3, 3, 0)
    assert g["never_consumed"] == 1        # m1 at c2
    assert g["reassign_ms"] is None and "clustering" in g["notes"]["reassign_ms"]


def test_subscription_filter_and_start_offset():
    t = Trace(subs={T: {"type": "TAG", "expr": "TagA"}})
    t.start(0, "c1")
    t.store(1, 0, 0, "m0", tags="TagA").store(1, 0, 1, "m1", tags="TagB").store(1, 0, 2, "m2", tags="TagA")
    t.store(1, 0, 3, "m3", tags="TagA")
    t.pq(5, "pq_created", "c1", 0, offset=2)     # CONSUME_FROM_LAST_OFFSET on a first start
    t.consume(10, "c1", 0, [2], ["m2"])
    g = t.stats()
    assert g["filtered_out"] == 1 and g["skipped_before_start"] == 1 and g["never_consumed"] == 1


def test_orderly_suspend_is_a_retry():
    t = Trace(mode="ORDERLY")
    t.start(0, "c1").store(1, 0, 0, "m0")
    t.consume(10, "c1", 0, [0], ["m0"], status="SUSPEND_CURRENT_QUEUE_A_MOMENT")
    t.consume(1020, "c1", 0, [0], ["m0"], status="SUCCESS")
    g = t.stats()
    assert g["duplicates_retry"] == 1 and g["failed_calls"] == 1


# ---------------------------------------------------------------------- rules for every trace
CLIENTS = ["c1", "c2", "c3"]
act = st.one_of(
    st.tuples(st.just("consume"), st.sampled_from(CLIENTS), st.integers(0, 1), st.lists(st.integers(0, 5), min_size=1,
                                                                                        max_size=3, unique=True),
              st.sampled_from(["CONSUME_SUCCESS", "RECONSUME_LATER"])),
    st.tuples(st.sampled_from(["pq_created", "pq_dropped", "pq_removed"]), st.sampled_from(CLIENTS), st.integers(0, 1)),
    st.tuples(st.sampled_from(["client_crashed", "client_stopped", "client_paused"]), st.sampled_from(CLIENTS)),
    st.tuples(st.just("commit"), st.integers(0, 1), st.integers(0, 6)),
)


def build(actions, model):
    t = Trace(model=model)
    for c in CLIENTS:
        t.start(0, c)
    for i in range(6):
        t.store(1, i % 2, i // 2, f"m{i}")
    ts = 10
    for a in actions:
        ts += 7
        if a[0] == "consume":
            _, c, q, ms, status = a
            t.consume(ts, c, q, list(range(len(ms))), [f"m{m}" for m in ms], status=status)
        elif a[0] == "commit":
            t.add(ts, "offset_committed", broker=B, group=G, topic=T, queue=a[1], offset=a[2])
        elif a[0].startswith("pq_"):
            t.pq(ts, a[0], a[1], a[2], reason="reassigned")
        else:
            t.add(ts, a[0], client=a[1], group=G, duration=10)
    return t


@settings(max_examples=200, deadline=None)
@given(st.lists(act, max_size=40), st.sampled_from(["CLUSTERING", "BROADCASTING"]))
def test_counts_add_up_for_every_trace(actions, model):
    g = build(actions, model).stats()
    if g["deliveries"] is None:
        return
    assert g["deliveries"] >= g["delivered"]
    assert g["duplicates"] == g["deliveries"] - g["delivered"]
    assert g["duplicates"] == sum(g["duplicates_" + c] for c in CAUSES)
    assert g["failed_calls"] <= g["listener_calls"]
    units = 1 if model == "CLUSTERING" else len(CLIENTS)
    assert g["delivered"] + g["never_consumed"] + g["skipped_before_start"] == 6 * units
    if g["reassign_ms"] is not None and g["reassign_ms"]["list"]:
        r = g["reassign_ms"]
        assert r["min"] <= r["median"] <= r["max"]
        assert all(d["from"] != d["to"] for d in g["reassign_detail"])
    if g["reassign_ms"] is not None:
        assert all(o["ms"] >= 0 for o in g["overlap_detail"])
        assert g["overlaps"] == len(g["overlap_detail"])


@settings(max_examples=100, deadline=None)
@given(st.lists(act, max_size=40), st.sampled_from(["CLUSTERING", "BROADCASTING"]))
def test_a_trace_diffed_with_itself_shows_no_difference(actions, model):
    s = stats_of_events(build(actions, model).ev)
    v = {"verdict": "holds", "errors": 0, "invariants": {}, "warnings": 0}
    rows = compare(s, s, v, v)
    assert rows and not [r for r in rows if r["differs"]]
