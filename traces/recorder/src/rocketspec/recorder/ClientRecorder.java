package rocketspec.recorder;

import org.apache.rocketmq.client.consumer.AllocateMessageQueueStrategy;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.PullCallback;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.store.OffsetStore;
import org.apache.rocketmq.client.consumer.store.ReadOffsetType;
import org.apache.rocketmq.client.consumer.store.RemoteBrokerOffsetStore;
import org.apache.rocketmq.client.hook.ConsumeMessageContext;
import org.apache.rocketmq.client.hook.ConsumeMessageHook;
import org.apache.rocketmq.client.impl.consumer.ConsumeMessageOrderlyService;
import org.apache.rocketmq.client.impl.consumer.DefaultMQPushConsumerImpl;
import org.apache.rocketmq.client.impl.consumer.ProcessQueue;
import org.apache.rocketmq.client.impl.consumer.PullResultExt;
import org.apache.rocketmq.client.impl.consumer.RebalancePushImpl;
import org.apache.rocketmq.client.impl.consumer.RebalanceService;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.RequestCode;
import org.apache.rocketmq.common.protocol.ResponseCode;
import org.apache.rocketmq.common.protocol.body.LockBatchRequestBody;
import org.apache.rocketmq.common.protocol.header.ConsumerSendMsgBackRequestHeader;
import org.apache.rocketmq.common.protocol.header.PullMessageRequestHeader;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.protocol.header.QueryConsumerOffsetRequestHeader;
import org.apache.rocketmq.common.protocol.header.SendMessageRequestHeader;
import org.apache.rocketmq.common.protocol.header.SendMessageRequestHeaderV2;
import org.apache.rocketmq.common.protocol.header.QueryConsumerOffsetResponseHeader;
import org.apache.rocketmq.common.protocol.header.UpdateConsumerOffsetRequestHeader;
import org.apache.rocketmq.common.protocol.heartbeat.MessageModel;
import org.apache.rocketmq.common.protocol.heartbeat.SubscriptionData;
import org.apache.rocketmq.remoting.CommandCustomHeader;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

import static rocketspec.recorder.TraceWriter.event;

/**
 * The client side of the recorder, for one {@link DefaultMQPushConsumer}:
 * <pre>{@code
 * TraceWriter w = new TraceWriter("client.jsonl");
 * ClientRecorder rec = new ClientRecorder(w);
 * DefaultMQPushConsumer c = new DefaultMQPushConsumer(null, "GID", rec.rpcHook());
 * c.subscribe("Topic", "*"); c.registerMessageListener(...); // your settings
 * rec.attach(c);   // before start(): hooks, allocation wrapper, client_started
 * c.start();
 * rec.started();    // client_start_returned
 * ...
 * rec.stopping(); c.shutdown(); rec.stopped();   // client_stopped
 * }</pre>
 * Observation points: the RPC hook given to the constructor (pulls issued, offset reads and
 * persists, send-backs, lock requests), the ConsumeMessageHook (listener calls), a wrapping
 * AllocateMessageQueueStrategy (rebalance results), the consumer's PullAPIWrapper replaced by a
 * subclass that reports each pull result it processes (statuses and the messages kept after the
 * tag re-check), and a poller of the ProcessQueue table and the offset store.
 */
public final class ClientRecorder {
    private static final long POLL_MS = 20;
    /**
     * The request field that names the sending client to the broker recorder. The broker knows a
     * connection's client only from its heartbeats, and a client whose channel the broker closed
     * sends its next requests on a new connection, before any heartbeat there. The RPC hook adds
     * it as RocketMQ's own AclClientRPCHook adds its AccessKey: an ext field no header reads.
     */
    public static final String CLIENT_FIELD = "rocketspecClient";

    private final TraceWriter w;
    private final Hook hook = new Hook();
    private DefaultMQPushConsumer consumer;
    private String client;
    private String group;
    private final AtomicLong consumeIds = new AtomicLong();
    /**
     * A pull's {opaque, offset}: set by the wrapped pullKernelImpl on the pulling thread (the RPC
     * hook, on that same thread, fills in the opaque) and carried by the wrapped PullCallback to
     * the thread that processes the result. Two pulls of one queue can be in flight at once (one
     * for a dropped ProcessQueue, one for its successor), so the queue alone does not name it.
     */
    /**
     * Pulls the wrapper is sending, by (queue, offset), until the RPC hook sees the request and
     * fills in its opaque. Not a thread-local: 5.x's client runs the hook of an async request on
     * the channel's event loop (NettyRemotingClient.invokeAsync's channel-future listener).
     */
    private final Map<Map.Entry<MessageQueue, Long>, long[]> pendingPulls = new ConcurrentHashMap<>();
    private final ThreadLocal<long[]> answering = new ThreadLocal<>();
    /** queue -> the last pull issued, for a result whose pull went out before the wrapper was in place. */
    private final Map<MessageQueue, long[]> lastIssued = new ConcurrentHashMap<>();
    /** queue -> the ProcessQueue object announced by pq_created. */
    private final Map<MessageQueue, ProcessQueue> announced = new ConcurrentHashMap<>();
    private final Map<ProcessQueue, Boolean> droppedReported = new IdentityHashMap<>();
    private final Map<ProcessQueue, long[]> lockSeen = new IdentityHashMap<>();
    private final Map<MessageQueue, Long> offsetSeen = new HashMap<>();
    private final Map<MessageQueue, String> lastAnswer = new ConcurrentHashMap<>();
    private volatile Set<MessageQueue> lastAllocated = new TreeSet<>();
    /** commit log offset -> the consumed message (for send-backs, which name it by that offset). */
    private final Map<Long, Object[]> consumed = new ConcurrentHashMap<>();
    /**
     * UNIQ_KEY -> the consumed message last handed to the listener with it: a producer send to
     * %RETRY% (orderly checkReconsumeTimes, the fallback) copies every property of the consumed
     * copy, its unique key among them, and names it no other way.
     */
    private final Map<String, Object[]> consumedByUniqKey = new ConcurrentHashMap<>();
    private final Map<ConsumeMessageContext, Object[]> calls = new IdentityHashMap<>();
    /**
     * The ackIndex a concurrent listener left in its ConsumeConcurrentlyContext, set on the
     * consuming thread when the listener returns (or throws), read by the hook's after-call on
     * that thread: the hook's ConsumeMessageContext does not carry it.
     */
    private final ThreadLocal<Integer> ackIndex = new ThreadLocal<>();
    private volatile boolean stopping;
    private Poller poller;
    /** A push consumer in POP mode (client_type POP_PUSH): its listener calls are POP calls. */
    private boolean pop;

