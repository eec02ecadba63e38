"""Semantic mutants of the reference: one-line mistakes a client or broker author could make.

Each `Mutant` names a line of `reference/` (file, function, the original line as it stands in the
source) and the line a mistaken author would have written instead. `applied(mutant)` makes the
change at run time: it takes the function's source from its module, replaces that one line,
compiles the function again in the module's namespace and puts it in place of the original (in
every reference module that holds it), and puts the original back afterwards. The committed
files are never edited; `locate(mutant)` fails when the original line no longer exists, so a
refactoring of the reference cannot leave a mutant silently pointing at nothing
(tests/test_mutants.py checks every mutant).

A mutant is *killed* only by a spec finding: an error the checker reports on the mutated
reference's trace (an invariant, or the guard of an action that rejects the event), that the
unmutated reference does not produce on that scenario (its declared verdict). A crash of the
mutated reference is not a kill: it is recorded and the search goes on.

docs/mutants.md is the catalogue with the reasoning behind each mutant.
"""
from __future__ import annotations

import contextlib
import importlib
import inspect
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

REFERENCE_PACKAGE = "rocketspec.reference"
REFERENCE_DIR = Path(__file__).resolve().parent.parent / "reference"


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str          # path under reference/, e.g. "client/process_queue.py"
    function: str      # qualified name in that module, e.g. "ProcessQueue.remove_messages"
    original: str      # the line as it stands (compared without surrounding blanks)
    mutated: str       # the line a mistaken author would write
    targets: tuple     # the invariant ids the mistake breaks
    mistake: str       # what the author got wrong, in RocketMQ's terms
    count: int = 1     # how many times the original line occurs in the function (checked)
    occurrence: int = 0  # which of them is mutated (0: the first)

    @property
    def module(self) -> str:
        return REFERENCE_PACKAGE + "." + self.file[:-3].replace("/", ".")

    def to_dict(self) -> dict:
        return {"id": self.id, "file": "reference/" + self.file, "function": self.function,
                "original": self.original, "mutated": self.mutated, "targets": list(self.targets),
                "mistake": self.mistake}


def M(id, file, function, original, mutated, targets, mistake, count=1, occurrence=0) -> Mutant:
    return Mutant(id, file, function, original, mutated, tuple(targets.split()), mistake, count, occurrence)


