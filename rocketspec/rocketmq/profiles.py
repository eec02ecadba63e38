"""Version profiles: every behaviour switch that differs between RocketMQ releases, as data.

A profile names a release (or a release with a known defect) and fixes each switch. The
reference and the spec both take a profile; neither branches on version strings. Sources
are cited per switch as RocketMQ classes and methods, sections of docs/rocketmq-facts.md ("digest
section N" is section N there) and upstream issues.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace

from rocketspec.errors import UserError

from .delays import DEFAULT_DELAY_LEVELS

# A client's timing settings as traces carry them (client_started.config key -> the Profile
# field that is their default). The reference writes them, the spec reads them
# (spec.limits), a scenario's [real] table sets them: one table for all three.
CLIENT_TIMING_KEYS = {
    "client_lock_max_live_ms": "client_lock_max_live_ms",  # rocketmq.client.rebalance.lockMaxLiveTime
    "lock_interval_ms": "client_lock_interval_ms",         # rocketmq.client.rebalance.lockInterval
    "rebalance_interval_ms": "rebalance_interval_ms",      # rocketmq.client.rebalance.waitInterval
    "max_time_consume_continuously_ms": "max_time_consume_continuously_ms",
    "persist_consumer_offset_interval_ms": "persist_offset_interval_ms",
    "pull_max_idle_ms": "pull_max_idle_ms",                # rocketmq.client.pull.pullMaxIdleTime
    "unlock_delay_ms": "unlock_delay_ms",                  # rocketmq.client.unlockDelayTimeMills
}

# The broker's idle close (NettyServerConfig.serverChannelMaxIdleTimeSeconds, in seconds as
# RocketMQ takes it): a scenario's [real] table sets it, `rocketspec record` passes it to the real
# broker, the reference broker closes a client channel idle that long. Traces carry it in ms
# (broker_started.config).
SERVER_CHANNEL_MAX_IDLE_KEY = "server_channel_max_idle_s"
SERVER_CHANNEL_MAX_IDLE_TRACE_KEY = "server_channel_max_idle_ms"
SERVER_CHANNEL_MAX_IDLE_S = 120
BROKER_TIMING_KEYS = {SERVER_CHANNEL_MAX_IDLE_KEY: "server_channel_max_idle_s"}


@dataclass(frozen=True)
class Profile:
    name: str
    release: str
    description: str = ""
    # Known-bug profiles: the upstream issue reproduced and the invariant that must flag it.
    known_bug: str | None = None
    expected_violation: str | None = None

    # ---- timing constants (client and broker system properties) -------------------------
    rebalance_interval_ms: int = 20000           # RebalanceService waitInterval
    rebalance_retry_unbalanced_ms: int | None = 1000  # 5.x re-runs after minInterval when unbalanced
    dispatch_pull_delay_ms: int = 500            # 5.x executePullRequestLater(500); 4.9.x immediate
    persist_offset_interval_ms: int = 5000       # persistConsumerOffsetInterval
    persist_offset_initial_delay_ms: int = 10000
    broker_offset_flush_interval_ms: int = 5000  # flushConsumerOffsetInterval
    broker_offset_flush_initial_delay_ms: int = 10000
    pull_max_idle_ms: int = 120000               # PULL_MAX_IDLE_TIME
    pull_delay_when_exception_ms: int = 1000     # ClientConfig.pullTimeDelayMillsWhenException
    pull_delay_when_flow_control_ms: int = 50
    pull_delay_when_suspend_ms: int = 1000
    consume_failed_resubmit_ms: int = 5000       # send-back failure -> resubmit
    channel_expired_ms: int = 120000             # broker drops a silent client channel
    # the broker's IdleStateHandler(0, 0, N) closes a channel with no read or write for N s
    server_channel_max_idle_s: int = SERVER_CHANNEL_MAX_IDLE_S
    # a pull the broker never answers fails when scanResponseTable finds it past its timeout
    # (CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND) plus the scan's 1000 ms
    pull_suspend_timeout_ms: int = 30000
    response_timeout_grace_ms: int = 1000
    heartbeat_interval_ms: int = 30000
    # a client's new connection to a broker (after the broker closed the old one) sends that
    # broker a heartbeat at once and rebalances (MQClientInstance's onChannelActive listener,
    # #7296/#7324, 5.1.4); 4.9.x registers again at its next scheduled heartbeat
    heartbeat_on_reconnect: bool = True

    # ---- locks (sections 3, 4, 6) --------------------------------------------------------
    client_lock_max_live_ms: int = 30000         # REBALANCE_LOCK_MAX_LIVE_TIME (client)
    client_lock_interval_ms: int = 20000         # REBALANCE_LOCK_INTERVAL
    broker_lock_max_live_ms: int = 60000         # broker REBALANCE_LOCK_MAX_LIVE_TIME
    max_time_consume_continuously_ms: int = 60000
    unlock_delay_ms: int = 20000                 # UNLOCK_DELAY_TIME_MILLS
    pq_locked_on_create: bool = True             # #5465 fixed 4.9.5
    orderly_remove_style: str = "5x"             # "5x" tryRemoveOrderMessageQueue (#7644) | "49x"
    broadcast_orderly_takes_locks: bool = False  # #8772 fixed 5.3.2
    orderly_reconsume_time_plus_one: bool = True  # #6163 fix, 5.1.1
    orderly_first_pull_recompute_bug: bool = False  # #1825: recompute returned -1 -> broker corrects to min
    lock_all_skips_dropped: bool = True          # 5.x lockAll renews only non-dropped pqs; 4.9.x renews every pq in the table

    # ---- offsets (section 8, 10) ---------------------------------------------------------
    controllable_offset: bool = True             # 5.x ControllableOffset (#7634): updateAndFreeze
    offset_illegal_delay_ms: int = 0             # 5.x immediate; 4.9.x 10000 ms
    read_offset_broker_exception_is_not_found: bool = False  # 4.9.x: any MQBrokerException reads as -1
    offset_query_failure_as_not_found: bool = False  # #2708 (<4.9.1): any failure reads as -1
    # no committed offset and min offset 0: the broker answers 0 if offset 0 is "in_memory"
    # (5.x checkInMemByConsumeOffset: an empty queue is QUERY_NOT_FOUND) or "not_on_disk"
    # (4.9.x !checkInDiskByConsumeOffset: an empty queue answers 0)
    broker_zero_if_not_found: str = "in_memory"
    overflow_badly_min_if_zero: bool = False     # #4215, <= 4.9.3
    local_offset_persist_merges: bool = True     # #7740 (4.9.8, 5.2.0); before: rewrite with current mqs only
    reset_offset_duplicates_pull: bool = False   # #2449 (< 4.9.0)
    reset_offset_wait_ms: int = 10000            # MQClientInstance.resetOffset: sleep(10 s) between the drops and the updates
    # an operator's reset written by the broker (BrokerConfig.useServerSideResetOffset, RIP-48, on by
    # default from 5.2.0): assignResetOffset, then the queue's next pull is answered OFFSET_ILLEGAL
    # with the reset offset as nextBeginOffset (GetMessageStatus.OFFSET_RESET); 4.9.x: the client's
    # MQClientInstance.resetOffset only
    server_side_reset: bool = True
    # a new ProcessQueue's start offset written into the client's offset table at once, so a stop
    # before its first consumed batch or pull answer still persists it (no release: #10955, open;
    # RebalanceImpl.updateProcessQueueTableInRebalance only computes it, and persistAll writes
    # only the table's entries)
    offset_entry_on_create: bool = False
    # a first start at CONSUME_FROM_LAST_OFFSET with no stored offset takes each queue's end when
    # start() returns (no release: #9281, open; every release reads maxOffset in the first rebalance,
    # RebalancePushImpl.computePullFromWhereWithException, which start() only wakes at its end:
    # MQClientInstance.rebalanceImmediately, 4.9.8 and 5.5.0)
    last_offset_at_start: bool = False

    # ---- retry, DLQ, schedule (section 5, 7) ---------------------------------------------
    default_max_reconsume_times: int = 16
    retry_dlq_compare: str = "gt_or_locked"      # send to %RETRY% by producer: 4.9.x ">="; 5.1.1+ ">" or group locked
    dlq_clears_delay: bool = True                # #2724 fixed 4.9.2 (consumerSendMsgBack only)
    # a producer send to %RETRY% that handleRetryAndDLQ dead-letters: 4.9.x's caller puts the
    # request's properties back (DELAY included), so the DLQ copy goes through the schedule;
    # 5.0.0+ (#3978) writes DELAY=-1 into them first (digest section 7)
    producer_dlq_keeps_delay: bool = False
    dlq_readable: bool = True                    # 4.9.2+: PERM_WRITE|PERM_READ
    sendback_skips_not_contained: bool = True    # #5481 fixed 5.1.0
    # the fallback send-back (DefaultMQPushConsumerImpl.sendMessageBack's catch, a producer send to
    # %RETRY%) at the context's delay level when it is > 0; every release uses 3 + reconsumeTimes
    # (4.9.8 line 543, 5.5.0 sendMessageBackAsNormalMessage line 799): #3731, open
    fallback_uses_context_delay: bool = False
    delay_levels: str = DEFAULT_DELAY_LEVELS
    retry_queue_nums: int = 1

    # ---- filtering (section 9) -----------------------------------------------------------
    sql_string_functions: bool = True            # CONTAINS/STARTSWITH/ENDSWITH from 5.1.3
    retry_tag_filter_fixed: bool = True          # #7039 fixed 5.1.4
    broker_flow_control_status: bool = True      # 5.x FLOW_CONTROL pull status

    # ---- POP (issue 45; rocketspec.rocketmq.pop) ---------------------------------------------
    pop: bool = True                             # POP consumption (PopMessageProcessor) exists from 5.0
    # a revive read of a checkpoint's message that fails (EscapeBridge.getMessageAsync completes
    # exceptionally) re-puts the checkpoint (rePutCK); every release instead throws in the
    # allOf(...).whenComplete callback (future.getNow), after mergeAndRevive committed the revive
    # offset past the checkpoint, so the message is never revived (#10985, open: 5.3.3 line 557,
    # 5.5.0 PopReviveService line 586)
    revive_read_failure_reputs: bool = False
    # the push consumer in POP mode acks a popped message whose reconsumeTimes is above
    # getMaxReconsumeTimes() (-1 resolved to 16) before the listener (processPopResult, 5.3.1+ line
    # 656); off: above the raw maxReconsumeTimes, as on develop between #8332's fix (ce27e1f) and
    # #8491 (25b1a0e), in no release (#8490): at the default -1 every popped message is acked unseen
    pop_push_limit_resolved: bool = True
    # processPopResult acks a popped message past the limit before any listener call (#8332's
    # fix, 5.3.1+); off: it has no such check (5.0.0 to 5.3.0), so a message past
    # maxReconsumeTimes reaches the listener again, and each failure's revive counts one more
    pop_push_acks_past_limit: bool = True
    # PopReviveService.reviveMsgFromCk skips a checkpoint's message whose store time is later than
    # the checkpoint's pop time ("skip ck from last epoch") and counts it done: no retry copy
    # (5.0.0 to 5.2.0). PopMessageProcessor takes the pop time before it reads the queue, so a
    # message stored in between is popped under an earlier pop time and never revived (#7914,
    # removed by PR #7915 in 5.3.0)
    pop_revive_skips_last_epoch: bool = False
    # PopReviveService.reviveMsgFromCk revives the message getBizMessage read only if its queue
    # offset is the checkpoint's (the fix proposed for #7724, PR #7739, not merged). Every 5.x
    # revives whatever the read returned, and a read at an offset whose commit-log data is gone
    # (retention deletes commit-log files before the consume queue's min offset is corrected)
    # returns the next message whose data exists: another message is put back in its place (#7724)
    revive_checks_read_offset: bool = False
    # the broker's RocksDB POP path (BrokerConfig popConsumerKVServiceInit and
    # popConsumerKVServiceEnable, both off by default in every release; reference.broker.pop_kv):
    # PopConsumerService keeps one record per popped message keyed by its deadline. A scenario's
    # broker_config pop_consumer_kv_service sets it per run
    pop_consumer_kv_service: bool = False
    # PopConsumerService.changeInvisibilityDuration writes the new record, then deletes the old
    # key even when it is the new one's (the new deadline equals the old): the message is never
    # revived (#10276, 5.5.0; PR #10277 in 5.5.1 skips that delete)
    pop_kv_change_deletes_same_key: bool = False
    # PopConsumerService.popAsync fails fast when its group@topic lock is taken, held until another
    # pop's asynchronous read completes: an orderly pop retried with the attempt id the order info
    # holds (a receive whose answer was lost) reads nothing and is held empty, and the client's next
    # receive, under a new attempt id, is blocked by its own first one (#10827, 5.3.3 to 5.5.0).
    # Off: 5.5.1's tryLockForPop, where such a pop waits for the lock
    pop_kv_lock_fails_same_attempt: bool = False
    # the proxy in local mode gives an orderly (FIFO) message the reconsume times under the queue's
    # key, the minimum of the pop's per-offset counts (LocalMessageService.popMessage, 5.5.0 and
    # develop): a message popped again beside fresh offsets counts fewer attempts than it had, and
    # the receive filter passes it beyond max attempts (docs/notes/real-pop.md, runs 25100 and
    # 25106; not reported upstream). On: it reads the offset's own count, as the remoting client does
    proxy_fifo_count_per_offset: bool = False

    extra: dict = field(default_factory=dict, compare=False)

    def switches(self) -> dict:
        d = asdict(self)
        d.pop("extra")
        return d


ROCKETMQ_5_3_3 = Profile(
    name="rocketmq-5.3.3", release="5.3.3",
    description="5.3.x release: every fix in the digest applied.",
    # 5.3.3's PopConsumerService.changeInvisibilityDuration (lines 452-476) deletes the old key
    # unconditionally, as 5.5.0's does (#10276, fixed in 5.5.1)
    pop_kv_change_deletes_same_key=True,
    # 5.3.3's PopConsumerService.popAsync fails fast on the group@topic lock (line 328), as 5.5.0's
    # does (#10827, fixed in 5.5.1)
    pop_kv_lock_fails_same_attempt=True,
)

# Every switch checked against the 5.5.0 source (Maven Central's source jars; 5.5.1's client and
# namesrv jars are not served here, so real runs use 5.5.0): all as in 5.3.3. Where 5.5 differs in
# ways no switch models (the %RETRY% route pick-up of #9780, the client-side orderly reset, the
# fallback send-back's properties) is in docs/profiles.md.
ROCKETMQ_5_5_1 = replace(
    ROCKETMQ_5_3_3, name="rocketmq-5.5.1", release="5.5.1",
    description="Newest 5.x release (real runs on 5.5.0, standing in): the switches of 5.3.3; "
                "docs/profiles.md says where 5.5 differs.",
    pop_kv_change_deletes_same_key=False,      # PR #10277 (#10276): a change keeping the deadline keeps its record
    pop_kv_lock_fails_same_attempt=False,      # tryLockForPop (#10827): a same-attempt orderly pop waits
)

ROCKETMQ_4_9_8 = Profile(
    name="rocketmq-4.9.8", release="4.9.8",
    description="Current 4.x release.",
    rebalance_retry_unbalanced_ms=None,
    dispatch_pull_delay_ms=0,
    orderly_remove_style="49x",
    orderly_reconsume_time_plus_one=False,
    controllable_offset=False,
    offset_illegal_delay_ms=10000,
    read_offset_broker_exception_is_not_found=True,
    broker_zero_if_not_found="not_on_disk",
    retry_dlq_compare="ge",
    sendback_skips_not_contained=False,
    sql_string_functions=False,
    retry_tag_filter_fixed=False,
    broker_flow_control_status=False,
    pop=False,
    broadcast_orderly_takes_locks=True,  # #8772 is fixed only in 5.3.2
    lock_all_skips_dropped=False,
    producer_dlq_keeps_delay=True,
    server_side_reset=False,
    heartbeat_on_reconnect=False,
)

BUG_6163_ROCKETMQ_5_0_0 = Profile(
    name="bug-6163-rocketmq-5.0.0", release="5.0.0",
    description="5.0.0: the broker dead-letters a %RETRY% send only when RECONSUME_TIME > max (RIP-32, no lock "
                "check), while the orderly client still sends RECONSUME_TIME = r; a message whose local retries "
                "are exhausted bounces between %RETRY% and the schedule forever.",
    known_bug="#6163", expected_violation="INV-RETRY-1",
    retry_dlq_compare="gt",
    orderly_reconsume_time_plus_one=False,
    # Fixes that 5.0.0 does not have yet (digest sections 2, 5, 8, 9, 12):
    orderly_remove_style="49x",            # tryRemoveOrderMessageQueue is #7644, 5.2.0
    broadcast_orderly_takes_locks=True,    # #8772, 5.3.2
    sendback_skips_not_contained=False,    # #5481, 5.1.0
    local_offset_persist_merges=False,     # #7740, 5.2.0
    controllable_offset=False,             # #7634, 5.2.0
    sql_string_functions=False,            # 5.1.3
    retry_tag_filter_fixed=False,          # #7039, 5.1.4
    heartbeat_on_reconnect=False,          # #7296, 5.1.4
    server_side_reset=False,               # RIP-48, on by default from 5.2.0
)


# ---- known-bug profiles of the spec issue (#5): each is a current release with only the
# defect's switches reverted, so that the defect is the one thing that differs; the checker
# must flag each with `expected_violation` (see spec/invariants.py).
BUG_4215_ROCKETMQ_4_9_3 = replace(
    ROCKETMQ_4_9_8, name="bug-4215-rocketmq-4.9.3", release="4.9.3",
    description="<= 4.9.3: OFFSET_OVERFLOW_BADLY corrects nextBeginOffset to minOffset when minOffset is 0, "
                "so a consumer whose offset ran past maxOffset starts again from the beginning.",
    known_bug="#4215", expected_violation="INV-PULL-2", overflow_badly_min_if_zero=True)

BUG_1825_ROCKETMQ_4_X = replace(
    ROCKETMQ_4_9_8, name="bug-1825-rocketmq-4.x", release="4.x",
    description="Orderly: the first pull after locking recomputes the offset, the recompute returns -1, "
                "the broker corrects the pull to minOffset and the queue is consumed again from the start.",
    known_bug="#1825", expected_violation="INV-START-1", orderly_first_pull_recompute_bug=True)

BUG_4016_ROCKETMQ_4_9_7 = replace(
    ROCKETMQ_4_9_8, name="bug-4016-rocketmq-4.9.7", release="4.9.7",
    description="Broadcasting: LocalFileOffsetStore.persistAll rewrites offsets.json with the current queues "
                "only; a queue that comes back reads no offset, starts at LAST and skips messages.",
    known_bug="#4016", expected_violation="INV-START-1", local_offset_persist_merges=False)

BUG_5481_ROCKETMQ_5_0_0 = replace(
    ROCKETMQ_5_3_3, name="bug-5481-rocketmq-5.0.0", release="5.0.0",
    description="cleanExpiredMsg sends back a message that is still being consumed; when the listener then "
                "returns RECONSUME_LATER the same copy is sent back a second time (two retry copies).",
    known_bug="#5481", expected_violation="INV-RETRY-3", sendback_skips_not_contained=False,
    server_side_reset=False)

BUG_2449_ROCKETMQ_4_8_0 = replace(
    ROCKETMQ_4_9_8, name="bug-2449-rocketmq-4.8.0", release="4.8.0",
    description="Two resetOffset calls overlap (MQClientInstance.resetOffset, serialized since 4.9.0): the second "
                "writes its offset over the queue's live ProcessQueue that the first one's resume recreated "
                "(INV-OFFSET-1, what check reports first), then removes it undropped (INV-PQ-1); its PullRequest "
                "pulls on beside the new one: two pulls in flight per queue (INV-PULL-1) and continuous duplicate "
                "consumption.",
    known_bug="#2449", expected_violation="INV-OFFSET-1", reset_offset_duplicates_pull=True)

BUG_2708_ROCKETMQ_4_9_0 = replace(
    ROCKETMQ_4_9_8, name="bug-2708-rocketmq-4.9.0", release="4.9.0",
    description="A failed offset query reads as 'no offset' (-1): the new owner of a queue starts at LAST "
                "(skipping messages) or FIRST (re-consuming) instead of the committed offset.",
    known_bug="#2708", expected_violation="INV-START-1", offset_query_failure_as_not_found=True)

BUG_2724_ROCKETMQ_4_9_1 = replace(
    ROCKETMQ_4_9_8, name="bug-2724-rocketmq-4.9.1", release="4.9.1",
    description="The DLQ copy keeps its DELAY property, so it takes an extra trip through the schedule "
                "before it lands in %DLQ%.",
    known_bug="#2724", expected_violation="INV-DLQ-1", dlq_clears_delay=False)

KNOWN_BUG_PROFILES_SPEC = (BUG_4215_ROCKETMQ_4_9_3, BUG_1825_ROCKETMQ_4_X, BUG_4016_ROCKETMQ_4_9_7,
                           BUG_5481_ROCKETMQ_5_0_0, BUG_2449_ROCKETMQ_4_8_0, BUG_2708_ROCKETMQ_4_9_0,
                           BUG_2724_ROCKETMQ_4_9_1)

# ---- liveness bugs of issue 43: a client that waits forever (or for a long while) with messages
# owed. A run that reaches its horizon with nothing waiting on the clock and a message never
# consumed is judged by INV-LIVE-1 (the explorer's and `simulate`'s end "horizon"); their
# scenarios (bug-5465, bug-8772) and scopes (model_checks/scopes.py BUG_SCOPES) end at 30 s.
BUG_5465_ROCKETMQ_4_9_4 = replace(
    ROCKETMQ_4_9_8, name="bug-5465-rocketmq-4.9.4", release="4.9.4",
    description="<= 4.9.4: RebalanceImpl creates an orderly queue's ProcessQueue after locking it at the broker "
                "but leaves it unlocked; pullMessage then defers every pull (not locked in broker). A clustering "
                "client waits for its next lockAll; a broadcasting one never runs lockAll and never consumes.",
    known_bug="#5465", expected_violation="INV-LIVE-1", pq_locked_on_create=False)

BUG_8772_ROCKETMQ_5_3_1 = replace(
    ROCKETMQ_5_3_3, name="bug-8772-rocketmq-5.3.1", release="5.3.1",
    description="< 5.3.2 (and every 4.x): an orderly broadcasting client locks each queue at the broker before "
                "it creates the ProcessQueue; the group's second client is refused and creates none until the "
                "first client's lock, never renewed in broadcasting, expires (60 s) and its next rebalance runs.",
    known_bug="#8772", expected_violation="INV-LIVE-1", broadcast_orderly_takes_locks=True)

LIVENESS_BUG_PROFILES = (BUG_5465_ROCKETMQ_4_9_4, BUG_8772_ROCKETMQ_5_3_1)

# ---- open bugs of issue 43: every release has them, so the bug profile is the release itself
# (its switches unchanged, `known_bug` set) and the clean side is a variant with the fix
# (OPEN_BUG_FIXES), named for it.
BUG_10955_ROCKETMQ_5_5_1 = replace(
    ROCKETMQ_5_5_1, name="bug-10955-rocketmq-5.5.1", release="5.5.1",
    description="Every release (open): a consumer that stops before its offset table has an entry for a queue "
                "(no batch consumed, no pull answered: long polling holds an idle queue's first pull up to 15 s) "
                "persists nothing for it; its restart reads no offset and, at CONSUME_FROM_LAST_OFFSET, starts at "
                "maxOffset, skipping what was stored meanwhile. A broadcasting client always; a clustering group "
                "once retention removed the queue's head (the broker answers 0 only while offset 0 exists).",
    known_bug="#10955", expected_violation="INV-LOSS-1")

FIX_10955_ROCKETMQ_5_5_1 = replace(
    ROCKETMQ_5_5_1, name="fix-10955-rocketmq-5.5.1", release="5.5.1",
    description="5.5.1 with a fix for #10955 (no release has one): the rebalance writes a new ProcessQueue's start "
                "offset into the offset table, so a stop at any time persists it.",
    offset_entry_on_create=True)

BUG_3731_ROCKETMQ_5_5_1 = replace(
    ROCKETMQ_5_5_1, name="bug-3731-rocketmq-5.5.1", release="5.5.1",
    description="Every release (open): when consumerSendMsgBack fails (the message's broker is down), the fallback "
                "producer send to %RETRY% sets delay level 3 + reconsumeTimes and ignores the level the listener "
                "chose (ConsumeConcurrentlyContext.setDelayLevelWhenNextConsume).",
    known_bug="#3731", expected_violation="INV-RETRY-2")

FIX_3731_ROCKETMQ_5_5_1 = replace(
    ROCKETMQ_5_5_1, name="fix-3731-rocketmq-5.5.1", release="5.5.1",
    description="5.5.1 with a fix for #3731 (no release has one): the fallback send-back keeps the context's delay "
                "level when it is above 0.",
    fallback_uses_context_delay=True)

BUG_9281_ROCKETMQ_5_5_1 = replace(
    ROCKETMQ_5_5_1, name="bug-9281-rocketmq-5.5.1", release="5.5.1",
    description="Every release (open): a consumer's first start at CONSUME_FROM_LAST_OFFSET with no stored offset "
                "(broadcasting: its offsets file has none; clustering: the broker has none and does not answer 0) "
                "starts each queue at maxOffset as the first rebalance reads it, and start() only wakes that "
                "rebalance: what is stored after start() returned and before the read is skipped.",
    known_bug="#9281", expected_violation="INV-LOSS-1")

FIX_9281_ROCKETMQ_5_5_1 = replace(
    ROCKETMQ_5_5_1, name="fix-9281-rocketmq-5.5.1", release="5.5.1",
    description="5.5.1 with a proposed fix for #9281 (no release has one): start() reads each subscribed queue's "
                "maxOffset before it returns, and a first start at CONSUME_FROM_LAST_OFFSET with no stored offset "
                "begins there, so nothing stored after start() returned is skipped.",
    last_offset_at_start=True)

OPEN_BUG_PROFILES = (BUG_10955_ROCKETMQ_5_5_1, BUG_3731_ROCKETMQ_5_5_1, BUG_9281_ROCKETMQ_5_5_1)
# open bug -> the fixed variant that takes its scope clean
OPEN_BUG_FIXES = {"#10955": FIX_10955_ROCKETMQ_5_5_1, "#3731": FIX_3731_ROCKETMQ_5_5_1,
                  "#9281": FIX_9281_ROCKETMQ_5_5_1}

# ---- POP bugs of issue 45 (docs/notes/pop-bugs.md). #10985 is open: every release has it, so its
# bug profile is the release and its clean side a variant with the fix (OPEN_BUG_FIXES). Kept out of
# OPEN_BUG_PROFILES, whose tests run every release, 4.9.8 included, which has no POP.
BUG_10985_ROCKETMQ_5_5_1 = replace(
    ROCKETMQ_5_5_1, name="bug-10985-rocketmq-5.5.1", release="5.5.1",
    description="Every release (open): a revive read of a checkpoint's message that fails asynchronously "
                "(getBizMessage completes exceptionally) aborts the revive callback before rePutCK, while "
                "mergeAndRevive has already committed the revive offset past the checkpoint: the un-acked "
                "message is never revived nor retried.",
    known_bug="#10985", expected_violation="INV-POP-LIVE-1")

FIX_10985_ROCKETMQ_5_5_1 = replace(
    ROCKETMQ_5_5_1, name="fix-10985-rocketmq-5.5.1", release="5.5.1",
    description="5.5.1 with the fix proposed for #10985 (PR #10986, not merged): a failed revive read counts as "
                "a failed revive, and the checkpoint is re-put with its invisible time raised (rePutCK).",
    revive_read_failure_reputs=True)

# #8490 was in no release: #8332's fix (ce27e1f, 2024-07-30) compared the raw maxReconsumeTimes
# and #8491 (25b1a0e, 2024-08-05) resolved it, both between 5.3.0 (no such check) and 5.3.1. Its
# profile is develop's 5.3.1-SNAPSHOT of that week, derived from 5.3.3 with that one switch.
BUG_8490_ROCKETMQ_5_3_1_SNAPSHOT = replace(
    ROCKETMQ_5_3_3, name="bug-8490-rocketmq-5.3.1-SNAPSHOT", release="5.3.1-SNAPSHOT",
    description="develop between #8332's fix and #8491 (no release): the push consumer in POP mode compares a "
                "popped message's reconsumeTimes with the raw maxReconsumeTimes, not getMaxReconsumeTimes(); at "
                "the default -1 (16 retries) every popped message, a first delivery included, is acked as past "
                "its retries before any listener call: dropped unconsumed.",
    known_bug="#8490", expected_violation="INV-POP-LOSS-1", pop_push_limit_resolved=False)

# #8332: 5.0.0 to 5.3.0 have no past-limit check in processPopResult (PR #8333, ce27e1f, first in
# 5.3.1). The profile is 5.3.0 as far as this bug goes: 5.3.3 with that one switch (5.3.0 also
# lacks #8772's fix, which is bug-8772-rocketmq-5.3.1's).
BUG_8332_ROCKETMQ_5_3_0 = replace(
    ROCKETMQ_5_3_3, name="bug-8332-rocketmq-5.3.0", release="5.3.0",
    description="<= 5.3.0: the push consumer in POP mode has no past-limit check in processPopResult: a message "
                "whose reconsumeTimes is above maxReconsumeTimes (a failure at the limit delayed by "
                "checkNeedAckOrDelay, or a call longer than the invisible time) is revived with one more count and "
                "handed to the listener again, beyond the limit, for as long as the listener fails and the "
                "message is younger than 4 h (then acked, no DLQ).",
    known_bug="#8332", expected_violation="INV-POP-DLQ-1", pop_push_acks_past_limit=False)

# #7914: 5.0.0 to 5.2.0 revive no message stored after its checkpoint's pop time (PopReviveService
# "skip ck from last epoch", removed by PR #7915, 9b4f16a, first in 5.3.0). The profile is 5.2.0 as
# far as this bug goes: 5.3.3 with that one switch.
BUG_7914_ROCKETMQ_5_2_0 = replace(
    ROCKETMQ_5_3_3, name="bug-7914-rocketmq-5.2.0", release="5.2.0",
    description="<= 5.2.0: the revive skips a checkpoint's message whose store time is later than the checkpoint's "
                "pop time (\"skip ck from last epoch\") and counts it done. A pop takes its pop time before it reads "
                "the queue, so a message stored in between is popped with a later store time: if it is not acked "
                "it is never revived nor retried.",
    known_bug="#7914", expected_violation="INV-POP-LIVE-1", pop_revive_skips_last_epoch=True)

# #10276: 5.5.0's RocksDB POP path (popConsumerKVServiceEnable) deletes a changed message's new record
# when its deadline equals the old one (PR #10277, first in 5.5.1). The profile is 5.5.0 as far as
# this bug goes: 5.5.1 with the KV path on and that one delete.
BUG_10276_ROCKETMQ_5_5_0 = replace(
    ROCKETMQ_5_5_1, name="bug-10276-rocketmq-5.5.0", release="5.5.0",
    description="5.5.0 with the RocksDB POP path on (popConsumerKVServiceEnable; off by default): a change of "
                "invisible time whose new deadline equals the old one writes the new record under the old key, "
                "then deletes that key: the message is held by nothing the revive scans, never revived nor "
                "retried.",
    known_bug="#10276", expected_violation="INV-POP-LIVE-1", pop_consumer_kv_service=True,
    pop_kv_change_deletes_same_key=True)

# #10827: 5.3.3 to 5.5.0's RocksDB POP path fails a pop fast on its group@topic lock, the same-attempt
# retry of an orderly receive included (PopConsumerService.tryLockForPop, first in 5.5.1, waits for
# it). The profile is 5.5.0 as far as this bug goes: 5.5.1 with the KV path on and the fail-fast lock.
BUG_10827_ROCKETMQ_5_5_0 = replace(
    ROCKETMQ_5_5_1, name="bug-10827-rocketmq-5.5.0", release="5.5.0",
    description="5.3.3 to 5.5.0 with the RocksDB POP path on (popConsumerKVServiceEnable; off by default): a pop "
                "that finds its group@topic lock taken (another pop's read still running) reads nothing and is "
                "held empty, the retried receive of an orderly attempt whose answer was lost included. When every "
                "run of that retry meets the lock, the client's next receive draws a new attempt id, and the "
                "queue stays blocked by the lost batch until its invisible time ends, renewed by the proxy for "
                "up to 3 h.",
    known_bug="#10827", expected_violation="INV-POP-ORDER-2", pop_consumer_kv_service=True,
    pop_kv_lock_fails_same_attempt=True)

# #7724 is open (closed stale; PR #7739 closed unmerged): every 5.x has it, so its bug profile is
# the release and its clean side a variant with the PR's check (OPEN_BUG_FIXES).
BUG_7724_ROCKETMQ_5_5_1 = replace(
    ROCKETMQ_5_5_1, name="bug-7724-rocketmq-5.5.1", release="5.5.1",
    description="Every release (open): the revive reads a checkpoint's message by reading one message from its "
                "queue offset on (getBizMessage) and revives what it read without checking its offset. When "
                "retention has deleted the commit-log data at that offset and the consume queue's min offset "
                "is not corrected yet, the read returns the next message whose data exists: that message, "
                "acked or not, is put into the retry topic again, and the checkpoint's own message never comes "
                "back.",
    known_bug="#7724", expected_violation="INV-POP-ACK-1")

FIX_7724_ROCKETMQ_5_5_1 = replace(
    ROCKETMQ_5_5_1, name="fix-7724-rocketmq-5.5.1", release="5.5.1",
    description="5.5.1 with the fix proposed for #7724 (PR #7739, not merged): the revive checks that the message "
                "it read is at the checkpoint's offset, and one that is not counts as not found (nothing put "
                "back).",
    revive_checks_read_offset=True)

# The proxy's FIFO count (a finding of rocketspec's random gRPC runs, not reported upstream): every
# 5.x proxy in local mode has it, so the releases are its bug side and this variant its clean side.
FIX_PROXY_FIFO_COUNT_ROCKETMQ_5_5_1 = replace(
    ROCKETMQ_5_5_1, name="fix-proxy-fifo-count-rocketmq-5.5.1", release="5.5.1",
    description="5.5.1 with a proxy that gives a FIFO message the order info's count of its own offset "
                "(getQueueOffsetMapKey, as the remoting client reads it), not the queue's minimum: a message "
                "is dead-lettered at its max attempts however many fresh offsets its receive holds.",
    proxy_fifo_count_per_offset=True)

POP_BUG_PROFILES = (BUG_10985_ROCKETMQ_5_5_1, BUG_8490_ROCKETMQ_5_3_1_SNAPSHOT, BUG_8332_ROCKETMQ_5_3_0,
                    BUG_7914_ROCKETMQ_5_2_0, BUG_10276_ROCKETMQ_5_5_0)
OPEN_BUG_FIXES["#10985"] = FIX_10985_ROCKETMQ_5_5_1
POP_BUG_PROFILES += (BUG_7724_ROCKETMQ_5_5_1, BUG_10827_ROCKETMQ_5_5_0)
OPEN_BUG_FIXES["#7724"] = FIX_7724_ROCKETMQ_5_5_1

PROFILES: dict[str, Profile] = {p.name: p for p in (ROCKETMQ_4_9_8, ROCKETMQ_5_3_3, ROCKETMQ_5_5_1,
                                                     BUG_6163_ROCKETMQ_5_0_0)}
PROFILES.update({p.name: p for p in KNOWN_BUG_PROFILES_SPEC})
PROFILES.update({p.name: p for p in LIVENESS_BUG_PROFILES})
PROFILES.update({p.name: p for p in OPEN_BUG_PROFILES + tuple(OPEN_BUG_FIXES.values())})
PROFILES.update({p.name: p for p in POP_BUG_PROFILES})
PROFILES[FIX_PROXY_FIFO_COUNT_ROCKETMQ_5_5_1.name] = FIX_PROXY_FIFO_COUNT_ROCKETMQ_5_5_1
DEFAULT_PROFILE = ROCKETMQ_5_3_3.name


def register(profile: Profile) -> Profile:
    PROFILES[profile.name] = profile
    return profile


class UnknownProfile(UserError, ValueError):
    """A profile name that is not registered (bad input: exit code 2 on the command line)."""


def get_profile(name: str | Profile | None) -> Profile:
    if isinstance(name, Profile):
        return name
    if name is None:
        name = DEFAULT_PROFILE
    try:
        return PROFILES[name]
    except KeyError:
        raise UnknownProfile(f"unknown profile {name!r}; known: {', '.join(sorted(PROFILES))}") from None


def derive(base: Profile, **changes) -> Profile:
    return replace(base, **changes)


def switch_names() -> list[str]:
    return [f.name for f in fields(Profile) if f.name not in ("name", "release", "description", "extra")]
