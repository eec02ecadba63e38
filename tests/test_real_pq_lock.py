"""The reference ProcessQueue and lock manager against RocketMQ 4.9.8's own classes, step for step.

A JVM runs `conformance/java/PqDiff.java` on the real `ProcessQueue` and
`RebalanceLockManager`; Hypothesis generates operation scripts and every step's observable
state (tree with the stored object of each offset, consuming map, msgCount, msgSize,
queueOffsetMax, consuming, msgAccCnt, return values and exceptions, send-backs; the lock
table with holders and last-update times) must be equal on both sides.

Without Java or the RocketMQ classes the tests skip and say why; with
ROCKETSPEC_REQUIRE_REAL=1 they fail instead. `-m slow` runs many more examples.
"""
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketspec.conformance.realdiff import RealClasses, Unavailable, apply_lock, apply_pq, first_difference

LIFETIME = 1000          # virtual lock lifetime (ms) of the JVM under test
FAST = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow],
                database=None)
SLOW = settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow],
                database=None)


@pytest.fixture(scope="module")
def real():
    try:
        jvm = RealClasses(LIFETIME)
    except Unavailable as exc:
        if os.environ.get("ROCKETSPEC_REQUIRE_REAL") == "1":
            pytest.fail(f"ROCKETSPEC_REQUIRE_REAL=1 but the real classes are not at hand: {exc}")
        pytest.skip(f"real RocketMQ classes not at hand: {exc}")
    yield jvm
    jvm.close()


def agree_pq(real, ops):
    diff = first_difference(ops, real.run("pq", ops), apply_pq(ops))
    assert diff is None, diff


def agree_lock(real, ops):
    diff = first_difference(ops, real.run("lock", ops), apply_lock(ops, LIFETIME))
    assert diff is None, diff


# ---------------------------------------------------------------------------- scripts

MAX_OFFSETS = st.one_of(
    st.integers(-2**64, 2**64).map(str),
    st.sampled_from(["", "+", "-", " 5", "5 ", "1_0", "+7", "-0", "007", "0x10", "\u0661\u0662", "\uff11\uff12",
                     "9223372036854775807", "9223372036854775808", "-9223372036854775808",
                     "-9223372036854775809", "99999999999999999999"]),
    st.text(alphabet="0123456789+- _\u0663", max_size=6),
)
PQ_OPS = ["put"] * 5 + ["remove"] * 2 + ["take"] * 3 + ["commit", "rollback", "again", "clean", "clean", "dropped",
                                                           "clear"]


@st.composite
def pq_scripts(draw, max_ops=24):
    made = []
    ops = []

    def new_msg():
        spec = {"id": f"m{len(made)}", "offset": draw(st.integers(0, 9)), "size": draw(st.integers(0, 40))}
        if draw(st.integers(0, 5)) == 0:
            spec["props"] = {"MAX_OFFSET": draw(MAX_OFFSETS)}
        if draw(st.integers(0, 2)):
            spec["start"] = draw(st.integers(0, 60))
        made.append(spec)
        return spec

    def some(lo):
        return [draw(st.sampled_from(made)) if made and draw(st.booleans()) else new_msg()
                for _ in range(draw(st.integers(lo, 4)))]

    for _ in range(draw(st.integers(1, max_ops))):
        kind = draw(st.sampled_from(PQ_OPS))
        if kind in ("put", "remove", "again"):
            ops.append({"op": kind, "msgs": some(0 if kind != "put" else 1)})
        elif kind == "take":
            ops.append({"op": "take", "n": draw(st.integers(-2, 5))})
        elif kind == "clean":
            ops.append({"op": "clean", "now": draw(st.integers(0, 80)), "timeout_ms": draw(st.integers(0, 40)),
                        "orderly": draw(st.integers(0, 5)) == 0, "fail": draw(st.lists(st.booleans(), max_size=5))})
        elif kind == "dropped":
            ops.append({"op": "dropped", "value": draw(st.booleans())})
        else:
            ops.append({"op": kind})
    return ops


MQS = [["t", "b", q] for q in range(3)] + [["u", "b", 0]]
DELTAS = st.one_of(st.sampled_from([0, 1, LIFETIME - 1, LIFETIME, LIFETIME + 1, 2 * LIFETIME]),
                   st.integers(0, 3 * LIFETIME))


@st.composite
def lock_scripts(draw, max_ops=24):
    now = draw(st.integers(0, 5000))
    ops = []
    for _ in range(draw(st.integers(1, max_ops))):
        now += draw(DELTAS)
        kind = draw(st.sampled_from(["lock", "lock", "lockBatch", "lockBatch", "unlockBatch"]))
        op = {"op": kind, "group": draw(st.sampled_from(["g1", "g2"])),
              "client": draw(st.sampled_from(["c1", "c2", "c3"])), "now": now}
        if kind == "lock":
            op["mq"] = draw(st.sampled_from(MQS))
        else:
            op["mqs"] = draw(st.lists(st.sampled_from(MQS), max_size=5))
        ops.append(op)
    return ops


