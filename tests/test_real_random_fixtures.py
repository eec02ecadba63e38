"""Traces of random real runs on RocketMQ 4.9.8 (`rocketspec record --random`), each judged by
reading the 4.9.8 source: what `check` must report there, and what it must not.

Each entry names the finding or false alarm the run showed; docs/notes/real-random.md tells the
story of each. The traces are gzip-compressed JSON Lines (`check` reads them as they are); the
scenario the generator gave is beside each (`*.scenario.json`)."""
from __future__ import annotations

from pathlib import Path

import pytest

from rocketspec.rocketmq.profiles import get_profile
from rocketspec.spec.replay import check_events, check_trace

HERE = Path(__file__).parent / "fixtures" / "real-random"
P = "rocketmq-4.9.8"


def _errors(name):
    res = check_trace(str(HERE / f"{name}.jsonl.gz"), P)
    return res


def _events(name):
    import gzip
    import json
    with gzip.open(HERE / f"{name}.jsonl.gz", "rt") as fh:
        return [json.loads(line) for line in fh]


def _oracle(status):
    """An oracle report as oracle.json holds it (complete), from a run's guarantee statuses."""
    return {"complete": True, "guarantees": [{"id": g, "status": s} for g, s in status.items()]}


def _by_inv(res):
    out: dict[str, list[str]] = {}
    for f in res.findings.errors:
        out.setdefault(f.inv, []).append(f.message)
    return out


def test_an_orderly_shutdown_unlocks_while_its_listener_runs():
    """Seed 201. ConsumeMessageOrderlyService.shutdown (4.9.8) shuts the consume executor down
    without waiting (awaitTerminationMillisWhenShutdown 0) and then unlocks every queue
    (unlockAllMQ): the other client locks queue 5 and consumes it while g2c2's listener call is
    still running. A real loss of orderly exclusivity (INV-ORDER-1), named for the shutdown. The
    call that was in flight then returns after client_stopped: RocketMQ lets it, so that is not a
    stopped client acting (INV-CLIENT-1 was a false alarm)."""
    errs = _by_inv(_errors("seed-201-orderly-shutdown"))
    assert set(errs) == {"INV-ORDER-1"}, errs
    assert "its shutdown unlocks every queue" in errs["INV-ORDER-1"][0]


def test_a_broadcasting_client_killed_before_its_first_persist_restarts_from_the_end():
    """Seed 202. A broadcasting client (CONSUME_FROM_LAST_OFFSET) is killed 2.7 s after its
    start. MQClientInstance first persists offsets 10 s after start, so its offsets.json was never
    written (the run folder has none from that life); the second life's LocalFileOffsetStore
    reads -1 and computePullFromWhere starts at the queue's end: what it had not consumed is lost
    for it. A real loss (INV-LOSS-1) with that cause, not a start away from a committed offset
    (INV-START-1: no offset was ever committed)."""
    errs = _by_inv(_errors("seed-202-broadcast-kill-before-persist"))
    assert set(errs) == {"INV-LOSS-1"}, errs
    assert all("crashed before its offsets file" in m for m in errs["INV-LOSS-1"])


def test_a_reset_overwritten_by_a_pull_answered_after_it():
    """Seed 220. An operator resets GID_r1 to a time (offset 18 of queue 1). MQClientInstance.resetOffset
    drops and clears the ProcessQueue, sleeps 10 s, sets 18 and removes it; the new ProcessQueue
    pulls 18..153. The old ProcessQueue's long-polling pull (issued at 154 before the reset) is
    answered NO_NEW_MSG 15 s later, and correctTagsOffset, which does not look at the dropped flag,
    moves the client's store to 154 (its old, cleared queue holds no message): the offset passes
    messages the new ProcessQueue still holds, and the next persist commits it. Real 4.9.8
    behaviour, known upstream (apache/rocketmq#4206, #4742): INV-OFFSET-3 with that cause. The
    messages stay in the new ProcessQueue and are consumed; the spec used to drop them from its
    tree and report their consumption as INV-PQ-1, a false alarm."""
    res = _errors("seed-220-reset-overwritten")
    errs = _by_inv(res)
    assert "INV-PQ-1" not in res.findings.counts, res.findings.counts
    assert any("correctTagsOffset" in m and "154" in m for m in errs["INV-OFFSET-3"]), errs["INV-OFFSET-3"]


def test_an_orderly_reset_whose_update_the_poller_did_not_see():
    """Seed 203. An operator resets orderly GID_r2 to the run's start (offset 0 of every queue).
    MQClientInstance.resetOffset drops the ProcessQueues (seen by polling), sleeps 10 s, sets 0
    (updateConsumeOffset) and persists it as it removes them: the broker's offset falls back from
    48 to 0 by the operator's wish, and the group consumes everything again. The poller never saw
    the store at 0 before the persist carried it; the spec used to take that persist for a stale
    offset (INV-ORDER-3, a false alarm)."""
    res = _errors("seed-203-orderly-reset-unsampled")
    assert not res.findings.errors, _by_inv(res)


def test_an_orderly_broadcasting_client_dead_letters_past_its_limit():
    """Seed 208. Orderly BROADCASTING GID_r0 (maxReconsumeTimes 1) answers SUSPEND to every TagC
    message. ConsumeMessageOrderlyService.checkReconsumeTimes (4.9.8, and 5.x the same) never looks
    at the message model: past the limit it sends the message through the client's producer to
    %RETRY%GID_r0 at delay level 3 + reconsumeTimes, the broker turns it into a dead letter (through
    the schedule on 4.9.x: INV-DLQ-1), and processConsumeResult commits past it. A broadcasting
    client sending back is real 4.9.8 behaviour that breaks broadcast semantics (INV-BCAST-1, named
    for that path; the concurrent service drops such a message instead). The dead-lettered offsets
    are handled by the client that sent them: the spec used to count only a clustering group's,
    and reported every one of g0c1's as never consumed at quiescence (INV-LIVE-1, a false alarm)."""
    res = _errors("seed-208-orderly-broadcast-dlq")
    assert set(res.findings.counts) <= {"INV-BCAST-1", "INV-DLQ-1", "ANOM-DUP-1"}, res.findings.counts
    assert res.findings.counts["INV-BCAST-1"] == res.findings.counts["INV-DLQ-1"] == 106, res.findings.counts
    errs = _by_inv(res)
    assert all("checkReconsumeTimes" in m for m in errs["INV-BCAST-1"]), errs["INV-BCAST-1"]


def test_a_single_orderly_broadcasting_client_owes_nothing_it_dead_lettered():
    """Seed 211. Orderly BROADCASTING GID_r1 has one client all run, g1c1; its TagB messages
    SUSPEND past maxReconsumeTimes 1 and go to %DLQ%GID_r1 (checkReconsumeTimes, as in seed 208:
    INV-BCAST-1 with that cause, INV-DLQ-1). The last of them, offset 67 of TopicR queue 3, was
    dead-lettered (its DLQ copy is in the store) and g1c1's offsets.json holds 70 for the queue; the
    spec used to keep it owed at quiescence (INV-LIVE-1, a false alarm). What the run shows of the
    clustering groups GID_r0 and GID_r2 is another matter and not asserted here."""
    res = _errors("seed-211-orderly-broadcast-one-client")
    mine = [f for f in res.findings.errors if f.key is not None and f.key[0] == "GID_r1"]
    assert {f.inv for f in mine} == {"INV-BCAST-1", "INV-DLQ-1"}, [(f.inv, f.message) for f in mine]
    assert all("checkReconsumeTimes" in f.message for f in mine if f.inv == "INV-BCAST-1")


