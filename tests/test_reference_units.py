"""Reference components against the digest's facts and RocketMQ's own test vectors."""
import pytest
from hypothesis import given, strategies as st

from rocketspec.reference.broker.broker import Broker
from rocketspec.reference.broker.schedule import parse_delay_levels
from rocketspec.reference.broker.store import PULL_STATUS, MessageStore, response_code
from rocketspec.reference.client.process_queue import NoSuchElement, ProcessQueue
from rocketspec.reference.message import Message
from rocketspec.reference.sim import Process, Simulator
from rocketspec.rocketmq.profiles import derive, get_profile

P5 = get_profile("rocketmq-5.3.3")
P4 = get_profile("rocketmq-4.9.8")


def msgs(offsets, size=123):
    return [Message(topic="T", offset=o, body_size=size) for o in offsets]


# ---------------------------------------------------------------- ProcessQueue (ProcessQueueTest vectors)
def test_process_queue_count_take_commit_remove():
    pq = ProcessQueue()
    pq.put_messages(msgs(range(100)))
    assert pq.msg_count == 100 and pq.msg_size == 100 * 123
    pq.take_messages(10, 0)
    assert pq.commit() == 10
    assert pq.msg_count == 90 and pq.msg_size == 90 * 123
    pq.remove_messages(msgs([99]), 0)
    assert pq.msg_count == 89


def test_put_returns_dispatch_only_when_not_consuming():
    pq = ProcessQueue()
    assert pq.put_messages(msgs([0, 1])) is True
    assert pq.put_messages(msgs([2])) is False   # consuming already set
    assert ProcessQueue().put_messages([]) is False


def test_queue_offset_max_is_last_new_offset_in_input_order():
    pq = ProcessQueue()
    pq.put_messages(msgs([5, 9, 7]))
    assert pq.queue_offset_max == 7
    pq.put_messages(msgs([9]))            # not new: unchanged
    assert pq.queue_offset_max == 7


def test_remove_results():
    pq = ProcessQueue()
    assert pq.remove_messages(msgs([0]), 0) == -1          # empty before removal
    pq.put_messages(msgs([10, 11, 12]))
    assert pq.remove_messages(msgs([11]), 0) == 10          # minimum still in the tree
    assert pq.remove_messages(msgs([10]), 0) == 12
    assert pq.remove_messages(msgs([12]), 0) == 13          # empty: queueOffsetMax + 1
    assert pq.msg_size == 0


@given(st.lists(st.integers(0, 60), min_size=1, max_size=40, unique=True), st.data())
def test_remove_returns_min_unconsumed_or_max_plus_one(offsets, data):
    pq = ProcessQueue()
    pq.put_messages(msgs(offsets))
    done = data.draw(st.lists(st.sampled_from(offsets), unique=True))
    result = pq.remove_messages(msgs(done), 0)
    left = set(offsets) - set(done)
    assert result == (min(left) if left else offsets[-1] + 1)


def test_commit_with_nothing_taken_raises():
    with pytest.raises(NoSuchElement):
        ProcessQueue().commit()


def test_rollback_and_consume_again():
    pq = ProcessQueue()
    pq.put_messages(msgs(range(5)))
    taken = pq.take_messages(3, 0)
    assert [m.offset for m in taken] == [0, 1, 2]
    pq.make_message_to_consume_again(taken[1:])
    assert list(pq.msg_tree) == [1, 2, 3, 4] and list(pq.consuming_tree) == [0]
    pq.rollback()
    assert list(pq.msg_tree) == [0, 1, 2, 3, 4] and not pq.consuming_tree
    assert pq.take_messages(10, 0) and pq.take_messages(1, 0) == [] and pq.consuming is False


def test_lock_expiry_is_strict():
    pq = ProcessQueue(now=0)
    assert not pq.is_lock_expired(30000, 30000)
    assert pq.is_lock_expired(30001, 30000)


# ---------------------------------------------------------------- store: getMessage corrections (digest section 10)
def store_with(n, profile=P5, min_offset=0):
    s = MessageStore(profile)
    s.consume_queue("T", 0)
    for _ in range(n):
        s.append(Message(topic="T", queue=0))
    if min_offset:
        s.delete_before("T", 0, min_offset)
    return s


ALL = lambda m: True  # noqa: E731


