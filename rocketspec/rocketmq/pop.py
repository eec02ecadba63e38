"""POP consumption facts (RocketMQ 5.x; read from the 5.5.0 sources, which stand in for 5.5.1).

In POP the broker, not the client, keeps the consume position. A pop hands out messages with a
receipt handle (the broker's "extraInfo") and makes them invisible to every other pop until the
handle's deadline, pop time + invisible time. Before the deadline the holder acks the message
(it is done) or changes its invisible time (a new handle, a new deadline; the old one is
retired). At the deadline the broker's revive service puts an un-acked message back into the
group's POP retry topic with its reconsume count raised by one; a later pop hands the copy out
again. Concurrent POP keeps a checkpoint per pop in the revive log; orderly (FIFO) POP keeps the
queue's order info instead (ConsumerOrderInfoManager) and blocks the queue until every message
of the last pop is acked or its deadline passed; a pop that repeats the attempt id of the one in
force is not blocked (a client's retry of the same request).

Every constant names the class it comes from. Formulas are functions so both the spec and the
reference compute them the same way.
"""
from __future__ import annotations

from .retry import DLQ_PREFIX, RETRY_PREFIX

# --- invisible time ---------------------------------------------------------------------------
# DefaultMQPushConsumerImpl.MIN_POP_INVISIBLE_TIME / MAX_POP_INVISIBLE_TIME: the push consumer in
# POP mode refuses to start outside [5 s, 300 s], and a pop with a value outside uses 60 s.
MIN_POP_INVISIBLE_TIME = 5_000
MAX_POP_INVISIBLE_TIME = 300_000
DEFAULT_POP_INVISIBLE_TIME = 60_000     # DefaultMQPushConsumer.popInvisibleTime
POP_BATCH_NUMS = 32                     # DefaultMQPushConsumer.popBatchNums
MAX_POP_NUMS = 32                       # PopMessageProcessor: maxMsgNums > 32 is INVALID_PARAMETER
POP_THRESHOLD_FOR_QUEUE = 96            # DefaultMQPushConsumer.popThresholdForQueue (un-acked per PopProcessQueue)
# PopProcessQueue.PULL_MAX_IDLE_TIME (system property rocketmq.client.pull.pullMaxIdleTime): a
# POP queue with no pop for this long is dropped by the rebalance
POP_PULL_MAX_IDLE_TIME = 120_000


def deadline(pop_time: int, invisible_time: int) -> int:
    """When a handle's message becomes visible again (PopCheckPoint.getReviveTime,
    PopConsumerRecord.getVisibilityTimeout): pop time + invisible time."""
    return pop_time + invisible_time


def client_invisible_time(asked: int) -> int:
    """The invisible time the push consumer in POP mode sends (DefaultMQPushConsumerImpl.popMessage)."""
    return asked if MIN_POP_INVISIBLE_TIME <= asked <= MAX_POP_INVISIBLE_TIME else DEFAULT_POP_INVISIBLE_TIME


def pop_timed_out(now: int, pop_time: int, invisible_time: int) -> bool:
    """ConsumeMessagePopConcurrentlyService.ConsumeRequest.isPopTimeout: the client skips a batch
    whose handle's invisible time has run out (the broker revives it anyway)."""
    return pop_time > 0 and invisible_time > 0 and now - pop_time >= invisible_time


# --- retry topic, revive, reconsume count -----------------------------------------------------
# KeyBuilder: the POP retry topic is per (group, topic). BrokerConfig.enableRetryTopicV2 is false
# by default, so the default name is the v1 one, %RETRY%<group>_<topic>; v2 is %RETRY%<group>+<topic>.
POP_RETRY_SEPARATOR_V1 = "_"
POP_RETRY_SEPARATOR_V2 = "+"
ENABLE_RETRY_TOPIC_V2 = False           # BrokerConfig.enableRetryTopicV2
POP_RETRY_QUEUE_NUM = 1                 # PopAckConstants.retryQueueNum (one queue per retry topic)
POP_FROM_RETRY_PROBABILITY = 20         # BrokerConfig.popFromRetryProbability (% of pops that try the retry topic first)
# ExtraInfoUtil: the retry flag of a handle (which topic the message was popped from)
RETRY_FLAG_NORMAL, RETRY_FLAG_V1, RETRY_FLAG_V2 = "0", "1", "2"


def pop_retry_topic(group: str, topic: str, v2: bool = ENABLE_RETRY_TOPIC_V2) -> str:
    """KeyBuilder.buildPopRetryTopic: where revive puts a message of `topic` popped by `group`."""
    return RETRY_PREFIX + group + (POP_RETRY_SEPARATOR_V2 if v2 else POP_RETRY_SEPARATOR_V1) + topic


