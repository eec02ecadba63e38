"""H-RETRY-1 across owners, and orderly broadcasting groups whose consumers are not named.

A message that failed to its limit comes back as a copy that knows of fewer failures when its
queue changed hands before the broker learned the old owner's local advance (4.9.8: the
concurrent service moves the local offset once the send-back returns and the broker hears of it
at the next persist; the orderly service counts failures in the ProcessQueue's message, which a
new owner pulls from the store again). That is at-least-once redelivery, seen on real runs
(docs/notes/real-random.md: seeds 8, 103, 107, rand seed 100), not a retry past the limit.
"""
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketspec.spec.history import check_history
from rocketspec.traces.history.model import Consume, Disruption, Group, History, Produce

T = ("T", "b", 0)


def history(consumes, mode="CONCURRENTLY", mx=0, disruptions=(), model="CLUSTERING", produces=None):
    h = History("mem", "msgtrace", True, observes=frozenset({"dead_letters", "membership"}))
    h.produces = produces if produces is not None else [Produce("m1", "T", 0, True)]
    h.consumes = list(consumes)
    h.disruptions = list(disruptions)
    h.groups["G"] = Group("G", mode, model, {"T": ("TAG", "*")}, max_reconsume_times=mx, started_ts=0)
    return h


def D(ts, rc=0, success=False, mid="m1", client=None):
    """A delivery as the message traces give it: no queue, no offset, no consumer."""
    return Consume("G", mid, ts, ts + 5, client, None, None, rc, success, None, None, f"mem:{ts}")


def status(h, gid="H-RETRY-1"):
    return next(v for v in check_history(h).verdicts if v.id == gid).status


def test_seed_103_the_original_copy_again_from_a_new_owner_after_a_shutdown():
    # maxReconsumeTimes 0: the one failure sends the message to the DLQ; the new owner of its
    # queue pulls it again from the broker's offset (random real run 103: 10 ms after g0c2's
    # shutdown changed the group's allocation)
    cons = [D(1000), D(4010, success=True)]
    assert status(history(cons)) == "violated"
    moved = [Disruption(4000, "rebalanced", "G", "127.0.0.1@g0c1")]
    assert status(history(cons, disruptions=moved)) == "holds"


def test_seed_8_orderly_failures_on_each_new_process_queue_start_at_zero():
    # orderly, maxReconsumeTimes 2: each owner's ProcessQueue counts from the stored count (0);
    # failures on three owners are not three retries of one chain
    cons = [D(1000), D(5000), D(9000), D(13000, rc=1, success=True)]
    moved = [Disruption(3000, "left", "G"), Disruption(7000, "rebalanced", "G")]
    assert status(history(cons, mode="ORDERLY", mx=2)) == "violated"
    assert status(history(cons, mode="ORDERLY", mx=2, disruptions=moved)) == "holds"


def test_a_change_in_another_group_or_before_the_failure_excuses_nothing():
    cons = [D(20000), D(24010, success=True)]
    assert status(history(cons, disruptions=[Disruption(22000, "rebalanced", "OTHER")])) == "violated"
    assert status(history(cons, disruptions=[Disruption(19000, "rebalanced", "G")])) == "violated"


def test_seeds_16_and_19_an_orderly_dead_letter_handed_out_again_with_its_batch_is_still_flagged():
    # 4.9.8's checkReconsumeTimes dead-letters the message at its limit but suspends the batch
    # when another message of it is under the limit: the same owner hands the dead-lettered
    # message out again, its in-memory count at the limit (random real runs 16 and 19)
    moved = [Disruption(2500, "rebalanced", "G")]
    cons = [D(2000), D(3000, rc=1), D(4000, rc=1, success=True)]
    assert status(history(cons, mode="ORDERLY", mx=1, disruptions=moved)) == "violated"
    # with maxReconsumeTimes 0 the count stays 0: a change before the failure does not excuse it
    cons = [D(2000), D(3000, success=True)]
    assert status(history(cons, mode="ORDERLY", mx=0, disruptions=[Disruption(1500, "left", "G")])) == "violated"


def test_a_copy_that_carries_every_failure_is_still_past_the_limit():
    # a retry copy whose count says it was sent back past the limit: no owner change excuses it
    cons = [D(1000), D(3000, rc=1, success=True)]
    assert status(history(cons, disruptions=[Disruption(2000, "rebalanced", "G")])) == "violated"


@st.composite
def lives(draw):
    """A message's deliveries over owner lives, each as RocketMQ makes them: a new life (after a
    membership change) starts from the stored copy (count 0), each failure raises the count by
    one, at most maxReconsumeTimes + 1 failures per life (the last sends it to the DLQ)."""
    mode = draw(st.sampled_from(["CONCURRENTLY", "ORDERLY"]))
    mx = draw(st.integers(0, 3))
    n_lives = draw(st.integers(1, 4))
    t, cons, dis = 1000, [], []
    for life in range(n_lives):
        if life:
            t += draw(st.integers(1, 3000))
            dis.append(Disruption(t, draw(st.sampled_from(["joined", "left", "rebalanced"])), "G"))
        fails = draw(st.integers(1, mx + 1))
        for k in range(fails):
            t += draw(st.integers(1, 3000))
            cons.append(D(t, rc=k))
    t += draw(st.integers(1, 3000))
    cons.append(D(t, rc=0, success=True))
    return mode, mx, cons, dis