    public ClientRecorder(TraceWriter w) {
        this.w = w;
    }

    /** Pass this to the consumer's constructor: it sees the client's side of every request. */
    public RPCHook rpcHook() {
        return hook;
    }

    public String clientId() {
        return client;
    }

    /** Before attach: the consumer consumes by POP (the broker's assignment answers POP queues). */
    public void popMode() {
        pop = true;
    }

    /** Call after configuring the consumer (subscriptions, listener, settings), before start(). */
    public void attach(DefaultMQPushConsumer c) {
        this.consumer = c;
        this.group = c.getConsumerGroup();
        if (c.getMessageModel() == MessageModel.CLUSTERING) {
            c.changeInstanceNameToPID();   // what start() does; the client id is then final
        }
        this.client = c.buildMQClientId();
        c.setAllocateMessageQueueStrategy(new Allocation(c.getAllocateMessageQueueStrategy()));
        if (c.getMessageListener() instanceof MessageListenerConcurrently
            && !(c.getMessageListener() instanceof AckIndexListener)) {
            c.registerMessageListener(new AckIndexListener((MessageListenerConcurrently) c.getMessageListener()));
        }
        c.getDefaultMQPushConsumerImpl().registerConsumeMessageHook(new ConsumeHook());
        Map<String, Object> subs = new TreeMap<>();
        for (Map.Entry<String, String> s : c.getSubscription().entrySet()) {
            subs.put(s.getKey(), sub("TAG", s.getValue()));
        }
        try {
            for (Map.Entry<String, SubscriptionData> s : c.getDefaultMQPushConsumerImpl().getSubscriptionInner().entrySet()) {
                subs.put(s.getKey(), sub(s.getValue().getExpressionType(), s.getValue().getSubString()));
            }
        } catch (RuntimeException ignored) {
            // no inner subscriptions yet
        }
        if (c.getMessageModel() == MessageModel.CLUSTERING) {
            subs.put(MixAll.getRetryTopic(group), sub("TAG", "*"));
        }
        w.emit(event("client_started").put("client", client).put("group", group)
            .put("consume_mode", c.getMessageListener() instanceof org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly
                ? "ORDERLY" : "CONCURRENTLY")
            .put("message_model", c.getMessageModel().name()).put("subscriptions", subs).put("config", popConfig(c)));
        poller = Poller.start("rocketspec client poller " + client, POLL_MS, this, this::poll);
    }

    /** config(c), and for a POP consumer its request mode and POP settings (5.x getters). */
    private Map<String, Object> popConfig(DefaultMQPushConsumer c) {
        Map<String, Object> m = config(c);
        if (pop) {
            m.put("client_type", "POP_PUSH");
            m.put("message_request_mode", "POP");
            for (String[] g : new String[][] {{"pop_invisible_time", "getPopInvisibleTime"}, {"pop_batch_nums", "getPopBatchNums"},
                {"pop_threshold_for_queue", "getPopThresholdForQueue"}}) {
                try {
                    m.put(g[0], c.getClass().getMethod(g[1]).invoke(c));
                } catch (ReflectiveOperationException e) {
                    throw new IllegalStateException("POP setting " + g[0], e);
                }
            }
        }
        return m;
    }