def revive_target(stored_topic: str, group: str, v2: bool = ENABLE_RETRY_TOPIC_V2) -> str:
    """PopReviveService.reviveRetry: a message popped from a retry topic goes back to that same
    topic; any other goes to the group's POP retry topic of its topic."""
    return stored_topic if stored_topic.startswith(RETRY_PREFIX) else pop_retry_topic(group, stored_topic, v2)


def revived_reconsume_times(reconsume_times: int, suspend: bool = False) -> int:
    """PopReviveService.reviveRetry: the copy counts one more consumption, unless the checkpoint
    was written by a suspend (changeInvisibleTime with suspend: the count stays)."""
    return reconsume_times if suspend else reconsume_times + 1


# PopAckConstants.ackTimeInterval, SECOND: revive handles a checkpoint only once its deadline is
# more than ackTimeInterval + 1 s behind the revive scan's time (acks written just before the
# deadline must be read first); so a message comes back at the earliest deadline + 2 s.
ACK_TIME_INTERVAL = 1_000
REVIVE_MARGIN = ACK_TIME_INTERVAL + 1_000
REVIVE_INTERVAL = 1_000                 # BrokerConfig.reviveInterval (the revive thread's period)
REVIVE_SCAN_TIME = 10_000               # BrokerConfig.reviveScanTime
REVIVE_QUEUE_NUM = 8                    # BrokerConfig.reviveQueueNum (queues of rmq_sys_REVIVE_LOG_<cluster>)
REVIVE_ACK_WAIT_MS = 180_000            # BrokerConfig.reviveAckWaitMs (an ack without its checkpoint is kept this long)
REVIVE_TOPIC_PREFIX = "rmq_sys_REVIVE_LOG_"     # PopAckConstants.REVIVE_TOPIC (+ cluster name)
REVIVE_GROUP = "CID_RMQ_SYS_REVIVE_GROUP"       # PopAckConstants.REVIVE_GROUP
POP_ORDER_REVIVE_QUEUE = 999            # KeyBuilder.POP_ORDER_REVIVE_QUEUE: the revive qid of every orderly handle
# PopReviveService.ckRewriteIntervalsInSeconds: a revive that failed re-puts its checkpoint with
# the invisible time raised by the next interval (rePutTimes indexes it, capped at the last)
CK_REWRITE_INTERVALS_S = (10, 20, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)
POP_REVIVE_MAX_ATTEMPT_TIMES = 16       # BrokerConfig.popReviveMaxAttemptTimes (RocksDB PopConsumerService: then dropped)


def earliest_revive(pop_time: int, invisible_time: int) -> int:
    """The first time revive may put an un-acked message back (PopReviveService.mergeAndRevive)."""
    return deadline(pop_time, invisible_time) + REVIVE_MARGIN


def reput_invisible_time(invisible_time: int, reput_times: int) -> int:
    """PopReviveService.rePutCK: the re-put checkpoint's invisible time after a failed revive."""
    i = min(reput_times, len(CK_REWRITE_INTERVALS_S) - 1)
    return invisible_time + CK_REWRITE_INTERVALS_S[i] * 1000


def revive_skips_last_epoch(pop_time: int, store_time: int, skips_last_epoch: bool) -> bool:
    """PopReviveService.reviveMsgFromCk, 5.0.0 to 5.2.0 ("skip ck from last epoch"): a message read
    for a checkpoint whose store time is later than the checkpoint's pop time is not revived, and
    the offset counts as done. PopMessageProcessor.processRequest takes the pop time
    (System.currentTimeMillis) before popMsgFromQueue reads the queue, so a message stored in
    between has exactly that (#7914; PR #7915 removed the check, 5.3.0)."""
    return skips_last_epoch and pop_time < store_time


# --- dead letter ------------------------------------------------------------------------------
# DefaultMQPushConsumerImpl.getMaxReconsumeTimes: maxReconsumeTimes -1 means 16.
DEFAULT_MAX_RECONSUME_TIMES = 16
# SubscriptionGroupConfig.retryMaxTimes; the proxy gives gRPC clients maxAttempts = retryMaxTimes + 1
# (GrpcClientSettingsManager) and, on receive, sends a message with reconsumeTimes >= maxAttempts to
# %DLQ%<group> and acks it (proxy PopMessageResultFilterImpl: FilterResult.TO_DLQ).
RETRY_MAX_TIMES = 16
# ConsumeMessagePopConcurrentlyService.changePopInvisibleTime: a failed message's next invisible
# time, by delay level (10 s .. 2 h; DefaultMQPushConsumerImpl.popDelayLevel)
POP_DELAY_LEVEL_S = (10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)


def max_reconsume_times(configured: int) -> int:
    return DEFAULT_MAX_RECONSUME_TIMES if configured == -1 else configured