def test_an_event_stamped_in_the_millisecond_of_the_pause():
    """Seed 302. The driver stamps client_paused once `kill -STOP` has returned; g0c2's rebalance
    stamped its allocation in that same millisecond, before the signal landed. Not a paused
    client acting (INV-CLIENT-1 was a false alarm). The run's INV-BCAST-1 and INV-DLQ-1 are
    4.9.8's orderly broadcasting send-back to the DLQ (seed 208)."""
    errs = _by_inv(_errors("seed-302-pause-same-ms"))
    assert set(errs) == {"INV-BCAST-1", "INV-DLQ-1"}, errs


def test_an_orderly_first_pull_at_minus_one_after_a_pause():
    """Seed 213. An orderly client frozen 7.8 s while its first ProcessQueue waited for its first
    pull. After SIGCONT, DefaultMQPushConsumerImpl.pullMessage's first-pull re-read
    (computePullFromWhereWithException) got -2 from RemoteBrokerOffsetStore.readOffset (the query
    failed), which RebalancePushImpl turns into -1, not an error: the pull asks for -1 and the
    broker answers OFFSET_ILLEGAL (a real 4.9.8 path: the queue goes back to its min offset).
    The poller saw the ProcessQueue only after that re-read, with the PullRequest's -1, and after
    the lock it was created under had expired: neither is a ProcessQueue started at -1 nor one
    created without the lock (both were false alarms of the sampled observation)."""
    errs = _by_inv(_errors("seed-213-orderly-first-pull-minus-one"))
    assert "INV-OWNER-2" not in errs, errs
    assert [m for m in errs["INV-START-1"]] and all("orderly first pull at offset -1" in m for m in errs["INV-START-1"])


def test_an_orderly_batch_hands_its_dead_letter_out_again():
    """Seed 209 (and seeds 16 and 19 of the first volume). Orderly, batches of 2,
    maxReconsumeTimes 2: ConsumeMessageOrderlyService.checkReconsumeTimes sends the message at its
    limit to the DLQ through the client's producer, but answers suspend for the batch because the
    other message is still under its limit; processConsumeResult then puts the whole batch back
    (makeMessageToConsumeAgain), and the dead letter is consumed again. Real 4.9.8 behaviour, a
    delivery past the limit that the message traces show too (H-RETRY-1): check names it
    (INV-RETRY-1) since the orderly send-back is recorded; it used to accept it (a missed loss)."""
    errs = _by_inv(_errors("seed-209-orderly-batch-dead-letter-again"))
    assert errs.get("INV-RETRY-1") and all("makeMessageToConsumeAgain" in m for m in errs["INV-RETRY-1"]), errs


def test_a_lock_shorter_than_the_lease_is_named_as_the_cause():
    """Break seed 16: the broker lock (1500 ms) is shorter than the client lease (3000 ms), a
    deliberate break of the lease margin. Another client locks the queue while the first still
    trusts its lease: two consumers inside the orderly queue (INV-ORDER-1, INV-OWNER-2), committed
    messages consumed again (INV-ORDER-3). Every one of them must name the configuration, so the
    run reads as the break's expected loss, not a finding."""
    errs = _by_inv(_errors("break-16-lock-shorter-than-lease"))
    for inv in ("INV-ORDER-1", "INV-OWNER-2"):
        assert errs.get(inv) and all("not longer than the client lease" in m for m in errs[inv]), (inv, errs.get(inv))


def test_a_pull_of_a_processqueue_the_poller_never_saw():
    """Seed 323. Orderly g0c1 got all 8 queues, locked queue 3, read its offset and created a
    ProcessQueue; 100 ms later a new member's rebalance took the queue away (persist, removeOffset)
    while its first pull was on its way (the orderly first pull re-reads the offset, then
    pulls). The recorder sees ProcessQueues by polling, and this one lived between two polls: the
    pull is the first of a ProcessQueue the trace never shows, not a pull without one (INV-PQ-1
    was a false alarm). A recorder that shows ProcessQueues exactly still gets INV-PQ-1."""
    res = _errors("seed-323-unseen-processqueue")
    assert "INV-PQ-1" not in res.findings.counts, _by_inv(res)
    exact = [{k: v for k, v in e.items() if not (k == "obs" and e["kind"].startswith("pq_"))}
             for e in _events("seed-323-unseen-processqueue")]
    assert "INV-PQ-1" in check_events(enumerate(exact, 1), get_profile(P)).findings.counts


def test_a_member_subscribing_differently_makes_the_broker_filter_the_others():
    """Break seed 93: g0c8 joins GID_r0 subscribing TopicS to TagB where the group reads all of it.
    The broker keeps the newest heartbeat's subscription per group and topic
    (ConsumerGroupInfo.updateSubscription) and filters every member's pulls with it: g0c1's
    pulls of queue 0 come back NO_MATCHED_MSG past messages it subscribes, which no member ever
    gets (the oracle counted 49). A client-side recorder sees only what the broker returned, so
    the skipped offsets are the filtered ones: INV-SUB-1 (check used to hold: a missed loss)."""
    errs = _by_inv(_errors("break-93-subscriptions-differ"))
    assert errs.get("INV-SUB-1") and any("filtered with another member's subscription" in m
                                          for m in errs["INV-SUB-1"]), errs


def test_an_orderly_batch_whose_processqueue_was_removed_never_ran():
    """Seed 1016. g1c1's ConsumeRequest ran the before-hook of a batch on queue 1 (consume_started)
    just as its rebalance dropped the ProcessQueue; removeUnnecessaryMessageQueue took the consume
    lock (tryLock) and removed it, and the consume thread, re-checking the dropped flag under that
    lock, broke out without calling the listener or the after-hook: no consume_finished ever
    came. Its broker lock, left to unlockDelay, expired and g1c2 took the queue over 6 s later.
    Not two consumers inside the queue (INV-ORDER-1 was a false alarm)."""
    res = _errors("seed-1016-orderly-batch-never-called")
    assert "INV-ORDER-1" not in res.findings.counts, _by_inv(res)


def test_a_queue_owned_by_the_member_subscribing_less_loses_what_the_others_want():
    """Break seed 1038: orderly GID_r0 reads TopicS with '*'; g0c8 joins subscribing it to TagB
    and gets queue 2, whose messages are all TagA. Its pull comes back NO_MATCHED_MSG from 13 to
    26: the group's other members subscribe those messages, but the queue is g0c8's, so no one
    consumes them (the oracle: never consumed nor dead-lettered). INV-SUB-1 (check used to
    hold for the group: only a member's own subscribed messages counted as lost)."""
    res = _errors("break-1038-owner-filters-what-others-want")
    assert res.findings.counts.get("INV-SUB-1"), res.findings.counts


def test_a_rejection_written_before_the_holders_acquisition():
    """Seed 2009. g1c1 and g1c2 lock the same free queue at start-up; g1c1's lockBatch takes the
    entry first (its lock_acquired carries updated_at 134167) but is written when its answer goes
    out (134197), after g1c2's rejection naming g1c1 as the holder (134195). Not a rejection for
    a holder the entry does not name (INV-LOCK-1 was a false alarm of the write order)."""
    res = _errors("seed-2009-lock-answer-order")
    assert "INV-LOCK-1" not in res.findings.counts, _by_inv(res)


def test_a_gone_processqueues_answer_before_the_reset_updates_the_store():
    """Seed 2022. An operator resets GID_r1 (queue 6 to 11, queue 5 to 4). The old ProcessQueues'
    long-polling pulls were answered NO_NEW_MSG (next 12 and 5) before the reset's
    updateConsumeOffset, 10 s after its drop: correctTagsOffset (increaseOnly) ran then, on the
    answering thread, and changed nothing; the reset then set 11 and 4, the new ProcessQueues
    consumed 11 and 4 (CONSUME_SUCCESS) and removeMessage moved the stores to 12 and 5. Not the
    stale correction of #4206 passing unconsumed messages (INV-OFFSET-3 was a false alarm); the
    run's INV-SUB-1 is its deliberate break (g1c8 subscribes TagB only)."""
    res = _errors("seed-2022-stale-answer-before-reset")
    assert "INV-OFFSET-3" not in res.findings.counts, _by_inv(res)
    assert set(res.findings.counts) - {"ANOM-DUP-1", "ANOM-OFFSET-BACK"} == {"INV-SUB-1"}, res.findings.counts


