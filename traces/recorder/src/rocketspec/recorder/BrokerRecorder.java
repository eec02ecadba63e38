package rocketspec.recorder;

import io.netty.channel.Channel;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.broker.client.ClientChannelInfo;
import org.apache.rocketmq.broker.client.ConsumerGroupInfo;
import org.apache.rocketmq.broker.client.rebalance.RebalanceLockManager;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.RequestCode;
import org.apache.rocketmq.common.protocol.ResponseCode;
import org.apache.rocketmq.common.protocol.body.LockBatchRequestBody;
import org.apache.rocketmq.common.protocol.body.LockBatchResponseBody;
import org.apache.rocketmq.common.protocol.body.UnlockBatchRequestBody;
import org.apache.rocketmq.common.protocol.heartbeat.ConsumerData;
import org.apache.rocketmq.common.protocol.heartbeat.HeartbeatData;
import org.apache.rocketmq.common.sysflag.MessageSysFlag;
import org.apache.rocketmq.common.topic.TopicValidator;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.remoting.common.RemotingHelper;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.store.CommitLogDispatcher;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.DispatchRequest;
import org.apache.rocketmq.store.MessageStore;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

import static rocketspec.recorder.TraceWriter.event;

/**
 * The broker side of the recorder: RocketMQ's server RPC hook (registrations, pulls held or
 * rejected, offset commits, send-backs, locks), a commit-log dispatcher placed before the one
 * that builds the consume queues (every stored message, before any pull can return it), and a
 * poller of the state without a hook (consumer table, offset table, lock table, topics).
 *
 * <p>Use: {@code new BrokerRecorder(controller, writer).attach(false)} after
 * {@code controller.initialize()} and before {@code start()}; {@code attach(true)} on a running
 * broker begins the trace with a snapshot of its state.
 */
public final class BrokerRecorder {
    private static final long POLL_MS = 20;
    /** RequestCode.POP_MESSAGE (5.x): a concurrent pop commits the queue's pop offset at once. */
    static final int POP_MESSAGE_CODE = 200050;

    private final BrokerController bc;
    private final TraceWriter w;
    private final String broker;
    private final long lockMaxLive;
    private final Object lock = new Object();   // orders the dispatcher against the snapshot and the poller

    private final Set<String> topics = new HashSet<>();
    /** channel remote address -> client id, learnt from heartbeats. */
    private final ConcurrentMap<String, String> clientByAddr = new ConcurrentHashMap<>();
    /** (group, client) -> the channel info last seen in the consumer table. */
    private final Map<String, ClientChannelInfo> registered = new HashMap<>();
    private final Set<String> unregisterRequested = ConcurrentHashMap.newKeySet();
    /** topic@group -> queue -> offset last reported. */
    private final Map<String, Map<Integer, Long>> offsets = new HashMap<>();
    /** (group, origin) -> clients whose send-back the broker is processing. */
    private final Map<String, ArrayDeque<String[]>> pendingSendBack = new HashMap<>();
    /**
     * (group, origin) -> clients whose producer send to %RETRY%group the broker is processing
     * (the orderly consumer's checkReconsumeTimes, the client's fallback): {client, origin}.
     */
    private final Map<String, ArrayDeque<String[]>> pendingProducerSend = new HashMap<>();
    /** The release's tap shows each answer as written (Release.tapAnswers): 5.x, attached before the start. */
    private volatile boolean answersTapped;
    /** (channel address # opaque) of producer sends to %RETRY% whose answer is not written yet (answersTapped). */
    private final Set<String> retrySendsUnanswered = ConcurrentHashMap.newKeySet();
    /**
     * UNIQ_KEY -> the offset id of the first copy a producer stored with it. A producer send to
     * %RETRY% carries the client's ORIGIN_MESSAGE_ID, the unique key of a first copy: this names
     * that copy as the trace does (its own offset id).
     */
    private final Map<String, String> originByUniqKey = new HashMap<>();
    /** Copies stored without ORIGIN_MESSAGE_ID (the fallback send-back's producer copy and what the
     *  schedule delivers of it), named by their first copy: a code-36 send-back of one of them names
     *  the copy itself as its origin (SendMessageProcessor: a blank origin becomes the copy's id). */
    private final Map<String, String> originOfCopy = new java.util.concurrent.ConcurrentHashMap<>();
    /** (origin, reconsume times) -> schedule copies not yet delivered, by msg id. */
    private final Map<String, ArrayDeque<String>> scheduled = new HashMap<>();
    private final Map<RemotingCommand, Object> beforeState = new IdentityHashMap<>();
    private final Map<String, Long> resetSeen = new ConcurrentHashMap<>();
    /**
     * Offset ids of copies the POP recorder reports itself (revive's puts into a POP retry topic:
     * message_revived stores them), which this dispatcher then leaves alone.
     */
    final Set<String> storedElsewhere = ConcurrentHashMap.newKeySet();
    private Poller poller;

    public BrokerRecorder(BrokerController bc, TraceWriter w) {
        this.bc = bc;
        this.w = w;
        this.broker = bc.getBrokerConfig().getBrokerName();
        this.lockMaxLive = (Long) Reflect.getStatic(RebalanceLockManager.class, "REBALANCE_LOCK_MAX_LIVE_TIME");
    }

    /** The broker's configuration as the trace carries it (keys in docs/recorder.md). */
    public Map<String, Object> config() {
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("message_delay_level", bc.getMessageStoreConfig().getMessageDelayLevel());
        c.put("broker_lock_max_live_ms", lockMaxLive);
        c.put("channel_expired_timeout_ms", Release.channelExpiredTimeoutMs(bc));
        c.put("server_channel_max_idle_ms", bc.getNettyServerConfig().getServerChannelMaxIdleTimeSeconds() * 1000L);
        c.put("enable_property_filter", bc.getBrokerConfig().isEnablePropertyFilter());
        c.put("filter_support_retry", bc.getBrokerConfig().isFilterSupportRetry());
        c.put("long_polling_enable", bc.getBrokerConfig().isLongPollingEnable());
        c.put("short_polling_time_ms", bc.getBrokerConfig().getShortPollingTimeMills());
        c.put("flush_consumer_offset_interval_ms", bc.getBrokerConfig().getFlushConsumerOffsetInterval());
        if (popKvService(bc)) {     // absent: RocketMQ's default, off
            c.put("pop_consumer_kv_service", true);
        }
        c.put("version", version());
        return c;
    }