def push_pop_past_limit(reconsume_times: int, configured: int, limit_resolved: bool = True) -> bool:
    """DefaultMQPushConsumerImpl.processPopResult (#8332's fix; 5.3.1+, line 656): a popped message
    whose reconsumeTimes is above the limit is acked before any listener call. The limit is
    getMaxReconsumeTimes() (-1 means 16); with `limit_resolved` off it is the raw maxReconsumeTimes,
    as on develop between #8332's fix and #8491 (#8490): at the default -1 every message is past it.
    5.0.0 to 5.3.0 have no such check (#8332): a message past the limit reaches the listener."""
    return reconsume_times > (max_reconsume_times(configured) if limit_resolved else configured)


def proxy_max_attempts(retry_max_times: int = RETRY_MAX_TIMES) -> int:
    return retry_max_times + 1


def proxy_dead_letters(reconsume_times: int, max_attempts: int) -> bool:
    """The proxy's receive filter: this copy goes to the DLQ instead of to the client."""
    return reconsume_times >= max_attempts


def push_pop_at_limit(reconsume_times: int, max_reconsume: int) -> bool:
    """ConsumeMessagePopConcurrentlyService.processConsumeResult: a failed message at the limit is
    not retried by changeInvisibleTime but acked (checkNeedAckOrDelay, once it is old enough):
    the remoting push consumer in POP mode has no DLQ of its own."""
    return reconsume_times >= max_reconsume


def pop_delay_ms(delay_level: int, reconsume_times: int) -> int:
    """ConsumeMessagePopConcurrentlyService.changePopInvisibleTime: delay level 0 means
    reconsumeTimes; a level past the table takes its last entry."""
    level = reconsume_times if delay_level == 0 else delay_level
    return 1000 * POP_DELAY_LEVEL_S[min(level, len(POP_DELAY_LEVEL_S) - 1)]


def dlq_topic(group: str) -> str:
    return DLQ_PREFIX + group


# --- receipt handle (ExtraInfoUtil) -----------------------------------------------------------
# The handle's fields, space separated (MessageConst.KEY_SEPARATOR), in this order:
# checkpoint start offset, pop time, invisible time, revive qid, retry flag, broker name, queue id,
# queue offset. Ack and changeInvisibleTime read it back; the broker matches an ack to its
# checkpoint by (topic, group, queue, start offset, pop time, broker): a handle of an earlier pop
# time names a checkpoint that no longer waits, and acking it changes nothing.
HANDLE_FIELDS = ("ck_offset", "pop_time", "invisible_time", "revive_qid", "retry_flag", "broker", "queue", "offset")


def build_handle(ck_offset: int, pop_time: int, invisible_time: int, revive_qid: int, retry_flag: str,
                 broker: str, queue: int, offset: int) -> str:
    """ExtraInfoUtil.buildExtraInfo (the form with the message's queue offset)."""
    return " ".join(map(str, (ck_offset, pop_time, invisible_time, revive_qid, retry_flag, broker, queue, offset)))


def parse_handle(handle: str) -> dict | None:
    """The fields of a handle built by build_handle, or of the proxy's receipt handle, which adds
    the message's commit-log offset (ReceiptHandle.encode); None if it is neither."""
    parts = handle.split(" ") if isinstance(handle, str) else []
    if len(parts) == len(HANDLE_FIELDS) + 1:
        parts = parts[:-1]
    if len(parts) != len(HANDLE_FIELDS):
        return None
    try:
        ck, pt, it, rq, flag, broker, q, off = parts
        return {"ck_offset": int(ck), "pop_time": int(pt), "invisible_time": int(it), "revive_qid": int(rq),
                "retry_flag": flag, "broker": broker, "queue": int(q), "offset": int(off)}
    except ValueError:
        return None


def is_orderly_handle(revive_qid: int) -> bool:
    """ExtraInfoUtil.isOrder: orderly handles carry the order revive queue."""
    return revive_qid == POP_ORDER_REVIVE_QUEUE


# --- orderly POP (ConsumerOrderInfoManager, QueueLevelConsumerManager.OrderInfo) ---------------
# - a pop of an orderly queue records the popped offsets, the pop time, the invisible time and the
#   attempt id, and commits the consume offset at the first popped offset;
# - the queue is blocked (checkBlock/needBlock) while some popped offset is neither acked nor past
#   its own next visible time (pop time + invisible time, or a changeInvisibleTime's new one),
#   unless the pop carries the attempt id of the recorded one;
# - an ack (ackOrderly -> commitAndNext) counts only with the recorded pop time (another gives
#   -2: nothing changes, the answer is still success) and an offset of the recorded pop (else -1:
#   MESSAGE_ILLEGAL); once every offset is acked the consume offset moves past the last one;
# - an ack or change below the committed consume offset is ignored (the answer is success);
# - a popped offset popped again counts one more consumption (mergeOffsetConsumedCount), which
#   the remoting client reads as the message's reconsumeTimes; the same attempt id keeps the count;
#   the proxy in local mode reads the queue-level minimum instead (proxy_fifo_reconsume_times).