def test_an_orderly_correction_after_the_commit_proves_the_commit():
    """Seed 2027. Orderly g0c1 consumed offset 20 of queue 0 (SUCCESS); its next pull was answered
    NO_MATCHED_MSG with next 25 (the SQL filter), and the pull after carried commit offset 25.
    correctTagsOffset writes 25 only when the ProcessQueue's msgCount is 0, and msgCount counts
    the consuming map until ProcessQueue.commit: the commit (21) had run, and the broker's commit
    of 25 passed nothing unconsumed (INV-OFFSET-3 was a false alarm). The run's INV-DLQ-1 is
    4.9.8's orderly dead letter through the schedule topic."""
    res = _errors("seed-2027-orderly-correction-after-commit")
    assert "INV-OFFSET-3" not in res.findings.counts, _by_inv(res)
    assert set(res.findings.counts) - {"ANOM-DUP-1"} == {"INV-DLQ-1"}, res.findings.counts


def test_a_pull_offset_committed_after_the_pull_was_answered():
    """Seeds 3024 and 2020. PullMessageProcessor.processRequest (4.9.8) commits the pull's
    commitOffset at its end, after the call that may suspend the pull (PULL_NOT_FOUND: long
    polling). A message arriving meanwhile wakes the held pull on the hold service's thread, which
    answers it; g0c1 issues its next pull (carrying 13) before the first thread commits 10, the
    offset the earlier pull carried. The broker committed what a pull carried: INV-OFFSET-1 was a
    false alarm of matching the commit to the client's latest pull only."""
    res = _errors("seed-3024-pull-commit-after-answer")
    errs = _by_inv(res)
    assert set(errs) == {"INV-DLQ-1"}, errs
    # a commit no pull of the client carried is still one
    events = _events("seed-3024-pull-commit-after-answer")
    ev = next(e for e in events if e["seq"] == 773)
    assert ev["kind"] == "offset_committed" and ev["source"] == "pull" and ev["offset"] == 10
    ev["offset"] = 11
    got = check_events(enumerate(events, 1), get_profile(P)).findings
    assert any(f.inv == "INV-OFFSET-1" and "carried 10 or 13" in f.message for f in got.errors), got.counts


def test_a_first_pull_after_the_next_rebalance_narrowed_the_allocation():
    """Seed 2024. Orderly g2c1 starts alone and is allocated all four queues of TopicR; its
    rebalance locks and adds each (client log: 'add a new mq' for queue 0 at 17.746). g2c2 joins;
    g2c1's next rebalance computes [2, 3] (seq 145) and removes queue 0 only at seq 166, while
    the pull thread runs queue 0's first pull (seq 157) in between. The recorder announces a
    ProcessQueue at its first pull (obs sampled): it was created under the earlier allocation.
    INV-ALLOC-2 was a false alarm."""
    res = _errors("seed-2024-first-pull-after-next-rebalance")
    assert res.findings.errors == [], _by_inv(res)
    # the same creation seen exactly where it was announced is outside the allocation
    events = _events("seed-2024-first-pull-after-next-rebalance")
    ev = next(e for e in events if e["seq"] == 156)
    assert ev["kind"] == "pq_created" and ev["queue"] == 0 and ev.pop("obs") == "sampled"
    got = check_events(enumerate(events, 1), get_profile(P)).findings
    assert "INV-ALLOC-2" in got.counts, got.counts


def test_an_orderly_reset_overwritten_by_a_pull_answered_after_it():
    """Seed 3035. An operator resets orderly GID_r0 to the run's start. MQClientInstance.resetOffset
    drops and clears (ProcessQueue.clear: msgCount 0) g0c1's queue 0, and 10 s later sets 0; the
    new ProcessQueue pulls 0..14 and consumes 0..3. The old ProcessQueue's long-polling pull, issued
    at 15 before the reset, is answered NO_NEW_MSG (next 15) 17.7 s after it was issued, and
    correctTagsOffset (no dropped check, msgCount 0) moves the store to 15 over 4..14, which the
    broker commits at the next persist. Seed 220's mechanism (#4206) on an orderly group: here the
    ProcessQueue's next commit (updateOffset(..., false)) wrote 6 back 3.9 s later. INV-OFFSET-3
    with that cause; its INV-RETRY-1 and INV-DLQ-1 are seed 209's and seed 2027's findings."""
    res = _errors("seed-3035-orderly-reset-overwritten")
    errs = _by_inv(res)
    assert set(errs) == {"INV-OFFSET-3", "INV-RETRY-1", "INV-DLQ-1"}, res.findings.counts
    assert len(errs["INV-OFFSET-3"]) == 1, errs["INV-OFFSET-3"]
    m = errs["INV-OFFSET-3"][0]
    assert "client offset 15" in m and "correctTagsOffset" in m and "#4206" in m, m
    assert "orderly ProcessQueue's next commit" in m, m


def test_a_broadcasting_client_stopped_before_its_queues_had_an_offset_entry():
    """Seed 2040. Broadcasting g0c2 (CONSUME_FROM_LAST_OFFSET) starts on all four queues at 0 and
    shuts down 1.5 s later, having consumed queue 2's offset 0 only; its pulls of queues 0, 1 and 3
    were still held. LocalFileOffsetStore.persistAll (run by the shutdown) writes only the offset
    table's entries: queue 2 (1). Restarted 8 s later, it reads -1 for the other three and
    computePullFromWhere starts them at the queue's end (8, 8, 7): what was stored meanwhile is
    lost for it. Seed 202's mechanism after a clean shutdown: INV-LOSS-1 naming A-OFFSET-ENTRY,
    and nothing for queue 2, whose entry was persisted."""
    res = _errors("seed-2040-broadcast-shutdown-before-entry")
    errs = _by_inv(res)
    assert set(errs) == {"INV-LOSS-1"}, res.findings.counts
    queues = sorted(f.key[3] for f in res.findings.errors)
    assert queues == [0, 1, 3], queues
    assert all("before its offset table had an entry" in m and "apache/rocketmq#10955" in m
               for m in errs["INV-LOSS-1"]), errs


def test_an_orderly_batch_that_never_ran_does_not_block_its_own_client():
    """Seed 7001: as in seed 1016, g1c1's batch on queue 2 got its before-hook (consume_started)
    just as its rebalance dropped and removed the ProcessQueue under the consume lock, so the
    listener was never called and no consume_finished came. When g1c1 got the queue back, its new
    ProcessQueue's first batch is no second batch beside a running one (INV-ORDER-1, "one consume
    thread per queue", was a false alarm)."""
    res = _errors("seed-7001-orderly-batch-never-called-same-client")
    assert "INV-ORDER-1" not in res.findings.counts, _by_inv(res)


def test_a_gone_processqueues_filtered_range_is_owed_to_no_one():
    """Seed 7048. GID_r2 subscribes `a > 3 AND region = 'eu'` (SQL92). g2c1's ProcessQueues of
    queues 0-3 were removed while their long-polling pulls were held; g2c1 got the queues back
    and the old pulls were answered NO_MATCHED_MSG (queue 3: from 4, next 29; offsets 4..28 carry
    no properties, so the filter rejects them all). correctTagsOffset (DefaultMQPushConsumerImpl,
    no dropped check) moved g2c1's store to 29, and the new ProcessQueue's first pull carried
    commit offset 29 before its own answer scanned the range. The broker filters with the group's
    subscription, not the ProcessQueue's: the commit passed only filtered messages (INV-OFFSET-3
    x4 was a false alarm)."""
    res = _errors("seed-7048-gone-pull-filtered-range")
    assert "INV-OFFSET-3" not in res.findings.counts, _by_inv(res)
    assert set(res.findings.counts) - {"ANOM-DUP-1"} == set(), res.findings.counts