@pytest.mark.parametrize("n,min_off,req,status,nxt,code", [
    (0, 0, 0, "NO_MESSAGE_IN_QUEUE", 0, "PULL_NOT_FOUND"),
    (0, 0, 5, "NO_MESSAGE_IN_QUEUE", 0, "PULL_OFFSET_MOVED"),
    (10, 4, 2, "OFFSET_TOO_SMALL", 4, "PULL_OFFSET_MOVED"),
    (10, 0, 10, "OFFSET_OVERFLOW_ONE", 10, "PULL_NOT_FOUND"),
    (10, 0, 15, "OFFSET_OVERFLOW_BADLY", 10, "PULL_OFFSET_MOVED"),
    (10, 3, 15, "OFFSET_OVERFLOW_BADLY", 10, "PULL_OFFSET_MOVED"),
    (10, 0, 3, "FOUND", 10, "SUCCESS"),
])
def test_get_message_status_and_correction(n, min_off, req, status, nxt, code):
    r = store_with(n, min_offset=min_off).get_message("T", 0, req, 32, ALL)
    assert (r.status, r.next_begin, response_code(r.status, req)) == (status, nxt, code)


def test_overflow_badly_before_4_9_4_goes_back_to_min_when_min_is_zero():
    bug = derive(P4, name="x", overflow_badly_min_if_zero=True)
    assert store_with(10, bug).get_message("T", 0, 15, 32, ALL).next_begin == 0          # #4215
    assert store_with(10, bug, min_offset=3).get_message("T", 0, 15, 32, ALL).next_begin == 10


def test_missing_queue_and_filtered_scan():
    s = store_with(10)
    assert s.get_message("T", 7, 0, 32, ALL).status == "NO_MATCHED_LOGIC_QUEUE"
    r = s.get_message("T", 0, 0, 32, lambda m: False)
    assert (r.status, r.next_begin, response_code(r.status, 0)) == ("NO_MATCHED_MESSAGE", 10, "PULL_RETRY_IMMEDIATELY")
    r = s.get_message("T", 0, 2, 3, ALL)
    assert [m.offset for m in r.messages] == [2, 3, 4] and r.next_begin == 5


def test_pull_status_mapping():
    assert PULL_STATUS == {"SUCCESS": "FOUND", "PULL_NOT_FOUND": "NO_NEW_MSG",
                           "PULL_RETRY_IMMEDIATELY": "NO_MATCHED_MSG", "PULL_OFFSET_MOVED": "OFFSET_ILLEGAL"}


# ---------------------------------------------------------------- schedule levels
def test_default_delay_levels():
    levels = parse_delay_levels(P5.delay_levels)
    assert len(levels) == 18
    assert levels[:4] == [1000, 5000, 10000, 30000] and levels[-1] == 2 * 3600 * 1000
    with pytest.raises(ValueError, match="level 2"):
        parse_delay_levels("1s 5x")


# ---------------------------------------------------------------- broker: offsets, send-back, DLQ
def broker(profile=P5):
    events = []
    sim = Simulator(0, events.append)
    b = Broker(sim, "b", profile)
    b.create_topic("T", 1)
    return b, events


def test_broker_offset_commit_overwrites_and_restart_reloads_last_flush():
    b, ev = broker()
    b.offsets.commit("g", "T", 0, 10)
    b.offsets.commit("g", "T", 0, 5)          # smaller: stored anyway
    assert b.offsets.query("g", "T", 0) == 5
    b.offsets.flush()
    b.offsets.commit("g", "T", 0, 20)
    b.offsets.reload()
    assert b.offsets.query("g", "T", 0) == 5
    assert [e["kind"] for e in ev].count("offset_loaded") == 1


def test_query_offset_answers_zero_for_unknown_group_while_offset_zero_is_kept():
    """5.3.3 ConsumerManageProcessor.queryConsumerOffset: no offset, min offset 0 and
    checkInMemByConsumeOffset(topic, queue, 0, 1), which needs an entry at offset 0."""
    b, _ = broker()
    assert b.query_consumer_offset("g", "T", 0) is None          # empty queue: not found
    b.put_message(Message(topic="T", queue=0))
    assert b.query_consumer_offset("g", "T", 0) == 0             # #334
    b.store.delete_before("T", 0, 1)
    assert b.query_consumer_offset("g", "T", 0) is None


def test_query_offset_of_an_empty_queue_is_zero_on_4_9_8():
    """4.9.8 answers 0 when min offset <= 0 and !checkInDiskByConsumeOffset(topic, queue, 0),
    which is false for a queue with no entry at 0: the real runs' empty retry queue reads 0
    (tests/fixtures/real/*: offset_read 0 from the store, never a committed offset before)."""
    b, _ = broker(P4)
    assert b.query_consumer_offset("g", "T", 0) == 0             # empty queue
    b.put_message(Message(topic="T", queue=0))
    assert b.query_consumer_offset("g", "T", 0) == 0
    b.store.delete_before("T", 0, 1)                             # min offset 1: not found
    assert b.query_consumer_offset("g", "T", 0) is None
    b.offsets.commit("g", "T", 0, 7)
    assert b.query_consumer_offset("g", "T", 0) == 7