def order_consumed_count(prev_attempt_id, prev_offsets, prev_counts: dict, attempt_id, offset: int) -> int:
    """OrderInfo.mergeOffsetConsumedCount: how many earlier attempts handed out `offset`, as a
    new orderly pop of it (attempt `attempt_id`) finds the count. The last pop's map is kept whole
    under the same (non-null) attempt id; otherwise an offset of the last pop counts one more, and
    any other starts at 0 (only the last pop's offsets carry a count forward)."""
    if prev_attempt_id is not None and prev_attempt_id == attempt_id:
        return prev_counts.get(offset, 0)
    return prev_counts.get(offset, 0) + 1 if offset in prev_offsets else 0


def order_reconsume_times(count: int, stored: int) -> int:
    """The reconsume times a reader of an orderly pop gives a message from an order count: the count
    when it is above 0, else the message's own (MQClientAPIImpl.processPopResponse and
    LocalMessageService.popMessage alike)."""
    return count if count > 0 else stored


def proxy_fifo_reconsume_times(attempt_counts, stored: int) -> int:
    """The reconsume times the proxy in local mode gives an orderly message (LocalMessageService
    .popMessage reads orderCountInfo under the queue's key, getStartOffsetInfoMapKey): the broker
    writes there the minimum of the pop's per-offset counts, 0 when any offset is new to it
    (QueueLevelConsumerManager.update, "for compatibility" with old SDKs). A count of 0 leaves the
    message's own. The per-offset counts (getQueueOffsetMapKey), which the remoting client reads
    first (MQClientAPIImpl.processPopResponse), are not read. So a message popped again beside
    fresh offsets is given fewer attempts than it had, and the receive filter's max attempts
    (proxy_dead_letters) can be passed."""
    return order_reconsume_times(min(attempt_counts) if attempt_counts else 0, stored)


def order_next_offset(offsets, acked) -> int:
    """OrderInfo.getNextOffset: the consume offset after the acks `acked` (a set of offsets) of
    a pop of `offsets` (ascending): the first un-acked one, or past the last if all are acked."""
    for o in offsets:
        if o not in acked:
            return o
    return offsets[-1] + 1


# --- the wake of a held orderly pop when its queue's block ends -----------------------------
# QueueLevelConsumerOrderInfoLockManager (ConsumerOrderInfoLockManager before 5.4): after every
# orderly pop, ack and change of invisible time the queue's lock-free time is re-armed on a
# HashedWheelTimer (enableNotifyAfterPopOrderLockRelease, true by default in every 5.x release);
# when it fires, held pops of the group for the topic run again if the queue has messages past
# its consume offset (PopMessageProcessor.notifyLongPollingRequestIfNeed).
ORDER_LOCK_FREE_TICK_MS = 100           # the timer's tick (TIMER_TICK_MS)


def order_lock_free_time(offsets, acked, pop_time: int, invisible_time: int, next_visible: dict, now: int):
    """OrderInfo.getLockFreeTimestamp: the next visible time of the first un-acked offset still
    invisible at `now`; `now` when none is; None for an empty pop or one without an invisible time."""
    if not offsets:
        return None
    for o in offsets:
        if o not in acked:
            if not invisible_time or invisible_time <= 0:
                return None
            t = next_visible.get(o, pop_time + invisible_time)
            if now < t:
                return t
    return now


def wheel_fire_time(started: int, due: int, tick: int = ORDER_LOCK_FREE_TICK_MS) -> int:
    """When Netty's HashedWheelTimer, started at `started`, runs a task due at `due` (>= now): the
    task sits in the bucket of tick (due - started) // tick and runs when that tick ends."""
    return started + ((due - started) // tick + 1) * tick


# --- assignment (QueryAssignmentProcessor) ----------------------------------------------------
DEFAULT_POP_SHARE_QUEUE_NUM = -1        # BrokerConfig.defaultPopShareQueueNum
ALL_QUEUES = -1                         # allocate4Pop: queue id -1 = "pop any queue of the topic on this broker"
# BrokerConfig.defaultMessageRequestMode is PULL; a retry topic is always PULL (QueryAssignmentProcessor)


def pop_shares_all(pop_share_queue_num: int, clients: int) -> bool:
    """QueryAssignmentProcessor.allocate4Pop: every client pops every queue (queue id -1) when
    popShareQueueNum <= 0 or >= clients - 1."""
    return pop_share_queue_num <= 0 or pop_share_queue_num >= clients - 1
