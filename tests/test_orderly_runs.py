"""Orderly consumption on the reference, read off its traces.

Every assertion is a fact from the digest (sections 2, 3, 4, 6, 7, 12) checked on events:
the code under test only emits them. Each test narrates the mechanism it shows.
"""
from collections import defaultdict

import pytest

from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import load_scenario, validate

CURRENT = ["rocketmq-5.3.3", "rocketmq-4.9.8"]


# ---------------------------------------------------------------------------- trace helpers
def qkey(e):
    return (e["group"], e["topic"], e["broker"], e["queue"])


def calls(events):
    """Listener calls as (queue, client, consume_id, start, end or None, offsets)."""
    out, open_ = [], {}
    for e in events:
        if e["kind"] == "consume_started":
            open_[(e["client"], e["consume_id"])] = len(out)
            out.append([qkey(e), e["client"], e["consume_id"], e["ts"], None, e["offsets"], e["seq"], None])
        elif e["kind"] == "consume_finished":
            i = open_.pop((e["client"], e["consume_id"]))
            out[i][4], out[i][7] = e["ts"], e["seq"]
    return out


def overlaps(events):
    """Pairs of calls on one queue where one starts before the other has finished."""
    by_q = defaultdict(list)
    for c in calls(events):
        by_q[c[0]].append(c)
    bad = []
    for q, cs in by_q.items():
        for a, b in zip(cs, cs[1:]):          # in start order (seq)
            if a[7] is None or a[7] > b[6]:
                bad.append((a, b))
    return bad


def broker_holder_at_each_start(events):
    """For each consume_started: the broker's lock holder of that queue at that moment."""
    holder, out = {}, []
    for e in events:
        k = e["kind"]
        if k == "lock_acquired":
            holder[qkey(e)] = e["client"]
        elif k == "lock_released":
            holder.pop(qkey(e), None)
        elif k == "consume_started":
            out.append((e["client"], holder.get(qkey(e))))
    return out


def run(sc, profile="rocketmq-5.3.3", seed=1):
    if isinstance(sc, str):
        sc = load_scenario(sc)
    else:
        sc = validate(sc, "<test>")
    return run_to_list(sc, seed, profile)


def orderly_scenario(listener=None, group_extra=None, steps=None, count=60, rate=20, queues=2, keys=4,
                     duration=20000, drain=120000, **top):
    g = {"name": "G", "consume_mode": "ORDERLY", "subscriptions": {"T": "*"},
         "listener": listener or {"duration_ms": [1, 5]}}
    g.update(group_extra or {})
    return {"name": "t", "duration_ms": duration, "drain_limit_ms": drain,
            "topics": [{"name": "T", "queues": queues}], "groups": [g],
            "producers": [{"topic": "T", "count": count, "rate_per_s": rate, "sharding_keys": keys}],
            "steps": steps or [{"at_ms": 0, "action": "start", "client": "c1", "group": "G"}], **top}


# ---------------------------------------------------------------------------- without faults
@pytest.mark.parametrize("profile", CURRENT)
def test_without_faults_each_queue_is_consumed_serially_in_offset_order_by_its_lock_holder(profile):
    # Two consumers for the whole run, no faults. The rebalance locks each queue before it
    # creates a ProcessQueue; lockAll renews the locks every 20 s; one ConsumeRequest per queue
    # takes messages in offset order. So per queue: no two listener calls overlap, offsets only
    # go up (no message is consumed twice), and the consuming client is the broker's holder.
    sc = orderly_scenario(count=200, rate=40, queues=4, keys=16, steps=[
        {"at_ms": 0, "action": "start", "client": "c1", "group": "G"},
        {"at_ms": 0, "action": "start", "client": "c2", "group": "G"}])
    events = run(sc, profile)
    assert events[-1]["reason"] == "quiescent"
    assert overlaps(events) == []
    last = {}
    for q, client, _, _, _, offsets, _, _ in calls(events):
        assert offsets == sorted(offsets)
        assert offsets[0] > last.get(q, -1), (q, client, offsets, last.get(q))
        last[q] = offsets[-1]
    assert all(c == h for c, h in broker_holder_at_each_start(events))
    # Every producer message was consumed exactly once.
    consumed = [o for c in calls(events) for o in c[5]]
    assert len(consumed) == 200
    # The broker's committed offset of a queue never moves backwards.
    committed = {}
    for e in events:
        if e["kind"] == "offset_committed":
            assert e["offset"] >= committed.get(qkey(e), 0)
            committed[qkey(e)] = e["offset"]


