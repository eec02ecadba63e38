"""ProcessQueue operations of the orderly path (digest section 3, client ProcessQueueTest).

takeMessages moves the lowest offsets into the consuming map; commit counts them consumed and
answers lastKey + 1; rollback and makeMessageToConsumeAgain put messages back; a lease is
expired when now - lastLockTimestamp > 30000 (strict).
"""
import pytest

from rocketspec.reference.client.process_queue import NoSuchElement, ProcessQueue
from rocketspec.reference.message import Message


def msgs(lo, hi, size=123):
    return [Message(topic="T", queue=0, offset=o, body_size=size) for o in range(lo, hi)]


def test_lease_expiry_is_strict():
    pq = ProcessQueue(now=1000)
    assert not pq.is_lock_expired(1000 + 30000, 30000)
    assert pq.is_lock_expired(1000 + 30001, 30000)


def test_commit_with_nothing_taken_raises():
    pq = ProcessQueue()
    pq.put_messages(msgs(0, 3))
    with pytest.raises(NoSuchElement):
        pq.commit()


def test_take_commit_counts_like_process_queue_test():
    # 100 messages of 123 bytes; take 10 and commit: 90 left, commit answers 10 (lastKey + 1).
    pq = ProcessQueue()
    assert pq.put_messages(msgs(0, 100)) is True        # dispatchToConsume: nobody consuming yet
    assert pq.put_messages(msgs(100, 101)) is False     # already consuming: no second request
    taken = pq.take_messages(10, now=0)
    assert [m.offset for m in taken] == list(range(10))
    assert pq.commit() == 10
    assert pq.msg_count == 91 and pq.msg_size == 91 * 123
    assert not pq.consuming_tree


def test_rollback_and_consume_again_put_messages_back_in_order():
    pq = ProcessQueue()
    pq.put_messages(msgs(0, 5))
    first = pq.take_messages(2, now=0)
    pq.make_message_to_consume_again(first)
    assert list(pq.msg_tree.keys()) == [0, 1, 2, 3, 4] and not pq.consuming_tree
    pq.take_messages(3, now=0)
    back = pq.rollback()
    assert [m.offset for m in back] == [0, 1, 2]
    assert list(pq.msg_tree.keys()) == [0, 1, 2, 3, 4]
    assert pq.msg_count == 5   # rollback changes no counters


def test_take_from_an_empty_tree_clears_consuming():
    pq = ProcessQueue()
    pq.put_messages(msgs(0, 1))
    pq.take_messages(1, now=0)
    pq.commit()
    assert pq.consuming
    assert pq.take_messages(1, now=0) == []
    assert not pq.consuming
    assert pq.put_messages(msgs(1, 2)) is True           # the next pull dispatches a new request


def test_success_without_commit_keeps_taking():
    # autoCommit=false + SUCCESS: nothing is committed; later takes add to the consuming map and
    # one COMMIT commits them all.
    pq = ProcessQueue()
    pq.put_messages(msgs(0, 4))
    pq.take_messages(1, now=0)
    pq.take_messages(1, now=0)
    assert list(pq.consuming_tree.keys()) == [0, 1]
    assert pq.commit() == 2