CATALOGUE: tuple[Mutant, ...] = (
    # ------------------------------------------------------------------ allocation and rebalance
    M("alloc-avg-extra-block", "allocation.py", "Averagely._allocate",
      "longer = mod > 0 and index < mod", "longer = mod > 0 and index <= mod",
      "INV-ALLOC-1",
      "Averagely gives the remainder's extra queue to one consumer too many (<= for <)."),
    M("alloc-avg-start-ignores-remainder", "allocation.py", "Averagely._allocate",
      "start = index * size + (0 if longer else mod)", "start = index * size",
      "INV-OWNER-1",
      "Averagely's block start forgets the remainder: consumers after the longer blocks overlap them."),
    M("rebalance-takes-every-queue", "client/rebalance.py", "RebalanceImpl.rebalance_by_topic",
      "changed = self.update_pq_table(topic, allocated, c.orderly)",
      "changed = self.update_pq_table(topic, set(mq_all), c.orderly)",
      "INV-ALLOC-2",
      "A clustering consumer builds its ProcessQueues from every queue of the topic, as broadcasting does, "
      "instead of its allocation."),
    M("rebalance-no-drop", "client/rebalance.py", "RebalanceImpl.update_pq_table",
      "pq.dropped = True", "pass",
      "INV-DROP-1",
      "The rebalance forgets to set the dropped flag of a ProcessQueue it gives up: its pull loop and "
      "consume requests go on after the queue was removed."),
    M("rebalance-duplicate-pq", "client/rebalance.py", "RebalanceImpl.update_pq_table",
      "if mq in self.pq_table:", "if False:",
      "INV-PQ-1",
      "The rebalance creates a ProcessQueue for an allocated queue without checking the table: every "
      "rebalance starts another ProcessQueue and pull loop for a queue it already holds."),
    M("start-reads-memory-offset", "client/rebalance.py", "RebalanceImpl.compute_pull_from_where",
      "last = c.offset_store.read_offset(mq, READ_FROM_STORE)",
      "last = c.offset_store.read_offset(mq, \"memory\")",
      "INV-START-1",
      "computePullFromWhere reads the offset from memory (just cleared by removeDirtyOffset) instead of "
      "the broker: a new ProcessQueue ignores the committed offset."),
    M("start-error-as-no-offset", "client/rebalance.py", "RebalanceImpl.compute_pull_from_where",
      "if last != -1:", "if False:",
      "INV-START-1",
      "A failed offset query (-2) is taken for 'no committed offset' and the queue starts at the "
      "consume-from-where position (#2708 in every version)."),
    # ------------------------------------------------------------------ pulling
    M("pull-offset-not-advanced", "client/push_consumer.py", "PullService.on_pull_result",
      "req.next_offset = result.next_begin", "pass",
      "INV-PULL-1",
      "After a FOUND answer the pull request keeps its offset instead of nextBeginOffset: the next pull "
      "asks for the same messages again.", count=3, occurrence=0),
    M("correct-tags-offset-with-pending", "client/push_consumer.py", "PullService.on_pull_result",
      "if pq.msg_count == 0 and not pq.dropped:   # correctTagsOffset", "if not pq.dropped:",
      "INV-OFFSET-3",
      "correctTagsOffset moves the offset to nextBeginOffset without checking that the ProcessQueue "
      "is empty: the offset passes messages still being consumed."),
    M("client-skips-tag-recheck", "client/push_consumer.py", "PullService.on_pull_result",
      "if data is None or client_tag_match(data, m.tags):", "if True:",
      "INV-FILTER-1",
      "The client trusts the broker's tags-code filter and skips the exact tag re-check: a message "
      "whose tag only shares the hash code reaches the listener."),
    M("no-retry-subscription", "client/push_consumer.py", "PushConsumer.__init__",
      'self.subscriptions[retry_topic(group)] = (build_subscription("*"), None)', "pass",
      "INV-LIVE-1",
      "A clustering consumer does not subscribe %RETRY%<group>: messages sent back are never "
      "consumed again."),
    M("broadcast-remote-offsets", "client/push_consumer.py", "PushConsumer.__init__",
      "self.offset_store = (LocalFileOffsetStore(self, local_disk) if self.broadcasting",
      "self.offset_store = (LocalFileOffsetStore(self, local_disk) if False",
      "INV-BCAST-1",
      "A broadcasting consumer keeps its offsets on the broker (RemoteBrokerOffsetStore) instead of its "
      "local file."),
    M("shutdown-keeps-running", "client/push_consumer.py", "PushConsumer.shutdown",
      "self.proc.kill()", "pass",
      "INV-CLIENT-1",
      "shutdown() does not stop the client's scheduled services: heartbeats and timers go on after "
      "client_stopped."),
    M("remove-queue-persists-pulled", "client/push_consumer.py", "PushConsumer.remove_unnecessary_message_queue",
      'self.offset_store.persist(mq, "remove_queue")',
      'self.net.oneway_update_offset(self, mq, pq.queue_offset_max + 1, "remove_queue")',
      "INV-OFFSET-1 INV-OFFSET-3 INV-LOSS-1",
      "A concurrent consumer that gives up a queue commits how far it pulled (queueOffsetMax + 1) "
      "instead of its consumed offset: the next owner starts past messages still in the old owner's "
      "ProcessQueue, which is dropped, so they are never consumed."),
    M("fallback-send-wrong-delay", "client/push_consumer.py", "PushConsumer.send_message_back",
      'level = retry_delay_level(msg.reconsume_times)      # #3731: the context\'s level is not passed on',
      'level = retry_delay_level(msg.reconsume_times) - 1',
      "INV-RETRY-2",
      "The fallback producer send (when consumerSendMessageBack fails) uses delay level 2 + r instead of "
      "3 + r."),
    # ------------------------------------------------------------------ concurrent consumption
    M("commit-batch-max", "client/process_queue.py", "ProcessQueue.remove_messages",
      "result = tree.keys()[0]", "result = max(m.offset for m in msgs) + 1",
      "INV-OFFSET-1 INV-OFFSET-3",
      "removeMessage returns the consumed batch's max offset + 1 instead of the tree's minimum: the "
      "offset passes messages of other batches still in flight."),
    M("commit-past-pending", "client/process_queue.py", "ProcessQueue.remove_messages",
      "if tree:", "if False:",
      "INV-OFFSET-3",
      "removeMessage always returns queueOffsetMax + 1, as if the tree were empty: the committed offset "
      "passes messages not yet consumed."),
    M("sendback-failed-removed", "client/consume_concurrently.py", "ConsumeMessageConcurrentlyService._process_result",
      "offset = pq.remove_messages(remaining, self.sim.now)",
      "offset = pq.remove_messages(msgs, self.sim.now)",
      "INV-OFFSET-3",
      "processConsumeResult removes the whole batch from the ProcessQueue, also the messages whose "
      "send-back failed and that it resubmits locally: the offset passes messages still to be consumed."),
    M("dropped-result-processed", "client/consume_concurrently.py", "ConsumeMessageConcurrentlyService._finish",
      "if not pq.dropped:", "if True:",
      "INV-DROP-1",
      "The result of a batch that finishes after its ProcessQueue was dropped is processed: messages are "
      "sent back and removed from a queue the client no longer owns."),
    M("sendback-whole-batch", "client/consume_concurrently.py", "ConsumeMessageConcurrentlyService._process_result",
      "for m in msgs[ack_index + 1:]:", "for m in msgs:",
      "INV-RETRY-3",
      "processConsumeResult sends back every message of the batch, ignoring ackIndex: messages consumed "
      "successfully are retried too."),
    M("give-up-on-last-retry", "client/consume_concurrently.py", "ConsumeMessageConcurrentlyService._process_result",
      "for m in msgs[ack_index + 1:]:",
      "for m in [x for x in msgs[ack_index + 1:] if x.reconsume_times < c.max_reconsume()]:",
      "INV-LIVE-1 INV-OFFSET-3",
      "RECONSUME_LATER on the last retry is treated as success: the message is neither sent back (to "
      "the DLQ) nor consumed."),
    M("broadcast-sends-back", "client/consume_concurrently.py", "ConsumeMessageConcurrentlyService._process_result",
      "if not c.broadcasting:", "if True:",
      "INV-BCAST-1",
      "A broadcasting consumer sends failed messages back to the retry topic, as clustering does."),
    # ------------------------------------------------------------------ orderly consumption
    M("orderly-take-highest", "client/process_queue.py", "ProcessQueue.take_messages",
      "off, m = tree.popitem(0)", "off, m = tree.popitem(-1)",
      "INV-ORDER-2",
      "takeMessages takes the highest offsets of the tree first (pollLastEntry for pollFirstEntry)."),
    M("orderly-commit-first-key", "client/process_queue.py", "ProcessQueue.commit",
      "offset = self.consuming_tree.keys()[-1]", "offset = self.consuming_tree.keys()[0]",
      "INV-OFFSET-1",
      "ProcessQueue.commit returns firstKey + 1 of the consuming map instead of lastKey + 1."),
    M("orderly-lease-no-expiry", "client/consume_orderly.py", "ConsumeMessageOrderlyService._lease_ok",
      "return pq.locked and not pq.is_lock_expired(self.sim.now, self.profile.client_lock_max_live_ms)",
      "return pq.locked",
      "INV-OWNER-2",
      "The orderly service checks that the ProcessQueue is locked but not that its lease is still valid "
      "(isLockExpired)."),
    M("orderly-skip-lease-check", "client/consume_orderly.py", "ConsumeMessageOrderlyService._loop",
      "if self.clustering and not self._lease_ok(pq):", "if False:",
      "INV-OWNER-2",
      "ConsumeRequest.run checks the lock and lease once before its loop but not before each orderly "
      "batch: a loop that outlives the lease (a pause, a long backlog) goes on consuming."),
    M("orderly-no-queue-lock", "client/consume_orderly.py", "ConsumeMessageOrderlyService._run",
      "if owner is not None:", "if False:",
      "INV-ORDER-1 INV-PQ-1",
      "ConsumeRequest.run does not synchronize on the queue's messageQueueLock: two requests of one "
      "client consume one orderly queue at once."),
    M("orderly-remove-while-consuming-49", "client/consume_orderly.py",
      "ConsumeMessageOrderlyService.remove_unnecessary_message_queue",
      "if not self.consume_lock_free(pq):", "if False:",
      "INV-ORDER-1",
      "4.9.x removeUnnecessaryMessageQueue unlocks the queue without taking the consume lock: another "
      "client locks it while this one's listener call is still running."),
    M("orderly-remove-while-consuming-5x", "client/consume_orderly.py",
      "ConsumeMessageOrderlyService.remove_unnecessary_message_queue",
      "force = pq.dropped and now > pq.last_lock_ts + p.unlock_delay_ms", "force = pq.dropped",
      "INV-ORDER-1",
      "5.x tryRemoveOrderMessageQueue forces the removal of every dropped queue at once instead of only "
      "after the unlock delay: the lock goes while a listener call is running."),
    M("orderly-commit-when-dropped", "client/consume_orderly.py", "ConsumeMessageOrderlyService.process_consume_result",
      "if commit_offset >= 0 and not pq.dropped:", "if commit_offset >= 0:",
      "INV-DROP-1",
      "The orderly service updates the offset of a batch that finished after its ProcessQueue was "
      "dropped."),
    M("orderly-reread-offset-every-pull", "client/consume_orderly.py", "ConsumeMessageOrderlyService.ready_to_pull",
      "if not req.previously_locked:", "if True:",
      "INV-OFFSET-2",
      "The orderly client re-reads the committed offset from the broker before every pull, not only the "
      "first after locking: its offset falls back to the last persisted value."),
    M("persist-all-rewrites-local-file", "client/offset_store.py", "LocalFileOffsetStore.persist_all",
      "if not self.profile.local_offset_persist_merges:", "if True:",
      "INV-START-1",
      "A broadcasting client's persistAll rewrites its offsets file with the queues it holds now instead "
      "of merging them in (#4016 in a current client): a queue it held before and gets back starts "
      "from the consume-from-where position, not its committed offset."),
    # ------------------------------------------------------------------ broker
    M("lock-takeover-live", "broker/lock_manager.py", "RebalanceLockManager._lock_slow",
      "if self._expired(entry, now):", "if True:",
      "INV-LOCK-1",
      "tryLock hands a queue's lock to another client without checking that the holder's entry expired."),
    M("unlock-by-anyone", "broker/lock_manager.py", "RebalanceLockManager.unlock_batch",
      "elif entry.client == client:", "elif True:",
      "INV-LOCK-1",
      "unlockBatch removes a lock entry whoever asks, not only for its holder."),
    M("lock-lifetime-client-lease", "broker/lock_manager.py", "RebalanceLockManager._expired",
      "return now - entry.last_update > self.lifetime_ms", "return now - entry.last_update > self.lifetime_ms // 2",
      "INV-LOCK-1 INV-ORDER-3",
      "The broker expires lock entries after half their lifetime (the client lease of 30 s for the broker's "
      "60 s): another client takes a queue whose owner may still consume."),
    M("broker-no-zero-offset", "broker/broker.py", "Broker.query_consumer_offset",
      "return 0", "return None",
      "INV-LOSS-1",
      "queryConsumerOffset answers QUERY_NOT_FOUND for a group without a committed offset even when the "
      "queue still starts at offset 0 (#334's answer of 0 forgotten): a new owner starts at the end."),
    M("broker-offsets-not-reloaded", "broker/offset_manager.py", "ConsumerOffsetManager.reload",
      "self.table = dict(self.flushed)", "self.table = {}",
      "INV-LOSS-1 INV-START-1",
      "A restarted broker does not load its flushed consumer offsets (consumerOffset.json)."),
    M("pull-skips-next-offset", "broker/store.py", "MessageStore.get_message",
      "return GetResult(status, i, lo, hi, found, filtered)",
      "return GetResult(status, i + 1, lo, hi, found, filtered)",
      "INV-PULL-2",
      "getMessage's nextBeginOffset is one past the last offset scanned: every pull skips a message."),
    M("overflow-badly-to-min", "broker/store.py", "MessageStore.get_message",
      "nxt = lo if (self.profile.overflow_badly_min_if_zero and lo == 0) else hi", "nxt = lo",
      "INV-PULL-2",
      "OFFSET_OVERFLOW_BADLY is corrected to minOffset instead of maxOffset (#4215 on every broker)."),
    M("broker-ignores-filter", "broker/message_filter.py", "pull_filter",
      "if sub is None:", "if True:",
      "INV-FILTER-1",
      "The broker answers pulls without applying the subscription's filter (tags code or SQL92)."),
    M("sendback-dlq-off-by-one", "broker/broker.py", "Broker.consumer_send_msg_back",
      "if r >= max_times or delay_level < 0:", "if r > max_times or delay_level < 0:",
      "INV-RETRY-1",
      "consumerSendMsgBack compares reconsumeTimes with > instead of >=: one retry too many before the "
      "DLQ."),
    M("sendback-fixed-delay", "broker/broker.py", "Broker.consumer_send_msg_back",
      "level = retry_delay_level(r) if delay_level == 0 else delay_level",
      "level = retry_delay_level(0) if delay_level == 0 else delay_level",
      "INV-RETRY-2",
      "consumerSendMsgBack sends every retry with delay level 3 instead of 3 + reconsumeTimes."),
    M("sendback-count-not-raised", "broker/broker.py", "Broker.consumer_send_msg_back",
      "new.reconsume_times = r + 1", "new.reconsume_times = r",
      "INV-RETRY-2",
      "The retry copy keeps the original's reconsume count instead of raising it."),
    M("dlq-keeps-delay", "broker/broker.py", "Broker._put_dlq",
      "msg.delay_level = 0 if self.profile.dlq_clears_delay else kept_delay_level",
      "msg.delay_level = kept_delay_level",
      "INV-DLQ-1",
      "The DLQ copy keeps the send-back's delay level (#2724 on every broker): it takes one more trip "
      "through the schedule."),
    M("schedule-early", "broker/schedule.py", "ScheduleMessageService.schedule",
      "msg.deliver_ts = b.sim.now + self.delays[level - 1]", "msg.deliver_ts = b.sim.now + self.delays[level - 2]",
      "INV-RETRY-2",
      "The schedule service reads the delay table one level low: retries come back too early."),
    # ------------------------------------------------------------------ POP (RocketMQ 5.x)
    M("pop-ack-bit-not-set", "broker/pop.py", "PopService._ack_ck",
      "ck.acked.add(offset)", "pass",
      "INV-POP-ACK-1",
      "The ack of a concurrent pop finds its checkpoint but does not set the offset's bit "
      "(PopCheckPoint's bitMap): revive takes the message for un-acked and puts an acked message "
      "back into the retry topic (#7724)."),
    M("pop-revive-count-not-raised", "broker/revive.py", "put_back",
      "reconsume_times=revived_reconsume_times(stored.reconsume_times, suspend),",
      "reconsume_times=stored.reconsume_times,",
      "INV-POP-DLQ-1",
      "reviveRetry copies the message into %RETRY% without raising its reconsume times: the count "
      "never reaches maxReconsumeTimes, and a message that keeps failing never goes to the DLQ."),
    M("pop-change-keeps-old-checkpoint", "broker/pop.py", "PopService.change_invisible_time",
      'self._ack_ck(group, topic, queue, h["ck_offset"], h["pop_time"], offset)', "pass",
      "INV-POP-HANDLE-1",
      "changeInvisibleTime writes the new checkpoint but not the ack of the old one "
      "(appendCheckPointThenAckOrigin without its ack): the old checkpoint still revives the message "
      "while the new handle holds it."),
    M("pop-push-raw-max-reconsume", "client/pop_consumer.py", "PopConsumer._on_push_pop",
      "m.reconsume_times, self.max_reconsume_times, self.profile.pop_push_limit_resolved):",
      "m.reconsume_times, self.max_reconsume_times, False):",
      "INV-POP-LOSS-1",
      "The push consumer in POP mode compares reconsume times with the raw maxReconsumeTimes (-1, the "
      "default, meaning 16): every message is acked as past its retries without being consumed."),
    M("pop-revive-skips-message", "broker/revive.py", "PopReviveService.revive",
      "self._revive_one(ck, off)", "pass",
      "INV-POP-LIVE-1",
      "Revive drops a due checkpoint without writing its un-acked messages into the retry topic "
      "(#7914): a message whose invisible time ended never comes back."),
    M("pop-orderly-block-ignores-invisible-time", "broker/order_info.py", "OrderInfo.need_block",
      "if off not in self.acked and now < self.next_visible.get(off, self.pop_time + self.invisible_ms):",
      "if off not in self.acked and now < self.next_visible.get(off, self.pop_time):",
      "INV-POP-ORDER-1",
      "needBlock takes an un-acked offset's visible time to be its pop time, forgetting the invisible "
      "time: an orderly queue is handed to the next attempt while the last attempt's messages are "
      "still out."),
    M("pop-orderly-blocks-own-attempt", "broker/order_info.py", "OrderInfo.need_block",
      "if self.attempt_id is not None and self.attempt_id == attempt_id:",
      "if self.attempt_id is not None and self.attempt_id == attempt_id and not self.offsets:",
      "INV-POP-ORDER-2",
      "needBlock forgets that the attempt holding the queue may ask again: a receive retried under the "
      "attempt id of its lost answer is blocked by its own messages, and the queue waits out their "
      "invisible time."),
    M("pop-stale-ack-applied", "broker/pop.py", "PopService._ack_ck",
      'return "stale"', 'return "acked"',
      "INV-POP-STALE-1",
      "The ack of a handle whose checkpoint no longer waits (revived, or acked by a change of "
      "invisible time) is taken as applied: a late ack after the message's redelivery counts as its "
      "ack."),
)