def test_lock_all_runs_after_1_s_then_every_20_s_and_only_in_clustering():
    events = run(orderly_scenario(duration=45000, count=10))
    lock_all = [e["ts"] for e in events if e["kind"] == "lock_requested" and len(e["queues"]) > 1]
    assert lock_all[:3] == [1000, 21000, 41000]
    bcast = run(orderly_scenario(duration=45000, count=10, group_extra={"message_model": "BROADCASTING"}))
    assert [e for e in bcast if e["kind"] == "lock_requested"] == []   # 5.3.3: no locks at all (#8772)


def test_first_pull_after_locking_rereads_the_committed_offset():
    # pullMessage, orderly branch: while previouslyLocked is false the client reads the offset
    # from the broker (READ_FROM_STORE) right before the first pull of the queue.
    events = run(orderly_scenario(count=10))
    for e in events:
        if e["kind"] == "pq_created":
            q = qkey(e)
            later = [x for x in events if x["seq"] > e["seq"] and x.get("client") == e["client"]
                     and x.get("topic") == e["topic"] and x.get("queue") == e["queue"]
                     and x["kind"] in ("offset_read", "pull_issued")]
            assert later[0]["kind"] == "offset_read" and later[0]["source"] == "store", q
            # (-1 from the store means no committed offset: the consumeFromWhere rule applies again.)
            assert later[1]["kind"] == "pull_issued" and later[1]["offset"] == e["offset"]


def test_shutdown_unlocks_every_queue_at_once():
    sc = orderly_scenario(steps=[{"at_ms": 0, "action": "start", "client": "c1", "group": "G"},
                                 {"at_ms": 5000, "action": "shutdown", "client": "c1"}], count=10)
    events = run(sc)
    stop = next(e for e in events if e["kind"] == "client_stopped")
    released = [e for e in events if e["kind"] == "lock_released"]
    assert {e["queue"] for e in released if e["topic"] == "T"} == {0, 1}
    assert all(e["ts"] == stop["ts"] and e["seq"] < stop["seq"] for e in released)


# ---------------------------------------------------------------------------- statuses
def statuses_test_scenario(listener, **group):
    return orderly_scenario(listener=listener, group_extra=group, count=3, rate=1000, queues=1, keys=1,
                            duration=5000, drain=20000)


def after(events, kind, pred=lambda e: True):
    return [e for e in events if e["kind"] == kind and pred(e)]


def test_success_commits_and_sets_the_offset_to_last_plus_one():
    events = run(statuses_test_scenario({"duration_ms": 1}))
    commits = after(events, "pq_committed", lambda e: e["topic"] == "T")
    assert [(e["offsets"], e["offset"]) for e in commits] == [([0], 1), ([1], 2), ([2], 3)]
    updates = after(events, "offset_updated", lambda e: e["topic"] == "T" and e["increase_only"] is False
                    and e["offset"] > 0)
    assert [e["stored"] for e in updates] == [1, 2, 3]


@pytest.mark.parametrize("status", ["COMMIT", "ROLLBACK"])
def test_with_auto_commit_commit_and_rollback_count_as_success(status):
    events = run(statuses_test_scenario({"duration_ms": 1, "success_status": status}))
    assert len(after(events, "pq_committed", lambda e: e["topic"] == "T")) == 3
    assert after(events, "pq_rolled_back") == []


def test_without_auto_commit_success_commits_nothing_and_commit_commits_everything_taken():
    # The first two messages return SUCCESS (no commit: they stay in the consuming map), the
    # third returns COMMIT: one commit covers all three.
    listener = {"duration_ms": 1, "auto_commit": False, "success_status": "SUCCESS",
                "rules": [{"keys": ["k2"], "status": "COMMIT"}]}
    sc = statuses_test_scenario(listener)
    sc["producers"] = []
    sc["steps"] += [{"at_ms": 2000, "action": "produce", "topic": "T", "count": 1, "keys": k}
                    for k in ("k0", "k1", "k2")]
    events = run(sc)
    commits = after(events, "pq_committed", lambda e: e["topic"] == "T")
    assert [(e["offsets"], e["offset"]) for e in commits] == [([0, 1, 2], 3)]