def test_an_unseen_processqueues_first_pull_commit_reaches_the_broker():
    """Seed 7039. Orderly g1c2's rebalance added queue 4 and was frozen (SIGSTOP) right after;
    on SIGCONT the ProcessQueue went into the table, the next rebalance (allocation [] while
    g1c2 was unregistered) dropped and removed it, and the pull thread ran its first pull in
    between: computePullFromWhereWithException re-read the offset from the broker (offset_read 2,
    RemoteBrokerOffsetStore READ_FROM_STORE puts it back in memory) and the pull went out carrying
    commit offset 2 (seq 1086) for a ProcessQueue the recorder's poller never saw. The broker
    committed 2 from that pull (seq 1091): INV-OFFSET-1 'which carried none' was a false alarm.
    The two INV-DLQ-1 are the known send-path DELAY finding."""
    res = _errors("seed-7039-unseen-pq-pull-commit")
    assert "INV-OFFSET-1" not in res.findings.counts, _by_inv(res)
    assert set(res.findings.counts) - {"ANOM-DUP-1"} == {"INV-DLQ-1"}, res.findings.counts
    # the same commit with no pull carrying it is still flagged
    events = [e for e in _events("seed-7039-unseen-pq-pull-commit") if e["seq"] != 1086]
    got = check_events(enumerate(events, 1), get_profile(P)).findings
    assert "INV-OFFSET-1" in got.counts, got.counts


def test_an_order_broken_across_consumers_is_explained_by_two_consumers_in_the_queue():
    """Seed 7049 (breaks: broker lock 1500 ms under a 3000 ms lease; g0c8 subscribes TagB only).
    g0c1 was paused inside its batch of queue 3 offsets 8-11 while holding 12 and 13; the lock
    expired, g0c8 took the queue over and its NO_MATCHED_MSG pull committed 20, and g0c3 consumed
    offset 20 (sharding key order-0, position 14) at seq 724, which check reports as INV-ORDER-1;
    g0c1 resumed and consumed offset 12 (position 8) at seq 751 (INV-OWNER-2). The oracle's
    H-ORDER-2 is true and check saw its cause: not a missed loss but the breaks' expected loss.
    Counts and statuses are the run's own (check.json, oracle.json)."""
    from rocketspec.conformance.real_random import BREAK, classify
    check = {"INV-ORDER-1": 1, "INV-ORDER-3": 1, "INV-OWNER-2": 2, "INV-SUB-1": 1}
    status = {"H-DELIVER-1": "violated", "H-RETRY-1": "holds", "H-RETRY-2": "skipped", "H-RETRY-3": "holds",
              "H-ORDER-1": "skipped", "H-ORDER-2": "violated", "H-DUP-1": "skipped"}
    oracle = _oracle(status)
    assert classify(check, oracle, named=set(check)) == (BREAK, ["INV-ORDER-3"])
    # the order broken with no exclusivity failure reported is still a missed loss
    assert classify({"INV-SUB-1": 1}, oracle, named={"INV-SUB-1"}) == ("missed loss", ["H-ORDER-2"])
    # and two consumers in a queue with the order holding is no false alarm: the traces cannot show it
    held = {"complete": True, "guarantees": [{"id": g, "status": "holds" if s == "violated" else s}
                                             for g, s in status.items()]}
    assert classify({"INV-ORDER-1": 1}, held) == ("finding", ["INV-ORDER-1"])


def test_a_known_upstream_bugs_repaired_window_is_a_finding_not_a_false_alarm():
    """Seed 6079. An operator reset of orderly GID_r0 drops g0c1's queue 0 ProcessQueue; its
    long-polling pull, issued at 21 before the reset, is answered NO_NEW_MSG (next 21) 3.1 s after
    the drop, and correctTagsOffset (no dropped check) moves the store to 21 while the new
    ProcessQueue is at offset 8; the broker commits 21 at the next persist, and the ProcessQueue's
    next commit writes 9 back 1 s later (#4206 on an orderly group, as seed 3035). No crash and no
    move of the queue followed, so RocketMQ's message traces show every message consumed
    (H-DELIVER-1 holds). Check saw a real window the black box cannot: a finding. Its H-RETRY-3
    is 4.9.8's orderly dead letter through the schedule (INV-DLQ-1). Statuses are the run's own."""
    import json

    from rocketspec.conformance.real_random import classify, unseen_invariants
    name = "seed-6079-orderly-reset-overwritten-oracle-held"
    res = check_trace(str(HERE / f"{name}.jsonl.gz"), P, max_listed=1000)
    errs = _by_inv(res)
    assert set(errs) == {"INV-OFFSET-3", "INV-DLQ-1"}, res.findings.counts
    assert len(errs["INV-OFFSET-3"]) == 3 and all("#4206" in m for m in errs["INV-OFFSET-3"]), errs["INV-OFFSET-3"]
    check_json = res.to_dict()
    check_ids = {k: v for k, v in check_json["counts"].items() if k in errs}
    status = {"H-DELIVER-1": "holds", "H-RETRY-1": "holds", "H-RETRY-2": "skipped", "H-RETRY-3": "violated",
              "H-ORDER-1": "skipped", "H-ORDER-2": "holds", "H-DUP-1": "skipped"}
    oracle = _oracle(status)
    sc = json.loads((HERE / f"{name}.scenario.json").read_text())
    assert classify(check_ids, oracle, unseen_invariants(check_json, sc, oracle)) == ("finding", ["INV-OFFSET-3"])
    # the same offset error with no upstream cause named stays a false alarm
    plain = {**check_json, "violations": [{**v, "message": v["message"].split("cause:")[0]}
                                          for v in check_json["violations"]]}
    assert classify(check_ids, oracle, unseen_invariants(plain, sc, oracle)) == ("false alarm", ["INV-OFFSET-3"])


def test_a_dead_channel_registered_again_leaves_a_queue_without_owner():
    """Seed 6060. g2c1 of GID_r2 (AVG, 2 queues) was stopped 5.4 s. On its resume the broker handled
    its channel's close (rocketmq_client.log 02:28:26,207 'remove not active channel[... 0xc203d0d1
    !...]') and, 1 ms later, a heartbeat read from that channel before the close: 'new consumer
    connected ... 0xc203d0d1 !' (ConsumerGroupInfo.updateChannel puts the channel with no liveness
    check). Its new channel registered too, so getAllClientId listed g2c1 twice until the 120 s
    expiry scan (ConsumerManager CHANNEL_EXPIRED_TIMEOUT). Every member computed AVG on
    [g2c1, g2c1, g2c2, g2c3]: g2c1 took index 0 (queue 0), and queue 1, at index 1, had no owner
    for the run's last 26 s. A real liveness gap the message traces cannot show: INV-OWNER-1 names
    the duplicate as its cause."""
    res = _errors("seed-6060-dead-channel-registered-again")
    errs = _by_inv(res)
    assert set(errs) == {"INV-OWNER-1"}, res.findings.counts
    assert all("have no owner" in m and "names 127.0.0.1@g2c1 more than once" in m for m in errs["INV-OWNER-1"]), \
        errs["INV-OWNER-1"][0]


def test_a_random_run_on_5x_is_checked_under_its_own_release_profile(tmp_path):
    """`record --random --release 5.5.0` judged every run's trace under the 4.9.8 profile: 5.5.0's
    server-side reset (PullMessageProcessor answers the first pull after a reset OFFSET_ILLEGAL
    with the reset offset, queryThenEraseResetOffset) read as a wrong OFFSET_ILLEGAL answer,
    INV-PULL-2 (random 5.5.0 run 10004). The run's check uses the profile its trace names."""
    import gzip
    import shutil

    from rocketspec.conformance.real_random import _check
    src = Path(__file__).parent / "fixtures" / "real" / "5x" / "real-reset-mid-5.5.0.jsonl.gz"
    trace = tmp_path / "trace.jsonl"
    with gzip.open(src, "rb") as fh, trace.open("wb") as out:
        shutil.copyfileobj(fh, out)
    assert "INV-PULL-2" in check_trace(str(src), P).findings.counts     # the 4.9.8 reading
    ids, rep = _check(trace)
    assert rep["verdict"] != "refused" and ids == {}, ids