    /** The broker's RocksDB POP path is on (popConsumerKVServiceEnable; 5.x only, read by name). */
    static boolean popKvService(BrokerController bc) {
        try {
            return Boolean.TRUE.equals(bc.getBrokerConfig().getClass().getMethod("isPopConsumerKVServiceEnable")
                .invoke(bc.getBrokerConfig()));
        } catch (NoSuchMethodException e) {
            return false;
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("popConsumerKVServiceEnable", e);
        }
    }

    /** The release the broker's jars are, as RocketMQ names itself ("V5_5_0" reads "5.5.0"). */
    static String version() {
        String v = MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION);
        return v.replaceFirst("^V", "").replaceFirst("_SNAPSHOT$", "-SNAPSHOT").replace('_', '.');
    }

    /** The queue's max offset (5.x declares a ConsumeQueueException that 4.x does not). */
    static long maxOffset(MessageStore store, String topic, int queue) {
        try {
            return store.getMaxOffsetInQueue(topic, queue);
        } catch (Exception e) {
            throw new IllegalStateException("max offset of " + topic + " queue " + queue, e);
        }
    }

    /**
     * Starts observing. snapshot=false: the broker has just been initialized (not started);
     * snapshot=true: it is running, and the trace begins with what it holds now.
     */
    public void attach(boolean snapshot) {
        if (!snapshot) {
            w.emit(event("broker_started").put("broker", broker).put("config", config()));
        }
        installDispatcher();
        bc.registerServerRPCHook(new Hook());
        if (snapshot) {
            synchronized (lock) {   // commits wait for the snapshot, then are reported after it
                // broker_started and the snapshot as of one instant: a client's event about a queue
                // (a pull answered by the running broker) falls before both or after both
                w.holdClock();
                try {
                    w.emit(event("broker_started").put("broker", broker).put("config", config()));
                    installOffsetTable();
                    snapshot();
                } finally {
                    w.releaseClock();
                }
            }
        } else {
            installOffsetTable();
        }
        poller = Poller.start("rocketspec broker poller", POLL_MS, lock, this::poll);
    }

    public void stop() {
        if (poller != null) {
            poller.stop();
        }
        synchronized (lock) {
            poll();
        }
    }

    // ------------------------------------------------------------------ store: every message
    @SuppressWarnings("unchecked")
    private void installDispatcher() {
        DefaultMessageStore store = (DefaultMessageStore) bc.getMessageStore();
        // A new list with ours first, swapped in whole: the reput thread may be iterating the old one.
        LinkedList<CommitLogDispatcher> list = new LinkedList<>(store.getDispatcherList());
        list.addFirst(this::dispatched);
        Reflect.set(store, "dispatcherList", list);
    }

    private void dispatched(DispatchRequest r) {
        int tran = MessageSysFlag.getTransactionValue(r.getSysFlag());
        if (tran != MessageSysFlag.TRANSACTION_NOT_TYPE && tran != MessageSysFlag.TRANSACTION_COMMIT_TYPE) {
            return;
        }
        String topic = r.getTopic();
        boolean schedule = TopicValidator.RMQ_SYS_SCHEDULE_TOPIC.equals(topic);
        if (!schedule && !recorded(topic)) {
            return;
        }
        MessageExt m = ((DefaultMessageStore) bc.getMessageStore()).lookMessageByOffset(r.getCommitLogOffset(), r.getMsgSize());
        if (m == null) {
            return;
        }
        synchronized (lock) {
            if (storedElsewhere.remove(m.getMsgId())) {
                return;
            }
            stored(r, topic, schedule, m);
        }
    }

    // ------------------------------------------------------------------ for the POP recorder (5.x)
    Object lock() {
        return lock;
    }

    String brokerName() {
        return broker;
    }

    /** The trace's origin of a stored copy (see origin(MessageExt, String)), under the lock. */
    String originOf(MessageExt m, String topic) {
        synchronized (lock) {
            return origin(m, topic);
        }
    }

    /** Marks this thread as processing a request (code, client): commits it makes are that request's. */
    void processing(int code, String client) {
        request.set(new Object[] {code, client});
    }

    void doneProcessing() {
        request.remove();
    }

    /** The client that sent a request (clientOf), for the POP recorder. */
    String requester(String addr, RemotingCommand req) {
        return clientOf(addr, req);
    }

    /** Waits until the store has dispatched what the commit log holds now (awaitDispatch). */
    void dispatchedSoFar() {
        awaitDispatch();
    }

    private static boolean recorded(String topic) {
        return !TopicValidator.isSystemTopic(topic) && !TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC.equals(topic)
            && !MixAll.isSysConsumerGroup(topic) && !topic.startsWith("rmq_sys_");
    }

    /**
     * An offset table key as {topic, group}, or null when the trace does not record it: a system
     * topic's, or no consumer group's. 5.x's BroadcastOffsetManager (enableBroadcastOffsetStore,
     * on by default) commits the least pulled offset of a broadcasting group's clients under
     * topic@group@broadcast, bookkeeping for proxies that a remoting consumer never reads (its
     * queryInitOffset answers -1 to a client that is not a proxy); a group name cannot hold '@'.
     */
    private static String[] tableKey(String topicAtGroup) {
        String[] tg = topicAtGroup.split("@", 2);
        return tg.length != 2 || !recorded(tg[0]) || tg[1].contains("@") ? null : tg;
    }

    /**
     * The trace's origin of a stored copy: a client-set unique key names the first copy's offset
     * id. A retry, schedule or DLQ copy without ORIGIN_MESSAGE_ID is the fallback's copy of a first
     * copy (DefaultMQPushConsumerImpl.sendMessageBack: setProperties replaces the map that held
     * it with the consumed copy's): its UNIQ_KEY names the first copy.
     */
    private String origin(MessageExt m, String topic) {
        String o = m.getProperty(MessageConst.PROPERTY_ORIGIN_MESSAGE_ID);
        if (o != null && !o.isEmpty() && originOfCopy.containsKey(o)) {
            return originOfCopy.get(o);
        }
        if ((o == null || o.isEmpty()) && (topic.startsWith(MixAll.RETRY_GROUP_TOPIC_PREFIX)
            || topic.startsWith(MixAll.DLQ_GROUP_TOPIC_PREFIX) || TopicValidator.RMQ_SYS_SCHEDULE_TOPIC.equals(topic))) {
            String uniq = m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
            String first = uniq == null ? null : originByUniqKey.get(uniq);
            if (first != null) {
                return first;
            }
        }
        o = Ids.originMsgId(m);
        String first = originByUniqKey.get(o);
        return first == null ? o : first;
    }

    private void stored(DispatchRequest r, String topic, boolean schedule, MessageExt m) {
        String msgId = m.getMsgId();   // the broker's decode gives the offset msg id
        String realTopic = m.getProperty(MessageConst.PROPERTY_REAL_TOPIC);
        if (!schedule && !topic.startsWith(MixAll.RETRY_GROUP_TOPIC_PREFIX) && !topic.startsWith(MixAll.DLQ_GROUP_TOPIC_PREFIX)) {
            String uniq = m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
            if (uniq != null) {
                originByUniqKey.putIfAbsent(uniq, msgId);
            }
        }
        String origin = origin(m, topic);
        String named = m.getProperty(MessageConst.PROPERTY_ORIGIN_MESSAGE_ID);
        if ((named == null || named.isEmpty()) && !origin.equals(msgId) && (schedule
            || topic.startsWith(MixAll.RETRY_GROUP_TOPIC_PREFIX) || topic.startsWith(MixAll.DLQ_GROUP_TOPIC_PREFIX))) {
            originOfCopy.put(msgId, origin);
        }
        String group = groupOf(schedule ? realTopic : topic);
        if (schedule) {
            int level = Integer.parseInt(m.getProperty(MessageConst.PROPERTY_DELAY_TIME_LEVEL));
            boolean toDlq = realTopic != null && realTopic.startsWith(MixAll.DLQ_GROUP_TOPIC_PREFIX);
            // 4.9.8: a producer send's DLQ copy keeps its DELAY and comes here first
            sentBack(group, origin, m.getReconsumeTimes(), toDlq ? "dlq" : "retry", toDlq ? null : level);
            if (!toDlq) {
                // per real topic: several groups may each send back a copy of one message
                scheduled.computeIfAbsent(realTopic + "#" + origin + "#" + m.getReconsumeTimes(), k -> new ArrayDeque<>()).add(msgId);
            }
            w.emit(event("message_scheduled").put("broker", broker).put("msg_id", msgId).put("origin_msg_id", origin)
                .put("delay_level", level).put("deliver_ts", r.getTagsCode()).put("real_topic", realTopic)
                .put("real_queue", Integer.parseInt(m.getProperty(MessageConst.PROPERTY_REAL_QUEUE_ID)))
                .put("offset", r.getConsumeQueueOffset()).put("group", group)
                .put("reconsume_times", m.getReconsumeTimes()).put("topic", topic).put("queue", r.getQueueId()));
            return;
        }
        topicSeen(topic);
        String source;
        if (topic.startsWith(MixAll.DLQ_GROUP_TOPIC_PREFIX)) {
            source = "dlq";
            sentBack(group, origin, m.getReconsumeTimes(), "dlq", null);
        } else if (topic.startsWith(MixAll.RETRY_GROUP_TOPIC_PREFIX)) {
            ArrayDeque<String> q = scheduled.get(topic + "#" + origin + "#" + m.getReconsumeTimes());
            String from = q == null ? null : q.poll();
            if (from != null) {
                source = "schedule";
                w.emit(event("schedule_delivered").put("broker", broker).put("msg_id", from).put("origin_msg_id", origin)
                    .put("delay_level", delayLevelOf(m)).put("real_topic", topic).put("real_queue", r.getQueueId())
                    .put("group", group).put("reconsume_times", m.getReconsumeTimes()));
            } else {
                source = "send_back";
                sentBack(group, origin, m.getReconsumeTimes(), "retry", null);
            }
        } else {
            source = "producer";
        }
        TraceWriter.Event e = event("message_stored").put("topic", topic).put("broker", broker)
            .put("queue", r.getQueueId()).put("offset", r.getConsumeQueueOffset()).put("msg_id", msgId)
            .put("origin_msg_id", origin).put("source", source).put("tags", m.getTags())
            .put("tags_code", r.getTagsCode()).put("keys", m.getKeys()).put("props", userProps(m))
            .put("body_size", m.getBody() == null ? 0 : m.getBody().length)
            .put("reconsume_times", m.getReconsumeTimes());
        String retryTopic = m.getProperty(MessageConst.PROPERTY_RETRY_TOPIC);
        if (retryTopic != null) {
            e.put("retry_topic", retryTopic);
        }
        if (group != null) {
            e.put("group", group);
        }
        w.emit(e);
        if ("dlq".equals(source)) {
            w.emit(event("message_dead_lettered").put("broker", broker).put("group", group).put("msg_id", msgId)
                .put("origin_msg_id", origin).put("reconsume_times", m.getReconsumeTimes())
                .put("offset", r.getConsumeQueueOffset()));
        }
    }

    private static Integer delayLevelOf(MessageExt m) {
        String d = m.getProperty(MessageConst.PROPERTY_DELAY_TIME_LEVEL);
        return d == null ? null : Integer.valueOf(d);
    }

    /**
     * The send-back the broker was processing when this copy was stored, if any: a
     * CONSUMER_SEND_MSG_BACK (the copy's count is the consumed one's + 1) or a producer send to
     * %RETRY% (the copy's count is the request header's).
     */
    private void sentBack(String group, String origin, int storedTimes, String outcome, Integer level) {
        if (group == null) {
            return;
        }
        String key = group + "#" + origin;
        ArrayDeque<String[]> q = pendingSendBack.get(key);
        String[] req = q == null ? null : q.poll();
        boolean producer = false;
        if (req == null) {
            q = pendingProducerSend.get(key);
            req = q == null ? null : q.poll();
            producer = true;
        }
        if (req == null) {
            return;
        }
        TraceWriter.Event e = event("message_sent_back").put("broker", broker).put("group", group)
            .put("msg_id", req[1]).put("origin_msg_id", origin)
            .put("reconsume_times", producer ? storedTimes : Math.max(0, storedTimes - 1)).put("outcome", outcome);
        if (level != null) {
            e.put("delay_level", level);
        }
        if (!producer) {
            e.put("via", "consumer_send_back");   // a producer send's path is the client's to say
        }
        w.emit(e.put("client", req[0]));
    }

    private static Map<String, String> userProps(MessageExt m) {
        Map<String, String> out = new TreeMap<>();
        for (Map.Entry<String, String> p : m.getProperties().entrySet()) {
            if (!MessageConst.STRING_HASH_SET.contains(p.getKey())) {
                out.put(p.getKey(), p.getValue());
            }
        }
        return out;
    }

    private static String groupOf(String topic) {
        if (topic == null) {
            return null;
        }
        if (topic.startsWith(MixAll.RETRY_GROUP_TOPIC_PREFIX)) {
            return topic.substring(MixAll.RETRY_GROUP_TOPIC_PREFIX.length());
        }
        if (topic.startsWith(MixAll.DLQ_GROUP_TOPIC_PREFIX)) {
            return topic.substring(MixAll.DLQ_GROUP_TOPIC_PREFIX.length());
        }
        return null;
    }

    private void topicSeen(String topic) {
        if (topics.contains(topic)) {
            return;
        }
        TopicConfig tc = bc.getTopicConfigManager().getTopicConfigTable().get(topic);
        if (tc == null) {
            return;
        }
        topics.add(topic);
        w.emit(event("topic_created").put("topic", topic).put("broker", broker)
            .put("queue_count", tc.getReadQueueNums()).put("perm", tc.getPerm()).sampled());
    }

    // ------------------------------------------------------------------ offset table: every commit
    /** The request this Netty worker thread is processing (code, client): the broker commits on it. */
    private final ThreadLocal<Object[]> request = new ThreadLocal<>();

    /**
     * ConsumerOffsetManager's table replaced by a view of the same maps that reports each commit
     * where it happens (ObservedOffsetTable): the hook's after-calls of a pull and a persist of one
     * queue, on two threads, need not come in the order of their commits.
     */
    @SuppressWarnings("unchecked")
    private void installOffsetTable() {
        ConcurrentMap<String, ConcurrentMap<Integer, Long>> table =
            (ConcurrentMap<String, ConcurrentMap<Integer, Long>>) Reflect.get(bc.getConsumerOffsetManager(), "offsetTable");
        if (!(table instanceof ObservedOffsetTable)) {
            Reflect.set(bc.getConsumerOffsetManager(), "offsetTable", new ObservedOffsetTable(table, lock,
                new ObservedOffsetTable.Listener() {
                    @Override
                    public void committed(String topicAtGroup, int queue, long offset, Long previous) {
                        tableCommitted(topicAtGroup, queue, offset, previous);
                    }

                    @Override
                    public void erased(String topicAtGroup, int queue, long previous) {
                        tableErased(topicAtGroup, queue, false);
                    }
                }));
        }
    }

    /** The table lost a queue's entry (exact: a map replaced under its key; sampled: seen gone). */
    private void tableErased(String topicAtGroup, int queue, boolean sampled) {
        String[] tg = tableKey(topicAtGroup);
        if (tg == null) {
            return;
        }
        Map<Integer, Long> known = offsets.get(topicAtGroup);
        if (known != null) {
            known.remove(queue);
        }
        TraceWriter.Event e = event("offset_erased").put("group", tg[1]).put("topic", tg[0]).put("broker", broker)
            .put("queue", queue).put("store", "broker");
        w.emit(sampled ? e.sampled() : e);
    }

    /** A commit into the offset table (under the lock), by the request its thread processes. */
    private void tableCommitted(String topicAtGroup, int queue, long offset, Long previous) {
        String[] tg = tableKey(topicAtGroup);
        if (tg == null) {
            return;
        }
        offsets.computeIfAbsent(topicAtGroup, k -> new HashMap<>()).put(queue, offset);
        TraceWriter.Event e = event("offset_committed").put("broker", broker).put("group", tg[1]).put("topic", tg[0])
            .put("queue", queue).put("offset", offset).put("previous", previous);
        Object[] r = request.get();
        if (r != null && (Integer) r[0] == RequestCode.INVOKE_BROKER_TO_RESET_OFFSET) {
            // 5.x's server-side reset (useServerSideResetOffset): the broker writes the reset offset
            // itself (assignResetOffset), an operator's act, not a client's commit
            e.put("source", "reset");
        } else if (r != null) {
            int code = (Integer) r[0];
            e.put("client", r[1]);
            if (code == RequestCode.PULL_MESSAGE) {
                e.put("source", "pull");
            } else if (code == RequestCode.UPDATE_CONSUMER_OFFSET) {
                e.put("source", "persist");
            } else if (code == POP_MESSAGE_CODE) {
                e.put("source", "pop");
            }
        } else {
            // 5.x's POP services commit outside any request: PopBufferMergeService moves a queue's
            // pop offset past what a pop took once its checkpoint is stored; a revive service sets
            // a POP retry topic's first offset (initPopRetryOffset; on the RocksDB POP path the
            // PopConsumerService thread's createRetryTopicIfNeeded)
            String thread = Thread.currentThread().getName();
            if (thread.contains("PopBufferMergeService")) {
                e.put("source", "pop");
            } else if (thread.contains("PopReviveService") || thread.contains("PopConsumerService")) {
                e.put("source", "revive");
            }
        }
        w.emit(e);
    }

    // ------------------------------------------------------------------ snapshot (late attach)
    private void snapshot() {
        synchronized (lock) {
            MessageStore store = bc.getMessageStore();
            for (TopicConfig tc : bc.getTopicConfigManager().getTopicConfigTable().values()) {
                if (!recorded(tc.getTopicName())) {
                    continue;
                }
                topicSeen(tc.getTopicName());
                for (int q = 0; q < tc.getReadQueueNums(); q++) {
                    long max = maxOffset(store, tc.getTopicName(), q);
                    if (max > 0) {
                        w.emit(event("queue_snapshot").put("topic", tc.getTopicName()).put("broker", broker).put("queue", q)
                            .put("min_offset", store.getMinOffsetInQueue(tc.getTopicName(), q)).put("max_offset", max));
                    }
                }
            }
            for (Map.Entry<String, ConcurrentMap<Integer, Long>> e : bc.getConsumerOffsetManager().getOffsetTable().entrySet()) {
                String[] tg = e.getKey().split("@", 2);
                if (tg.length == 2 && tg[1].contains("@")) {
                    continue;   // not a consumer group's (tableKey)
                }
                for (Map.Entry<Integer, Long> q : new TreeMap<>(e.getValue()).entrySet()) {
                    offsets.computeIfAbsent(e.getKey(), k -> new HashMap<>()).put(q.getKey(), q.getValue());
                    w.emit(event("offset_committed").put("broker", broker).put("group", tg[1]).put("topic", tg[0])
                        .put("queue", q.getKey()).put("offset", q.getValue()).put("source", "snapshot"));
                }
            }
            for (Map.Entry<String, Map<MessageQueue, Object>> g : lockTable().entrySet()) {
                for (Map.Entry<MessageQueue, Object> l : new TreeMap<>(g.getValue()).entrySet()) {
                    Object le = l.getValue();
                    w.emit(event("lock_acquired").put("broker", broker).put("group", g.getKey())
                        .put("topic", l.getKey().getTopic()).put("queue", l.getKey().getQueueId())
                        .put("client", Reflect.get(le, "clientId")).put("reason", "snapshot")
                        .put("expires_at", (Long) Reflect.get(le, "lastUpdateTimestamp") + lockMaxLive));
                }
            }
            pollConsumers();
        }
    }

    // ------------------------------------------------------------------ polling
    private void poll() {
        for (TopicConfig tc : bc.getTopicConfigManager().getTopicConfigTable().values()) {
            if (recorded(tc.getTopicName())) {
                topicSeen(tc.getTopicName());
            }
        }
        pollConsumers();
        Map<String, ConcurrentMap<Integer, Long>> table = bc.getConsumerOffsetManager().getOffsetTable();
        for (String key : new ArrayList<>(offsets.keySet())) {
            if (!table.containsKey(key)) {   // removeOffset, scanUnsubscribedTopic
                for (Integer q : new TreeSet<>(offsets.get(key).keySet())) {
                    tableErased(key, q, true);
                }
                offsets.remove(key);
            }
        }
        for (Map.Entry<String, ConcurrentMap<Integer, Long>> e : table.entrySet()) {
            String[] tg = tableKey(e.getKey());
            if (tg == null) {
                continue;
            }
            Map<Integer, Long> known = offsets.computeIfAbsent(e.getKey(), k -> new HashMap<>());
            for (Integer q : new TreeSet<>(known.keySet())) {
                if (!e.getValue().containsKey(q)) {
                    tableErased(e.getKey(), q, true);
                }
            }
            for (Map.Entry<Integer, Long> q : new TreeMap<>(e.getValue()).entrySet()) {
                Long before = known.get(q.getKey());
                if (!q.getValue().equals(before)) {
                    known.put(q.getKey(), q.getValue());
                    TraceWriter.Event ev = event("offset_committed").put("broker", broker).put("group", tg[1])
                        .put("topic", tg[0]).put("queue", q.getKey()).put("offset", q.getValue()).put("previous", before);
                    Long reset = resetSeen.get(tg[1] + "#" + tg[0]);
                    if (reset != null && System.currentTimeMillis() - reset < 10_000) {
                        ev.put("source", "reset");
                    }
                    w.emit(ev.sampled());
                }
            }
        }
    }

    @SuppressWarnings("unchecked")
    private void pollConsumers() {
        ConcurrentMap<String, ConsumerGroupInfo> table =
            (ConcurrentMap<String, ConsumerGroupInfo>) Reflect.get(bc.getConsumerManager(), "consumerTable");
        Set<String> present = new HashSet<>();
        for (Map.Entry<String, ConsumerGroupInfo> g : table.entrySet()) {
            for (ClientChannelInfo ci : g.getValue().getChannelInfoTable().values()) {
                String key = g.getKey() + "\u0000" + ci.getClientId();
                present.add(key);
                if (!registered.containsKey(key)) {
                    w.emit(event("consumer_registered").put("broker", broker).put("group", g.getKey())
                        .put("client", ci.getClientId()).sampled());
                }
                registered.put(key, ci);
                clientByAddr.put(RemotingHelper.parseChannelRemoteAddr(ci.getChannel()), ci.getClientId());
            }
        }
        for (String key : new ArrayList<>(registered.keySet())) {
            if (present.contains(key)) {
                continue;
            }
            ClientChannelInfo ci = registered.remove(key);
            String[] gc = key.split("\u0000", 2);
            if (unregisterRequested.remove(key)) {
                continue;   // reported by the UNREGISTER_CLIENT hook
            }
            long idle = System.currentTimeMillis() - ci.getLastUpdateTimestamp();
            long expiry = Release.channelExpiredTimeoutMs(bc);
            // Gone without an unregister request: the scan found it expired, or its channel closed
            // (the client's socket closed, or the broker's idle handler closed it).
            String reason = idle > expiry ? "channel_expired" : "channel_closed";
            w.emit(event("consumer_unregistered").put("broker", broker).put("group", gc[0]).put("client", gc[1])
                .put("reason", reason).sampled());
        }
    }

    private final ThreadLocal<java.util.concurrent.locks.Lock> heldManagerLock = new ThreadLocal<>();

    /** RebalanceLockManager's lock (its field `lock`), or null where a release has none. */
    private java.util.concurrent.locks.Lock managerLock() {
        try {
            Object l = Reflect.get(bc.getRebalanceLockManager(), "lock");
            return l instanceof java.util.concurrent.locks.ReentrantLock ? (java.util.concurrent.locks.Lock) l : null;
        } catch (RuntimeException e) {
            return null;
        }
    }

    /** Releases the manager's lock a lock or unlock request took in its before-hook. */
    private void releaseManagerLock() {
        java.util.concurrent.locks.Lock l = heldManagerLock.get();
        if (l != null) {
            heldManagerLock.remove();
            l.unlock();
        }
    }

    @SuppressWarnings("unchecked")
    private Map<String, Map<MessageQueue, Object>> lockTable() {
        return (Map<String, Map<MessageQueue, Object>>) Reflect.get(bc.getRebalanceLockManager(), "mqLockTable");
    }

    /** The lock entries of a lock or unlock request's queues before the broker handles it; the
     *  after-hook reports what changed against them. The request holds the lock manager's own lock
     *  from here to its after-hook (ReentrantLock: the manager's tryLockBatch/unlockBatch take it
     *  again in this thread), so no other lock request runs between the two views. */
    private void rememberLockHolders(RemotingCommand req, String group, Set<MessageQueue> mqs) {
        java.util.concurrent.locks.Lock l = managerLock();
        if (l != null) {
            l.lock();
            heldManagerLock.set(l);
        }
        Map<MessageQueue, String> holders = new HashMap<>();
        lockEntries(group, mqs, holders);
        synchronized (beforeState) {
            beforeState.put(req, holders);
        }
    }

    private Map<MessageQueue, long[]> lockEntries(String group, Set<MessageQueue> mqs, Map<MessageQueue, String> holders) {
        Map<MessageQueue, long[]> out = new HashMap<>();
        Map<MessageQueue, Object> t = lockTable().get(group);
        for (MessageQueue mq : mqs) {
            Object o = t == null ? null : t.get(mq);
            if (o != null) {
                // LockEntry is package-private: read its two fields.
                out.put(mq, new long[] {(Long) Reflect.get(o, "lastUpdateTimestamp")});
                holders.put(mq, (String) Reflect.get(o, "clientId"));
            }
        }
        return out;
    }

    /**
     * Sees each answer the broker writes from now on, where the release can show them
     * (Release.tapAnswers); before the broker starts, after every other observer of its encoder.
     */
    public void tapAnswers() {
        answersTapped = Release.tapAnswers(bc, this::answerWritten);
    }

    /**
     * An answer about to be written (answersTapped). A 5.x broker answers a producer send from its
     * asynchronous put's callback, after the after-hook has run: the dispatch wait for a send to
     * %RETRY% (awaitDispatch) happens here, the last point before the client can learn the answer.
     */
    private void answerWritten(String addr, RemotingCommand answer) {
        if (!retrySendsUnanswered.isEmpty() && retrySendsUnanswered.remove(addr + "#" + answer.getOpaque())) {
            awaitDispatch();
        }
    }

    // ------------------------------------------------------------------ the RPC hook
    private final class Hook implements RPCHook {
        @Override
        public void doBeforeRequest(String addr, RemotingCommand req) {
            releaseManagerLock();   // a request of this thread whose after-hook never ran (it threw)
            try {
                before(addr, req);
            } catch (RuntimeException e) {
                System.err.println("rocketspec broker hook (before " + req.getCode() + "): " + e);
            }
        }

        @Override
        public void doAfterResponse(String addr, RemotingCommand req, RemotingCommand resp) {
            try {
                after(addr, req, resp);
            } catch (RuntimeException e) {
                System.err.println("rocketspec broker hook (after " + req.getCode() + "): " + e);
            } finally {
                releaseManagerLock();
            }
        }
    }

    /**
     * {group, origin} of a producer send to %RETRY%group (SEND_MESSAGE names its fields, V2 gives
     * them letters: b the topic, i the properties), else null. The origin is the message's
     * ORIGIN_MESSAGE_ID as the trace names it.
     */
    private String[] retrySend(RemotingCommand req) {
        boolean v2 = req.getCode() == RequestCode.SEND_MESSAGE_V2;
        String topic = ext(req, v2 ? "b" : "topic");
        if (topic == null || !topic.startsWith(MixAll.RETRY_GROUP_TOPIC_PREFIX)) {
            return null;
        }
        String text = ext(req, v2 ? "i" : "properties");
        if (text == null) {
            return null;
        }
        Map<String, String> props = MessageDecoder.string2messageProperties(text);
        String o = props.get(MessageConst.PROPERTY_ORIGIN_MESSAGE_ID);
        synchronized (lock) {
            if (o == null || o.isEmpty()) {
                // the fallback's copy of a first copy: setProperties gave it the consumed copy's map,
                // without ORIGIN_MESSAGE_ID but with its UNIQ_KEY
                String uniq = props.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
                String first = uniq == null ? null : originByUniqKey.get(uniq);
                return first == null ? null : new String[] {topic.substring(MixAll.RETRY_GROUP_TOPIC_PREFIX.length()), first};
            }
            String first = originByUniqKey.get(o);
            return new String[] {topic.substring(MixAll.RETRY_GROUP_TOPIC_PREFIX.length()), first == null ? o : first};
        }
    }

    private String ext(RemotingCommand req, String key) {
        return req.getExtFields() == null ? null : req.getExtFields().get(key);
    }

    /**
     * The client that sent a request: the id its recorder's RPC hook put in the request
     * (ClientRecorder.CLIENT_FIELD), exact on any connection; else the one the connection's last
     * heartbeat named; else the connection's address (a client without a recorder).
     */
    private String clientOf(String addr, RemotingCommand req) {
        String named = ext(req, ClientRecorder.CLIENT_FIELD);
        if (named != null) {
            return named;
        }
        return clientByAddr.getOrDefault(addr, addr);
    }

    private void before(String addr, RemotingCommand req) {
        // processRequest runs next on this thread, between this call and the after-call
        request.set(new Object[] {req.getCode(), clientOf(addr, req)});
        switch (req.getCode()) {
            case RequestCode.CONSUMER_SEND_MSG_BACK: {
                // Look up the consumed copy as the broker will: its ORIGIN_MESSAGE_ID or its own id.
                MessageExt m = bc.getMessageStore().lookMessageByOffset(Long.parseLong(ext(req, "offset")));
                if (m != null) {
                    synchronized (lock) {
                        pendingSendBack.computeIfAbsent(ext(req, "group") + "#" + origin(m, m.getTopic()), k -> new ArrayDeque<>())
                            .add(new String[] {clientOf(addr, req), m.getMsgId()});
                    }
                }
                break;
            }
            case RequestCode.SEND_MESSAGE:
            case RequestCode.SEND_MESSAGE_V2: {
                String[] send = retrySend(req);
                if (send != null) {
                    synchronized (lock) {
                        pendingProducerSend.computeIfAbsent(send[0] + "#" + send[1], k -> new ArrayDeque<>())
                            .add(new String[] {clientOf(addr, req), send[1]});
                    }
                    if (answersTapped) {
                        // noted before processing: the put's callback may write the answer before the after-hook runs
                        retrySendsUnanswered.add(addr + "#" + req.getOpaque());
                    }
                }
                break;
            }
            case RequestCode.LOCK_BATCH_MQ: {
                LockBatchRequestBody b = LockBatchRequestBody.decode(req.getBody(), LockBatchRequestBody.class);
                rememberLockHolders(req, b.getConsumerGroup(), b.getMqSet());
                break;
            }
            case RequestCode.UNLOCK_BATCH_MQ: {
                UnlockBatchRequestBody b = UnlockBatchRequestBody.decode(req.getBody(), UnlockBatchRequestBody.class);
                rememberLockHolders(req, b.getConsumerGroup(), b.getMqSet());
                break;
            }
            case RequestCode.UNREGISTER_CLIENT: {
                String key = ext(req, "consumerGroup") + "\u0000" + ext(req, "clientID");
                if (ext(req, "consumerGroup") != null) {
                    unregisterRequested.add(key);
                }
                break;
            }
            default:
                break;
        }
    }

    private Object takeBefore(RemotingCommand req) {
        synchronized (beforeState) {
            return beforeState.remove(req);
        }
    }

    /** How long a send-back's answer may wait for the store's dispatch of what it stored. */
    private static final long DISPATCH_WAIT_NS = 2_000_000_000L;

    /**
     * Called in the after-hook of a send-back (CONSUMER_SEND_MSG_BACK, or a producer send to
     * %RETRY%), which runs before the broker writes the answer, or, where the answer is written
     * after that hook (answersTapped: a 5.x send), as the answer is written: waits until the store's reput
     * thread has dispatched everything the commit log held by now, the copy this request stored
     * among it. The dispatcher reports message_sent_back when it sees that copy, so the event comes
     * before the client can learn that the send-back succeeded, remove the message and commit
     * past it; ReputMessageService dispatches asynchronously (every 1 ms), and without the wait its
     * report could come after such a commit. The answer is held for that lag (about 1 ms).
     */
    private void awaitDispatch() {
        MessageStore s = bc.getMessageStore();
        if (!(s instanceof DefaultMessageStore)) {
            return;
        }
        long target = s.getMaxPhyOffset();
        Object reput = Reflect.get(s, "reputMessageService");
        long deadline = System.nanoTime() + DISPATCH_WAIT_NS;
        // ReputMessageService calls the dispatchers of a message, then advances reputFromOffset
        while ((Long) Reflect.get(reput, "reputFromOffset") < target && System.nanoTime() < deadline) {
            java.util.concurrent.locks.LockSupport.parkNanos(100_000L);
        }
    }

    @SuppressWarnings("unchecked")
    private void after(String addr, RemotingCommand req, RemotingCommand resp) {
        request.remove();
        String client = clientOf(addr, req);
        if (req.getCode() == RequestCode.CONSUMER_SEND_MSG_BACK
            || (!answersTapped && (req.getCode() == RequestCode.SEND_MESSAGE || req.getCode() == RequestCode.SEND_MESSAGE_V2)
                && retrySend(req) != null)) {
            awaitDispatch();
        }
        switch (req.getCode()) {
            case RequestCode.HEART_BEAT: {
                HeartbeatData hb = HeartbeatData.decode(req.getBody(), HeartbeatData.class);
                clientByAddr.put(addr, hb.getClientID());
                synchronized (lock) {
                    for (ConsumerData cd : hb.getConsumerDataSet()) {
                        String key = cd.getGroupName() + "\u0000" + hb.getClientID();
                        if (!registered.containsKey(key)) {
                            ConsumerGroupInfo gi = bc.getConsumerManager().getConsumerGroupInfo(cd.getGroupName());
                            ClientChannelInfo ci = null;
                            if (gi != null) {
                                for (Map.Entry<Channel, ClientChannelInfo> e : gi.getChannelInfoTable().entrySet()) {
                                    if (hb.getClientID().equals(e.getValue().getClientId())) {
                                        ci = e.getValue();
                                    }
                                }
                            }
                            if (ci != null) {
                                registered.put(key, ci);
                                w.emit(event("consumer_registered").put("broker", broker).put("group", cd.getGroupName())
                                    .put("client", hb.getClientID()));
                            }
                        }
                    }
                }
                break;
            }
            case RequestCode.UNREGISTER_CLIENT: {
                String group = ext(req, "consumerGroup");
                String id = ext(req, "clientID");
                if (group == null) {
                    break;
                }
                synchronized (lock) {
                    String key = group + "\u0000" + id;
                    if (registered.remove(key) != null) {
                        unregisterRequested.remove(key);
                        w.emit(event("consumer_unregistered").put("broker", broker).put("group", group).put("client", id)
                            .put("reason", "shutdown"));
                    }
                }
                break;
            }
            case RequestCode.PULL_MESSAGE:
                afterPull(req, resp, client);
                break;
            case RequestCode.SEND_MESSAGE:
            case RequestCode.SEND_MESSAGE_V2: {
                String[] send = retrySend(req);
                if (send != null && Release.sendRefused(resp)) {
                    // refused before the store (no group, no permission, ...): nothing to pair
                    synchronized (lock) {
                        ArrayDeque<String[]> q = pendingProducerSend.get(send[0] + "#" + send[1]);
                        if (q != null) {
                            q.removeIf(x -> x[0].equals(client));
                        }
                    }
                }
                break;
            }
            case RequestCode.LOCK_BATCH_MQ: {
                Map<MessageQueue, String> holdersBefore = (Map<MessageQueue, String>) takeBefore(req);
                if (resp == null || resp.getCode() != ResponseCode.SUCCESS) {
                    break;
                }
                LockBatchRequestBody b = LockBatchRequestBody.decode(req.getBody(), LockBatchRequestBody.class);
                LockBatchResponseBody ok = LockBatchResponseBody.decode(resp.getBody(), LockBatchResponseBody.class);
                Map<MessageQueue, String> holders = new HashMap<>();
                Map<MessageQueue, long[]> now = lockEntries(b.getConsumerGroup(), b.getMqSet(), holders);
                synchronized (lock) {
                    for (MessageQueue mq : new java.util.TreeSet<>(b.getMqSet())) {
                        if (ok.getLockOKMQSet().contains(mq)) {
                            String prevHolder = holdersBefore == null ? null : holdersBefore.get(mq);
                            String reason = prevHolder == null ? "new"
                                : prevHolder.equals(b.getClientId()) ? "renewed" : "takeover";
                            long[] e = now.get(mq);
                            w.emit(event("lock_acquired").put("broker", broker).put("group", b.getConsumerGroup())
                                .put("topic", mq.getTopic()).put("queue", mq.getQueueId()).put("client", b.getClientId())
                                .put("reason", reason).put("expires_at", e == null ? null : e[0] + lockMaxLive)
                                .put("previous_holder", prevHolder).put("updated_at", e == null ? null : e[0]));
                        } else {
                            w.emit(event("lock_rejected").put("broker", broker).put("group", b.getConsumerGroup())
                                .put("topic", mq.getTopic()).put("queue", mq.getQueueId()).put("client", b.getClientId())
                                .put("holder", holders.get(mq)));
                        }
                    }
                }
                break;
            }
            case RequestCode.UNLOCK_BATCH_MQ: {
                Map<MessageQueue, String> holdersBefore = (Map<MessageQueue, String>) takeBefore(req);
                UnlockBatchRequestBody b = UnlockBatchRequestBody.decode(req.getBody(), UnlockBatchRequestBody.class);
                Map<MessageQueue, String> holders = new HashMap<>();
                lockEntries(b.getConsumerGroup(), b.getMqSet(), holders);
                synchronized (lock) {
                    for (MessageQueue mq : new java.util.TreeSet<>(b.getMqSet())) {
                        String was = holdersBefore == null ? null : holdersBefore.get(mq);
                        if (was == null) {
                            continue;   // no entry: unlockBatch only logs
                        }
                        String kind = holders.containsKey(mq) ? "lock_release_ignored" : "lock_released";
                        TraceWriter.Event e = event(kind).put("broker", broker).put("group", b.getConsumerGroup())
                            .put("topic", mq.getTopic()).put("queue", mq.getQueueId()).put("client", b.getClientId());
                        if (holders.containsKey(mq)) {
                            e.put("holder", holders.get(mq));
                        }
                        w.emit(e);
                    }
                }
                break;
            }
            case RequestCode.INVOKE_BROKER_TO_RESET_OFFSET:
                if (resp == null || resp.getCode() != ResponseCode.SUCCESS) {
                    break;      // refused (Broker2Client.resetOffset): nothing was reset
                }
                resetSeen.put(ext(req, "group") + "#" + ext(req, "topic"), System.currentTimeMillis());
                break;
            default:
                break;
        }
    }

    private void afterPull(RemotingCommand req, RemotingCommand resp, String client) {
        // A piggybacked offset commit was reported by the offset table as it happened.
        String group = ext(req, "consumerGroup");
        String topic = ext(req, "topic");
        int queue = Integer.parseInt(ext(req, "queueId"));
        TraceWriter.Event base = event("x").put("client", client).put("group", group).put("topic", topic)
            .put("broker", broker).put("queue", queue).put("pull_id", req.getOpaque());
        if (resp == null) {
            if (!Release.pullHeld(req)) {
                return;   // answered outside the hook (5.x writes every stored-message answer so); the client reports it
            }
            // Suspended by long polling: answered later outside the hook (the client sees it).
            TraceWriter.Event e = event("pull_held");
            e.fields.putAll(base.fields);
            w.emit(e.put("offset", Long.parseLong(ext(req, "queueOffset"))));
            return;
        }
        int code = resp.getCode();
        if (code == ResponseCode.SUCCESS || code == ResponseCode.PULL_NOT_FOUND
            || code == ResponseCode.PULL_RETRY_IMMEDIATELY || code == ResponseCode.PULL_OFFSET_MOVED) {
            return;   // an answer: the client reports it with what it put into its ProcessQueue
        }
        TraceWriter.Event e = event("pull_failed");
        e.fields.putAll(base.fields);
        w.emit(e.put("reason", "rejected").put("response_code", code).put("remark", resp.getRemark()));
    }
}