def test_without_auto_commit_rollback_puts_the_batch_back_and_suspends():
    listener = {"duration_ms": 1, "auto_commit": False, "success_status": "COMMIT", "suspend_ms": 500,
                "rules": [{"keys": ["k0"], "status": "ROLLBACK", "until_reconsume_times": 1}]}
    sc = statuses_test_scenario(listener)
    sc["producers"] = []
    sc["steps"] += [{"at_ms": 2000, "action": "produce", "topic": "T", "count": 1, "keys": "k0"}]
    events = run(sc)
    rb = after(events, "pq_rolled_back", lambda e: e["topic"] == "T")
    assert rb and rb[0]["offsets"] == [0]
    sus = after(events, "consume_suspended", lambda e: e["reason"] == "rollback")
    assert sus and sus[0]["delay"] == 500
    # ROLLBACK does not count a retry (only SUSPEND goes through checkReconsumeTimes), so the
    # rule that stops at reconsume_times 1 keeps rolling back: the queue never moves.
    assert after(events, "pq_committed", lambda e: e["topic"] == "T") == []
    assert all(r == [0] for e in after(events, "consume_started", lambda e: e["topic"] == "T")
               for r in [e["reconsume_list"]])


@pytest.mark.parametrize("given,expected", [(None, 1000), (5, 10), (40000, 30000), (2500, 2500)])
def test_suspend_time_comes_from_the_context_or_the_consumer_and_is_clamped(given, expected):
    # context.suspendCurrentQueueTimeMillis defaults to -1, meaning the consumer's setting
    # (default 1000); the value is clamped to [10, 30000].
    listener = {"duration_ms": 1, "rules": [{"keys": ["order-0"], "status": "SUSPEND_CURRENT_QUEUE_A_MOMENT",
                                             "until_reconsume_times": 1}]}
    if given is not None:
        listener["suspend_ms"] = given
    sc = statuses_test_scenario(listener)
    sc["drain_limit_ms"] = 60000
    events = run(sc)
    sus = after(events, "consume_suspended", lambda e: e["reason"] == "suspend")
    assert sus[0]["delay"] == expected
    again = after(events, "consume_started", lambda e: e["topic"] == "T")
    # The batch is consumed again after the delay, with its count raised in memory.
    assert again[1]["ts"] == sus[0]["ts"] + expected
    assert again[0]["reconsume_list"] == [0] and again[1]["reconsume_list"] == [1]


def test_null_and_exception_mean_suspend():
    for rate in ("null_rate", "exception_rate"):
        events = run(statuses_test_scenario({"duration_ms": 1, rate: 1.0}, max_reconsume_times=0))
        fin = after(events, "consume_finished", lambda e: e["topic"] == "T")
        assert {e["status"] for e in fin} == {"SUSPEND_CURRENT_QUEUE_A_MOMENT"}


def test_a_request_stops_after_60_s_of_continuous_consumption_and_resubmits_after_10_ms():
    # 200 messages of 1 s each: the request that starts at t keeps taking batches until a batch
    # check finds more than 60000 ms since t, then resubmits itself 10 ms later.
    sc = orderly_scenario(listener={"duration_ms": 1000}, count=200, rate=1000, queues=1, keys=1,
                          duration=100000, drain=100000)
    events = run(sc)
    lim = after(events, "consume_suspended", lambda e: e["reason"] == "continuous_limit")
    assert lim and lim[0]["delay"] == 10
    starts = [e["ts"] for e in after(events, "consume_started", lambda e: e["topic"] == "T")]
    first = starts[0]
    # Calls start at first, first+1000, ...; the one at first+60000 is allowed (not > 60000),
    # the check at first+61000 stops the loop.
    assert lim[0]["ts"] == first + 61000
    assert first + 61000 + 10 in starts