BY_ID = {m.id: m for m in CATALOGUE}

# Error-level invariants no one-line change of reference/ can break, and why.
NOT_MUTABLE: dict[str, str] = {
    "INV-SUB-1": "a rule on how a deployment configures its consumers (all members of a group subscribe a "
                 "topic alike): the spec reports it only when the clients of one group announce different "
                 "subscriptions in client_started. Every client of the reference subscribes as its scenario "
                 "configures it, and a mistake in the client's code applies to every member alike, so the "
                 "group stays homogeneous; a wrong filter decision is then INV-FILTER-1 (see "
                 "client-skips-tag-recheck, broker-ignores-filter).",
}

# A run known to kill each mutant (scenario, profile, seed): what bench/mutation_score.py's blind
# search found first, or a cheaper run that kills it too. The gate tries it first;
# tests/test_mutants.py checks that it still kills.
WITNESS: dict[str, tuple[str, str, int]] = {
    "alloc-avg-extra-block": ("orderly-pause-broker-lock", "rocketmq-5.3.3", 1),
    "alloc-avg-start-ignores-remainder": ("orderly", "rocketmq-5.3.3", 1),
    "rebalance-takes-every-queue": ("basic", "rocketmq-5.3.3", 1),
    "rebalance-no-drop": ("long-pause", "rocketmq-5.3.3", 1),
    "rebalance-duplicate-pq": ("real-basic", "rocketmq-5.3.3", 1),
    "start-reads-memory-offset": ("broadcast", "rocketmq-5.3.3", 1),
    "start-error-as-no-offset": ("bug-1825", "rocketmq-5.3.3", 1),
    "pull-offset-not-advanced": ("real-rebalance", "rocketmq-5.3.3", 1),
    "correct-tags-offset-with-pending": ("bug-5481", "rocketmq-5.3.3", 1),
    "client-skips-tag-recheck": ("tags", "rocketmq-5.3.3", 1),
    "no-retry-subscription": ("basic", "rocketmq-5.3.3", 1),
    "broadcast-remote-offsets": ("broadcast", "rocketmq-5.3.3", 1),
    "shutdown-keeps-running": ("bug-1825", "rocketmq-5.3.3", 1),
    "commit-batch-max": ("basic", "rocketmq-5.3.3", 1),
    "commit-past-pending": ("basic", "rocketmq-5.3.3", 1),
    "dropped-result-processed": ("long-pause", "rocketmq-5.3.3", 1),
    "give-up-on-last-retry": ("bug-2724", "rocketmq-5.3.3", 1),
    "broadcast-sends-back": ("broadcast", "rocketmq-5.3.3", 1),
    "orderly-take-highest": ("bug-1825", "rocketmq-5.3.3", 1),
    "orderly-lease-no-expiry": ("orderly-pause-lease", "rocketmq-5.3.3", 1),
    "orderly-skip-lease-check": ("orderly-pause-lease", "rocketmq-5.3.3", 1),
    "orderly-remove-while-consuming-49": ("orderly-long-call-handover", "rocketmq-4.9.8", 1),
    "orderly-remove-while-consuming-5x": ("orderly-slow-handover", "rocketmq-5.3.3", 1),
    "orderly-commit-when-dropped": ("orderly", "rocketmq-5.3.3", 1),
    "orderly-reread-offset-every-pull": ("bug-1825", "rocketmq-5.3.3", 1),
    "lock-takeover-live": ("orderly", "rocketmq-5.3.3", 1),
    "unlock-by-anyone": ("orderly-pause-broker-lock", "rocketmq-5.3.3", 1),
    "lock-lifetime-client-lease": ("orderly-pause-broker-lock", "rocketmq-5.3.3", 1),
    "broker-no-zero-offset": ("bug-1825", "rocketmq-5.3.3", 1),
    "pull-skips-next-offset": ("basic", "rocketmq-5.3.3", 1),
    "overflow-badly-to-min": ("bug-4215", "rocketmq-5.3.3", 1),
    "broker-ignores-filter": ("real-sql", "rocketmq-5.3.3", 1),
    "sendback-dlq-off-by-one": ("bug-2724", "rocketmq-5.3.3", 1),
    "sendback-fixed-delay": ("basic", "rocketmq-5.3.3", 1),
    "sendback-count-not-raised": ("basic", "rocketmq-5.3.3", 1),
    "dlq-keeps-delay": ("bug-2724", "rocketmq-5.3.3", 1),
    "schedule-early": ("basic", "rocketmq-5.3.3", 1),
    "sendback-whole-batch": ("basic", "rocketmq-5.3.3", 1),
    "remove-queue-persists-pulled": ("rebalance", "rocketmq-4.9.8", 2),
    "sendback-failed-removed": ("sendback-fallback", "rocketmq-5.3.3", 1),
    "persist-all-rewrites-local-file": ("bug-4016", "rocketmq-5.3.3", 1),
    "fallback-send-wrong-delay": ("sendback-fallback", "rocketmq-5.3.3", 1),
    "orderly-commit-first-key": ("orderly-batch", "rocketmq-5.3.3", 1),
    "orderly-no-queue-lock": ("orderly-offset-moved", "rocketmq-5.3.3", 1),
    "broker-offsets-not-reloaded": ("restart-retention", "rocketmq-5.3.3", 1),
    "pop-ack-bit-not-set": ("pop-invisible-expiry", "rocketmq-5.5.1", 1),
    "pop-revive-count-not-raised": ("pop-retry-dlq", "rocketmq-5.5.1", 1),
    "pop-change-keeps-old-checkpoint": ("pop-basic", "rocketmq-5.5.1", 1),
    "pop-push-raw-max-reconsume": ("pop-basic", "rocketmq-5.5.1", 1),
    "pop-revive-skips-message": ("pop-invisible-expiry", "rocketmq-5.5.1", 1),
    "pop-orderly-block-ignores-invisible-time": ("pop-orderly", "rocketmq-5.5.1", 1),
    "pop-stale-ack-applied": ("pop-invisible-expiry", "rocketmq-5.5.1", 1),
    "pop-orderly-blocks-own-attempt": ("bug-10827", "rocketmq-5.5.1", 1),
}

