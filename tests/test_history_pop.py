"""The black-box history of POP consumption (docs/history.md, "POP consumption"): a POP listener
call is a consume record per message, with the stored copy's queue (a revived copy's: the POP retry
topic), the producer's message identity and the handle's deadline; the guarantees read a call that
outlived its deadline as one revive may have put back.
"""
import os

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketspec.rocketmq.pop import pop_retry_topic
from rocketspec.spec.history import check_history
from rocketspec.spec.history.guarantees import POP_PUSH_PAST_LIMIT
from rocketspec.traces.history.from_trace import history_from_events, history_from_trace
from rocketspec.traces.history.model import Consume, DeadLetter, Group, History, Produce

HERE = os.path.dirname(__file__)
REAL_EXPIRY = os.path.join(HERE, "fixtures", "real", "pop", "pop-invisible-expiry-5.5.0.jsonl.gz")


def verdicts(rep):
    return {v.id: v for v in rep.verdicts}


# ------------------------------------------------------------- the reading, on a real 5.5.0 run

def test_a_real_revived_copy_reads_as_a_delivery_of_the_original_from_the_pop_retry_topic():
    # real 5.5.0: s1's SimpleConsumer call on the first message takes 12 s past its 5 s invisible
    # time; revive stores a copy in %RETRY%GID_pop_slow_Work, which s2 pops and consumes
    h = history_from_trace(REAL_EXPIRY)
    assert h.groups["GID_pop_slow"].pop == "SIMPLE"
    first = h.produces[0]
    dels = sorted((c for c in h.consumes if c.id == first.id), key=lambda c: c.ts)
    assert [c.reconsume_times for c in dels] == [0, 1]
    slow, again = dels
    assert slow.queue == ("Work", "broker-a", 0) and slow.end >= slow.deadline and slow.success is True
    assert again.queue == (pop_retry_topic("GID_pop_slow", "Work"), "broker-a", 0)
    assert again.copy != slow.copy and again.ts >= slow.deadline
    rep = check_history(h)
    assert rep.ok, rep.violated()
    assert verdicts(rep)["H-DELIVER-1"].counts["consumed"] == len(h.produces)


# ------------------------------------------------------------- the reading, event by event

def _ev(kind, ts, **f):
    return {"kind": kind, "ts": ts, **f}


def _events(changes):
    """A SimpleConsumer pops one message at 1000 (invisible 5 s), changes its invisible time at
    each of `changes` ((ts, invisible time)) while its call runs, and the call returns at 30000."""
    evs = [_ev("trace_started", 0, schema_version=3),
           _ev("client_started", 0, client="s1", group="G", consume_mode="CONCURRENTLY", message_model="CLUSTERING",
               subscriptions={"T": {"type": "TAG", "expr": "*"}}, config={"client_type": "SIMPLE"}),
           _ev("message_stored", 500, topic="T", broker="b", queue=0, offset=0, msg_id="m1", origin_msg_id="m1",
               source="producer"),
           _ev("message_popped", 1000, client="s1", group="G", topic="T", broker="b", queue=0, offset=0, msg_id="m1",
               pop_id=1, handle="h0", pop_time=1000, invisible_time=5000, reconsume_times=0, order=False,
               origin_msg_id="m1"),
           _ev("pop_consume_started", 1001, client="s1", group="G", topic="T", broker="b", consume_id=1,
               handles=["h0"], msg_ids=["m1"], reconsume_list=[0])]
    handle = "h0"
    for i, (ts, inv) in enumerate(changes, 1):
        evs.append(_ev("invisible_time_changed", ts, client="s1", group="G", topic="T", broker="b", queue=0, offset=0,
                       handle=handle, pop_time=0, result="changed", new_handle=f"h{i}", new_pop_time=ts,
                       invisible_time=inv))
        handle = f"h{i}"
    evs += [_ev("pop_consume_finished", 30000, client="s1", group="G", consume_id=1, status="CONSUME_SUCCESS"),
            _ev("trace_ended", 30001, reason="quiescent")]
    return evs


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(1002, 29000), st.integers(5000, 300000)), max_size=4))
def test_the_deadline_is_the_one_the_last_change_before_the_call_returned_left(changes):
    changes = sorted(changes)
    h = history_from_events(enumerate(_events(changes), 1))
    (c,) = h.consumes
    last_ts, last_inv = changes[-1] if changes else (1000, 5000)
    assert c.deadline == last_ts + last_inv
    assert (c.queue, c.offset, c.id, c.copy) == (("T", "b", 0), 0, "m1", "m1")