@settings(max_examples=200, deadline=None)
@given(lives())
def test_redeliveries_across_owners_never_read_as_retries_past_the_limit(case):
    mode, mx, cons, dis = case
    # the last delivery starts a life of its own: the change before it is what makes it legitimate
    dis = dis + [Disruption(cons[-1].ts - 1, "rebalanced", "G")]
    assert status(history(cons, mode, mx, dis)) == "holds"


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 3), st.integers(1, 4), st.data())
def test_an_orderly_retry_past_the_limit_with_no_owner_change_is_flagged(mx, extra, data):
    # more than maxReconsumeTimes + 1 failures, then delivered again, with no membership change of
    # the group (changes of another group anywhere, or of this one only long before the chain):
    # one ProcessQueue counts them all
    n = mx + 1 + extra
    cons = [D(20_000 + 1000 * i, rc=data.draw(st.integers(0, mx))) for i in range(n)]
    cons.append(D(20_000 + 1000 * n, rc=data.draw(st.integers(0, mx)), success=True))
    assert status(history(cons, "ORDERLY", mx, _unrelated_changes(data))) == "violated"


def _unrelated_changes(data):
    dis = [Disruption(data.draw(st.integers(0, 40_000)), "rebalanced", "OTHER") for _ in range(data.draw(st.integers(0, 3)))]
    dis += [Disruption(data.draw(st.integers(0, 19_999)), "left", "G") for _ in range(data.draw(st.integers(0, 2)))]
    return sorted(dis, key=lambda d: d.ts)


def test_h09_seed_8_a_duplicated_original_fails_on_two_owners_each_copy_dead_lettered_at_the_limit():
    # real 4.9.8 (docs/notes/handwritten, D3): at start-up four1 and four2 both held the queue and
    # each consumed and failed the original (count 0); each failure was sent back as its own
    # %RETRY% copy (count 1), and each copy failed once and went to the DLQ. maxReconsumeTimes 1;
    # no delivery above it; the message traces show no membership change
    cons = [D(553), D(585), D(1595, rc=1), D(1696, rc=1)]
    assert status(history(cons, mx=1)) == "holds"
    # a third delivery at the limit: both copies were dead-lettered, so one came back
    assert status(history(cons + [D(2800, rc=1, success=True)], mx=1)) == "violated"


@st.composite
def lineages(draw):
    """A concurrent group's deliveries of one message as 4.9.8 makes them with no change of owner
    after the start: each failure at count k below the limit sends back one copy at k + 1, one at
    the limit goes to the DLQ; a copy below the limit may be handed out again (two owners held
    its queue at once), each of those failures making its own copy."""
    mx = draw(st.integers(0, 3))
    live, t, cons = [0], 1000, []
    while live and len(cons) < 14:
        i = draw(st.integers(0, len(live) - 1))
        k = live[i]
        t += draw(st.integers(1, 3000))
        ok = draw(st.booleans())
        cons.append(D(t, rc=k, success=ok))
        if not (k < mx and draw(st.booleans())):
            live.pop(i)
        if not ok and k < mx:
            live.append(k + 1)
    return mx, cons


@settings(max_examples=300, deadline=None)
@given(lineages())
def test_concurrent_lineages_as_rocketmq_makes_them_hold(case):
    mx, cons = case
    assert status(history(cons, mx=mx)) == "holds"


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 3), st.integers(0, 3), st.data())
def test_a_concurrent_copy_at_the_limit_handed_out_after_its_dead_letter_is_flagged(mx, dups, data):
    # one chain to the limit (its last failure goes to the DLQ), duplicates below the limit that
    # succeed, then the copy at the limit comes back with no membership change since
    cons = [D(20_000 + 1000 * k, rc=k) for k in range(mx + 1)]
    t = 20_000 + 1000 * (mx + 1)
    for i in range(dups if mx else 0):
        cons.append(D(t, rc=data.draw(st.integers(0, mx - 1)), success=True))
        t += 1000
    cons.append(D(t, rc=mx, success=data.draw(st.booleans())))
    assert status(history(cons, mx=mx, disruptions=_unrelated_changes(data))) == "violated"
    # a count above the limit is past it whatever came before
    assert status(history([D(1000, rc=mx + 1, success=True)], mx=mx)) == "violated"


def test_orderly_broadcasting_group_without_consumer_names_is_declared_unjudged():
    # vol2 seed 19: the judge raised TypeError (' consumer ' + None) on H-ORDER-2 by sharding key;
    # each consumer of a broadcasting group is its own stream, and message traces name none
    produces = [Produce(f"m{i}", "T", i, True, sharding_key="k") for i in range(3)]
    # two consumers, each in order: one started after m0 was sent (CONSUME_FROM_LAST_OFFSET) and
    # takes m1 first, the other is slower. Read as one stream, m1 comes before m0
    cons = [Consume("G", mid, ts, ts + 1, None, None, None, 0, True, None, None, f"mem:{ts}")
            for mid, ts in (("m1", 10), ("m2", 11), ("m0", 12), ("m1", 14), ("m2", 15))]
    h = history(cons, mode="ORDERLY", mx=-1, model="BROADCASTING", produces=produces)
    rep = check_history(h)
    v = next(v for v in rep.verdicts if v.id == "H-ORDER-2")
    assert v.status == "skipped" and "orderly broadcasting" in v.missing[0]
    assert any("not judged" in n for n in v.notes)