    private static Map<String, Object> sub(String type, String expr) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("type", type == null ? "TAG" : type);
        m.put("expr", expr);
        return m;
    }

    /** The consumer's settings and the client timing knobs in force (keys in docs/recorder.md). */
    public static Map<String, Object> config(DefaultMQPushConsumer c) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("consume_mode", c.getMessageListener() instanceof org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly
            ? "ORDERLY" : "CONCURRENTLY");
        m.put("message_model", c.getMessageModel().name());
        m.put("strategy", strategyName(c.getAllocateMessageQueueStrategy()));
        m.put("consume_from_where", c.getConsumeFromWhere().name());
        m.put("max_reconsume_times", c.getMaxReconsumeTimes());
        m.put("consume_message_batch_max_size", c.getConsumeMessageBatchMaxSize());
        m.put("pull_batch_size", c.getPullBatchSize());
        m.put("pull_interval", c.getPullInterval());
        m.put("consume_thread_max", c.getConsumeThreadMax());
        m.put("pull_threshold_for_queue", c.getPullThresholdForQueue());
        m.put("pull_threshold_size_for_queue", c.getPullThresholdSizeForQueue());
        m.put("consume_concurrently_max_span", c.getConsumeConcurrentlyMaxSpan());
        m.put("suspend_current_queue_time_millis", c.getSuspendCurrentQueueTimeMillis());
        m.put("consume_timeout", c.getConsumeTimeout());
        m.put("client_lock_max_live_ms", ProcessQueue.REBALANCE_LOCK_MAX_LIVE_TIME);
        m.put("lock_interval_ms", ProcessQueue.REBALANCE_LOCK_INTERVAL);
        m.put("rebalance_interval_ms", Reflect.getStatic(RebalanceService.class, "waitInterval"));
        m.put("max_time_consume_continuously_ms", Reflect.getStatic(ConsumeMessageOrderlyService.class, "MAX_TIME_CONSUME_CONTINUOUSLY"));
        m.put("persist_consumer_offset_interval_ms", c.getPersistConsumerOffsetInterval());
        m.put("pull_max_idle_ms", Reflect.getStatic(ProcessQueue.class, "PULL_MAX_IDLE_TIME"));
        m.put("unlock_delay_ms", Reflect.getStatic(RebalancePushImpl.class, "UNLOCK_DELAY_TIME_MILLS"));
        m.put("heartbeat_broker_interval_ms", c.getHeartbeatBrokerInterval());
        m.put("poll_name_server_interval_ms", c.getPollNameServerInterval());
        return m;
    }

    private static String strategyName(AllocateMessageQueueStrategy s) {
        if (s instanceof Allocation) {
            s = ((Allocation) s).inner;
        }
        String n = s.getName();
        switch (n) {
            case "AVG": return "AVG";
            case "AVG_BY_CIRCLE": return "AVG_BY_CIRCLE";
            case "CONSISTENT_HASH": return "CONSISTENT_HASH";
            case "CONFIG": return "CONFIG";
            case "MACHINE_ROOM": return "MACHINE_ROOM";
            default: return n;
        }
    }

    /** Call just before consumer.shutdown(): ProcessQueues dropped from now on are a shutdown's. */
    /**
     * Call right after consumer.start() returned: client_start_returned. start() only wakes the
     * first rebalance, which reads a first start's LAST offset (#9281): a message stored after
     * this event was stored after start() returned.
     */
    public void started() {
        w.emit(event("client_start_returned").put("client", client).put("group", group));
    }

        public void stopping() {
        stopping = true;
    }

    /** Call after consumer.shutdown() returned. */
    public void stopped() {
        halt();
        w.emit(event("client_stopped").put("client", client).put("group", group));
    }

    /** Stops polling without a client event (the driver reports a kill or a pause itself). */
    public void halt() {
        if (poller != null) {
            poller.stop();
        }
        synchronized (this) {
            poll();
        }
    }

    /** Whether the consumer holds no message in any ProcessQueue (for the driver's quiescence). */
    public boolean idle() {
        if (consumer.getDefaultMQPushConsumerImpl().isPause()) {
            return false;   // suspended, e.g. by an offset reset (10 s before its queues come back)
        }
        for (ProcessQueue pq : consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().values()) {
            if (!pq.isDropped() && (pq.getMsgCount().get() > 0 || pq.hasTempMessage())) {
                return false;
            }
        }
        return true;
    }

    // ------------------------------------------------------------------ ProcessQueues
    private ProcessQueue table(MessageQueue mq) {
        return consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().get(mq);
    }

    private TraceWriter.Event q(String kind, MessageQueue mq) {
        return event(kind).put("client", client).put("group", group).put("topic", mq.getTopic())
            .put("broker", mq.getBrokerName()).put("queue", mq.getQueueId());
    }

    /** Announces the queue's ProcessQueue when the client first pulls for it (the pull's offset is its first). */
    private synchronized void announce(MessageQueue mq, long offset) {
        ProcessQueue pq = table(mq);
        if (pq == null || announced.get(mq) == pq) {
            return;
        }
        ProcessQueue old = announced.get(mq);
        if (old != null) {
            retire(mq, old, true);
        }
        announced.put(mq, pq);
        TraceWriter.Event e = q("pq_created", mq).put("offset", offset).put("from_where", consumer.getConsumeFromWhere().name());
        if (isOrderly()) {
            e.put("locked", pq.isLocked());
        }
        w.emit(e.sampled());
        if (isOrderly()) {
            lockSeen.put(pq, new long[] {pq.isLocked() ? 1 : 0, pq.getLastLockTimestamp()});
        }
    }

    private boolean isOrderly() {
        return consumer.getMessageListener() instanceof org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
    }

    private void retire(MessageQueue mq, ProcessQueue pq, boolean removed) {
        if (!droppedReported.containsKey(pq)) {
            droppedReported.put(pq, true);
            w.emit(q("pq_dropped", mq).put("reason", dropReason(mq)).sampled());
        }
        if (removed) {
            w.emit(q("pq_removed", mq).sampled());
            announced.remove(mq, pq);
            droppedReported.remove(pq);
            lockSeen.remove(pq);
        }
    }

    /** Why RocketMQ dropped it, from what was observed: a shutdown, a lost assignment, an illegal offset. */
    private String dropReason(MessageQueue mq) {
        if (stopping) {
            return "shutdown";
        }
        if (consumer.getDefaultMQPushConsumerImpl().isPause()) {
            return "reset";   // MQClientInstance.resetOffset suspends the consumer, then drops its queues
        }
        if ("OFFSET_ILLEGAL".equals(lastAnswer.get(mq))) {
            return "offset_illegal";
        }
        if (!lastAllocated.contains(mq)) {
            return "reassigned";
        }
        return "pull_expired";
    }

    private void poll() {
        if (consumer == null) {
            return;
        }
        if (poller != null && poller.running()) {
            swapPullWrapper();
        }
        Map<MessageQueue, ProcessQueue> t = consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable();
        for (Map.Entry<MessageQueue, ProcessQueue> a : new ArrayList<>(announced.entrySet())) {
            MessageQueue mq = a.getKey();
            ProcessQueue pq = a.getValue();
            if (t.get(mq) != pq) {
                retire(mq, pq, true);
            } else if (pq.isDropped()) {
                retire(mq, pq, false);
            } else if (isOrderly()) {
                long[] seen = lockSeen.get(pq);
                long locked = pq.isLocked() ? 1 : 0;
                long ts = pq.getLastLockTimestamp();
                if (seen == null || seen[0] != locked || seen[1] != ts) {
                    lockSeen.put(pq, new long[] {locked, ts});
                    w.emit(q("pq_lock_changed", mq).put("locked", locked == 1).put("last_lock_ts", ts).sampled());
                }
            }
        }
        OffsetStore store = consumer.getDefaultMQPushConsumerImpl().getOffsetStore();
        if (store == null) {
            return;
        }
        Map<MessageQueue, Long> table = Release.offsets(store);
        for (Map.Entry<MessageQueue, Long> e : new TreeMap<>(table).entrySet()) {
            long v = e.getValue();
            Long before = offsetSeen.put(e.getKey(), v);
            if (before == null || before != v) {
                // Concurrent consumption raises the value only (updateOffset(mq, offset, true));
                // orderly commits and resets overwrite it.
                w.emit(q("offset_updated", e.getKey()).put("offset", v).put("increase_only", !isOrderly())
                    .put("stored", v).put("store", store instanceof RemoteBrokerOffsetStore ? "remote" : "local").sampled());
            }
        }
        for (MessageQueue mq : new ArrayList<>(offsetSeen.keySet())) {
            if (!table.containsKey(mq)) {
                offsetSeen.remove(mq);
                w.emit(q("offset_removed", mq).put("store", store instanceof RemoteBrokerOffsetStore ? "remote" : "local").sampled());
            }
        }
    }

    // ------------------------------------------------------------------ the RPC hook
    private final class Hook implements RPCHook {
        @Override
        public void doBeforeRequest(String addr, RemotingCommand req) {
            if (client == null) {
                return;
            }
            req.addExtField(CLIENT_FIELD, client);
            try {
                before(req);
            } catch (RuntimeException e) {
                System.err.println("rocketspec client hook (before " + req.getCode() + "): " + e);
            }
        }

        @Override
        public void doAfterResponse(String addr, RemotingCommand req, RemotingCommand resp) {
            if (client == null) {
                return;
            }
            try {
                after(req, resp);
            } catch (RuntimeException e) {
                System.err.println("rocketspec client hook (after " + req.getCode() + "): " + e);
            }
        }
    }

    /** RequestCode.POP_MESSAGE (5.x; the shared sources compile on 4.x too). */
    private static final int POP_MESSAGE = 200050;
    /** MessageConst.PROPERTY_POP_CK: the handle the client keeps on each popped message. */
    private static final String POP_CK = "POP_CK";

    /** pop_requested: a POP_MESSAGE as the client sends it (its header's fields, as they go on the wire). */
    private void popRequested(RemotingCommand req) {
        req.makeCustomHeaderToNet();
        Map<String, String> f = req.getExtFields();
        if (f == null || !group.equals(f.get("consumerGroup"))) {
            return;
        }
        String topic = f.get("topic");
        int queue = Integer.parseInt(f.get("queueId"));
        String bname = f.get("bname");
        if (bname == null) {
            Set<MessageQueue> route = consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl().getTopicSubscribeInfoTable().get(topic);
            bname = route == null || route.isEmpty() ? "" : route.iterator().next().getBrokerName();
        }
        boolean order = Boolean.parseBoolean(f.get("order"));
        TraceWriter.Event e = event("pop_requested").put("client", client).put("group", group).put("topic", topic)
            .put("broker", bname).put("queue", queue).put("pop_id", req.getOpaque())
            .put("invisible_time", Long.parseLong(f.get("invisibleTime"))).put("max_nums", Integer.parseInt(f.get("maxMsgNums")))
            .put("order", order);
        if (f.get("attemptId") != null) {
            e.put("attempt_id", f.get("attemptId"));
        }
        if (f.get("exp") != null) {
            e.put("expr", f.get("exp")).put("expr_type", f.get("expType") == null ? "TAG" : f.get("expType"));
        }
        w.emit(e);
    }

    private void before(RemotingCommand req) {
        if (req.getCode() == POP_MESSAGE) {
            popRequested(req);
            return;
        }
        CommandCustomHeader h = req.readCustomHeader();
        switch (req.getCode()) {
            case RequestCode.PULL_MESSAGE: {
                PullMessageRequestHeader p = (PullMessageRequestHeader) h;
                if (!group.equals(p.getConsumerGroup())) {
                    return;
                }
                MessageQueue mq = new MessageQueue(p.getTopic(), brokerOf(p.getTopic(), p.getQueueId()), p.getQueueId());
                swapPullWrapper();
                announce(mq, p.getQueueOffset());
                long[] token = pendingPulls.remove(new AbstractMap.SimpleImmutableEntry<>(mq, p.getQueueOffset()));
                if (token == null) {
                    token = new long[] {0, p.getQueueOffset()};
                }
                token[0] = req.getOpaque();
                lastIssued.put(mq, token);
                TraceWriter.Event e = q("pull_issued", mq).put("offset", p.getQueueOffset()).put("pull_id", req.getOpaque())
                    .put("max_nums", p.getMaxMsgNums());
                e.put("commit_offset", (p.getSysFlag() & 1) != 0 ? p.getCommitOffset() : -1L);
                if (p.getSubscription() != null) {
                    e.put("expr", p.getSubscription()).put("expr_type", p.getExpressionType() == null ? "TAG" : p.getExpressionType());
                }
                w.emit(e);
                break;
            }
            case RequestCode.UPDATE_CONSUMER_OFFSET: {
                UpdateConsumerOffsetRequestHeader u = (UpdateConsumerOffsetRequestHeader) h;
                if (!group.equals(u.getConsumerGroup())) {
                    return;
                }
                MessageQueue mq = new MessageQueue(u.getTopic(), brokerOf(u.getTopic(), u.getQueueId()), u.getQueueId());
                w.emit(q("offset_persisted", mq).put("offset", u.getCommitOffset()).put("lost", false));
                break;
            }
            case RequestCode.CONSUMER_SEND_MSG_BACK: {
                ConsumerSendMsgBackRequestHeader s = (ConsumerSendMsgBackRequestHeader) h;
                if (!group.equals(s.getGroup())) {
                    return;
                }
                Object[] c = consumed.get(s.getOffset());
                MessageExt m = c == null ? null : (MessageExt) c[0];
                MessageQueue from = c == null ? null : (MessageQueue) c[1];
                TraceWriter.Event e = event("send_back_requested").put("client", client).put("group", group)
                    .put("msg_id", m == null ? null : Ids.msgId(m)).put("origin_msg_id", m == null ? s.getOriginMsgId() : Ids.originMsgId(m))
                    .put("reconsume_times", m == null ? null : m.getReconsumeTimes()).put("delay_level", s.getDelayLevel());
                if (m != null) {
                    e.put("topic", from.getTopic()).put("broker", from.getBrokerName()).put("queue", from.getQueueId())
                        .put("offset", m.getQueueOffset());
                }
                w.emit(e.put("via", "consumer_send_back"));
                break;
            }
            case RequestCode.SEND_MESSAGE:
            case RequestCode.SEND_MESSAGE_V2:
                producerSendBack(h);
                break;
            case RequestCode.LOCK_BATCH_MQ: {
                LockBatchRequestBody b = LockBatchRequestBody.decode(req.getBody(), LockBatchRequestBody.class);
                if (!group.equals(b.getConsumerGroup())) {
                    return;
                }
                String brokerName = b.getMqSet().isEmpty() ? null : b.getMqSet().iterator().next().getBrokerName();
                w.emit(event("lock_requested").put("client", client).put("group", group).put("broker", brokerName)
                    .put("queues", Ids.mqs(b.getMqSet())));
                break;
            }
            default:
                break;
        }
    }

    /**
     * A send by the client instance's inner producer (same connection, same RPC hook) to this
     * group's %RETRY% topic: the orderly consumer's checkReconsumeTimes, or the fallback after a
     * failed CONSUMER_SEND_MSG_BACK. Its delay level is the message's DELAY property; the
     * consumed copy is found by the unique key the new message copies; reconsume_times is the
     * consumed copy's count (the header's RECONSUME_TIME is the broker's to report).
     */
    private void producerSendBack(CommandCustomHeader h) {
        String topic;
        String text;
        if (h instanceof SendMessageRequestHeaderV2) {
            topic = ((SendMessageRequestHeaderV2) h).getB();
            text = ((SendMessageRequestHeaderV2) h).getI();
        } else if (h instanceof SendMessageRequestHeader) {
            topic = ((SendMessageRequestHeader) h).getTopic();
            text = ((SendMessageRequestHeader) h).getProperties();
        } else {
            return;
        }
        if (text == null || !MixAll.getRetryTopic(group).equals(topic)) {
            return;
        }
        Map<String, String> props = MessageDecoder.string2messageProperties(text);
        String uniq = props.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
        Object[] c = uniq == null ? null : consumedByUniqKey.get(uniq);
        if (c == null) {
            return;
        }
        MessageExt m = (MessageExt) c[0];
        MessageQueue from = (MessageQueue) c[1];
        String delay = props.get(MessageConst.PROPERTY_DELAY_TIME_LEVEL);
        w.emit(event("send_back_requested").put("client", client).put("group", group).put("msg_id", Ids.msgId(m))
            .put("origin_msg_id", (String) c[2]).put("reconsume_times", m.getReconsumeTimes())
            .put("delay_level", delay == null ? 0 : Integer.parseInt(delay))
            .put("topic", from.getTopic()).put("broker", from.getBrokerName()).put("queue", from.getQueueId())
            .put("offset", m.getQueueOffset()).put("via", isOrderly() ? "orderly_producer" : "fallback_producer"));
    }

    private void after(RemotingCommand req, RemotingCommand resp) {
        if (req.getCode() != RequestCode.QUERY_CONSUMER_OFFSET) {
            return;
        }
        QueryConsumerOffsetRequestHeader qh = (QueryConsumerOffsetRequestHeader) req.readCustomHeader();
        if (!group.equals(qh.getConsumerGroup()) || resp == null) {
            return;
        }
        long offset;
        if (resp.getCode() == ResponseCode.SUCCESS) {
            try {
                QueryConsumerOffsetResponseHeader r = (QueryConsumerOffsetResponseHeader)
                    resp.decodeCommandCustomHeader(QueryConsumerOffsetResponseHeader.class);
                offset = r.getOffset();
            } catch (Exception e) {
                return;
            }
        } else if (resp.getCode() == ResponseCode.QUERY_NOT_FOUND) {
            offset = -1;
        } else {
            offset = -2;
        }
        MessageQueue mq = new MessageQueue(qh.getTopic(), brokerOf(qh.getTopic(), qh.getQueueId()), qh.getQueueId());
        w.emit(q("offset_read", mq).put("offset", offset).put("source", "store"));
    }

    /** The broker name of a queue: the consumer's topic route (one broker per queue id in these runs). */
    private String brokerOf(String topic, int queueId) {
        for (MessageQueue mq : consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().keySet()) {
            if (mq.getTopic().equals(topic) && mq.getQueueId() == queueId) {
                return mq.getBrokerName();
            }
        }
        Set<MessageQueue> sub = consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl().getTopicSubscribeInfoTable().get(topic);
        if (sub != null) {
            for (MessageQueue mq : sub) {
                if (mq.getQueueId() == queueId) {
                    return mq.getBrokerName();
                }
            }
        }
        return null;
    }

    // ------------------------------------------------------------------ pull results
    private void swapPullWrapper() {
        DefaultMQPushConsumerImpl impl = consumer.getDefaultMQPushConsumerImpl();
        Object cur = Reflect.get(impl, "pullAPIWrapper");
        if (cur == null || cur instanceof TappedPullAPIWrapper) {
            return;
        }
        synchronized (this) {
            cur = Reflect.get(impl, "pullAPIWrapper");
            if (cur instanceof TappedPullAPIWrapper) {
                return;
            }
            MQClientInstance factory = impl.getmQClientFactory();
            TappedPullAPIWrapper rec = new TappedPullAPIWrapper(factory, group, consumer.isUnitMode(), new Tap());
            rec.registerFilterMessageHook(new ArrayList<>());
            Reflect.set(impl, "pullAPIWrapper", rec);
        }
    }

    /** What the release's PullAPIWrapper subclass reports: every pull it sends, every result the consumer processes, every pull that fails. */
    private final class Tap implements PullTap {
        @Override
        public PullCallback issue(MessageQueue mq, long[] token, PullCallback callback) {
            pendingPulls.put(new AbstractMap.SimpleImmutableEntry<>(mq, token[1]), token);
            return callback == null ? null : new PullCallback() {
                @Override
                public void onSuccess(PullResult r) {
                    answering.set(token);
                    try {
                        callback.onSuccess(r);
                    } finally {
                        answering.remove();
                    }
                }

                @Override
                public void onException(Throwable e) {
                    pullFailed(mq, token, e);
                    callback.onException(e);
                }
            };
        }

        @Override
        public void sendFailed(MessageQueue mq, long[] token, Exception e) {
            if (token[0] >= 0) {
                pullFailed(mq, token, e);   // the request went out (the hook saw it), then the send failed
            } else {
                pendingPulls.remove(new AbstractMap.SimpleImmutableEntry<>(mq, token[1]), token);
            }
        }

        @Override
        public PullResult processed(MessageQueue mq, PullResult r, Supplier<PullResult> process) {
            List<MessageExt> returned = null;
            if (r.getPullStatus() == PullStatus.FOUND && r instanceof PullResultExt && ((PullResultExt) r).getMessageBinary() != null) {
                returned = MessageDecoder.decodes(ByteBuffer.wrap(((PullResultExt) r).getMessageBinary()), false);
            }
            PullResult out = process.get();
            try {
                answered(mq, out, returned);
            } catch (RuntimeException e) {
                System.err.println("rocketspec pull result: " + e);
            }
            return out;
        }
    }

    /**
     * A pull that ended in the client's onException. A broker rejection (MQBrokerException) is
     * reported by the broker side with its response code; the rest (timeouts, connections) here.
     */
    private void pullFailed(MessageQueue mq, long[] token, Throwable e) {
        if (e instanceof MQBrokerException || token[0] < 0) {
            return;
        }
        w.emit(q("pull_failed", mq).put("pull_id", (int) token[0]).put("reason", "exception").put("remark", e.toString()));
    }

    private void answered(MessageQueue mq, PullResult r, List<MessageExt> returned) {
        long[] pull = answering.get();
        if (pull == null) {
            pull = lastIssued.get(mq);
        }
        lastAnswer.put(mq, r.getPullStatus().name());
        List<Long> offsets = new ArrayList<>();
        List<String> ids = new ArrayList<>();
        if (r.getMsgFoundList() != null) {
            for (MessageExt m : r.getMsgFoundList()) {
                offsets.add(m.getQueueOffset());
                ids.add(Ids.msgId(m));
            }
        }
        TraceWriter.Event e = q("pull_answered", mq).put("pull_id", pull == null ? null : (int) pull[0])
            .put("offset", pull == null ? null : pull[1])
            .put("status", r.getPullStatus().name()).put("next_offset", r.getNextBeginOffset())
            .put("min_offset", r.getMinOffset()).put("max_offset", r.getMaxOffset())
            .put("offsets", offsets).put("msg_ids", ids);
        if (returned != null) {
            List<Long> filtered = new ArrayList<>();
            for (MessageExt m : returned) {
                if (!offsets.contains(m.getQueueOffset())) {
                    filtered.add(m.getQueueOffset());
                }
            }
            e.put("client_filtered", filtered);
        }
        w.emit(e);
    }

    // ------------------------------------------------------------------ listener calls
    /** The application's concurrent listener, unchanged, with the ackIndex it set noted. */
    private final class AckIndexListener implements MessageListenerConcurrently {
        final MessageListenerConcurrently inner;

        AckIndexListener(MessageListenerConcurrently inner) {
            this.inner = inner;
        }

        @Override
        public ConsumeConcurrentlyStatus consumeMessage(List<MessageExt> msgs, ConsumeConcurrentlyContext ctx) {
            try {
                return inner.consumeMessage(msgs, ctx);
            } finally {
                ackIndex.set(ctx.getAckIndex());
            }
        }
    }

    private final class ConsumeHook implements ConsumeMessageHook {
        @Override
        public String hookName() {
            return "rocketspec-recorder";
        }

        @Override
        public void consumeMessageBefore(ConsumeMessageContext ctx) {
            if (pop && !ctx.getMsgList().isEmpty() && ctx.getMsgList().get(0).getProperty(POP_CK) != null) {
                popConsumeStarted(ctx);
                return;
            }
            MessageQueue mq = ctx.getMq();
            long id = consumeIds.incrementAndGet();
            List<Long> offsets = new ArrayList<>();
            List<String> ids = new ArrayList<>();
            List<String> origins = new ArrayList<>();
            List<Integer> times = new ArrayList<>();
            for (MessageExt m : ctx.getMsgList()) {
                offsets.add(m.getQueueOffset());
                ids.add(Ids.msgId(m));
                origins.add(Ids.originMsgId(m));
                times.add(m.getReconsumeTimes());
                // counted: one stored message may be in two calls at once (a dropped ProcessQueue's
                // and its successor's), and the first to succeed must not forget it for the other
                consumed.merge(m.getCommitLogOffset(), new Object[] {m, mq, 1},
                    (was, now) -> new Object[] {m, mq, (Integer) was[2] + 1});
                String uniq = m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
                if (uniq != null) {
                    // the origin as it is now: sendMessageBack shares this message's property map
                    // with the copy it builds, and writes the copy's ORIGIN_MESSAGE_ID into it
                    consumedByUniqKey.put(uniq, new Object[] {m, mq, Ids.originMsgId(m)});
                }
            }
            synchronized (calls) {
                calls.put(ctx, new Object[] {id, table(mq), offsets});
            }
            w.emit(q("consume_started", mq).put("consume_id", id).put("offsets", offsets).put("msg_ids", ids)
                .put("origin_msg_ids", origins).put("reconsume_list", times));
        }

        @Override
        public void consumeMessageAfter(ConsumeMessageContext ctx) {
            Object[] call;
            synchronized (calls) {
                call = calls.remove(ctx);
            }
            if (call == null) {
                return;
            }
            if ("pop".equals(call[1])) {
                popConsumeFinished(ctx, call);
                return;
            }
            ProcessQueue pq = (ProcessQueue) call[1];
            TraceWriter.Event e = q("consume_finished", ctx.getMq()).put("consume_id", call[0]).put("status", ctx.getStatus())
                .put("dropped", pq != null && pq.isDropped()).put("offsets", call[2]);
            Integer set = ackIndex.get();
            ackIndex.remove();
            int n = ctx.getMsgList().size();
            // processConsumeResult: CONSUME_SUCCESS acknowledges [0..min(ackIndex, size-1)], any
            // other status none; the rest is sent back (clustering) or dropped (broadcasting)
            int ack = n - 1;
            if (!isOrderly() && set != null) {
                ack = ctx.isSuccess() ? Math.min(set, n - 1) : -1;
                e.put("ack_index", ack);
            }
            w.emit(e);
            if (!isOrderly() && ctx.isSuccess()) {
                // the acknowledged ones are done; the rest stay known for the send-backs that follow
                for (int i = 0; i <= ack && i < n; i++) {
                    MessageExt m = ctx.getMsgList().get(i);
                    Object[] left = consumed.computeIfPresent(m.getCommitLogOffset(),
                        (k, was) -> (Integer) was[2] > 1 ? new Object[] {was[0], was[1], (Integer) was[2] - 1} : null);
                    String uniq = m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
                    if (uniq != null && left == null) {
                        consumedByUniqKey.remove(uniq);
                    }
                }
            }
        }
    }

    /**
     * A POP listener call (ConsumeMessagePopConcurrentlyService): its messages' handles, as the
     * client holds them (POP_CK).
     */
    private void popConsumeStarted(ConsumeMessageContext ctx) {
        long id = consumeIds.incrementAndGet();
        List<String> handles = new ArrayList<>();
        List<String> ids = new ArrayList<>();
        List<Integer> times = new ArrayList<>();
        for (MessageExt m : ctx.getMsgList()) {
            handles.add(m.getProperty(POP_CK));
            ids.add(Ids.msgId(m));
            times.add(m.getReconsumeTimes());
        }
        // ConsumeRequest reads the pop time and invisible time of the first message's handle
        String[] first = handles.get(0).split(" ");
        synchronized (calls) {
            calls.put(ctx, new Object[] {id, "pop", Long.parseLong(first[1]), Long.parseLong(first[2])});
        }
        MessageQueue mq = ctx.getMq();
        w.emit(event("pop_consume_started").put("client", client).put("group", group).put("topic", mq.getTopic())
            .put("broker", mq.getBrokerName()).put("consume_id", id).put("handles", handles).put("msg_ids", ids)
            .put("reconsume_list", times));
    }

    /**
     * The call returned. timed_out: ConsumeRequest.isPopTimeout, which the service checks right
     * after the hook, holds (the handle's invisible time ran out), so the client neither acks nor
     * changes anything; else processConsumeResult acks [0..ack_index] and changes the rest.
     */
    private void popConsumeFinished(ConsumeMessageContext ctx, Object[] call) {
        Integer set = ackIndex.get();
        ackIndex.remove();
        int n = ctx.getMsgList().size();
        long popTime = (Long) call[2];
        long invisible = (Long) call[3];
        boolean timedOut = popTime <= 0 || invisible <= 0 || System.currentTimeMillis() - popTime >= invisible;
        int ack = ctx.isSuccess() ? Math.min(set == null ? n - 1 : set, n - 1) : -1;
        w.emit(event("pop_consume_finished").put("client", client).put("group", group).put("consume_id", call[0])
            .put("status", ctx.getStatus()).put("ack_index", ack).put("timed_out", timedOut));
    }

    // ------------------------------------------------------------------ allocation
    private final class Allocation implements AllocateMessageQueueStrategy {
        final AllocateMessageQueueStrategy inner;

        Allocation(AllocateMessageQueueStrategy inner) {
            this.inner = inner;
        }

        @Override
        public List<MessageQueue> allocate(String consumerGroup, String currentCID, List<MessageQueue> mqAll, List<String> cidAll) {
            List<MessageQueue> out = null;
            String error = null;
            try {
                out = inner.allocate(consumerGroup, currentCID, mqAll, cidAll);
                return out;
            } catch (RuntimeException e) {
                error = e.toString();
                throw e;
            } finally {
                report(currentCID, mqAll, cidAll, out, error);
            }
        }

        private void report(String cid, List<MessageQueue> mqAll, List<String> cidAll, List<MessageQueue> out, String error) {
            if (mqAll == null || mqAll.isEmpty()) {
                return;   // no topic to name
            }
            String topic = mqAll.get(0).getTopic();
            List<List<Object>> mqs = new ArrayList<>();
            StringBuilder text = new StringBuilder();
            for (MessageQueue mq : mqAll) {
                mqs.add(Ids.mq(mq));
                text.append(text.length() == 0 ? "" : "|").append(mq.getTopic()).append(',').append(mq.getBrokerName())
                    .append(',').append(mq.getQueueId());
            }
            text.append('#').append(String.join("|", cidAll));
            if (out != null) {
                Set<MessageQueue> mine = new TreeSet<>(lastAllocated);
                mine.removeIf(q -> q.getTopic().equals(topic));
                mine.addAll(out);
                lastAllocated = mine;
            }
            TraceWriter.Event e = event("allocation_computed").put("client", cid).put("group", group).put("topic", topic)
                .put("strategy", strategyName(inner)).put("mqs", mqs).put("cids", new ArrayList<>(cidAll))
                .put("allocated", out == null ? new ArrayList<>() : Ids.mqs(out)).put("view", digest(text.toString()))
                .put("ok", error == null);
            if (error != null) {
                e.put("error", error);
            }
            w.emit(e);
        }

        @Override
        public String getName() {
            return inner.getName();
        }
    }

    /** Digest of a rebalance view: equal views give equal digests (SHA-256, first 8 bytes). */
    static String digest(String text) {
        try {
            byte[] d = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < 8; i++) {
                sb.append(String.format("%02x", d[i]));
            }
            return sb.toString();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