# Mutants no method kills (equivalent to the original under every scenario, or beyond the
# scenarios' reach), each with the reason; docs/mutants.md discusses them.
SURVIVORS: dict[str, str] = {}


class MutantRotten(Exception):
    """The mutant's original line is not (exactly once) in its function any more."""


# ---------------------------------------------------------------------------- application

def _resolve(m: Mutant):
    """(owner, attribute name, raw attribute, function) of the mutant's function."""
    module = importlib.import_module(m.module)
    owner = module
    parts = m.function.split(".")
    for p in parts[:-1]:
        owner = getattr(owner, p)
    name = parts[-1]
    raw = vars(owner).get(name)
    if raw is None:
        raise MutantRotten(f"{m.id}: reference/{m.file} has no {m.function}")
    func = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
    return module, owner, name, raw, func


def locate(m: Mutant) -> tuple[list[str], int, int]:
    """The function's source lines, the index of the original line in them, and the function's
    first line number in its file. Raises MutantRotten when the line is not there exactly once."""
    _, _, _, _, func = _resolve(m)
    lines, first = inspect.getsourcelines(func)
    want = m.original.strip()
    hits = [i for i, ln in enumerate(lines) if ln.strip() == want]
    if len(hits) != m.count:
        raise MutantRotten(f"{m.id}: the line {want!r} occurs {len(hits)} times in {m.function} "
                           f"(reference/{m.file}); expected {m.count}")
    return lines, hits[m.occurrence], first