def test_a_first_start_at_the_end_the_queue_had_when_its_offset_was_read():
    """Seed 10002 (real 5.5.0, profile rocketmq-5.5.1). g0c1 of a new group
    (CONSUME_FROM_LAST_OFFSET) read no offset (-1) for each queue, and computePullFromWhere asked
    the broker's maxOffset right after: 0, the queues were empty. The producer's first messages
    were stored 0.5 s later, and only then was each ProcessQueue seen (sampled; 5.x dispatches
    the first pull 500 ms after the rebalance), starting at 0. The maxOffset query comes after the
    store read and before the ProcessQueue: any end the queue had in between is the answer."""
    res = check_trace(str(HERE / "seed-10002-5x-max-offset-read-before-store.jsonl.gz"), "rocketmq-5.5.1")
    assert not res.findings.errors, res.findings.counts


def test_a_processqueue_created_on_a_grant_that_a_pause_outlived_names_the_pause():
    """Seed 8024 (breaks: g0c1 of orderly GID_r0 paused 8400 ms past the lease; g0c8 subscribes
    differently). g0c1's rebalance was granted the lock of TopicS queues 1 and 3 (5.7 s), then
    g0c1 was stopped before it created their ProcessQueues (RebalanceImpl.
    updateProcessQueueTableInRebalance locks, then creates). g0c8 took the expired locks over;
    g0c1, resumed, finished that rebalance and created both ProcessQueues under the stale grant
    (INV-OWNER-2 x2), then lost them at its next rebalance. INV-OWNER-2 names the pause, so the
    deliberate break explains it (the oracle held: nothing was lost)."""
    import json

    from rocketspec.conformance.real_random import BREAK, break_named, classify
    name = "break-8024-pause-between-grant-and-processqueue"
    res = check_trace(str(HERE / f"{name}.jsonl.gz"), P, max_listed=1000)
    errs = _by_inv(res)
    assert len(errs.get("INV-OWNER-2", [])) == 2, res.findings.counts
    assert all("cause: the broker granted 127.0.0.1@g0c1 the lock" in m and "paused at ts" in m
               for m in errs["INV-OWNER-2"]), errs["INV-OWNER-2"]
    check_json = res.to_dict()
    sc = json.loads((HERE / f"{name}.scenario.json").read_text())
    named = break_named(check_json, sc)
    assert "INV-OWNER-2" in named, named
    status = {"H-DELIVER-1": "holds", "H-RETRY-1": "holds", "H-RETRY-2": "skipped", "H-RETRY-3": "holds",
              "H-ORDER-1": "skipped", "H-ORDER-2": "holds", "H-DUP-1": "skipped"}
    oracle = _oracle(status)
    ids = {k: v for k, v in check_json["counts"].items() if k in errs}
    assert classify(ids, oracle, named=named)[0] == BREAK


def test_a_queue_added_during_a_resets_wait_keeps_a_second_pullrequest():
    """Seed 8036. An operator reset of orderly GID_r0 (isForce, to a time) reached g0c1 just as it
    resumed from a pause: MQClientInstance.resetOffset suspended it and dropped the ProcessQueues
    then in its table (4.9.8 lines 1071-1081), and 26 ms later g0c1's rebalance added TopicR
    queue 3 (rocketmq_client.log 03:41:10,085 'add a new pull request ... nextOffset=7'), whose
    pull waited on the suspension. 10 s later the reset set queue 3 to 30 as well (1088-1096),
    persisted it and took that ProcessQueue out of the table without dropping it. The broker's
    commit of 30 is the operator's skip (ANOM-RESET-SKIP), not an offset passing unconsumed
    messages (INV-OFFSET-3) nor a bad start (INV-START-1) of the next ProcessQueue. The stray
    PullRequest then pulled too ('the first time to pull message ... nextOffset=7] NewOffset:
    30', 03:41:20,233): two ProcessQueues consumed queue 3, offset 30 was dead-lettered twice.
    Each of those violations names that cause; the oracle sees it only through the redelivery
    past the limit (H-RETRY-1), so the run is a finding, not a false alarm. Statuses are the
    run's own oracle.json."""
    import json

    from rocketspec.conformance.real_random import classify, unseen_invariants
    from functools import partial

    from rocketspec.spec.replay import Findings
    name = "seed-8036-reset-stray-processqueue"
    res = check_trace(str(HERE / f"{name}.jsonl.gz"), P, max_listed=1000,
                      findings=partial(Findings, warn_examples=50))
    errs = _by_inv(res)
    assert not any(m.startswith("broker commits 30 but offset 7") for m in errs.get("INV-OFFSET-3", [])), errs
    assert "INV-START-1" not in errs, errs["INV-START-1"]
    skips = [w for w in res.findings.warnings if w.inv == "ANOM-RESET-SKIP" and w.key[3] == 3]
    assert any("operator reset to 30" in w.message for w in skips), [w.message for w in skips]
    stray = {"INV-OFFSET-3", "INV-ORDER-2", "INV-PULL-1", "INV-RETRY-1", "INV-RETRY-3"}
    assert set(errs) == stray | {"INV-DLQ-1"}, res.findings.counts
    for inv in stray:
        assert all("added the queue during an operator reset's 10 s wait" in m and "apache/rocketmq#2449" in m
                   for m in errs[inv]), errs[inv]
    check_json = res.to_dict()
    check_ids = {k: v for k, v in check_json["counts"].items() if k in errs}
    status = {"H-DELIVER-1": "holds", "H-RETRY-1": "violated", "H-RETRY-2": "skipped", "H-RETRY-3": "violated",
              "H-ORDER-1": "skipped", "H-ORDER-2": "holds", "H-DUP-1": "skipped"}
    oracle = _oracle(status)
    sc = json.loads((HERE / f"{name}.scenario.json").read_text())
    cls, _ = classify(check_ids, oracle, unseen_invariants(check_json, sc, oracle))
    assert cls == "finding", (cls, check_ids)


def test_a_5x_orderly_batch_whose_processqueue_was_removed_unforced_never_ran():
    """Seed 12022 (real 5.5.0, profile rocketmq-5.5.1). g0c1's ConsumeRequest ran the before-hook
    of its batch 4..7 of TopicR queue 3 (consume_started, 867879) as its rebalance dropped the
    ProcessQueue; tryRemoveOrderMessageQueue was not forced (its last lock was 0.2 s old, not
    unlockDelayTimeMills 20000) and took the consume lock's write half, persisted, unlocked (867938)
    and removed it. The consume thread re-checked the dropped flag under the read half and broke out
    without the listener or the after-hook (rocketmq_client.log 03:57:47,885 'consumeMessage, the
    message queue not be able to consume, because it's dropped ... queueId=3'): no consume_finished
    ever came. g0c2, locking the queue next, was not a second consumer inside it (INV-ORDER-1 x2
    was a false alarm, classified a finding). With the unlock delay configured to 0 the same removal
    is forced (#7644): the call may still run, and INV-ORDER-1 names that cause."""
    import gzip
    import json

    name = "seed-12022-5x-orderly-batch-never-called"
    res = check_trace(str(HERE / f"{name}.jsonl.gz"), "rocketmq-5.5.1")
    assert "INV-ORDER-1" not in res.findings.counts, _by_inv(res)
    assert not res.findings.errors, res.findings.counts
    with gzip.open(HERE / f"{name}.jsonl.gz", "rt") as fh:
        events = [json.loads(line) for line in fh]
    for e in events:
        if e["kind"] == "client_started" and e["client"] == "127.0.0.1@g0c1":
            e["config"]["unlock_delay_ms"] = 0
    forced = check_events(list(enumerate(events, 1)), get_profile("rocketmq-5.5.1"))
    msgs = _by_inv(forced).get("INV-ORDER-1", [])
    assert any("127.0.0.1@g0c1's batch 5" in m and "#7644" in m for m in msgs), forced.findings.counts


