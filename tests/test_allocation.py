"""The allocation strategies and MessageQueue ordering, against RocketMQ's facts
(docs/rocketmq-facts.md section 1) and RocketMQ's own strategy tests."""
from __future__ import annotations

import re
from functools import cmp_to_key

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketspec.reference.allocation import (
    STRATEGIES, AllocationError, Averagely, ByConfig, ByMachineRoom, ConsistentHash,
    MachineRoomNearby, _Ring, allocate, allocate_all, java_split, md5_hash, make_strategy,
)
from rocketspec.reference.message_queue import (
    INT32_MAX, INT32_MIN, MessageQueue, java_compare, java_sort_key, sort_cids, sort_mqs,
)

MQ = MessageQueue
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def queues(n, topic="topic", broker="brokerName"):
    return [MQ(topic, broker, q) for q in range(n)]


def ids(allocation):
    return [mq.queue_id for mq in allocation]


def by_cid(strategy, mqs, cids, **kw):
    return {cid: ids(a) for cid, a in allocate_all(strategy, mqs, cids, **kw).items()}


def owners(strategy, mqs, cids, **kw):
    """queue id -> owning cid (every queue must have at most one owner)."""
    result = {}
    for cid, got in allocate_all(strategy, mqs, cids, **kw).items():
        for mq in got:
            assert mq not in result, f"{mq} given to {result[mq]} and {cid}"
            result[mq] = cid
    return result


# ---- digest vectors ----------------------------------------------------------------------

def test_names():
    assert STRATEGIES == ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "CONFIG", "MACHINE_ROOM")
    assert [make_strategy(s).name for s in STRATEGIES] == list(STRATEGIES)


def test_avg_10_queues_4_consumers():
    cids = [f"CID_PREFIX{i}" for i in range(4)]
    got = by_cid("AVG", queues(10), cids)
    assert [len(v) for v in got.values()] == [3, 3, 2, 2]
    assert list(got.values()) == [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9]]


def test_avg_8_queues_3_consumers():
    assert list(by_cid("AVG", queues(8), ["a", "b", "c"]).values()) == [[0, 1, 2], [3, 4, 5], [6, 7]]


def test_avg_by_circle_10_queues_4_consumers():
    got = by_cid("AVG_BY_CIRCLE", queues(10), [f"CID_PREFIX{i}" for i in range(4)])
    assert list(got.values()) == [[0, 4, 8], [1, 5, 9], [2, 6], [3, 7]]


def test_md5_hash_vector():
    assert md5_hash("CID-0-0") == 1900518137


@pytest.mark.parametrize("n_cids,n_queues,expected", [
    (2, 6, [1, 0, 1, 0, 0, 0]),
    (3, 8, [2, 0, 1, 2, 2, 2, 0, 0]),
    (4, 10, [2, 0, 3, 2, 2, 2, 3, 3, 2, 3]),
])
def test_consistent_hash_vectors(n_cids, n_queues, expected):
    mqs = queues(n_queues, topic="topic_test")
    got = owners("CONSISTENT_HASH", mqs, [f"CID-{i}" for i in range(n_cids)])
    assert [got[mq] for mq in mqs] == [f"CID-{i}" for i in expected]


def test_machine_room_vector():
    mqs = [MQ("topic", "room1@broker-a" if q < 5 else "room2@broker-b", q) for q in range(10)]
    got = by_cid("MACHINE_ROOM", mqs, ["CID_PREFIX0", "CID_PREFIX1"], consumeridcs={"room1"})
    assert got == {"CID_PREFIX0": [0, 1, 4], "CID_PREFIX1": [2, 3]}


# ---- edge cases --------------------------------------------------------------------------