def _compile(m: Mutant, module, raw):
    lines, i, first = locate(m)
    old = lines[i]
    indent = old[:len(old) - len(old.lstrip())]
    lines = list(lines)
    lines[i] = indent + m.mutated.strip() + "\n"
    src = textwrap.dedent("".join(lines))
    # blank lines in front keep the file's line numbers in tracebacks
    code = compile("\n" * (first - 1) + src, f"{module.__file__} [mutant {m.id}]", "exec")
    scope: dict = {}
    exec(code, module.__dict__, scope)
    new = scope[m.function.split(".")[-1]]
    if isinstance(raw, (staticmethod, classmethod)) and not isinstance(new, (staticmethod, classmethod)):
        new = type(raw)(new)
    return new


@contextlib.contextmanager
def applied(m: Mutant):
    """The reference with mutant `m` in place, for the duration of the with-block."""
    module, owner, name, raw, _ = _resolve(m)
    new = _compile(m, module, raw)
    patched = [(owner, name, raw)]
    setattr(owner, name, new)
    if owner is module:
        # a module-level function is also bound in every reference module that imported it
        for mod_name, mod in list(sys.modules.items()):
            if mod is module or not mod_name.startswith(REFERENCE_PACKAGE) or mod is None:
                continue
            for k, v in list(vars(mod).items()):
                if v is raw:
                    patched.append((mod, k, raw))
                    setattr(mod, k, new)
    try:
        yield new
    finally:
        for obj, k, orig in reversed(patched):
            setattr(obj, k, orig)


# ---------------------------------------------------------------------------- killing by simulation

RELEASES = ("rocketmq-5.3.3", "rocketmq-4.9.8")


@dataclass
class Kill:
    """How a mutant fared under one method."""
    mutant: str
    method: str
    killed: bool
    seconds: float = 0.0             # wall time until the kill (or of the whole search)
    cpu_seconds: float = 0.0         # this process's CPU time for the same (steadier on a shared machine)
    runs: int = 0                    # runs checked (the killing one included)
    crashes: int = 0                 # runs where the mutated reference raised (not kills)
    invariants: list = field(default_factory=list)   # error ids of the killing run, not expected there
    message: str = ""                # the first such finding
    scenario: str | None = None
    profile: str | None = None
    seed: int | None = None
    trace_path: str | None = None
    falsifying_code: str | None = None
    incomplete: bool = False         # the budget ran out before the search did
    runaway: int = 0                 # hypothesis: examples cut at an event cap (not kills)
    examples_to_kill: int | None = None   # hypothesis: examples run until the first failing one (runs counts shrinking too)
    differential: bool = False       # hypothesis: killed outside the assumptions, where the unmutated reference held
    note: str = ""

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def default_scenarios() -> list[str]:
    from rocketspec.reference.scenario import builtin_names

    return list(builtin_names())


