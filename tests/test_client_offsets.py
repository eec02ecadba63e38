"""Client offset stores and computePullFromWhere, against RemoteBrokerOffsetStoreTest and
RebalancePushImplTest's vectors (digest section 11) and section 2's table."""
import pytest

from rocketspec.reference.broker.broker import Broker
from rocketspec.reference.client.offset_store import READ_FROM_MEMORY, READ_FROM_STORE
from rocketspec.reference.client.push_consumer import PushConsumer
from rocketspec.reference.message import Message
from rocketspec.reference.network import Network
from rocketspec.reference.sim import Simulator
from rocketspec.rocketmq.profiles import get_profile

MQ = ("T", "b", 0)
RETRY = ("%RETRY%g", "b", 0)


def consumer(profile="rocketmq-5.3.3", **cfg):
    events = []
    sim = Simulator(0, events.append)
    net = Network(sim)
    b = Broker(sim, "b", get_profile(profile))
    net.add_broker(b)
    b.create_topic("T", 1)
    b.create_topic("%RETRY%g", 1)
    c = PushConsumer(sim, net, get_profile(profile), "c1", "g", cfg, {"T": "*"}, None, {})
    return c, b, events


@pytest.mark.parametrize("profile", ["rocketmq-5.3.3", "rocketmq-4.9.8"])
def test_update_offset_increase_only(profile):
    c, _, _ = consumer(profile)
    s = c.offset_store
    s.update_offset(MQ, 1024, False)
    s.update_offset(MQ, 1023, False)
    assert s.read_offset(MQ, READ_FROM_MEMORY) == 1023
    s.update_offset(MQ, 1022, True)
    assert s.read_offset(MQ, READ_FROM_MEMORY) == 1023
    s.update_offset(MQ, 1030, True)
    assert s.read_offset(MQ, READ_FROM_MEMORY) == 1030


def test_frozen_offset_ignores_updates_until_removed():
    c, _, _ = consumer()
    s = c.offset_store
    s.update_and_freeze(MQ, 1024)
    s.update_offset(MQ, 2000, True)
    s.update_offset(MQ, 10, False)
    assert s.read_offset(MQ, READ_FROM_MEMORY) == 1024
    s.remove_offset(MQ)
    assert s.read_offset(MQ, READ_FROM_MEMORY) == -1
    s.update_offset(MQ, 7, False)
    assert s.read_offset(MQ, READ_FROM_MEMORY) == 7


def test_read_from_store_not_found_and_failure():
    c, b, _ = consumer()
    assert c.offset_store.read_offset(MQ, READ_FROM_STORE) == -1          # nothing committed, empty queue
    c.faults.offset_query_failures["c1"] = 1
    assert c.offset_store.read_offset(MQ, READ_FROM_STORE) == -2          # another failure: -2 in 5.x
    b.offsets.commit("g", "T", 0, 42)
    assert c.offset_store.read_offset(MQ, READ_FROM_STORE) == 42
    assert c.offset_store.read_offset(MQ, READ_FROM_MEMORY) == 42         # the store read updates memory


def test_4_9_reads_a_broker_exception_as_not_found_but_a_timeout_as_failure():
    c, _, _ = consumer("rocketmq-4.9.8")
    c.faults.offset_query_failures["c1"] = 1
    c.faults.offset_query_failure_kind["c1"] = "broker_error"
    assert c.offset_store.read_offset(MQ, READ_FROM_STORE) == -1        # residual of #2708 in 4.9.x
    c.faults.offset_query_failures["c1"] = 1
    c.faults.offset_query_failure_kind["c1"] = "timeout"
    assert c.offset_store.read_offset(MQ, READ_FROM_STORE) == -2        # fixed in 4.9.1
    c5, _, _ = consumer("rocketmq-5.3.3")
    c5.faults.offset_query_failures["c1"] = 1
    c5.faults.offset_query_failure_kind["c1"] = "broker_error"
    assert c5.offset_store.read_offset(MQ, READ_FROM_STORE) == -2


def test_persist_all_drops_entries_of_queues_not_held():
    c, _, events = consumer()
    s = c.offset_store
    s.update_offset(MQ, 5, False)
    s.update_offset(RETRY, 3, False)
    s.persist_all({MQ})
    assert s.read_offset(RETRY, READ_FROM_MEMORY) == -1
    assert [e["offset"] for e in events if e["kind"] == "offset_persisted"] == [5]


# LocalFileOffsetStore (broadcasting) before and after #7740 (4.9.8, 5.2.0), from the 4.9.x source
# and PR #7745: before, persist(mq) is an empty method and persistAll rewrites offsets.json with
# the queues passed only; since, both merge their entries into the file.
LOCAL_STORE_FIXED = [("bug-4016-rocketmq-4.9.7", False), ("rocketmq-4.9.8", True), ("rocketmq-5.3.3", True)]
OTHER = ("T", "b", 1)


def local_flushes(events):
    return [(e["queue"], e["offset"]) for e in events if e["kind"] == "offset_flushed" and e["store"] == "local"]