@pytest.mark.parametrize("strategy", ["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "MACHINE_ROOM"])
def test_current_client_absent_gets_nothing(strategy):
    mqs = [MQ("t", "r@b", q) for q in range(6)]
    assert allocate(strategy, "stranger", mqs, ["a", "b"], consumeridcs={"r"}) == []


@pytest.mark.parametrize("strategy", ["AVG", "AVG_BY_CIRCLE"])
def test_fewer_queues_than_clients(strategy):
    got = by_cid(strategy, queues(2), ["a", "b", "c", "d", "e"])
    assert got == {"a": [0], "b": [1], "c": [], "d": [], "e": []}


def test_machine_room_fewer_kept_queues_than_clients():
    mqs = [MQ("t", "r@b", q) for q in range(2)]
    got = by_cid("MACHINE_ROOM", mqs, ["a", "b", "c"], consumeridcs=["r"])
    assert got == {"a": [0], "b": [1], "c": []}


CHECKED = ["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "MACHINE_ROOM"]


@pytest.mark.parametrize("strategy", CHECKED)
@pytest.mark.parametrize("cid,mqs,cids,message", [
    ("", queues(3), ["a"], "currentCID is empty"),
    (None, queues(3), ["a"], "currentCID is empty"),
    ("", None, None, "currentCID is empty"),          # the current id is checked first
    ("a", [], ["a"], "mqAll is null or mqAll empty"),
    ("a", None, ["a"], "mqAll is null or mqAll empty"),
    ("a", None, None, "mqAll is null or mqAll empty"),  # then mqAll
    ("a", queues(3), [], "cidAll is null or cidAll empty"),
    ("a", queues(3), None, "cidAll is null or cidAll empty"),
])
def test_check_errors(strategy, cid, mqs, cids, message):
    with pytest.raises(AllocationError) as info:
        allocate(strategy, cid, mqs, cids, consumeridcs=["r"])
    assert str(info.value) == message
    assert info.value.java_exception == "IllegalArgumentException"


def test_allocate_all_without_consumers_raises_the_check():
    with pytest.raises(AllocationError, match="cidAll is null or cidAll empty"):
        allocate_all("AVG", queues(3), [])


def test_config_returns_the_configured_list_itself_without_checks():
    configured = [MQ("t", "b", 7)]
    assert allocate("CONFIG", "a", queues(3), ["a"], config_mqs=configured) is configured
    assert allocate("CONFIG", "", None, None, config_mqs=configured) is configured
    assert allocate("CONFIG", "nobody", queues(3), ["a"]) is None
    assert allocate_all("CONFIG", None, ["a", "b"], config_mqs=configured) == {"a": configured, "b": configured}
    assert allocate_all("CONFIG", None, None) == {}


def test_consistent_hash_virtual_node_count():
    with pytest.raises(AllocationError, match=r"^illegal virtualNodeCnt :-1$"):
        allocate("CONSISTENT_HASH", "a", queues(3), ["a"], virtual_node_cnt=-1)
    with pytest.raises(AllocationError):
        ConsistentHash(-5)
    # An empty ring routes nothing: nobody gets any queue.
    assert by_cid("CONSISTENT_HASH", queues(5), ["a", "b"], virtual_node_cnt=0) == {"a": [], "b": []}


def test_consistent_hash_collision_later_put_wins():
    # "c106893-0" and "c147464-0" share the MD5 prefix 3379821892; with one virtual node
    # each, the ring keeps only the node added last.
    x, y = "c106893", "c147464"
    assert md5_hash(f"{x}-0") == md5_hash(f"{y}-0") == 3379821892
    mqs = queues(6)
    assert by_cid("CONSISTENT_HASH", mqs, [x, y], virtual_node_cnt=1) == {x: [], y: list(range(6))}
    assert by_cid("CONSISTENT_HASH", mqs, [y, x], virtual_node_cnt=1) == {y: [], x: list(range(6))}


def test_consistent_hash_duplicate_cid_numbers_replicas_after_survivors():
    ring = _Ring(["a", "b", "a"], 2)
    assert sorted(ring.hashes) == sorted(md5_hash(k) for k in ["a-0", "a-1", "b-0", "b-1", "a-2", "a-3"])
    assert ring.owners.count("a") == 4


def test_consistent_hash_routes_first_node_at_or_after_and_wraps():
    ring = _Ring(["a", "b", "c"], 3)
    top = max(ring.hashes)
    for key in (f"MessageQueue [topic=t, brokerName=b, queueId={q}]" for q in range(50)):
        h = md5_hash(key)
        want = ring.owners[0] if h > top else ring.owners[min(i for i, x in enumerate(ring.hashes) if x >= h)]
        assert ring.route(key) == want


def test_java_split():
    assert java_split("room1@broker-a", "@") == ["room1", "broker-a"]
    assert java_split("a@b@", "@") == ["a", "b"]         # trailing empties dropped
    assert java_split("a@b@@", "@") == ["a", "b"]
    assert java_split("a@@b", "@") == ["a", "", "b"]
    assert java_split("@b", "@") == ["", "b"]
    assert java_split("@", "@") == []
    assert java_split("a@", "@") == ["a"]
    assert java_split("", "@") == [""]
    assert java_split("plain", "@") == ["plain"]


def test_machine_room_broker_name_forms():
    names = ["r@b", "r@b@", "r@@b", "r@", "@b", "b", "x@b", "r@c"]
    mqs = [MQ("t", name, i) for i, name in enumerate(names)]
    assert by_cid("MACHINE_ROOM", mqs, ["a"], consumeridcs={"r"}) == {"a": [0, 1, 7]}
    assert by_cid("MACHINE_ROOM", mqs, ["a"], consumeridcs={""}) == {"a": [4]}


def test_machine_room_without_consumeridcs():
    with pytest.raises(AllocationError) as info:
        allocate("MACHINE_ROOM", "a", [MQ("t", "plain", 0), MQ("t", "r@b", 1)], ["a"])
    assert info.value.java_exception == "NullPointerException"
    # No two-part broker name: RocketMQ never touches the unset set.
    assert allocate("MACHINE_ROOM", "a", [MQ("t", "plain", 0)], ["a"]) == []


def test_machine_room_without_the_shared_check():
    strategy = ByMachineRoom({"r"}, check_args=False)
    assert strategy.allocate("a", [], ["a"]) == []
    assert strategy.allocate("", queues(2), ["a"]) == []
    assert strategy.allocate("a", None, ["b"]) == []
    with pytest.raises(AllocationError) as info:
        strategy.allocate("a", queues(2), None)
    assert info.value.java_exception == "NullPointerException"
    with pytest.raises(AllocationError):
        strategy.allocate("a", None, ["a"])


def test_unknown_strategy():
    with pytest.raises(ValueError, match="unknown allocation strategy"):
        allocate("RANDOM", "a", queues(1), ["a"])


def test_inputs_are_used_in_the_order_given():
    mqs = queues(4)[::-1]
    assert ids(allocate("AVG", "b", mqs, ["b", "a"])) == [3, 2]
    assert ids(allocate("AVG", "b", sort_mqs(mqs), sort_cids(["b", "a"]))) == [2, 3]


# ---- MachineRoomNearby -------------------------------------------------------------------

def room_of(name):
    return name.split("-")[0]


def nearby(inner=None):
    return MachineRoomNearby(inner or Averagely(), lambda mq: room_of(mq.broker_name), room_of)


def idc_queues(rooms, n):
    return [MQ("topic_test", f"{room}-brokerName", q) for room in rooms for q in range(n)]


def idc_cids(rooms, n):
    return [f"{room}-CID-{i}" for room in rooms for i in range(n)]


@pytest.mark.parametrize("broker_rooms,consumer_rooms,n_queues,n_cids", [
    (["IDC1", "IDC2"], ["IDC1", "IDC2"], 20, 10),
    (["IDC1", "IDC2"], ["IDC1", "IDC2", "IDC3"], 10, 5),
    (["IDC1", "IDC2", "IDC3"], ["IDC2"], 10, 3),
    (["IDC1", "IDC2", "IDC3"], ["IDC1", "IDC3"], 7, 4),
])
def test_machine_room_nearby(broker_rooms, consumer_rooms, n_queues, n_cids):
    strategy = nearby()
    mqs, cids = idc_queues(broker_rooms, n_queues), idc_cids(consumer_rooms, n_cids)
    seen = {}
    for cid in cids:
        for mq in strategy.allocate(cid, mqs, cids):
            assert mq not in seen
            seen[mq] = cid
            if room_of(mq.broker_name) in consumer_rooms:   # a live room keeps its queues
                assert room_of(mq.broker_name) == room_of(cid)
    assert set(seen) == set(mqs)


def test_machine_room_nearby_orphan_rooms_in_java_order_and_errors():
    strategy = nearby(make_strategy("AVG_BY_CIRCLE"))
    assert strategy.name == "MACHINE_ROOM_NEARBY-AVG_BY_CIRCLE"
    # Orphan rooms are visited in Java String order: U+1F600 (a surrogate pair) before U+E000.
    mqs = [MQ("t", "\ue000-b", 0), MQ("t", "\U0001F600-b", 0), MQ("t", "A-b", 0)]
    got = strategy.allocate("A-c", mqs, ["A-c"])
    assert [mq.broker_name for mq in got] == ["A-b", "\U0001F600-b", "\ue000-b"]
    with pytest.raises(AllocationError, match="Machine room is null for mq"):
        MachineRoomNearby(Averagely(), lambda mq: "", room_of).allocate("A-c", mqs, ["A-c"])
    with pytest.raises(AllocationError, match="Machine room is null for consumer id"):
        MachineRoomNearby(Averagely(), lambda mq: "A", lambda c: None).allocate("A-c", mqs, ["A-c"])
    with pytest.raises(AllocationError):
        MachineRoomNearby(ByConfig(None), lambda mq: "A", room_of).allocate("A-c", mqs, ["A-c"])
    with pytest.raises(AllocationError, match="currentCID is empty"):
        strategy.allocate("", mqs, ["A-c"])


# ---- MessageQueue ------------------------------------------------------------------------

def test_message_queue_value_semantics():
    a = MQ("t", "b", 1)
    assert a == MQ("t", "b", 1) and hash(a) == hash(MQ("t", "b", 1))
    assert len({a, MQ("t", "b", 1), MQ("t", "b", 2), MQ("t", "c", 1), MQ("u", "b", 1)}) == 4
    assert a.java_str() == "MessageQueue [topic=t, brokerName=b, queueId=1]"
    assert MQ.from_list(a.to_list()) == a
    with pytest.raises(AttributeError):
        a.queue_id = 2
    for bad in [("t", "b", True), ("t", "b", "1"), ("t", None, 1), ("t", "b", INT32_MAX + 1)]:
        with pytest.raises((TypeError, ValueError)):
            MQ(*bad)


def test_message_queue_order():
    mqs = [MQ("b", "a", 0), MQ("a", "b", 0), MQ("a", "a", 10), MQ("a", "a", 2), MQ("a", "a", -1)]
    assert sort_mqs(mqs) == [MQ("a", "a", -1), MQ("a", "a", 2), MQ("a", "a", 10), MQ("a", "b", 0), MQ("b", "a", 0)]
    assert MQ("a", "a", 2) < MQ("a", "a", 10) and MQ("a", "b", 0) > MQ("a", "a", 99)
    assert MQ("a", "a", 3).compare_to(MQ("a", "a", 1)) == 2
    assert MQ("ab", "x", 0).compare_to(MQ("abc", "x", 0)) == -1
    # Java's queueId - o.queueId overflows an int.
    assert MQ("t", "b", INT32_MIN).compare_to(MQ("t", "b", 1)) == INT32_MAX


def test_java_order_outside_the_bmp():
    astral, high_bmp = "\U0001F600", "\ue000"
    assert sorted([high_bmp, astral]) == [high_bmp, astral]          # Python: code points
    assert sort_cids([high_bmp, astral]) == [astral, high_bmp]       # Java: UTF-16 units
    assert java_compare(astral, high_bmp) == 0xD83D - 0xE000
    assert java_compare("ab", "abc") == -1 and java_compare("b", "a") == 1
    assert sort_mqs([MQ("t", high_bmp, 0), MQ("t", astral, 0)])[0].broker_name == astral
    assert sort_mqs([MQ(high_bmp, "b", 0), MQ(astral, "b", 0)])[0].topic == astral


def test_surrogate_spelling_is_canonical():
    assert MQ("t", "\ud83d\ude00", 0) == MQ("t", "\U0001F600", 0)
    assert allocate("AVG", "\U0001F600", queues(2), ["\ud83d\ude00"]) == queues(2)
    assert md5_hash("\ud83d\ude00") == md5_hash("\U0001F600")
    assert md5_hash("a\ud800") == md5_hash("a?")  # Java's UTF-8 encoder writes '?'


# ---- properties --------------------------------------------------------------------------

def utf16_units(s):
    """Independent oracle: Java's code units, computed by hand."""
    units = []
    for ch in s:
        cp = ord(ch)
        if cp > 0xFFFF:
            cp -= 0x10000
            units += [0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF)]
        else:
            units.append(cp)
    return units


java_text = st.text(alphabet=st.one_of(
    st.sampled_from("ab-@"),
    st.characters(min_codepoint=0xE000, max_codepoint=0xFFFF, exclude_categories=("Cs",)),
    st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF),
), max_size=5)

cid_lists = st.lists(st.text(alphabet="abcXY-0123456789", min_size=1, max_size=6),
                     min_size=1, max_size=9, unique=True)
mq_lists = st.lists(st.builds(MQ, st.sampled_from(["t1", "t2"]), st.sampled_from(["b1", "b2", "b3"]),
                              st.integers(0, 15)), min_size=1, max_size=30, unique=True)


@SETTINGS
@given(st.lists(java_text, max_size=8))
def test_sort_cids_is_utf16_order(strings):
    assert [utf16_units(s) for s in sort_cids(strings)] == sorted(utf16_units(s) for s in strings)
    assert sorted(strings, key=cmp_to_key(java_compare)) == sort_cids(strings)


@SETTINGS
@given(java_text, java_text)
def test_java_compare_sign(a, b):
    ua, ub = utf16_units(a), utf16_units(b)
    assert (java_compare(a, b) > 0) - (java_compare(a, b) < 0) == (ua > ub) - (ua < ub)
    assert (java_sort_key(a) < java_sort_key(b)) == (ua < ub)


@SETTINGS
@given(st.lists(st.builds(MQ, java_text, java_text, st.integers(-5, 5)), max_size=8))
def test_sort_mqs_is_java_order(mqs):
    expected = sorted(mqs, key=lambda m: (utf16_units(m.topic), utf16_units(m.broker_name), m.queue_id))
    assert sort_mqs(mqs) == expected
    assert sorted(mqs, key=cmp_to_key(MQ.compare_to)) == expected


def assert_partition(allocation, mqs):
    given_out = [mq for got in allocation.values() for mq in got]
    assert len(given_out) == len(set(given_out)), "a queue was given twice"
    assert set(given_out) == set(mqs)


@SETTINGS
@given(mq_lists, cid_lists, st.booleans())
def test_avg_partition_balanced_contiguous(mqs, cids, presort):
    if presort:
        mqs, cids = sort_mqs(mqs), sort_cids(cids)
    got = allocate_all("AVG", mqs, cids)
    assert_partition(got, mqs)
    sizes = [len(a) for a in got.values()]
    assert max(sizes) - min(sizes) <= 1
    # Contiguous blocks, laid out in consumer order.
    position = {mq: i for i, mq in enumerate(mqs)}
    flat = [position[mq] for cid in cids for mq in got[cid]]
    assert flat == list(range(len(mqs)))


@SETTINGS
@given(mq_lists, cid_lists)
def test_avg_by_circle_partition_balanced(mqs, cids):
    got = allocate_all("AVG_BY_CIRCLE", mqs, cids)
    assert_partition(got, mqs)
    sizes = [len(a) for a in got.values()]
    assert max(sizes) - min(sizes) <= 1
    for k, cid in enumerate(cids):
        assert got[cid] == mqs[k::len(cids)]


@SETTINGS
@given(mq_lists, cid_lists, st.integers(1, 12), st.data())
def test_consistent_hash_partition_and_stability(mqs, cids, cnt, data):
    before = owners("CONSISTENT_HASH", mqs, cids, virtual_node_cnt=cnt)
    assert set(before) == set(mqs)

    gone = data.draw(st.sampled_from(cids))
    rest = [c for c in cids if c != gone]
    if rest:
        after = owners("CONSISTENT_HASH", mqs, rest, virtual_node_cnt=cnt)
        assert set(after) == set(mqs)
        assert all(after[mq] == cid for mq, cid in before.items() if cid != gone)

    new = "NEW-" + data.draw(st.text(alphabet="xyz", max_size=3))
    grown = cids + [new] if data.draw(st.booleans()) else [new] + cids
    after = owners("CONSISTENT_HASH", mqs, grown, virtual_node_cnt=cnt)
    assert set(after) == set(mqs)
    assert all(after[mq] in (before[mq], new) for mq in mqs)


@SETTINGS
@given(st.lists(st.builds(MQ, st.just("t"),
                          st.sampled_from(["r1@b", "r2@b", "r3@b", "r1@b@", "r1@@b", "b", "@", "r1@", "@b"]),
                          st.integers(0, 20)), min_size=1, max_size=30, unique=True),
       cid_lists, st.sets(st.sampled_from(["r1", "r2", "", "zz"])))
def test_machine_room_partitions_the_kept_queues(mqs, cids, idcs):
    kept = [mq for mq in mqs if len(java_split(mq.broker_name, "@")) == 2
            and java_split(mq.broker_name, "@")[0] in idcs]
    got = allocate_all("MACHINE_ROOM", mqs, cids, consumeridcs=idcs)
    assert_partition(got, kept)
    sizes = [len(a) for a in got.values()]
    assert max(sizes) - min(sizes) <= 1


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "MACHINE_ROOM"]),
       st.lists(st.sampled_from(["", "a", "b", "c", "d", "e", "\ud800x"]), max_size=8),
       st.one_of(st.none(), st.lists(st.tuples(st.sampled_from(["r1@b", "r2@b", "b"]), st.integers(0, 3)),
                                     max_size=8)))
def test_allocate_all_is_allocate_for_each_id(strategy, cids, raw_mqs):
    """allocate_all (linear: lists converted once, positions in a dict) answers exactly what
    one allocate call per distinct id answers, errors included."""
    from rocketspec.reference.allocation import AllocationError
    from rocketspec.reference.message_queue import MessageQueue

    mqs = None if raw_mqs is None else [MessageQueue("T", b, q) for b, q in raw_mqs]
    s = make_strategy(strategy, consumeridcs=["r1"])

    def one_by_one():
        if not cids:
            raise AllocationError("cidAll is null or cidAll empty")
        return {c: s.allocate(c, mqs, cids) for c in dict.fromkeys(cids)}

    try:
        expected = one_by_one()
    except AllocationError as exc:
        with pytest.raises(AllocationError, match=re.escape(str(exc))):
            s.allocate_all(mqs, cids)
        return
    assert s.allocate_all(mqs, cids) == expected