def test_a_store_read_replaces_the_value_a_gone_processqueues_correction_left():
    """Seed 11005. g0c1 lost TopicR queue 3 to g0c3 (ProcessQueue and offset entry removed);
    its long-polling pull from 3, still held, was answered NO_MATCHED_MSG next 5 after that, and
    correctTagsOffset (no dropped check, msgCount 0) put 5 in g0c1's offset table (seen by the
    poller). 1.6 s later g0c1's rebalance took the queue back: removeDirtyOffset removed the 5
    (rocketmq_client.log 03:45:22,481 'remove unnecessary messageQueue offset ... queueId=3'),
    computePullFromWhere read the broker's 4, and readOffset(READ_FROM_STORE) put 4 in the table
    (updateOffset(mq, 4, false)) before the new ProcessQueue started at 4. The poller saw 4 after
    5: not an offset moving back in a live ProcessQueue (INV-OFFSET-2 was a false alarm,
    classified a finding). Without the read the same fall stays a violation."""
    import gzip
    import json

    name = "seed-11005-store-read-after-stale-correction"
    res = _errors(name)
    assert not res.findings.errors, _by_inv(res)
    with gzip.open(HERE / f"{name}.jsonl.gz", "rt") as fh:
        events = [json.loads(line) for line in fh]
    unread = [e for e in events if not (e["kind"] == "offset_read" and e["seq"] == 532)]
    assert len(unread) == len(events) - 1
    got = check_events(list(enumerate(unread, 1)), get_profile(P))
    assert any("moves back from 5 to 4" in m for m in _by_inv(got).get("INV-OFFSET-2", [])), got.findings.counts


def test_an_orderly_broadcast_batch_dead_letter_consumed_again_names_both_causes():
    """Seed 11020. Orderly BROADCASTING GID_r1 (batch 2, maxReconsumeTimes 2): g1c1's batch
    [16, 17] answered SUSPEND with 16 at count 2; checkReconsumeTimes sent 16 to %DLQ%GID_r1
    through the client's producer (seed 208's path, INV-BCAST-1; through the schedule topic,
    INV-DLQ-1) and answered suspend for the batch, 17 being under its limit, so
    makeMessageToConsumeAgain put 16 back with it and it was consumed again (seed 209's path,
    INV-RETRY-1). Real 4.9.8 behaviour; the message traces name no consumer of a broadcasting
    group, so only check sees it, and its INV-RETRY-1 names both mechanisms."""
    errs = _by_inv(_errors("seed-11020-orderly-broadcast-batch-dead-letter-again"))
    assert set(errs) == {"INV-BCAST-1", "INV-DLQ-1", "INV-RETRY-1"}, errs
    (m,) = errs["INV-RETRY-1"]
    assert "makeMessageToConsumeAgain" in m and "broadcasting" in m and "INV-BCAST-1" in m, m


def test_a_store_read_answered_before_the_commit_it_saw_was_written():
    """Seed 11022. g1c2's pull 643 of TopicR queue 3 carried commit offset 2 (issued 585483);
    the broker's table took it (the first entry of the queue) and g1c3, joining, read 2 from it
    (offset_read 585546). The recorder writes offset_committed under its lock, which the
    broker's query of the table (ConsumerManageProcessor.queryConsumerOffset) does not take,
    and its line waited on the trace writer through a 37 ms stall in which no thread wrote
    (585548 to 585585): the commit shows 39 ms after the read. Not a read of a value the table
    never held (INV-START-1 was a false alarm, classified a finding beside 4.9.8's known orderly
    INV-DLQ-1). A read of a value no commit in flight carries is still one."""
    import gzip
    import json

    name = "seed-11022-read-before-commit-written"
    errs = _by_inv(_errors(name))
    assert set(errs) == {"INV-DLQ-1"}, errs
    with gzip.open(HERE / f"{name}.jsonl.gz", "rt") as fh:
        events = [json.loads(line) for line in fh]
    for e in events:
        if e["kind"] == "offset_read" and e["seq"] == 339:
            assert e["offset"] == 2 and e["client"] == "127.0.0.1@g1c3"
            e["offset"] = 3
    got = _by_inv(check_events(list(enumerate(events, 1)), get_profile(P)))
    assert any("store read returns 3" in m for m in got.get("INV-START-1", [])), got


def test_a_cause_naming_an_upstream_issue_by_number_is_a_known_bug():
    """check names upstream issues both as apache/rocketmq#N and as #N (e.g. the open #9281: a
    first start at CONSUME_FROM_LAST_OFFSET reads the end after start() returned); either is a
    RocketMQ defect at work that the black box sees only through a consequence."""
    from rocketspec.conformance.real_random import _known_bug_cause
    assert _known_bug_cause({"message": "x; cause: the first-start offset is read after start() returned (#9281)"})
    assert _known_bug_cause({"message": "x; cause: a reset overwritten (apache/rocketmq#4206, #4742)"})
    assert not _known_bug_cause({"message": "client offset 21 passes offset 8; no cause named #9281"})
    assert not _known_bug_cause({"message": "x; cause: queue #3 of the topic"})


def test_polled_lock_state_of_a_paused_client_is_judged_when_it_was_set():
    """Seed 12053 (real 5.5.0, profile rocketmq-5.5.1; break lock_shorter_than_lease: broker lock
    1500 ms under a 3000 ms client lease). g0c1 of orderly GID_r0 held all four queues; its lockAll
    at 1796617084945 named all four (RebalanceImpl.lockAll asks only for the queues of its
    ProcessQueue table) and was granted them; g0c1 set queue 2's lastLockTimestamp at …085238 on
    the grant of …085212 and was stopped at …085269 for 2300 ms. The broker's entries expired at
    …086710 and g0c9 took queues 1, 2 and 3 over. The poller, stopped with its client, reported
    after SIGCONT the ProcessQueues of queues 1 and 3 (announced at their first pulls) and queue 2's
    lock flag with last_lock_ts …085238: all set under g0c1's live grant, seen late. Judged at the
    sampling time they read as INV-OWNER-2 x3 (one naming no cause), and the run as a white-box
    finding. What the break really caused remains: g0c1 consumed queue 2 at …087596 on its lease
    while g0c9 held the broker lock, named for the configuration, so the run is the break's
    expected loss. A ProcessQueue created on a grant a pause outlived (seed 8024) is still
    reported."""
    import json

    from rocketspec.conformance.real_random import BREAK, break_named, classify
    name = "break-12053-5x-lock-shorter-than-lease-sampled-grants"
    res = check_trace(str(HERE / f"{name}.jsonl.gz"), "rocketmq-5.5.1", max_listed=1000)
    errs = _by_inv(res)
    assert res.findings.counts == {"INV-OWNER-2": 1}, errs
    assert "127.0.0.1@g0c1 consumes but the broker lock is held by 127.0.0.1@g0c9" in errs["INV-OWNER-2"][0]
    assert "cause: configuration: the broker lock is not longer than the client lease" in errs["INV-OWNER-2"][0]
    check_json = res.to_dict()
    sc = json.loads((HERE / f"{name}.scenario.json").read_text())
    named = break_named(check_json, sc)
    assert named == {"INV-OWNER-2"}, named
    status = {"H-DELIVER-1": "holds", "H-RETRY-1": "holds", "H-RETRY-2": "skipped", "H-RETRY-3": "holds",
              "H-ORDER-1": "skipped", "H-ORDER-2": "holds", "H-DUP-1": "skipped"}
    oracle = {"complete": False, "guarantees": [{"id": g, "status": s} for g, s in status.items()]}
    assert classify({"INV-OWNER-2": 1}, oracle, named=named)[0] == BREAK