def test_a_revived_copy_is_the_original_message_and_a_proxy_dead_letter_is_a_dead_letter():
    evs = _events([])[:-2] + [
        _ev("pop_consume_finished", 2000, client="s1", group="G", consume_id=1, status="RECONSUME_LATER"),
        _ev("message_revived", 8000, group="G", topic="T", broker="b", queue=0, offset=0, msg_id="m1", pop_time=1000,
            outcome="retry", origin_msg_id="m1", target_topic="%RETRY%G_T", target_queue=0, target_offset=0,
            target_msg_id="r1", reconsume_times=1),
        _ev("pop_dead_lettered", 8100, group="G", topic="%RETRY%G_T", broker="b", queue=0, offset=0, msg_id="r1",
            reconsume_times=1, max_attempts=1),
        _ev("trace_ended", 9000, reason="quiescent")]
    h = history_from_events(enumerate(evs, 1))
    assert [(c.id, c.success) for c in h.consumes] == [("m1", False)]
    assert [(d.group, d.id, d.reconsume_times) for d in h.dead_letters] == [("G", "m1", 1)]
    rep = check_history(h)
    assert verdicts(rep)["H-DELIVER-1"].counts["dead-lettered"] == 1
    # the proxy stores the DLQ copy at the next pop, 6 s after the failure: not judged by time
    assert verdicts(rep)["H-RETRY-3"].status == "holds"
    assert verdicts(rep)["H-RETRY-3"].counts["dead letters of a POP group (stored at the next pop, not judged by time)"] == 1


# ------------------------------------------------------------- the guarantees, hand-made histories

def tiny(consumes, pop="SIMPLE", mode="CONCURRENTLY", max_reconsume=-1, dead=(), copies=True):
    h = History("mem", "trace", True, observes=frozenset({"dead_letters", "disruptions"}))
    h.produces = [Produce("m1", "T", 0, True, ("T", "b", 0), 0), Produce("m2", "T", 1, True, ("T", "b", 0), 1)]
    h.consumes = consumes
    h.dead_letters = list(dead)
    h.groups["G"] = Group("G", mode, "CLUSTERING", {"T": ("TAG", "*")}, max_reconsume_times=max_reconsume,
                          consume_timeout_ms=900000, started_ts=0, pop=pop)
    return h


def P(ts, end, deadline, client="c1", mid="m1", rc=0, success=True, copy="", queue=("T", "b", 0), offset=0):
    return Consume("G", mid, ts, end, client, queue, offset, rc, success, mid if copy == "" else copy,
                   f"{client}/{ts}", f"mem:{ts}", deadline=deadline)


RETRY_Q = ("%RETRY%G_T", "b", 0)


def test_a_call_past_its_deadline_allows_one_revived_copy():
    late = tiny([P(10, 9000, 5010), P(7100, 7105, 12100, "c2", rc=1, copy="r1", queue=RETRY_Q), P(20, 25, 5020, mid="m2",
                                                                                                   offset=1)])
    assert check_history(late).ok
    on_time = tiny([P(10, 4000, 5010), P(7100, 7105, 12100, "c2", rc=1, copy="r1", queue=RETRY_Q),
                    P(20, 25, 5020, mid="m2", offset=1)])
    assert "H-RETRY-2" in check_history(on_time).violated()


def test_a_redelivery_after_a_late_calls_deadline_is_a_duplicate_for_a_reason():
    # a source without stored-copy ids (a message trace names the UNIQ_KEY only)
    late = tiny([P(10, 9000, 5010, copy=None), P(7100, 7105, 12100, "c2", rc=1, copy=None),
                 P(20, 25, 5020, mid="m2", offset=1, copy=None)])
    dup = verdicts(check_history(late))["H-DUP-1"]
    assert dup.status == "holds" and dup.counts["allowed: POP: the invisible time ran out before the call returned"] == 1
    # the same redelivery while the successful call's handle was still valid has no reason
    early = tiny([P(10, 4000, 5010, copy=None), P(7100, 7105, 12100, "c2", rc=1, copy=None),
                  P(20, 25, 5020, mid="m2", offset=1, copy=None)])
    assert "H-DUP-1" in check_history(early).violated()


def test_the_push_consumer_in_pop_mode_acks_a_message_past_its_limit_the_simple_consumer_dead_letters_it():
    fails = [P(10, 20, 5010, success=False), P(7100, 7110, 12100, rc=1, success=False, copy="r1", queue=RETRY_Q),
             P(30, 35, 5030, mid="m2", offset=1)]
    push = verdicts(check_history(tiny(fails, pop="POP_PUSH", max_reconsume=1)))["H-DELIVER-1"]
    assert push.status == "holds" and push.counts[POP_PUSH_PAST_LIMIT] == 1
    # a SimpleConsumer's copy past the limit goes to %DLQ% through the proxy: none came, it is lost
    assert "H-DELIVER-1" in check_history(tiny(fails, pop="SIMPLE", max_reconsume=1)).violated()
    dlq = [DeadLetter("G", "m1", 20000, 2)]
    assert check_history(tiny(fails, pop="SIMPLE", max_reconsume=1, dead=dlq)).ok


def test_orderly_pop_blocks_a_queue_only_until_the_attempts_deadline():
    after = tiny([P(10, 9000, 5010), P(7100, 7105, 12100, "c2", mid="m2", offset=1)], mode="ORDERLY")
    assert verdicts(check_history(after))["H-ORDER-1"].status == "holds"
    inside = tiny([P(10, 9000, 8010), P(7100, 7105, 12100, "c2", mid="m2", offset=1)], mode="ORDERLY")
    assert "H-ORDER-1" in check_history(inside).violated()