def _sent_back_chain(profile, via):
    """Deliver one message repeatedly failing until it is dead-lettered; return the counts sent."""
    b, ev = broker(profile)
    m = b.put_message(Message(topic="T", queue=0))
    r = 0
    for _ in range(40):
        if via == "rpc":
            b.consumer_send_msg_back("g", m.msg_id, 0, 16, "c")
        else:
            b.send_to_retry_topic("g", m, r + 1, 16, 3 + r, "fallback_producer", "c")
        last = [e for e in ev if e["kind"] == "message_sent_back"][-1]
        if last["outcome"] == "dlq":
            return r, last, ev
        m = b.index[[e for e in ev if e["kind"] == "message_scheduled"][-1]["msg_id"]]
        r = m.reconsume_times
    raise AssertionError("never dead-lettered")


def test_send_back_retries_16_times_at_levels_3_to_18_then_dlq():
    r, last, ev = _sent_back_chain(P5, "rpc")
    assert r == 16 and last["reconsume_times"] == 16
    levels = [e["delay_level"] for e in ev if e["kind"] == "message_scheduled"]
    assert levels == list(range(3, 19))
    dlq = [e for e in ev if e["kind"] == "message_dead_lettered"][0]
    assert dlq["reconsume_times"] == 17
    stored = [e for e in ev if e["kind"] == "message_stored" and e["source"] == "dlq"][0]
    assert stored["topic"] == "%DLQ%g" and stored["queue"] == 0


def test_fallback_send_threshold_differs_by_release():
    # The producer path compares the header count r+1: 4.9.x dead-letters when r+1 >= max,
    # 5.x when r+1 > max, so 4.9.x gives one retry fewer on that path.
    assert _sent_back_chain(P5, "producer")[0] == 16
    assert _sent_back_chain(P4, "producer")[0] == 15


def test_retry_queue_nums_zero_discards():
    b, ev = broker()
    b.retry_queue_nums = 0
    m = b.put_message(Message(topic="T", queue=0))
    b.consumer_send_msg_back("g", m.msg_id, 0, 16, "c")
    assert [e["outcome"] for e in ev if e["kind"] == "message_sent_back"] == ["discarded"]
    assert not [e for e in ev if e["kind"] == "message_scheduled"]


# ---------------------------------------------------------------- simulator
def test_paused_owner_tasks_wait_and_dead_owner_tasks_never_run():
    ran = []
    sim = Simulator(0, lambda e: None)
    p, q = Process("p"), Process("q")
    sim.schedule(10, ran.append, "p10", owner=p)
    sim.schedule(20, ran.append, "q20", owner=q)
    p.paused_until = 50
    q.kill()
    sim.schedule(30, ran.append, "free30")
    sim.run_until(100)
    assert ran == ["free30", "p10"]


def _first_store_reads(events):
    """Real store reads of a queue the group had no committed offset for: (topic, queue,
    messages stored so far, min offset, offset read)."""
    committed, stored, mins, out = set(), {}, {}, []
    for e in events:
        k = e["kind"]
        if k == "offset_committed":
            committed.add((e["group"], e["topic"], e["queue"]))
        elif k == "message_stored":
            stored[(e["topic"], e["queue"])] = e["offset"] + 1
        elif k == "queue_snapshot":
            mins[(e["topic"], e["queue"])] = e["min_offset"]
            stored[(e["topic"], e["queue"])] = e["max_offset"]
        elif k == "offset_read" and e["source"] == "store" and e["offset"] >= -1 \
                and (e["group"], e["topic"], e["queue"]) not in committed:
            tq = (e["topic"], e["queue"])
            out.append((*tq, stored.get(tq, 0), mins.get(tq, 0), e["offset"]))
    return out


def test_the_4_9_8_reference_answers_first_offset_queries_as_the_real_broker_did():
    """Every real 4.9.8 run: each first store read (no committed offset) is answered as the
    reference broker under rocketmq-4.9.8 answers it for a queue of the same size and min
    offset. The runs include empty queues (every retry queue, Orders/2 in real-rebalance)."""
    from handtraces import REAL, load
    reads = [r for p in sorted(REAL.glob("real-*.jsonl")) for r in _first_store_reads(load(p))]
    assert any(n == 0 for _, _, n, _, _ in reads), "no empty queue was read: the fact is not exercised"
    for topic, queue, n, mn, real in reads:
        b, _ = broker(P4)
        for _ in range(n):
            b.put_message(Message(topic="T", queue=0))
        if mn:
            b.store.delete_before("T", 0, mn)
        got = b.query_consumer_offset("g", "T", 0)
        assert (-1 if got is None else got) == real, (topic, queue, n, mn, real)