@pytest.mark.parametrize("profile,fixed", LOCAL_STORE_FIXED)
def test_local_persist_mq_writes_the_file_only_since_7740(profile, fixed):
    c, _, events = consumer(profile, message_model="BROADCASTING")
    s = c.offset_store
    s.disk[OTHER] = 7                       # an entry persistAll wrote earlier
    s.update_offset(MQ, 42, False)
    c.remove_unnecessary_message_queue(MQ, None)    # rebalance drops MQ: persist(mq), removeOffset
    if fixed:
        assert s.disk == {OTHER: 7, MQ: 42}         # merged into the file
        assert local_flushes(events) == [(0, 42)]
        assert s.read_offset(MQ, READ_FROM_STORE) == 42
    else:
        assert s.disk == {OTHER: 7}                 # nothing written
        assert local_flushes(events) == []
        assert s.read_offset(MQ, READ_FROM_STORE) == -1


@pytest.mark.parametrize("profile,fixed", LOCAL_STORE_FIXED)
def test_local_persist_all_merges_only_since_7740(profile, fixed):
    c, _, events = consumer(profile, message_model="BROADCASTING")
    s = c.offset_store
    s.disk[OTHER] = 7                       # a queue no longer held
    s.update_offset(MQ, 5, False)
    s.persist_all({MQ})
    assert local_flushes(events) == [(0, 5)]
    erased = [e["queue"] for e in events if e["kind"] == "offset_erased"]
    if fixed:
        assert s.disk == {OTHER: 7, MQ: 5} and erased == []
    else:
        assert s.disk == {MQ: 5} and erased == [1]


def fill(b, n, topic="T"):
    for _ in range(n):
        b.put_message(Message(topic=topic, queue=0))


@pytest.mark.parametrize("where", ["CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_FIRST_OFFSET", "CONSUME_FROM_TIMESTAMP"])
def test_committed_offset_wins(where):
    c, b, _ = consumer(consume_from_where=where)
    b.offsets.commit("g", "T", 0, 0)
    fill(b, 5)
    assert c.rebalance.compute_pull_from_where(MQ) == 0
    b.offsets.commit("g", "T", 0, 3)
    assert c.rebalance.compute_pull_from_where(MQ) == 3


def test_last_offset_without_commit_is_max_offset_and_retry_topic_is_zero():
    c, b, _ = consumer()
    fill(b, 5)
    b.store.delete_before("T", 0, 2)       # offset 0 gone: the broker no longer answers 0 itself
    assert c.rebalance.compute_pull_from_where(MQ) == 5
    assert c.rebalance.compute_pull_from_where(RETRY) == 0


def test_last_offset_new_group_starts_at_zero_while_offset_zero_is_kept():
    c, b, _ = consumer()
    fill(b, 5)
    assert c.rebalance.compute_pull_from_where(MQ) == 0   # #334: the broker answers 0


def test_first_offset_without_commit_is_zero():
    c, b, _ = consumer(consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    fill(b, 5)
    b.store.delete_before("T", 0, 2)
    assert c.rebalance.compute_pull_from_where(MQ) == 0   # fixed later through OFFSET_ILLEGAL


def test_timestamp_searches_store_time_and_retry_topic_is_max():
    c, b, _ = consumer(consume_from_where="CONSUME_FROM_TIMESTAMP", consume_timestamp=1000)
    fill(b, 2)
    c.sim.now = 2000
    fill(b, 3)
    b.store.delete_before("T", 0, 1)
    assert c.rebalance.compute_pull_from_where(MQ) == 2
    fill(b, 4, "%RETRY%g")
    b.store.delete_before("%RETRY%g", 0, 1)
    assert c.rebalance.compute_pull_from_where(RETRY) == 4


def test_failed_offset_query_skips_the_queue():
    c, b, _ = consumer()
    fill(b, 5)
    c.faults.offset_query_failures["c1"] = 1
    assert c.rebalance.compute_pull_from_where(MQ) == -1


def test_2708_failure_read_as_not_found_restarts_at_max():
    bug = get_profile("rocketmq-4.9.8")
    from rocketspec.rocketmq.profiles import derive
    c, b, _ = consumer()
    c.profile = c.offset_store.profile = derive(bug, name="x", offset_query_failure_as_not_found=True)
    fill(b, 5)
    b.offsets.commit("g", "T", 0, 2)
    b.store.delete_before("T", 0, 1)
    c.faults.offset_query_failures["c1"] = 1
    assert c.rebalance.compute_pull_from_where(MQ) == 5    # committed 2 ignored: messages 2..4 skipped


def test_message_queue_changed_divides_topic_thresholds():
    # RebalancePushImplTest: the per-topic threshold is shared by the queues held, at least 1 each.
    c, b, _ = consumer(pull_threshold_for_topic=1024, pull_threshold_size_for_topic=1024)
    b.create_topic("T", 3)
    from rocketspec.reference.client.process_queue import ProcessQueue
    for q in range(3):
        c.rebalance.pq_table[("T", "b", q)] = ProcessQueue()
    c.message_queue_changed("T")
    assert c.config["pull_threshold_for_queue"] == 341 and c.config["pull_threshold_size_for_queue"] == 341
    c2, b2, _ = consumer(pull_threshold_for_topic=2)
    for q in range(3):
        c2.rebalance.pq_table[("T", "b", q)] = ProcessQueue()
    c2.message_queue_changed("T")
    assert c2.config["pull_threshold_for_queue"] == 1
