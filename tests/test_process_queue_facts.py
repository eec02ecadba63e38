"""ProcessQueue behaviours read off RocketMQ 4.9.8's ProcessQueue.java (5.3.3 is the same here).

- putMessage: ``msgTreeMap.put`` replaces the object stored at a present offset; only a new
  offset counts (msgCount, msgSize, queueOffsetMax).
- takeMessages: ``new ArrayList<>(batchSize)`` throws "Illegal Capacity: -1" first thing.
- putMessage: ``Long.parseLong(MAX_OFFSET) - offset`` after the messages are put; a value that
  is not a Java long throws NumberFormatException; the subtraction wraps like a long.
- cleanExpiredMsg: no dropped check; a send-back that throws is logged and the loop goes on,
  so the same first message is tried again, at most min(16, size) times.
tests/test_real_pq_lock.py checks the same against the real class when Java is at hand.
"""
from pathlib import Path

import pytest

from rocketspec.reference.client.process_queue import (
    IllegalCapacity,
    NumberFormat,
    ProcessQueue,
    java_parse_long,
)
from rocketspec.reference.message import Message
from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import load_scenario
from rocketspec.rocketmq.profiles import get_profile
from rocketspec.spec.replay import check_events


def m(offset, size=10, mid=None, props=None, start=None):
    msg = Message(msg_id=mid or f"m{offset}", topic="T", offset=offset, body_size=size, props=props)
    msg.consume_start_ts = start
    return msg


def test_put_of_a_present_offset_replaces_the_object_without_counting_it():
    pq = ProcessQueue()
    old, new = m(3, 10, "old"), m(3, 4, "new")
    pq.put_messages([old])
    pq.put_messages([m(4), new])
    assert pq.msg_tree[3] is new
    assert (pq.msg_count, pq.msg_size, pq.queue_offset_max) == (2, 20, 4)
    assert pq.take_messages(1, 0) == [new]
    # commit subtracts the stored (new) object's size
    pq.commit()
    assert (pq.msg_count, pq.msg_size) == (1, 16)


def test_take_with_a_negative_batch_throws_before_changing_anything():
    pq = ProcessQueue()
    pq.put_messages([m(0)])
    pq.last_consume_ts = 7
    with pytest.raises(IllegalCapacity, match=r"^Illegal Capacity: -1$"):
        pq.take_messages(-1, 100)
    assert pq.consuming and pq.last_consume_ts == 7 and list(pq.msg_tree) == [0]
    assert pq.take_messages(0, 100) == [] and not pq.consuming and pq.last_consume_ts == 100


@pytest.mark.parametrize("text,value", [("9", 9), ("+7", 7), ("-0", 0), ("007", 7), ("\u0661\u0662", 12),
                                        ("9223372036854775807", 2**63 - 1), ("-9223372036854775808", -2**63)])
def test_max_offset_is_read_as_a_java_long(text, value):
    assert java_parse_long(text) == value


@pytest.mark.parametrize("text", ["", "+", "-", " 5", "5 ", "1_0", "0x10", "9223372036854775808",
                                  "-9223372036854775809", "99999999999999999999"])
def test_max_offset_that_is_not_a_java_long_throws_after_the_put(text):
    pq = ProcessQueue()
    pq.put_messages([m(1, props={"MAX_OFFSET": "5"})])
    with pytest.raises(NumberFormat, match="For input string"):
        pq.put_messages([m(2, props={"MAX_OFFSET": text})])
    assert list(pq.msg_tree) == [1, 2] and pq.msg_count == 2 and pq.msg_acc_cnt == 4


def test_max_offset_count_wraps_like_a_long():
    pq = ProcessQueue()
    pq.put_messages([m(1, props={"MAX_OFFSET": str(-2**63)})])
    assert pq.msg_acc_cnt == 2**63 - 1


def test_clean_expired_has_no_dropped_check_and_retries_a_failed_send_back():
    pq = ProcessQueue()
    pq.put_messages([m(0, start=0), m(1, start=0), m(2, start=50)])
    pq.dropped = True
    outcomes = [False, False, True]
    sent, removed = [], []

    def send_back(msg, level):
        sent.append((msg.offset, level))
        return outcomes.pop(0)

    pq.clean_expired_msg(101, 100, False, send_back, lambda msg, off: removed.append((msg.offset, off)))
    # three rounds (min(16, 3)): offset 0 fails twice, then goes; offset 1 is not reached
    assert sent == [(0, 3), (0, 3), (0, 3)] and removed == [(0, 1)] and list(pq.msg_tree) == [1, 2]
    sent.clear()
    pq.clean_expired_msg(100, 100, False, lambda msg, level: sent.append(msg.offset) or True)
    assert sent == []                  # age == consumeTimeout: not expired (strict)
    pq.clean_expired_msg(10**6, 100, True, lambda msg, level: sent.append(msg.offset) or True)
    assert sent == []                  # orderly consumers never clean


def test_a_failed_expiry_send_back_leaves_the_message_to_its_listener():
    """The spec accepts the listener's own removal after cleanExpiredMsg's send-back failed."""
    sc = load_scenario(str(Path(__file__).parent / "testdata" / "expired_sendback_fails.toml"))
    evs = run_to_list(sc, 1, "rocketmq-5.3.3")
    assert sum(e["kind"] == "send_back_failed" for e in evs) >= 2
    rep = check_events(enumerate(evs, 1), get_profile("rocketmq-5.3.3"))
    assert [(f.inv, f.message) for f in rep.findings.errors] == []