@FAST
@given(pq_scripts())
def test_process_queue_agrees_with_the_real_class(real, ops):
    agree_pq(real, ops)


@FAST
@given(lock_scripts())
def test_lock_manager_agrees_with_the_real_class(real, ops):
    agree_lock(real, ops)


@pytest.mark.slow
@SLOW
@given(pq_scripts(max_ops=60))
def test_process_queue_agrees_with_the_real_class_long(real, ops):
    agree_pq(real, ops)


@pytest.mark.slow
@SLOW
@given(lock_scripts(max_ops=60))
def test_lock_manager_agrees_with_the_real_class_long(real, ops):
    agree_lock(real, ops)


# ---------------------------------------------------------------------------- the four named behaviours

def test_real_put_of_a_present_offset_replaces_the_object_uncounted(real):
    ops = [{"op": "put", "msgs": [{"id": "a", "offset": 3, "size": 10}]},
           {"op": "put", "msgs": [{"id": "b", "offset": 3, "size": 4}]},
           {"op": "take", "n": 1}, {"op": "commit"}]
    steps = real.run("pq", ops)
    assert steps[1]["tree"] == [[3, "b"]] and steps[1]["count"] == 1 and steps[1]["size"] == 10
    assert steps[2]["ret"] == ["b"]
    assert steps[3]["count"] == 0 and steps[3]["size"] == 0
    agree_pq(real, ops)


def test_real_take_of_a_negative_batch_throws_and_changes_nothing(real):
    ops = [{"op": "put", "msgs": [{"id": "a", "offset": 3, "size": 10}]}, {"op": "take", "n": -1},
           {"op": "take", "n": 0}]
    steps = real.run("pq", ops)
    assert steps[1]["exc"] == "IllegalArgumentException" and steps[1]["msg"] == "Illegal Capacity: -1"
    assert not steps[1]["touched"] and steps[1]["consuming"] and steps[1]["tree"] == [[3, "a"]]
    assert steps[2]["ret"] == [] and steps[2]["touched"] and not steps[2]["consuming"]
    agree_pq(real, ops)


def test_real_max_offset_beyond_a_long_throws_after_the_put(real):
    ops = [{"op": "put", "msgs": [{"id": "a", "offset": 3, "size": 10, "props": {"MAX_OFFSET": "9"}}]},
           {"op": "put", "msgs": [{"id": "b", "offset": 4, "size": 1, "props": {"MAX_OFFSET": str(2**63)}}]}]
    steps = real.run("pq", ops)
    assert steps[1]["exc"] == "NumberFormatException"
    assert steps[1]["tree"] == [[3, "a"], [4, "b"]] and steps[1]["count"] == 2 and steps[1]["acc"] == 6
    agree_pq(real, ops)


def test_real_clean_expired_ignores_dropped_and_retries_a_failed_send_back(real):
    ops = [{"op": "put", "msgs": [{"id": "a", "offset": 3, "size": 10, "start": 0},
                                  {"id": "b", "offset": 4, "size": 10, "start": 0}]},
           {"op": "dropped", "value": True},
           {"op": "clean", "now": 101, "timeout_ms": 100, "orderly": False, "fail": [True]},
           {"op": "clean", "now": 100, "timeout_ms": 100, "orderly": False, "fail": []}]
    steps = real.run("pq", ops)
    assert steps[2]["sent"] == [["a", 3], ["a", 3]] and steps[2]["tree"] == [[4, "b"]]
    assert "sent" not in steps[3]           # age == timeout: not expired (strict)
    agree_pq(real, ops)


def test_real_lock_expiry_is_strict_and_renewal_refreshes(real):
    L = LIFETIME
    q = ["t", "b", 0]
    ops = [{"op": "lock", "group": "g", "mq": q, "client": "c1", "now": 0},
           {"op": "lock", "group": "g", "mq": q, "client": "c2", "now": L},
           {"op": "lockBatch", "group": "g", "mqs": [q], "client": "c1", "now": L},
           {"op": "lock", "group": "g", "mq": q, "client": "c2", "now": 2 * L},
           {"op": "lock", "group": "g", "mq": q, "client": "c2", "now": 2 * L + 1},
           {"op": "unlockBatch", "group": "g", "mqs": [q], "client": "c1", "now": 2 * L + 2},
           {"op": "unlockBatch", "group": "g", "mqs": [q], "client": "c2", "now": 2 * L + 3}]
    steps = real.run("lock", ops)
    assert [s.get("ret") for s in steps[:5]] == [True, False, [q], False, True]
    assert steps[2]["table"] == [["g", "t", "b", 0, "c1", L]]
    assert steps[4]["table"] == [["g", "t", "b", 0, "c2", 2 * L + 1]]
    assert steps[5]["table"] == steps[4]["table"] and steps[6]["table"] == []
    agree_lock(real, ops)