def test_not_locked_queue_retries_the_lock_100_ms_later_then_resubmits_after_3000_ms():
    # c2 gets a queue allocated whose lock c1 still holds, c1 being frozen: c2's rebalance
    # skips it. Here we look at c1 instead: frozen 35 s, it thaws with an expired lease; its
    # consume loop stops and re-locks 10 ms later; the lock succeeds (nobody took it) so the
    # request is resubmitted 10 ms after that.
    sc = orderly_scenario(listener={"duration_ms": [200, 300]}, count=400, rate=20, queues=1, keys=1,
                          duration=80000, drain=60000,
                          steps=[{"at_ms": 0, "action": "start", "client": "c1", "group": "G"},
                                 {"at_ms": 22000, "action": "pause", "client": "c1", "duration_ms": 35000}])
    events = run(sc)
    exp = after(events, "lease_expired", lambda e: e["topic"] == "T")
    assert exp[0]["ts"] == 57000 and exp[0]["last_lock_ts"] == 21000
    sus = [(e["reason"], e["delay"], e["ts"]) for e in after(events, "consume_suspended", lambda e: e["topic"] == "T")]
    assert sus[:2] == [("lease_expired", 10, 57000), ("lock_retry", 10, 57010)]


# ---------------------------------------------------------------------------- pauses
def test_pause_longer_than_the_client_lease_stops_the_paused_client_before_anyone_takes_over():
    # orderly-pause-lease: c2 freezes at 22 s for 35 s in the middle of a call; its last lockAll
    # was at 21 s. c3 joins at 25 s and is allocated queue 3, which c2 holds: the broker refuses
    # c3 (60 s lock). At 57 s c2 thaws: its call finishes and the loop's lease check finds
    # 57000 - 21000 > 30000, so it stops (lease_expired) instead of taking the next message.
    events = run("orderly-pause-lease")
    resumed = next(e for e in events if e["kind"] == "client_resumed")
    assert resumed["ts"] == 57000
    exp = [e for e in events if e["kind"] == "lease_expired" and e["client"] == "c2" and e["topic"] == "TopicOrder"]
    assert {e["queue"] for e in exp if e["ts"] == 57000} == {2, 3}
    assert all(e["last_lock_ts"] == 21000 for e in exp if e["ts"] == 57000)
    # No takeover: the broker lock never expired, c3 only got queue 3 after c2 released it.
    assert [e for e in events if e["kind"] == "lock_acquired" and e["reason"] == "takeover"
            and e["ts"] < 57000] == []
    rejected = [e for e in events if e["kind"] == "lock_rejected" and e["client"] == "c3"]
    assert rejected and all(e["holder"] == "c2" for e in rejected if e["ts"] < 57000)
    c3_first = next(e for e in events if e["kind"] == "consume_started" and e["client"] == "c3"
                    and e["queue"] == 3)
    assert c3_first["seq"] > exp[0]["seq"]
    # And so the paused client never overlaps with the new owner.
    assert overlaps(events) == []


def test_pause_longer_than_the_broker_lock_lets_another_client_take_over_while_a_call_is_open():
    # orderly-pause-broker-lock: c2 freezes at 22 s for 75 s, again in the middle of a call on
    # queue 3. Its broker lock was last renewed at 21 s, so it is expired from 81001 on; c3,
    # allocated queue 3 since it joined, takes it over at its next lock attempt. c3 starts
    # from the committed offset, which does not include the batch c2 is still "consuming".
    events = run("orderly-pause-broker-lock")
    take = next(e for e in events if e["kind"] == "lock_acquired" and e["reason"] == "takeover"
                and e["topic"] == "TopicOrder" and e["queue"] == 3)
    assert take["client"] == "c3" and take["previous_holder"] == "c2" and 81000 < take["ts"] < 97000
    # Two clients consume queue 3 at overlapping times: c2's call started before the pause and
    # only returns at 97 s, and c3 consumed the same offset meanwhile. The 30 s lease protects
    # only the *next* batch; a call that is already running is not interrupted (digest §4).
    ov = overlaps(events)
    assert ov and all(a[1] == "c2" and b[1] == "c3" and a[0][3] == 3 for a, b in ov)
    a, b = ov[0]
    assert a[4] == 97000 and set(a[5]) & {o for x in calls(events) if x[1] == "c3" for o in x[5]}
    # On thawing, c2's lockAll is refused for queue 3 (pq marked not locked), its consume loop
    # stops on the expired lease, and its unlock is ignored by the broker: c3 is the owner.
    assert any(e["kind"] == "pq_lock_changed" and e["client"] == "c2" and e["queue"] == 3
               and e["topic"] == "TopicOrder" and e["locked"] is False and e["ts"] == 97000 for e in events)
    assert any(e["kind"] == "lock_release_ignored" and e["client"] == "c2" and e.get("holder") == "c3"
               for e in events)
    # c2 persists the offset it committed in memory when it drops the queue: the broker's
    # offset for queue 3 moves backwards (c3's later persists move it forward again).
    back = [e for e in events if e["kind"] == "offset_committed" and e["topic"] == "TopicOrder"
            and e["queue"] == 3 and e.get("previous") is not None and e["offset"] < e["previous"]]
    assert back and back[0]["client"] == "c2"