# The biggest built-in scenario emits about 50,000 events; a mutant that makes the reference run
# away (e.g. a new pull loop at every rebalance) is stopped here, and the trace so far is judged.
MAX_EVENTS = 300_000


class RunawayRun(Exception):
    """The mutated reference emitted more than MAX_EVENTS events."""


def run_scenario(name: str, seed: int, profile: str):
    """(events, report, unexpected error ids, stopped) of one reference run checked by the spec.
    A run stopped at MAX_EVENTS is judged on the events it emitted (a prefix of its trace)."""
    from rocketspec.reference import runner
    from rocketspec.conformance.verdicts import load_checked_scenario
    from rocketspec.reference.scenario import expected_failures
    from rocketspec.rocketmq.profiles import get_profile
    from rocketspec.spec.replay import check_events

    sc = load_checked_scenario(name)
    events: list = []

    def sink(ev):
        if len(events) >= MAX_EVENTS:
            raise RunawayRun(f"more than {MAX_EVENTS} events")
        events.append(ev)

    stopped = False
    try:
        runner.run(sc, seed, profile, sink)
    except RunawayRun:
        stopped = True
    rep = check_events(enumerate(events, 1), get_profile(profile))
    want = set(expected_failures(sc, profile))
    unexpected = sorted({f.inv for f in rep.findings.errors} - want)
    return events, rep, unexpected, stopped


def kill_by_simulation(m: Mutant, *, scenarios=None, profiles=RELEASES, seeds=(1, 2, 3),
                       budget_s: float | None = None, out_dir: str | None = None,
                       first: tuple | None = None) -> Kill:
    """Run the scenarios over seeds and profiles on the mutated reference until the spec reports
    an error the scenario does not declare. `first` (scenario, profile, seed) is tried before the
    rest (a known witness); the search order is otherwise seed, profile, scenario."""
    scenarios = list(scenarios) if scenarios is not None else default_scenarios()
    order = [(sc, p, s) for s in seeds for p in profiles for sc in scenarios]
    if first is not None:
        order = [tuple(first)] + [o for o in order if o != tuple(first)]
    res = Kill(m.id, "simulate", False)
    t0, c0 = time.perf_counter(), time.process_time()
    with applied(m):
        for sc, p, s in order:
            if budget_s is not None and time.perf_counter() - t0 > budget_s:
                res.incomplete = True
                break
            res.runs += 1
            try:
                events, rep, unexpected, stopped = run_scenario(sc, s, p)
            except Exception as exc:  # the mutated reference crashed: not a kill
                res.crashes += 1
                res.note = f"crash on {sc} {p} seed {s}: {type(exc).__name__}: {exc}"[:300]
                continue
            if unexpected:
                f = next(f for f in rep.findings.errors if f.inv in unexpected)
                res.killed, res.invariants = True, unexpected
                res.message = f"{f.inv} at seq {f.seq} ({f.kind}): {f.message}"
                if stopped:
                    res.note = f"the run was stopped after {MAX_EVENTS} events; the finding is in that prefix"
                res.scenario, res.profile, res.seed = sc, p, s
                if out_dir is not None:
                    res.trace_path = write_events(Path(out_dir) / f"mutant-{m.id}-{sc}-{p}-{s}.jsonl", events)
                break
    res.seconds = round(time.perf_counter() - t0, 3)
    res.cpu_seconds = round(time.process_time() - c0, 3)
    return res


# The scopes the explorer of the reference (model_checks/refexplore.py) searches for a mutant,
# cheapest first, as (name, overrides[, profiles]); both release profiles unless named. Each is
# exhausted on the unmutated reference with no violation (reduced: about 345 CPU-s for the list,
# 2026-11-29), so any violation is the mutant's. A comment names what a scope is there to show.
# (`tiny`: one consumer, two queues, two messages; `small`: two consumers.)
EXHAUSTIVE_SCOPES = (
    ("tiny", {"faults": 0}),
    ("tiny", {"faults": 0, "max_reconsume_times": 0}),              # the last retry, the DLQ
    ("tiny", {"faults": 0, "failures": 2}),                         # a retry's retry
    ("tiny", {"mode": "ORDERLY", "faults": 0}),
    ("tiny", {"message_model": "BROADCASTING", "faults": 0}),
    # two consumers and three queues: the AVG remainder's longer block, at the first rebalance
    ("small", {"queues": 3, "messages": 0, "faults": 0, "failures": 0}),
    # three consumers and four queues: a middle consumer's block (allocation is one code under
    # both releases; 4.9.8's immediate pulls make this scope 250 times as costly: 5.3.3 only)
    ("small", {"consumers": 3, "queues": 4, "messages": 0, "faults": 0, "failures": 0}, ("rocketmq-5.3.3",)),
    ("tiny", {"fault_kinds": ["persist_lost"]}),
    ("tiny", {"fault_kinds": ["query_failure"]}),
    ("tiny", {"fault_kinds": ["send_back_failed"]}),
    # SUSPEND twice, then the DLQ (4.9.8's DLQ copy is late, its own defect: INV-DLQ-1; its
    # SUSPEND-twice scope is the last one, short of the DLQ)
    ("tiny", {"mode": "ORDERLY", "faults": 0, "failures": 2}, ("rocketmq-5.3.3",)),
    ("tiny", {"failures": 0, "fault_kinds": ["crash"]}),
    # two consumers, no fault, no failure: the first rebalance shows a wrong allocation or a queue
    # kept after it moved
    ("small", {"faults": 0, "failures": 0}),
    ("tiny", {"fault_kinds": ["reset"]}),                           # an offset written past the end
    ("tiny", {"mode": "ORDERLY", "fault_kinds": ["crash"]}),
    ("small", {"faults": 0}),
    ("small", {"queues": 3, "messages": 3, "faults": 0, "failures": 0}),
    ("tiny", {"fault_kinds": ["reset_by_time"]}),                   # mqadmin resetOffsetByTime
    ("small", {"mode": "ORDERLY", "faults": 0, "failures": 0}),     # a locked queue's handover
    ("tiny", {"message_model": "BROADCASTING", "fault_kinds": ["crash", "pause", "route_lost"]}),
    # past the client lease (31 s): the most costly (a pause may strike before any task)
    ("tiny", {"mode": "ORDERLY", "fault_kinds": ["pause"], "queues": 1, "messages": 1, "failures": 0}),
    ("tiny", {"mode": "ORDERLY", "faults": 0, "failures": 2, "max_reconsume_times": 2}, ("rocketmq-4.9.8",)),
)