def test_a_fallback_after_a_fast_failed_send_back_is_the_failed_copys():
    """Seed 11117. Concurrent GID_r0 (TagB always RECONSUME_LATER, maxReconsumeTimes -1); g0c1,
    stopped 8.4 s, timed out on the send-back of 7F…C149 and fell back, so two copies of it with
    count 1 came back: %RETRY%GID_r0 offsets 7 (…5E5A6) and 14 (…60B01). Both failed again and
    were sent back (code 36, at 1796618273902 and …3969). The broker stalled; its fast failure
    dropped …5E5A6's request after 902 ms in the send queue with SYSTEM_BUSY (client log
    04:37:54,846 '[TIMEOUT_CLEAN_QUEUE]broker busy'), and sendMessageBack's catch sent the
    copy through the producer (count 2, level 3 + 1). The recorder names the fallback's copy as
    the last one given to the listener with its unique key (…60B01, whose own send-back the broker
    stored at …4868), so offset 7 read as never handled (INV-OFFSET-3 x117) and the producer copy
    as no request's (INV-RETRY-2 x26): a false alarm. Nothing lost (the oracle holds). A pending
    send-back of another count is no such copy: then offset 7 stays unhandled."""
    name = "seed-11117-fast-failed-send-back-fallback-of-other-copy"
    res = _errors(name)
    assert not res.findings.errors, _by_inv(res)
    assert res.findings.counts.get("ANOM-DUP-1") == 7, res.findings.counts
    events = _events(name)
    (req,) = [e for e in events if e["kind"] == "send_back_requested" and e["seq"] == 1438]
    assert req["msg_id"].endswith("5E5A6") and req["offset"] == 7 and req["reconsume_times"] == 1
    req["reconsume_times"] = 2
    got = _by_inv(check_events(list(enumerate(events, 1)), get_profile(P)))
    assert any("offset 7 has not been consumed" in m for m in got.get("INV-OFFSET-3", [])), got.keys()


def test_a_release_proves_the_processqueue_and_a_batch_after_a_seen_drop_never_ran():
    """Seed 11146 (break pause_past_lease:g1c1, which came only after both reports). Two false
    alarms of the spec on orderly GID_r1, read against 4.9.8. (1) g1c2, shut down 14 ms after the
    broker granted it queue 5, unlocked it (ConsumeMessageOrderlyService.shutdown -> unlockAll,
    which names only the queues of the ProcessQueue table); its poller saw that ProcessQueue only
    after the release: it was created under the live lock (INV-OWNER-2 was a false alarm). (2) g1c1's
    ConsumeRequest ran the before-hook of offset 0 of queue 7 after its rebalance had dropped and
    removed the ProcessQueue (seen at 6448, hook at 6462); it re-checked the flag under the consume
    lock and broke out without the listener (rocketmq_client.log 04:52:06,463 'consumeMessage ...
    dropped ... queueId=7'), so g1c1's next batch on its new ProcessQueue was not a second one
    (INV-ORDER-1 was a false alarm)."""
    name = "seed-11146-orderly-release-lists-processqueue-batch-after-drop"
    res = check_trace(str(HERE / f"{name}.jsonl.gz"), P)
    assert not res.findings.errors, _by_inv(res)
    events = _events(name)
    drop = next(e for e in events if e["kind"] == "pq_dropped" and e["client"] == "127.0.0.1@g1c1"
                and e["group"] == "GID_r1" and e["queue"] == 7)
    hook = next(e for e in events if e["kind"] == "consume_started" and e["client"] == "127.0.0.1@g1c1"
                and e["queue"] == 7)
    assert drop["seq"] < hook["seq"] and not any(
        e["kind"] == "consume_finished" and e.get("consume_id") == hook["consume_id"]
        and e["client"] == "127.0.0.1@g1c1" for e in events)


def test_a_retried_producer_send_of_a_retry_copy_loses_its_count():
    """Seed 13109 (real 5.3.3; the run's first 4000 events). GID_r0's consumer send-back of a failed
    message could not be answered, and the fallback producer's send of the copy was attempted twice
    (send_back_requested fallback_producer at seq 1797 and 1810). DefaultMQProducerImpl.
    sendKernelImpl moves the message's RECONSUME_TIME property into the request header and clears
    it from the message on the first attempt (5.5.0 lines 1007-1012; 4.9.8 alike), so the retried
    attempt carried none and the broker stored the copy with count 0 where 1 was owed (INV-RETRY-2,
    at its scheduling and its delivery into %RETRY%). Real RocketMQ; a count the message traces never
    show, so a white-box finding, not a false alarm. The %RETRY% ProcessQueue at CONSUME_FROM_TIMESTAMP
    started at 0, the end when its store read said -1 (the maxOffset query follows the read)."""
    import json

    from rocketspec.conformance.real_random import classify, unseen_invariants
    name = "seed-13109-5x-retried-producer-send-loses-count"
    res = check_trace(str(HERE / f"{name}.jsonl.gz"), "rocketmq-5.3.3", max_listed=1000)
    errs = _by_inv(res)
    assert set(errs) == {"INV-RETRY-2"}, res.findings.counts
    assert all("cause: a producer send of the copy retried after a failed attempt" in m for m in errs["INV-RETRY-2"])
    check_json = res.to_dict()
    sc = json.loads((HERE / f"{name}.scenario.json").read_text())
    status = {"H-DELIVER-1": "holds", "H-RETRY-1": "holds", "H-RETRY-2": "skipped", "H-RETRY-3": "holds",
              "H-ORDER-1": "skipped", "H-ORDER-2": "holds", "H-DUP-1": "skipped"}
    oracle = _oracle(status)
    ids = {"INV-RETRY-2": check_json["counts"]["INV-RETRY-2"]}
    assert classify(ids, oracle, unseen_invariants(check_json, sc, oracle)) == ("finding", ["INV-RETRY-2"])


def test_a_5x_shutdown_that_interrupts_a_failed_batch_skips_its_send_back():
    """Seed 16026 (5.3.3). g1c2's listener call of TopicR queue 2 offset 7 returns RECONSUME_LATER
    while the consumer shuts down; the shutdown's shutdownNow interrupts the consume thread, so
    ProcessQueue.containsMessage (lockInterruptibly) answers false, processConsumeResult skips the
    send-back (the #5481 fix's check) and removeMessage moves the client offset to 8 (sampled,
    seq 835): offset 7 was neither consumed nor sent back. RocketMQ's own client log says so
    ("Failed to check message's existence in process queue", then "skip send-back-procedure",
    queueOffset=7). The offset 8 never reached the broker (the shutdown's persist did not land),
    so the restarted consumer got offset 7 again and the message traces show no loss: a finding
    the white-box level sees, not a false alarm."""
    import json

    from rocketspec.conformance.real_random import classify, unseen_invariants
    name = "seed-16026-5x-shutdown-skips-send-back"
    res = check_trace(str(HERE / f"{name}.jsonl.gz"), "rocketmq-5.3.3", max_listed=1000)
    errs = _by_inv(res)
    assert set(errs) == {"INV-OFFSET-3"} and len(errs["INV-OFFSET-3"]) == 1, res.findings.counts
    msg = errs["INV-OFFSET-3"][0]
    assert "passes offset 7" in msg and "containsMessage" in msg and "#5481" in msg, msg
    check_json = res.to_dict()
    status = {"H-DELIVER-1": "holds", "H-RETRY-1": "holds", "H-RETRY-2": "skipped", "H-RETRY-3": "holds",
              "H-ORDER-1": "skipped", "H-ORDER-2": "holds", "H-DUP-1": "skipped"}
    oracle = _oracle(status)
    sc = json.loads((HERE / f"{name}.scenario.json").read_text())
    assert classify({"INV-OFFSET-3": 1}, oracle, unseen_invariants(check_json, sc, oracle)) == \
        ("finding", ["INV-OFFSET-3"])
    # 4.9.8 has no containment check (its send-back is tried, and a failed one resubmits the
    # message): there the same offset names no such cause
    old = check_trace(str(HERE / f"{name}.jsonl.gz"), "rocketmq-4.9.8", max_listed=1000)
    assert all("containsMessage" not in m for m in _by_inv(old).get("INV-OFFSET-3", []))