def test_orderly_broadcasting_group_with_named_consumers_is_judged_per_consumer():
    produces = [Produce(f"m{i}", "T", i, True, sharding_key="k") for i in range(2)]
    cons = [Consume("G", "m1", 10, 11, "c1", None, None, 0, True, None, None, "mem:10"),
            Consume("G", "m0", 12, 13, "c1", None, None, 0, True, None, None, "mem:12"),
            Consume("G", "m0", 10, 11, "c2", None, None, 0, True, None, None, "mem:10b"),
            Consume("G", "m1", 12, 13, "c2", None, None, 0, True, None, None, "mem:12b")]
    h = history(cons, mode="ORDERLY", mx=-1, model="BROADCASTING", produces=produces)
    v = next(v for v in check_history(h).verdicts if v.id == "H-ORDER-2")
    assert v.status == "violated" and v.n_findings == 1 and "consumer c1" in v.findings[0].message


def test_seed_3016_the_copy_handed_out_again_is_the_one_handed_out_longest_ago():
    # Random real run 3016 (4.9.8, maxReconsumeTimes 3): two lineages reach count 3, copies A
    # (%RETRY% offset 48) and B (offset 61). A fails at 7146 and is dead-lettered; a client leaves
    # at 7168, and after the rebalance at 9251 g0c2 pulls A again (9257), then B for the first
    # time (9260). The message traces name no copy: reading 9257 as B's first hand-out and 9260 as
    # A again, A was last handed out at 7146, before the change. Not a chain past the limit
    mx, cons = 3, [D(3486), D(4780, rc=1), D(5912, rc=1), D(6051, rc=2), D(7039, rc=2), D(7146, rc=3),
                   D(9257, rc=3), D(9260, rc=3)]
    changes = [Disruption(7168, "left", "G"), Disruption(9251, "rebalanced", "G")]
    assert status(history(cons, mx=mx, disruptions=changes)) == "holds"
    # with no change since the oldest hand-out at the limit, it is one
    assert status(history(cons, mx=mx)) == "violated"
    # and a third hand-out at the limit, both copies dead-lettered and no change since, is one
    assert status(history(cons + [D(12000, rc=3)], mx=mx, disruptions=changes)) == "violated"


def test_seed_3022_a_reset_back_to_the_original_keeps_the_earlier_lineage():
    # Random real run 3022 (4.9.8, maxReconsumeTimes 1): the original fails (5957) and is sent back
    # as copy A at count 1. An operator resets the group back to it; the original fails again
    # (36955) and is sent back as copy B. A (36984) and B (37993) each fail once and go to the
    # DLQ. The reset does not remove A from %RETRY%: two lineages, none past the limit
    from rocketspec.traces.history.model import Reset
    cons = [D(5957), D(36955), D(36984, rc=1), D(37993, rc=1)]
    h = history(cons, mx=1, disruptions=[Disruption(36932, "rebalanced", "G")])
    h.resets = [Reset(36900, "G")]
    assert status(h) == "holds"
    h = history(cons + [D(39000, rc=1)], mx=1, disruptions=[Disruption(36932, "rebalanced", "G")])
    h.resets = [Reset(36900, "G")]
    assert status(h) == "violated"


def test_seed_4019_a_duplicate_at_the_limit_while_the_members_rebalance_on_a_join():
    # Random real run 4019 (4.9.8, maxReconsumeTimes 0): a member joins at 959770; for a moment
    # both members own the message's queue (their views differ until each has rebalanced), and
    # both hand the original out and fail it, 20 ms apart. Not a chain past the limit
    joined = [Disruption(959770, "joined", "G")]
    cons = [D(959798), D(959818)]
    assert status(history(cons, disruptions=joined)) == "holds"
    # the same second hand-out long after the change is one
    assert status(history([D(959798), D(964818)], disruptions=joined)) == "violated"


def test_seed_6032_a_message_a_killed_consumer_took_with_its_trace_records():
    # Random real run 6032 (4.9.8): g2c3 consumed the message and was SIGKILLed 430 ms later; its
    # AsyncTraceDispatcher never sent the records, so the message traces show no consumption.
    # Not a loss the history can show; a message sent after the kill still is one
    h = history([], mx=1)
    h.produces = [Produce("m1", "T", 1000, True)]
    assert status(h, "H-DELIVER-1") == "violated"
    h.disruptions = [Disruption(1430, "killed", "G", "127.0.0.1@g2c3")]
    assert status(h, "H-DELIVER-1") == "holds"
    h.produces = [Produce("m1", "T", 2000, True)]
    assert status(h, "H-DELIVER-1") == "violated"