def _orderly_handover(call_ms: int) -> dict:
    """`small` overrides: two orderly clients, the second joining 1 s in, while the first one's
    listener call of call_ms runs: the queue changes owner during the call."""
    return {"mode": "ORDERLY", "faults": 0, "failures": 0, "start_gap_ms": 1000, "consume_ms": [call_ms]}


# Mutant -> the scopes that exercise the mechanism its mistake breaks, searched before the shared
# list (as BUG_SCOPES in model_checks/scopes.py names a known bug's scope): the search within
# them is as exhaustive as any, the scope is what its author would give `rocketspec explore` to
# check that mechanism. Each holds on the unmutated reference under the profiles it names
# (tests/test_mutants.py), so a violation there is the mutant's.
MUTANT_SCOPES = {
    # two send-backs of one message: the second's delay level is 3 + 1
    "sendback-fixed-delay": (("tiny", {"faults": 0, "failures": 2, "max_reconsume_times": 2}),),
    # two messages in one orderly queue: takeMessages' order shows
    "orderly-take-highest": (("tiny", {"mode": "ORDERLY", "queues": 1, "messages": 2, "faults": 0, "failures": 0}),),
    # an orderly batch of two messages: commit moves the offset past the whole batch
    "orderly-commit-first-key": (("tiny", {"mode": "ORDERLY", "queues": 1, "messages": 2, "consume_batch": 2,
                                           "faults": 0, "failures": 0}),),
    # two consume threads on one queue, calls of 1 or 3 ms: a batch finishes before the one below it
    "commit-batch-max": (("tiny", {"queues": 1, "messages": 2, "threads": 2, "faults": 0, "failures": 0,
                                   "consume_ms": [1, 3]}),),
    # a pause past the 30 s lease with a message still to consume
    "orderly-skip-lease-check": (("tiny", {"mode": "ORDERLY", "fault_kinds": ["pause"], "queues": 1, "messages": 2,
                                           "failures": 0}),),
    # a second client joins while the first one's 25 s listener call runs: the queue moves
    "dropped-result-processed": (("small", {"faults": 0, "failures": 1, "start_gap_ms": 1000,
                                            "consume_ms": [25000]}),),
    # the same handover under orderly consumption. A 25 s call outlives 5.x's 20 s unlock delay,
    # which loses the guarantee on the unmutated 5.x too (#7644): 4.9.8 only; a 5 s call does not
    "orderly-remove-while-consuming-49": (("small", _orderly_handover(25000), ("rocketmq-4.9.8",)),),
    "orderly-remove-while-consuming-5x": (("small", _orderly_handover(5000)),),
    "orderly-commit-when-dropped": (("small", _orderly_handover(5000)),),
    # a graceful shutdown at any task boundary
    "shutdown-keeps-running": (("tiny", {"fault_kinds": ["shutdown"], "failures": 0, "queues": 1, "messages": 1}),),
    # a broker restart loses the locks before a second client joins and takes a queue over
    # (5.3.3 only: 4.9.8's immediate pulls make the same scope ten times as large, 233 s)
    "unlock-by-anyone": (("small", {"mode": "ORDERLY", "fault_kinds": ["broker_restart"], "failures": 0, "messages": 0,
                                    "start_gap_ms": 21000}, ("rocketmq-5.3.3",)),),
    # a failed call's broker restarts while the call runs: the send-back fails over to a producer
    # send of %RETRY%G on the other broker (DefaultMQPushConsumerImpl.sendMessageBack's catch)
    "fallback-send-wrong-delay": (("tiny", {"brokers": 2, "queues": 1, "messages": 1,
                                            "fault_kinds": ["broker_restart"]}, ("rocketmq-5.3.3",)),),
    # the broker restarts after a flush of the first client's commits, and a second client
    # joining later reads the queue it takes over from what the broker loaded
    "broker-offsets-not-reloaded": (("tiny", {"consumers": 2, "start_gap_ms": 21000, "failures": 0,
                                              "fault_kinds": ["broker_restart"]}, ("rocketmq-5.3.3",)),),
    # "Aa" and "BB" share a tags code: only the client's exact check tells them apart
    "client-skips-tag-recheck": (("tiny", {"subscription": "Aa", "tags": ["Aa", "BB"], "faults": 0, "failures": 0}),),
    # a SQL92 subscription, which only the broker evaluates
    "broker-ignores-filter": (("tiny", {"subscription": "a = 1", "subscription_type": "SQL92",
                                        "props": [{"a": "1"}, {"a": "2"}], "faults": 0, "failures": 0}),),
}


def kill_by_exhaustion(m: Mutant, *, scopes=EXHAUSTIVE_SCOPES, profiles=RELEASES,
                       budget_s: float | None = None, out_dir: str | None = None) -> Kill:
    """Exhaustive search of the mutated reference itself (model_checks/refexplore.py), scope by
    scope and profile by profile, until one reports a spec violation (breadth-first: with a
    shortest trace, written to `out_dir` when given). The mutant's own scopes (MUTANT_SCOPES)
    come first, then `scopes`. A crash of the mutated reference is not a kill."""
    from rocketspec.model_checks.refexplore import RefExplorer
    from rocketspec.model_checks.scopes import load_scope

    res = Kill(m.id, "exhaustive", False)
    t0, c0 = time.perf_counter(), time.process_time()
    deadline = None if budget_s is None else time.monotonic() + budget_s
    # Two passes. First every scope reduced (tasks that commute by their footprints run in one
    # order): cheap, and a violation found there is a real run of the mutant, since a reduced
    # search only leaves runs out. But a footprint describes the reference as written and a
    # mutant may break its promise, so the second pass takes every order of the tasks due
    # together, which cannot miss what the mutant does within the scope.
    scopes = tuple(MUTANT_SCOPES.get(m.id, ())) + tuple(scopes)
    passes = [(name, over, [p for p in only[0] if p in profiles] if only else profiles, reduce)
              for reduce in (True, False) for name, over, *only in scopes]
    with applied(m):
        for name, over, scope_profiles, reduce in passes:
            for p in scope_profiles:
                if deadline is not None and time.monotonic() > deadline:
                    res.incomplete = True
                    break
                res.runs += 1
                try:
                    r = RefExplorer(load_scope(name, **over), p, stop_at_first=True, deadline=deadline,
                                    reduce=reduce).run()
                except Exception as exc:  # the mutated reference crashed: not a kill
                    res.crashes += 1
                    res.note = f"crash on {name} {over} {p}: {type(exc).__name__}: {exc}"[:300]
                    continue
                bad = [v for v in r.violations if _is_spec_finding(v.invariant)]
                if bad:
                    v = bad[0]
                    res.killed, res.invariants = True, sorted({x.invariant for x in bad})
                    res.message = f"{v.invariant} ({v.kind}) at depth {v.depth}: {v.message}"[:500]
                    res.scenario, res.profile = f"{name} {over}{'' if reduce else ' (every order)'}", p
                    if out_dir is not None:
                        res.trace_path = write_events(Path(out_dir) / f"mutant-{m.id}-exhaustive-{p}.jsonl", v.events)
                    break
                if not r.complete:
                    res.incomplete = True
            if res.killed or res.incomplete and deadline is not None and time.monotonic() > deadline:
                break
    res.seconds = round(time.perf_counter() - t0, 3)
    res.cpu_seconds = round(time.process_time() - c0, 3)
    return res