def test_a_sampled_start_taken_from_a_stray_pullrequest_names_2449():
    """Seed 14007 (4.9.8). An operator reset to time 0 during g0c1's rebalance wait leaves a
    ProcessQueue out of the table that still pulls TopicR queue 3 (#2449): its pull at 0 is
    answered next 116 (seq 815). The recorder announces a ProcessQueue at the first pull it sees
    for the queue (ClientRecorder.announce: the pull hook knows the MessageQueue, and takes the
    table's ProcessQueue) and so dates the rebalance's new ProcessQueue at the stray's next pull,
    116, while the store read gave 0 (seq 813). The INV-START-1 names that stray."""
    res = check_trace(str(HERE / "seed-14007-stray-pull-announces-new-pq.jsonl.gz"), P, max_listed=1000)
    start = _by_inv(res)["INV-START-1"]
    assert len(start) == 1 and "starts at 116" in start[0] and "#2449" in start[0], start


def test_a_listener_call_holding_two_copies_of_a_message_fails_both_lineages(tmp_path):
    """Seed 16031 (5.3.3, concurrent GID_r0, batch 4, maxReconsumeTimes 2, ackIndex -1, which
    sends back the whole batch). After its 8.5 s pause g0c1 consumed %RETRY%GID_r0 queue 0 again
    from its stale offset, and one call (requestId …735E0093, 195294) held two copies of message
    …390D0064: the count-1 copy at offset 148 and the count-2 copy at offset 151. The consume
    hook writes a SubBefore and a SubAfter for each (ConsumeMessageTraceHookImpl: the same bean
    list before and after the call, in the batch's order). Both failed: the first made a fourth
    count-2 copy (offset 511), the second a DLQ copy. The oracle read one (requestId, msgId) pair
    as one delivery, lost the count-1 record (an "unmatched" SubAfter) and counted one failure per
    call, so the fourth count-2 copy, handed out at 196515, read as a copy past the limit: a
    missed loss that RocketMQ never made. The fixture holds the message's own records (message
    traces, commit log entries) and the client log's membership lines: g0c1's resume is a
    membership change, so its second hand-out of the count-2 copy at offset 151 is a duplicate."""
    import json

    from rocketspec.conformance.real_random import oracle_dict, oracle_report
    from rocketspec.spec.history import load_history

    folder = Path(__file__).parent / "fixtures" / "real" / "random" / "seed-16031-two-copies-in-one-call"
    T0_16031 = 1796626172793        # the run's trace_started
    sc = json.loads((folder / "scenario.json").read_text())
    o = oracle_dict(oracle_report(sc, folder / "msgtrace.txt", folder / "run" / "store", T0_16031, True))
    retry = next(g for g in o["guarantees"] if g["id"] == "H-RETRY-1")
    assert retry["status"] == "holds", retry["listed"]
    assert retry["counts"]["deliveries"] == 11, retry["counts"]
    h = load_history(str(folder / "msgtrace.txt"), "msgtrace", True, None)
    call = [c.reconsume_times for c in h.consumes if c.batch == "7F0000012B984E0E2F2A205D735E0093"]
    assert sorted(call, key=str) == [1, 2], call
    # the same call with the count-2 copy first in the batch (a %RETRY% queue may hold the later
    # copy at the lower offset): both failures still count
    import shutil
    swapped = tmp_path / "swapped"
    shutil.copytree(folder, swapped)
    lines = (swapped / "msgtrace.txt").read_text().split("\n")
    before = [i for i, t in enumerate(lines) if t.startswith("SubBefore") and "735E0093" in t]
    assert len(before) == 2
    lines[before[0]], lines[before[1]] = lines[before[1]], lines[before[0]]
    (swapped / "msgtrace.txt").write_text("\n".join(lines))
    o = oracle_dict(oracle_report(sc, swapped / "msgtrace.txt", swapped / "run" / "store", T0_16031, True))
    retry = next(g for g in o["guarantees"] if g["id"] == "H-RETRY-1")
    assert retry["status"] == "holds", retry["listed"]


def test_a_subafter_stored_before_its_subbefore_is_paired_with_it():
    """Seed 18132 (5.5.1 broker, 5.5.0 client; concurrent GID_r0, ackIndex -1 so every call
    sends its batch back, maxReconsumeTimes 1, an operator reset to time 0 at 2.3 s). Message
    …901300D1 was handed out twice at count 0 (before and after the reset), so RocketMQ made two
    count-1 copies (%RETRY%GID_r0 offsets 62 and 261) and dead-lettered each once: nothing past
    the limit. The first call's records reached no broker: the trace producer's sends failed
    (TIMEOUT_CLEAN_QUEUE) and the client logged both bodies, the SubAfter's first (07:19:33,688)
    and the SubBefore's after it (33,690). A call's SubBefore and SubAfter are two trace contexts
    (ConsumeMessageTraceHookImpl appends each), which AsyncTraceDispatcher may put in two
    messages sent by different threads, so a SubAfter may be read first. The old reader took
    it as a delivery of unknown count and the later SubBefore as a call of unknown result, lost
    the count-0 failure, counted one count-1 copy and read the second copy's delivery as one
    past the limit (H-RETRY-1, a 'missed loss' RocketMQ never made)."""
    import json

    from rocketspec.conformance.real_random import oracle_dict, oracle_report

    folder = Path(__file__).parent / "fixtures" / "real" / "random" / "seed-18132-subafter-before-subbefore"
    T0_18132 = 1796627967896        # the run's trace_started
    sc = json.loads((folder / "scenario.json").read_text())
    o = oracle_dict(oracle_report(sc, folder / "msgtrace.txt", folder / "run" / "store", T0_18132, True))
    retry = next(g for g in o["guarantees"] if g["id"] == "H-RETRY-1")
    assert retry["status"] == "holds", retry["listed"]
    assert retry["counts"]["deliveries"] == 5, retry["counts"]     # GID_r0 at 0, 0, 1, 1 and GID_r1 at 0
    assert not any("without their SubBefore" in n for n in o["notes"]), o["notes"]


def test_a_dropped_process_queues_empty_answer_still_filters_for_the_group():
    """Random run 27316 (real 4.9.8): GID_r1 subscribes TopicR with `TagB || TagC`; offset 21 of
    queue 1 has no tag. g1c2's pull from 21 was held when g1c2 shut down (its ProcessQueue dropped,
    not yet removed); the broker answered it NO_MATCHED_MSG, next 22 (the message stored meanwhile
    is not the group's), correctTagsOffset moved g1c2's store to 22, and the restarted g1c2
    persisted 22. The broker filtered the range with the group's subscription whichever
    ProcessQueue asked: offset 21 is owed to no one. check had credited that only for a removed
    or replaced ProcessQueue, and reported the commit of 22 as passing an unconsumed message
    (INV-OFFSET-3); RocketMQ's records show nothing lost."""
    name = "seed-27316-filtered-after-shutdown"
    res = _errors(name)
    assert "INV-OFFSET-3" not in res.findings.counts, res.findings.counts
    stored = [e for e in _events(name) if e["kind"] == "message_stored" and e.get("topic") == "TopicR"
              and e.get("queue") == 1 and e.get("offset") == 21]
    assert stored and stored[0]["tags"] is None