@pytest.mark.parametrize("profile,overlap", [("rocketmq-5.3.3", True), ("rocketmq-4.9.8", False)])
def test_a_call_longer_than_the_unlock_delay_during_a_rebalance(profile, overlap):
    # c1 owns both queues and is in a 45 s listener call on each when c2 joins at 10 s and is
    # allocated queue 1. The consume lock is held, so c1 cannot remove queue 1 yet.
    # 5.x (#7644) force-unlocks a dropped queue once now > lastLockTimestamp + 20 s: c2 gets
    # the lock and consumes queue 1 while c1's call on it still runs.
    # 4.9.x keeps the dropped queue in the table and lockAll keeps renewing its lock; it is
    # removed and unlocked only once the call is over: no overlap, at the cost of latency.
    sc = orderly_scenario(listener={"duration_ms": 5, "rules": [{"keys": ["slow"], "duration_ms": 45000}]},
                          queues=2, count=0, duration=150000, drain=100000,
                          steps=[{"at_ms": 0, "action": "start", "client": "c1", "group": "G"},
                                 {"at_ms": 3000, "action": "produce", "topic": "T", "count": 4, "keys": "slow"},
                                 {"at_ms": 10000, "action": "start", "client": "c2", "group": "G"}])
    events = run(sc, profile)
    assert any(e["kind"] == "pq_dropped" and e["client"] == "c1" and e["topic"] == "T" and e["queue"] == 1
               for e in events)
    c1_slow = next(c for c in calls(events) if c[1] == "c1" and c[0][3] == 1)
    c2_first = next(c for c in calls(events) if c[1] == "c2" and c[0][3] == 1)
    assert (c2_first[3] < c1_slow[4]) is overlap
    assert bool(overlaps(events)) is overlap
    if overlap:   # the forced unlock came 20 s after the last lock renewal of the dropped queue
        released = next(e for e in events if e["kind"] == "lock_released" and e["client"] == "c1"
                        and e["topic"] == "T" and e["queue"] == 1)
        assert released["ts"] < c1_slow[4]


def test_a_forced_unlock_within_the_lease_margin_is_reported_with_its_cause():
    # A handover during a 25 s call: within the lease margin (60 s - 30 s), so A-LEASE-MARGIN
    # holds, yet 5.x force-unlocks the dropped queue 20 s after its last lock (#7644): c1's call
    # starts at 0.5 s, c2 joins at 2 s, c1's rebalance at 22 s forces the unlock, and c2
    # consumes the queue while c1's call runs (until 25.5 s). The spec reports the overlap (INV-ORDER-1) and names the
    # forced unlock as the cause, not a lease or lock violation.
    from rocketspec.rocketmq.profiles import get_profile
    from rocketspec.spec.replay import check_events

    sc = orderly_scenario(listener={"duration_ms": 5, "rules": [{"keys": ["slow"], "duration_ms": 25000}]},
                          queues=2, count=0, duration=150000, drain=100000,
                          steps=[{"at_ms": 0, "action": "start", "client": "c1", "group": "G"},
                                 {"at_ms": 500, "action": "produce", "topic": "T", "count": 4, "keys": "slow"},
                                 {"at_ms": 2000, "action": "start", "client": "c2", "group": "G"}])
    events = run(sc, "rocketmq-5.3.3")
    rep = check_events(list(enumerate(events, 1)), get_profile("rocketmq-5.3.3"))
    [f] = [f for f in rep.findings.errors if f.inv == "INV-ORDER-1"]
    assert "c1 unlocked the queue" in f.message and "#7644" in f.message