def write_events(path: Path, events) -> str:
    import orjson

    from rocketspec.outputs import AtomicFile

    path.parent.mkdir(parents=True, exist_ok=True)
    with AtomicFile(path) as fh:      # whole or not at all, as every trace writer
        for ev in events:
            fh.write(orjson.dumps(ev) + b"\n")
    return str(path)


# ---------------------------------------------------------------------------- killing by Hypothesis

def kill_by_hypothesis(m: Mutant, *, profile: str | tuple = "rocketmq-5.3.3", max_examples: int = 200,
                       budget_s: float | None = None, seed: int | None = None, shrink_budget_s: float = 60.0,
                       differential: bool | None = None, differential_budget_s: float | None = None) -> Kill:
    """The Hypothesis state machine (conformance.statemachine.check_reference) on the mutated
    reference. With a tuple of profiles, each in turn until one kills the mutant, each with an
    equal share of the budget left (a mutant of one release's code path shows only under it);
    the time to kill then counts the profiles tried before. Raises ImportError while the state
    machine is not in the tree.

    The machine keeps the environment within the spec's assumptions. A mutant that survives it
    (with a tuple of profiles, unless `differential` is False) is searched again outside them,
    differentially (`differential_budget_s`, by default `budget_s` again): an example kills only
    where the unmutated reference holds on the same moves (the machine's `_differs`). The time
    to kill then counts the first search too, and the kill says it was outside the assumptions."""
    if not isinstance(profile, str):
        t0, c0 = time.perf_counter(), time.process_time()
        res = None
        runs, incomplete = 0, False
        phases = [(False, budget_s)]
        if differential is not False:
            phases.append((True, budget_s if differential_budget_s is None else differential_budget_s))
        for diff, phase_budget in phases:
            t1 = time.perf_counter()
            for i, p in enumerate(profile):
                spent = time.perf_counter() - t1
                share = None if phase_budget is None else max(0.0, phase_budget - spent) / (len(profile) - i)
                before, cpu_before = time.perf_counter() - t0, time.process_time() - c0
                res = kill_by_hypothesis(m, profile=p, max_examples=max_examples, budget_s=share, seed=seed,
                                         shrink_budget_s=shrink_budget_s, differential=diff)
                runs += res.runs
                incomplete = incomplete or res.incomplete
                if res.killed:
                    res.seconds = round(before + res.seconds, 3)
                    res.cpu_seconds = round(cpu_before + res.cpu_seconds, 3)
                    break
            if res.killed:
                break
        res.runs = runs
        if not res.killed:
            res.differential = False        # (it means killed outside the assumptions)
            # a profile whose share ran out before its examples did leaves the search incomplete
            res.incomplete = incomplete
            res.seconds = round(time.perf_counter() - t0, 3)
            res.cpu_seconds = round(time.process_time() - c0, 3)
        return res
    from rocketspec.conformance.statemachine import check_reference

    t0, c0 = time.perf_counter(), time.process_time()
    res = Kill(m.id, "hypothesis", False, profile=profile, differential=bool(differential))
    try:
        r = check_reference(profile, max_examples=max_examples, derandomize=True, seed=seed, budget_s=budget_s,
                            reference_patch=lambda: applied(m), shrink_budget_s=shrink_budget_s,
                            respect_assumptions=not differential, differential=bool(differential))
    except Exception as exc:  # a crash of the reference under the state machine: not a kill
        res.crashes = 1
        res.note = f"{type(exc).__name__}: {exc}"[:300]
        res.seconds = round(time.perf_counter() - t0, 3)
        return res
    total = round(time.perf_counter() - t0, 3)
    res.cpu_seconds = round(time.process_time() - c0, 3)
    res.runs = getattr(r, "examples_run", 0) or 0
    res.runaway = getattr(r, "runaway", 0) or 0
    finding = getattr(r, "finding", None)
    if not r.ok and finding is not None and _is_spec_finding(finding):
        res.killed = True
        inv = _finding_inv(finding)
        res.invariants = [inv] if inv else []
        res.message = (getattr(r, "message", "") or str(finding))[:500]
        res.trace_path = getattr(r, "trace_path", None)
        res.falsifying_code = getattr(r, "falsifying_code", None)
        # the time to kill is the time to the first failing example; shrinking comes after
        found = getattr(r, "seconds_to_failure", None)
        res.seconds = round(found, 3) if found is not None else total
        cpu = getattr(r, "cpu_seconds_to_failure", None)
        if cpu is not None:
            res.cpu_seconds = round(cpu, 3)
        res.examples_to_kill = getattr(r, "examples_to_failure", None)
        res.note = f"{total} s with shrinking; {getattr(r, 'examples_to_failure', None)} examples to the failure"
        return res
    res.seconds = total
    if not r.ok:
        res.note = f"failed without a spec finding: {finding or getattr(r, 'crash', None)!r}"[:300]
    res.crashes = getattr(r, "crashes_ignored", 0) or 0
    res.incomplete = bool(getattr(r, "budget_exhausted", False))
    return res


def _finding_inv(finding) -> str | None:
    if isinstance(finding, str):
        return finding
    for attr in ("inv", "invariant", "id"):
        v = getattr(finding, attr, None)
        if isinstance(v, str):
            return v
    if isinstance(finding, dict):
        return finding.get("invariant") or finding.get("inv")
    return None


def _is_spec_finding(finding) -> bool:
    inv = _finding_inv(finding)
    return bool(inv) and (inv.startswith("INV-") or inv == "GUARD")
