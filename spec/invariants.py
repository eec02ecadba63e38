"""The invariant catalogue: every property the spec checks, with a stable id.

Each entry says what must hold, which RocketMQ mechanism makes it hold, what it assumes, how
bad a violation is, and whether it is an *allowed anomaly* (RocketMQ is at-least-once: some
things look wrong but are part of the contract; they are reported as warnings and counted).

`form` says how the spec checks it:
- "state": a predicate over one state; `STATE_PREDICATES[id](state)` evaluates it over the
  whole state (the model checker calls `check_state(state)`), and trace replay evaluates it on
  the key an event touched.
- "step": a property of one transition (a guard of the action that would take it). Trace
  replay reports the event the guard rejects; the model checker sees it as a disabled action
  with a reason (`spec.guard`).
- "end": checked when the trace ends with reason quiescent or horizon (liveness under the
  stated fairness: nothing left to do, or nothing left waiting on the clock).

Ids are stable: tests, known-bug profiles and reports refer to them. Add new ids; never reuse.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import user_guarantees
from .assumptions import cite, ids_in, ref


@dataclass(frozen=True)
class Invariant:
    id: str
    title: str
    statement: str
    mechanism: str
    assumptions: str
    severity: str            # "error" | "warning"
    allowed_anomaly: bool
    form: str                # "state" | "step" | "end"
    key: str                 # queue | stored queue | retry chain | view | directory
    breaks: str = ""         # what breaks it (known bugs, faults)
    protects: tuple = ()     # ids of the user guarantees a violation loses (spec/user_guarantees.py)

    @property
    def assumes(self) -> list[str]:
        """The ids of the assumptions (spec/assumptions.py) its text cites."""
        return ids_in(self.assumptions + " " + self.breaks)

    @property
    def guarantee(self) -> str:
        """The user-facing guarantee a violation loses, as reports name it ("" for none)."""
        return "; ".join(user_guarantees.statement(g) for g in self.protects)


CATALOGUE: tuple[Invariant, ...] = (
    # ------------------------------------------------------------------ ownership
    Invariant(
        "INV-OWNER-1", "Allocation partitions the queues per view",
        "Allocations computed by different clients of one group from the same view (the same "
        "sorted queue list and client id list) are pairwise disjoint, and, for the total "
        "strategies (AVG, AVG_BY_CIRCLE, CONSISTENT_HASH), once every client of the view has "
        "reported, together they cover every queue.",
        "RebalanceImpl.rebalanceByTopic sorts mqAll and cidAll and calls a deterministic "
        "AllocateMessageQueueStrategy; each client keeps only its own share.",
        "Clients that saw different views (findConsumerIdList asks a random broker) may overlap "
        "for a while: that is not a violation, views are compared only with themselves.",
        "error", False, "step", "view",
        "A strategy that is not a pure function of (mqs, cids, cid); unsorted input."),
    Invariant(
        "INV-ALLOC-1", "Allocation follows the strategy",
        "The queues a client is given equal the strategy's function of the view: Averagely "
        "(contiguous blocks, sizes differ by at most one), AveragelyByCircle (queue i to client "
        "i mod N), ConsistentHash (MD5 ring, 10 virtual nodes); a client not in the list gets "
        "nothing; the result is a subset of the queues.",
        "AllocateMessageQueueAveragely / ...ByCircle / ...ConsistentHash, digest section 1.",
        "Strategies CONFIG and MACHINE_ROOM are only checked for the subset property.",
        "error", False, "step", "view"),
    Invariant(
        "INV-ALLOC-2", "A ProcessQueue is created only for an allocated queue",
        "In clustering mode a client creates a ProcessQueue for a queue only if its latest "
        "allocation of that topic contains the queue.",
        "updateProcessQueueTableInRebalance adds only queues of mqSet (the allocation result).",
        "", "error", False, "step", "queue"),
    Invariant(
        "INV-LOCK-1", "At most one broker lock holder per queue",
        "The broker's lock entry for (group, queue) names at most one client; another client "
        "takes it over only after it expired (now - lastUpdate > lifetime, strict), renewals "
        "extend it by the lifetime, only the owner's unlock removes it, and expiry is observed "
        "only after the lifetime.",
        "RebalanceLockManager.tryLock/tryLockBatch/unlockBatch under one global lock; "
        "LockEntry.isExpired uses the strict comparison.",
        "The broker's lock table is lost on broker restart (locks are not persisted).",
        "error", False, "step", "queue"),
    Invariant(
        "INV-OWNER-2", "Only the lock holder consumes an orderly queue",
        "In orderly clustering mode a client starts a batch on a queue only while its "
        "ProcessQueue is locked with an unexpired lease (now - lastLockTimestamp <= client "
        "lease, 30 s) and the broker's lock entry for the queue names it and is unexpired.",
        "ConsumeMessageOrderlyService.ConsumeRequest.run checks pq.locked && !isLockExpired "
        "before and between batches; the client lease (30 s) is shorter than the broker lock "
        "(60 s) and renewed every 20 s by lockAll.",
        cite("A-BROKER-LOCKS") + " (a restart "
        "forgets the lock table while the client lease is still valid; then this is a warning).",
        "error", False, "step", "queue",
        "#5465 (pq not locked on create) only delays; a broker restart breaks the assumption.",
        ("G-ORDER-EXCLUSIVE",)),
    Invariant(
        "INV-ORDER-1", "Orderly consumption is serial per queue",
        "For an orderly clustering group, at most one batch of a queue is being consumed at a "
        "time, across all clients of the group.",
        "One consume thread per queue (messageQueueLock) inside a client; across clients, the "
        "broker lock (INV-OWNER-2).",
        cite("A-LEASE-MARGIN") + ". A batch already running is not interrupted when the lease expires. When "
        "the assumption breaks the guarantee is still lost: the report names the call, the pause "
        "and the limits it outlived. Under 5.x (tryRemoveOrderMessageQueue, #7644) a queue that "
        "changes owner is force-unlocked once the unlock delay (20 s) has passed since its last "
        "lock, even while a call on it runs: a call that outlives that during a handover is "
        "consumed by two clients within the margin, and the report names the forced unlock.",
        "error", False, "state", "queue",
        "A GC pause or SIGSTOP longer than the margin during a listener call; a listener call "
        "longer than the margin; a broker lock shorter than the client lease.",
        ("G-ORDER-EXCLUSIVE",)),
    Invariant(
        "INV-ORDER-2", "Orderly batches are taken in offset order",
        "takeMessages moves the lowest offsets of the ProcessQueue's message tree into the "
        "consuming map; a batch consumes exactly the messages just taken; a message goes back "
        "to the tree only by rollback/makeMessageToConsumeAgain; commit returns lastKey + 1 of "
        "the consuming map and empties it.",
        "ProcessQueue.takeMessages (pollFirstEntry), commit, rollback, makeMessageToConsumeAgain.",
        "", "error", False, "step", "queue"),
    Invariant(
        "INV-ORDER-3", "An orderly queue's committed offset does not fall back past committed consumption",
        "For an orderly clustering group, the broker's committed offset of a queue never moves "
        "back below messages the group had already consumed and committed, by more than one "
        "batch (the batch in flight at a handover, #4086: ANOM-DUP-1).",
        "ProcessQueue.commit then updateOffset; removeUnnecessaryMessageQueue persists the offset "
        "under the consume lock before the queue changes owner; the new owner resumes from it.",
        "The previous owner stops consuming and persisting before another client takes the "
        f"queue ({ref('A-LEASE-MARGIN')}); an operator reset is not judged.",
        "error", False, "step", "queue",
        "A client frozen past its lease and the broker lock that persists its stale offset when "
        "it thaws; a late one-way persist of an old owner.",
        ("G-ORDER-NO-REPLAY",)),
    # ------------------------------------------------------------------ process queue & offsets
    Invariant(
        "INV-PQ-1", "ProcessQueue lifecycle and bookkeeping",
        "A ProcessQueue goes created -> active -> dropped -> removed (see the diagram); one "
        "live ProcessQueue per client and queue; messages put into it came from a pull answer "
        "for it; a batch consumes messages that are in its tree and not already in flight.",
        "RebalanceImpl.processQueueTable, ProcessQueue.putMessage, ConsumeMessage*Service.",
        "", "error", False, "step", "queue"),
    Invariant(
        "INV-OFFSET-1", "Client offset = ProcessQueue minimum, or max + 1 when empty",
        "Every client offset update of a queue is a value the ProcessQueue produced: "
        "removeMessage returns -1 if the tree was empty before, else the tree minimum after "
        "removal, else queueOffsetMax + 1 (queueOffsetMax = the last *new* offset put); orderly "
        "commit returns lastKey + 1; correctTagsOffset uses nextBeginOffset only when the "
        "ProcessQueue holds no message; OFFSET_ILLEGAL uses nextBeginOffset (its correction is "
        "a task of the client, 10 s later, that runs even if the ProcessQueue was removed "
        "meanwhile, unless the client crashed). An update to an offset in [minOffset, "
        "maxOffset] on a ProcessQueue an OFFSET_ILLEGAL answer dropped is taken as an operator's "
        "resetOffsetByTime that reached the client then (a trace that reports a drop once "
        "shows no second one). A reset drops every queue of the topic in the client's table, "
        "one dropped before included (`pq_dropped`, reason `reset`); from 10 s after that drop "
        "the client's next update of the queue with increaseOnly false is the operator's offset "
        "(MQClientInstance.resetOffset: drop, 10 s, updateConsumeOffset), taken before a store "
        "read and before a commit the dropped queue computed (processConsumeResult makes no "
        "update once the queue is dropped): nothing else sets one in between. The store applies "
        "increaseOnly as max, ignores updates while frozen (5.x), and a persist sends the "
        "value the store holds.",
        "ProcessQueue.removeMessage / commit, RemoteBrokerOffsetStore.updateOffset / "
        "ControllableOffset, DefaultMQPushConsumerImpl.correctTagsOffset.",
        "", "error", False, "step", "queue"),
    Invariant(
        "INV-OFFSET-2", "Client offset is monotone within a ProcessQueue's life",
        "While a ProcessQueue is live, the client's stored offset for its queue never decreases.",
        "Concurrent: updateOffset(increaseOnly=true); orderly: commits follow the offset order "
        "of takeMessages.",
        "A new ProcessQueue (after removeOffset) starts a new history.",
        "error", False, "step", "queue"),
    Invariant(
        "INV-OFFSET-3", "No offset passes an unconsumed message",
        "The client's stored offset of a live ProcessQueue is at most its lowest pending "
        "message (in the tree, taken, or in flight); a broker commit for a group never passes a "
        "message of the queue that the group has not yet handled (consumed, sent back, "
        "dead-lettered, or filtered out) since its start position.",
        "removeMessage returns the tree minimum while messages are pending; the broker only "
        "stores what clients persist.",
        "", "error", False, "state", "queue",
        "Any bug that commits max+1 while a message is still in flight."),
    Invariant(
        "INV-START-1", "A new ProcessQueue starts at the committed offset",
        "A store read (READ_FROM_STORE) returns the committed offset when there is one "
        "(clustering: the broker's ConsumerOffsetManager entry, as it stood at some moment "
        "since the read could have been issued, the client's allocation of the topic: the "
        "remote read is a round trip that another client's commit may overtake; broadcasting: "
        "the client's local offsets file), -1 or (broker zero-if-not-found) 0 when there is "
        "none, -2 on an error; the ProcessQueue's first pull offset is computePullFromWhere of that value "
        "(the value itself if >= 0; else LAST: retry topic 0, otherwise maxOffset; FIRST: 0; "
        "TIMESTAMP: a searched offset); pulls never use a negative offset.",
        "RebalancePushImpl.computePullFromWhereWithException, "
        "RemoteBrokerOffsetStore/LocalFileOffsetStore.readOffset.",
        "A group's first start without a committed offset legitimately starts at maxOffset "
        "(LAST); a later owner that finds no committed offset skips what the previous owner had "
        "not persisted: INV-LOSS-1.",
        "error", False, "step", "queue",
        "#2708 (offset query failure read as 'no offset'), #1825 (orderly recompute -1), "
        "#4016 (local offsets file forgot the queue)."),
    Invariant(
        "INV-PULL-1", "One pull in flight per ProcessQueue, at its next offset",
        "A ProcessQueue has at most one pull in flight; each pull asks for the ProcessQueue's "
        "next offset (its first offset, then the previous answer's nextBeginOffset).",
        "One PullRequest object per ProcessQueue, re-queued by the pull callback.",
        "", "error", False, "step", "queue",
        "#2449 (concurrent resetOffset duplicated PullRequests)."),
    Invariant(
        "INV-PULL-2", "Pull answers are faithful",
        "A pull answer lists only stored messages with their stored ids, ascending, from the "
        "requested offset; every stored offset in [request, nextBeginOffset) is returned or "
        "reported as filtered; nextBeginOffset never goes back on a found/no-new answer; "
        "OFFSET_ILLEGAL corrections move to the nearest valid offset (too small -> minOffset, "
        "overflow badly -> maxOffset, empty queue -> 0).",
        "DefaultMessageStore.getMessage, nextOffsetCorrection; PullAPIWrapper.processPullResult.",
        "", "error", False, "step", "queue",
        "#4215 (overflow badly corrected to minOffset 0: mass re-consumption)."),
    Invariant(
        "INV-FILTER-1", "Filter correctness",
        "Messages handed to a ProcessQueue match the subscription (TAG: the exact tag is in "
        "the tag set, or '*'; SQL92: the expression is TRUE); offsets the broker filtered do "
        "not pass the broker's match (tags-code set or SQL92); offsets the client filtered "
        "passed the broker's hash match but fail the exact tag check; retry topic "
        "subscriptions match everything.",
        "ExpressionMessageFilter.isMatchedByConsumeQueue/isMatchedByCommitLog, "
        "PullAPIWrapper.processPullResult, %RETRY% subscribed with '*'.",
        "", "error", False, "step", "queue"),
    Invariant(
        "INV-DROP-1", "A dropped ProcessQueue consumes and commits nothing",
        "After a ProcessQueue is dropped, its client starts no new batch on it and makes no "
        "offset update for it (except the OFFSET_ILLEGAL correction, which freezes the offset "
        "by design); a concurrent batch that finishes on a dropped ProcessQueue is not "
        "processed (no send-back, no removeMessage, no offset update).",
        "ConsumeRequest.run checks processQueue.isDropped() before and after the listener; "
        "updateOffset only if !dropped.",
        "", "error", False, "step", "queue"),
    # ------------------------------------------------------------------ retries
    Invariant(
        "INV-RETRY-1", "The retry count leads to the DLQ",
        "A send-back of a copy whose reconsume count reached maxReconsumeTimes (or with delay "
        "level < 0) puts it in %DLQ%<group>; no retry copy carries a reconsume count above "
        "maxReconsumeTimes (with the default 16: copies 1..16 are retries, the 17th send-back "
        "goes to the DLQ).",
        "Broker consumerSendMsgBack (reconsumeTimes >= max); orderly checkReconsumeTimes with "
        "the producer send to %RETRY% and handleRetryAndDLQ (4.9.x '>=' with r, 5.1.1+ '>' with "
        "r+1 or group locked).",
        "maxReconsumeTimes is the client's setting (-1: 16 concurrent, unbounded orderly).",
        "error", False, "step", "retry chain",
        "#6163 (5.0.0 orderly retries forever)."),
    Invariant(
        "INV-RETRY-2", "Retries use the right delay level and count",
        "A send-back of a copy with reconsume count r < max goes to the schedule with delay "
        "level 3 + r (or the level the client chose, > 0), capped at the highest level; the "
        "schedule service delivers it no earlier than its deliver time; the stored retry copy "
        "has reconsume count r + 1 and the same origin message id.",
        "consumerSendMsgBack delayLevel = 3 + reconsumeTimes; ScheduleMessageService; "
        "sendMessageBackAsNormalMessage (DELAY = 3 + reconsumeTimes).",
        "", "error", False, "step", "retry chain"),
    Invariant(
        "INV-RETRY-3", "One retry copy per failure",
        "A client sends one stored copy back at most once (accepted send-backs); a send-back "
        "concerns a message the client consumed and failed (or an expired message in its "
        "ProcessQueue).",
        "processConsumeResult skips messages no longer in the ProcessQueue (5.1.0+).",
        "Different clients may each send back a copy they both consumed across a rebalance "
        "(ANOM-DUP-1).",
        "error", False, "step", "retry chain",
        "#5481 (cleanExpiredMsg and RECONSUME_LATER both send back)."),
    Invariant(
        "INV-DLQ-1", "Nothing is consumed from the DLQ",
        "No ProcessQueue, pull or consumption concerns a %DLQ%<group> topic, and a dead-lettered "
        "copy carries no delay level.",
        "The DLQ topic is not subscribed by consumers; #2724 fix clears the delay level.",
        "", "error", False, "step", "queue",
        "#2724 (DLQ copy kept its DELAY property: an extra schedule hop)."),
    # ------------------------------------------------------------------ broadcast
    Invariant(
        "INV-BCAST-1", "Broadcast semantics",
        "In broadcasting mode every client owns every queue of the topic, offsets are local "
        "(LocalFileOffsetStore: nothing is persisted to the broker), failed messages are not "
        "sent back, and (5.3.2+) orderly broadcast takes no broker locks.",
        "RebalanceImpl BROADCASTING branch, LocalFileOffsetStore, processConsumeResult "
        "BROADCASTING branch, #8772.",
        "", "error", False, "step", "queue"),
    # ------------------------------------------------------------------ clients
    Invariant(
        "INV-CLIENT-1", "Stopped, crashed or paused clients do nothing",
        "A client acts only between client_started and client_stopped/client_crashed, and not "
        "while paused; events name started clients, brokers and topics.",
        "A frozen JVM runs no task; a dead one none at all.",
        "", "error", False, "step", "directory"),
    # ------------------------------------------------------------------ liveness
    Invariant(
        "INV-LIVE-1", "No loss at quiescence",
        "When the trace ends quiescent (or at a horizon its recorder declares settled), every "
        "stored message of every queue of a topic that a "
        "live consumer subscribes, from the group's start position (each client's, in "
        "broadcasting), has been consumed, sent back, dead-lettered or filtered out, and every "
        "retry copy sent back has been delivered or dead-lettered.",
        "At-least-once: rebalance gives every queue an owner; offsets never pass unconsumed "
        "messages; retries go through the schedule.",
        "Fairness: the trace ended because nothing was left to do (reason quiescent), or at a "
        "horizon with nothing left waiting on the clock (reason horizon: the explorer's horizon_ms, "
        "long past every fault, pause and delayed message of its scope).",
        "error", False, "end", "queue", "",
        ("G-DELIVER",)),
    Invariant(
        "INV-LOSS-1", "No message skipped outside the skips by design",
        "A consumer unit (the group, or one broadcasting client) passes over a stored message it "
        "has not handled only by design: an operator's offset reset (ANOM-RESET-SKIP), retention "
        "(ANOM-RETENTION), or CONSUME_FROM_LAST_OFFSET on the unit's first start on the queue. "
        "A new ProcessQueue of a unit that started on the queue before and finds no committed "
        "offset starts at maxOffset and skips what was stored since and not consumed: a loss.",
        "RemoteBrokerOffsetStore / LocalFileOffsetStore.readOffset (-1 when nothing was "
        "persisted) and computePullFromWhere (LAST -> maxOffset). An offset table gets an entry "
        "for a queue only from updateOffset (a consumed batch, a store read, a reset), and "
        "persistAll writes only the table's entries.",
        "Owners persist their offset before they lose a queue (persistConsumerOffset on "
        "shutdown and in removeUnnecessaryMessageQueue) and at least every "
        "persist_consumer_offset_interval_ms; a crash or a lost persist breaks it. "
        + cite("A-OFFSET-ENTRY") + " (from the first consumed batch, or correctTagsOffset when a pull finds nothing "
        "new, which long polling delays up to 15 s), so there is an offset to persist; a "
        "consumer (a broadcasting one in particular, which has no broker answering 0, #334) that "
        "stops sooner restarts there as on a first start and skips what was stored meanwhile. "
        "The report names the assumption. A first start at LAST skips by design what was stored "
        "before start() returned; " + cite("A-LAST-FIRST-REBALANCE") + ": what is stored after it and "
        "before the first rebalance reads maxOffset is skipped too (#9281, every release).",
        "error", False, "step", "queue",
        f"A crash before the first persist; a stop before the queue's first offset entry ({ref('A-OFFSET-ENTRY')}); "
        "#2708 / #4016 (the committed offset is not found).",
        ("G-DELIVER",)),
    Invariant(
        "INV-SUB-1", "A group's consumers subscribe alike",
        "Messages a client drops in its tag re-check (client_filtered) because its own "
        "subscription differs from the one the broker filtered with are lost for the group: the "
        "broker filters every pull of the group with one subscription per topic (the last "
        "heartbeat's, ConsumerGroupInfo.updateSubscription) and the client drops what its own "
        "subscription does not match (PullAPIWrapper.processPullResult), then moves its offset "
        "past them. All consumers of one group must subscribe each topic with the same "
        "expression.",
        "ConsumerManager.registerConsumer -> ConsumerGroupInfo.updateSubscription (the table "
        "keeps one SubscriptionData per topic, replaced by a heartbeat with a newer version); "
        "PullMessageProcessor builds its filter from that table; "
        "PullAPIWrapper.processPullResult re-checks tags against the client's own subscription.",
        "Consumers of one group have the same subscriptions (RocketMQ's documented rule).",
        "error", False, "step", "queue",
        "Two consumers of a group subscribing 'TagA || TagB' and '*' (or different SQL92).",
        ("G-DELIVER",)),
    # ------------------------------------------------------------------ allowed anomalies
    Invariant(
        "ANOM-DUP-1", "Duplicate consumption (allowed)",
        "A message is consumed again by the group after it was already handled: allowed for "
        "concurrent consumers (a rebalance hands the queue over at the last persisted offset) "
        "and after a crash, and for orderly consumers after a reassignment (#4086: the consume "
        "lock is released before the offset is committed). POP: a copy popped or acked before a "
        "broker restart that is popped again because the restart reloaded the group's offset "
        "from a flush below it, the revive of that earlier pop's checkpoint, and a change of "
        "invisible time with a handle revive already retired (the broker checks no deadline).",
        "At-least-once delivery.", "", "warning", True, "step", "queue"),
    Invariant(
        "ANOM-OFFSET-BACK", "Broker offset moves back (allowed)",
        "The broker's committed offset of a queue decreases: a late one-way persist from a "
        "previous owner overwrites a newer commit (ConsumerOffsetManager.commitOffset is not "
        "increase-only).",
        "Overwrite semantics of the broker offset table.", "", "warning", True, "step", "queue"),
    Invariant(
        "ANOM-RETENTION", "Messages deleted before they were consumed (allowed)",
        "The queue's minOffset moved past messages a consumer unit had not consumed: the "
        "commit log's retention deleted them (OFFSET_TOO_SMALL moves the consumer forward).",
        "DefaultMessageStore cleans expired commit-log files; getMessage answers OFFSET_TOO_SMALL.",
        "", "warning", True, "step", "queue"),
    Invariant(
        "ANOM-LOCK-GAP", "Orderly consumption without a broker lock entry (allowed, watched)",
        "A client consumes an orderly queue under a valid client lease while the broker holds no "
        "lock entry for it (nobody else holds one either): a broker restart forgot the lock table, "
        "or a stale unlock removed the entry. In 4.9.x the delayed unlock that "
        "removeUnnecessaryMessageQueue schedules (20 s) also removes the entry of a queue the same "
        "client has re-acquired meanwhile. Until the next lockAll another client could lock the "
        "queue; if one does and consumes, INV-ORDER-1 / INV-OWNER-2 report it.",
        "Client lease checked before each batch; lockAll every 20 s re-creates the entry.",
        "", "warning", True, "step", "queue"),
    Invariant(
        "ANOM-RESET-SKIP", "An operator reset skips messages (allowed)",
        "An offset reset (offset_committed with source reset: resetOffset / a restored offset) moved "
        "the group's offset past messages it had not consumed, also when a broker restart brings "
        "the write back from its last flush (ConsumerOffsetManager.load), and when a write past the "
        "queue's end is reached by messages stored before the next pull, which then finds the queue "
        "grown that far (answered, or still on its way or held when the run ends) and gets no "
        "OFFSET_ILLEGAL correction: "
        "what was stored below the write meanwhile is skipped. The operator asked for it.",
        "ConsumerOffsetManager reset; MQClientInstance.resetOffset on the clients.",
        "", "warning", True, "step", "queue"),
    Invariant(
        "ANOM-DISCARD", "Send-back discarded by configuration (allowed)",
        "The broker accepted a send-back and stored nothing because retryQueueNums <= 0.",
        "consumerSendMsgBack returns SUCCESS without storing.", "", "warning", True, "step",
        "retry chain"),
    # ------------------------------------------------------------------ POP (RocketMQ 5.x; docs/pop.md)
    Invariant(
        "INV-POP-HANDLE-1", "A message is held by at most one valid handle",
        "While a handle of a message copy is valid (current, and before its deadline pop time + "
        "invisible time), the copy is not handed out under another handle and revive does not put "
        "it back; a copy is revived at most once. Not after a broker restart that reloaded the "
        "group's offset from a flush below the copy: the pop before it and its checkpoint stay "
        "(ANOM-DUP-1).",
        "PopMessageProcessor hides a popped message until its checkpoint's revive time; "
        "PopReviveService revives a checkpoint only past that time, and a change of invisible time "
        "acks the old checkpoint as it writes the new one (ChangeInvisibleTimeProcessor).",
        "", "error", False, "step", "queue",
        "#7724, #10276 (RocksDB: a new checkpoint and an old ack share a key), #9956.",
        ("G-NO-DUP-WITHOUT-CAUSE",)),
    Invariant(
        "INV-POP-ACK-1", "An acked message is never delivered again",
        "Once a copy is acked under its current handle it is not revived, not dead-lettered and "
        "not handed out again.",
        "AckMessageProcessor writes an ack the revive service matches to the checkpoint (by pop "
        "time) before the deadline passes; ackOrderly moves the orderly consume offset.",
        "An ack the broker answered without effect (result stale or rejected) does not count: the "
        "message comes back, which is at-least-once. A broker restart reloads the consume "
        "offsets from their last flush (every 5 s): a copy acked before it whose commit was not "
        "flushed (the orderly ack's, or the concurrent pop's) is popped again (ANOM-DUP-1).",
        "error", False, "step", "queue",
        "#7724 (an acked message revived and delivered twice).",
        ("G-NO-DUP-WITHOUT-CAUSE",)),
    Invariant(
        "INV-POP-LOSS-1", "No loss through revive",
        "Every popped message ends acked, revived into the retry topic, or dead-lettered: revive "
        "never gives up on a message (outcome dropped), and a POP consumer acks a failed message "
        "as past its retries only at its maxReconsumeTimes, and only once a listener call received "
        "it (judged where the trace holds the group's POP listener calls).",
        "PopReviveService re-puts a checkpoint whose revive failed (rePutCK, with backoff); "
        "ConsumeMessagePopConcurrentlyService acks a failed message only at the limit "
        "(checkNeedAckOrDelay).",
        "", "error", False, "step", "queue",
        "#7914, #10985 (a failed read still commits the revive offset), #10276; every 5.x push "
        "consumer in POP mode: a message each of whose pops ran out before its listener call "
        "(isPopTimeout) is counted as attempted by revive and acked past the limit unseen by "
        "processPopResult (random real run 20201, 5.5.0).",
        ("G-DELIVER",)),
    Invariant(
        "INV-POP-DLQ-1", "The retry count leads to the DLQ at the limit",
        "A revived copy counts exactly one more reconsumption than the copy it revives (the same "
        "after a suspend), a message goes to %DLQ%<group> only once its reconsume count "
        "reaches the limit (the proxy: reconsumeTimes >= maxAttempts, retryMaxTimes + 1), and a "
        "push consumer in POP mode calls its listener on no message whose reconsume count is above "
        "its maxReconsumeTimes (-1 means 16), and a SimpleConsumer's FIFO message reaches the "
        "listener only below its max attempts, counted per offset as the broker counts an orderly "
        "queue's attempts: the retries stop at the limit.",
        "PopReviveService.reviveRetry sets reconsumeTimes + 1 (unless the checkpoint is a "
        "suspend's); the proxy's PopMessageResultFilterImpl answers TO_DLQ at maxAttempts; "
        "DefaultMQPushConsumerImpl.processPopResult acks a popped message above "
        "getMaxReconsumeTimes() before any listener call (5.3.1+); "
        "QueueLevelConsumerManager.OrderInfo.mergeOffsetConsumedCount counts an orderly offset's "
        "attempts.",
        "", "error", False, "step", "queue",
        "#8332 (before 5.3.1 processPopResult has no such check: a message past the limit, "
        "maxReconsumeTimes 0 included, is handed to the listener again after each revive); every "
        "5.x proxy in local mode gives a FIFO message the queue's minimum count "
        "(LocalMessageService.popMessage), so one popped again beside fresh offsets passes its max "
        "attempts (not reported upstream; pop-fifo-attempts).",
        ("G-RETRY-LIMIT", "G-DLQ")),
    Invariant(
        "INV-POP-ORDER-1", "Orderly POP delivers a queue in order, one attempt at a time",
        "An orderly queue is handed out by one attempt at a time: no new attempt while an offset "
        "of the last one is neither acked nor visible again, unless it carries the same attempt "
        "id; a new attempt starts at the first offset the last one left un-acked; within an "
        "attempt offsets ascend.",
        "ConsumerOrderInfoManager (QueueLevelConsumerManager.OrderInfo.needBlock, getNextOffset, "
        "commitAndNext) and PopMessageProcessor.popMsgFromQueue's checkBlock.",
        "", "error", False, "step", "queue",
        "",
        ("G-ORDER", "G-ORDER-EXCLUSIVE")),
    Invariant(
        "INV-POP-ORDER-2", "An orderly attempt that asks again gets its batch back",
        "An orderly pop that carries the attempt id of the attempt holding one of its queues (a "
        "client's receive retried after its answer never came) is answered with that attempt's "
        "first un-acked offset while the attempt still blocks the queue (an offset neither acked "
        "nor visible again), unless its answer is full: the broker never blocks an attempt by "
        "itself, and the retry is its one way to the messages its lost answer held.",
        "ConsumerOrderInfoManager.checkBlock passes the attempt id it holds (needBlock), and the "
        "pop reads the queue again from its consume offset; rocketmq-client-java retries a receive "
        "that failed with DEADLINE_EXCEEDED under the same attempt id (ProcessQueueImpl).",
        "Judged only where the order info is the one the spec followed: not after a broker restart "
        "reloaded it from a flush.",
        "error", False, "step", "queue",
        "#10827 (5.3.3 to 5.5.0 with the RocksDB POP path: the retry fails fast on the group@topic "
        "lock another pop holds, is held empty, and the client's next receive, under a new attempt "
        "id, waits out the lost batch's invisible time, renewed by the proxy for up to 3 h).",
        ("G-ORDER-PROGRESS",)),
    Invariant(
        "INV-POP-STALE-1", "Stale handles are rejected",
        "An ack or a change of invisible time takes effect only with the message's current handle "
        "(the pop time of its live checkpoint, or of the orderly queue's attempt); with any other "
        "handle the broker answers without effect or refuses. Two handles the broker takes by "
        "design count as at-least-once (ANOM-DUP-1): a change of invisible time with the handle "
        "whose checkpoint revive retired (ChangeInvisibleTimeProcessor checks no deadline: a new "
        "checkpoint holds the message again while its revived copy is out), and a handle of a pop "
        "before a broker restart whose checkpoint still waits.",
        "The broker matches an ack to its checkpoint by pop time (PopMessageProcessor.genAckUniqueId, "
        "PopReviveService), and ackOrderly's commitAndNext ignores another pop time (-2).",
        "", "error", False, "step", "queue",
        "#10276 (an old ack deletes a new checkpoint), #9956.",
        ("G-DELIVER",)),
    Invariant(
        "INV-POP-LIVE-1", "An un-acked message comes back after its invisible time",
        "When the trace ends quiescent (or at a settled horizon), no popped message is still held "
        "un-acked, and no revived copy waits undelivered while a consumer of its group is alive: "
        "past its deadline every un-acked message was revived (or, orderly, handed out again). "
        "An orderly handle has no revive: with no consumer of its group left, its message waits "
        "in the broker for the next one and is not owed.",
        "PopReviveService scans the revive log every reviveInterval and revives a checkpoint "
        "ackTimeInterval + 1 s after its deadline; an orderly queue unblocks at the deadline.",
        "Fairness: as INV-LIVE-1 (nothing left to do, or nothing left waiting on the clock).",
        "error", False, "end", "queue",
        "#7914, #10985, #10827, #10276 (RocksDB: a change that keeps the deadline deletes its own record).",
        ("G-DELIVER",)),
)

BY_ID: dict[str, Invariant] = {inv.id: inv for inv in CATALOGUE}

# Rejected-event ids that are not invariants: malformed or semantically impossible steps that
# are not covered by a more specific invariant (an event about a ProcessQueue that never
# existed, a commit nobody sent, ...). Reported with the failing guard.
GUARD = "GUARD"


def severity(inv_id: str) -> str:
    inv = BY_ID.get(inv_id)
    return inv.severity if inv else "error"


def get(inv_id: str) -> Invariant:
    return BY_ID[inv_id]


# ---------------------------------------------------------------------------- state predicates
# Each takes a SpecState and yields (key, message) for every place the invariant fails. The
# model checker evaluates them in every state (`spec.check_state`); trace replay evaluates the
# same rule on the key an event touched: the per-key functions below are the one definition
# both use (the actions add the cause to the report).

def orderly_consumers_at_once(qs):
    """INV-ORDER-1 on one queue: the clients inside its listener at once (client, (consume_id,
    since)), oldest first; empty when at most one is. `busy` holds the orderly clustering batches
    in a listener call, one per client (its consume thread holds messageQueueLock). A broken
    A-LEASE-MARGIN does not excuse an overlap: the guarantee is lost either way."""
    if len(qs.busy) < 2:
        return []
    return sorted(qs.busy.items(), key=lambda kv: (kv[1][1], kv[0]))


def client_offset_passes(pq, value, taken=True):
    """INV-OFFSET-3, client side: the lowest pending offset (tree, taken, in flight) of a live
    ProcessQueue that the client's stored offset `value` passes, or None. `taken=False` leaves
    the orderly taken messages out: a store seen by polling may already show the commit
    (ProcessQueue.commit empties them, then updateOffset) whose event comes later."""
    if pq is None or not pq.live:
        return None
    m = pq.pending_min(taken)
    return m if m is not None and value > m else None


def broker_offset_passes(st, qs):
    """INV-OFFSET-3, broker side: the first offset the group has not handled that the broker's
    committed offset passes (offsets that exist: below the queue's max offset), or None. A
    committed offset that an operator reset set is not judged: skipping by an operator's request
    is by design (ANOM-RESET-SKIP)."""
    unit = qs.units.get("")
    off = qs.committed
    if unit is None or off is None or off in qs.resets:
        return None
    key = qs.key
    sq = st.stored.get((key[1], key[2], key[3]))
    top = min(off, sq.next) if sq is not None else off
    return unit.wm if unit.wm < top else None


def _orderly_serial(st):
    for key, qs in st.queues.items():
        both = orderly_consumers_at_once(qs)
        if both:
            yield key, f"clients {[c for c, _ in both]} consume the orderly queue at once"


def _offset_not_past_unconsumed(st):
    for key, qs in st.queues.items():
        for cid, pq in qs.pqs.items():
            s = qs.stores.get(cid)
            m = client_offset_passes(pq, s[0]) if s is not None else None
            if m is not None:
                yield key, f"{cid}'s offset {s[0]} passes pending offset {m}"
        m = broker_offset_passes(st, qs)
        if m is not None:
            yield key, f"broker offset {qs.committed} passes unconsumed offset {m}"


def _lock_table(st):
    for key, qs in st.queues.items():
        if (qs.holder is None) != (qs.lock_state == "unlocked"):
            yield key, f"lock entry {qs.holder!r} inconsistent with state {qs.lock_state}"


def _one_live_pq_per_client(st):
    # structural in the state (one ProcessQueue per client per queue key); kept for completeness
    return ()


STATE_PREDICATES = {
    "INV-ORDER-1": _orderly_serial,
    "INV-OFFSET-3": _offset_not_past_unconsumed,
    "INV-LOCK-1": _lock_table,
    "INV-PQ-1": _one_live_pq_per_client,
}
