package rocketspec.recorder;

import com.alibaba.fastjson.JSONObject;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import org.apache.commons.lang3.tuple.Triple;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.broker.processor.PopReviveService;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.common.KeyBuilder;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.Pair;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueueAssignment;
import org.apache.rocketmq.common.message.MessageRequestMode;
import org.apache.rocketmq.remoting.RemotingServer;
import org.apache.rocketmq.remoting.common.RemotingHelper;
import org.apache.rocketmq.remoting.netty.NettyEncoder;
import org.apache.rocketmq.remoting.netty.NettyRequestProcessor;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.RequestCode;
import org.apache.rocketmq.remoting.protocol.ResponseCode;
import org.apache.rocketmq.remoting.protocol.body.BatchAck;
import org.apache.rocketmq.remoting.protocol.body.BatchAckMessageRequestBody;
import org.apache.rocketmq.remoting.protocol.body.QueryAssignmentRequestBody;
import org.apache.rocketmq.remoting.protocol.body.QueryAssignmentResponseBody;
import org.apache.rocketmq.remoting.protocol.body.SetMessageRequestModeRequestBody;
import org.apache.rocketmq.remoting.protocol.header.AckMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.ChangeInvisibleTimeRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.ChangeInvisibleTimeResponseHeader;
import org.apache.rocketmq.remoting.protocol.header.ExtraInfoUtil;
import org.apache.rocketmq.remoting.protocol.header.PopMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.PopMessageResponseHeader;
import org.apache.rocketmq.store.CommitLogDispatcher;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.DispatchRequest;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.pop.PopCheckPoint;
import org.apache.rocketmq.store.timer.TimerMessageStore;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;

import static rocketspec.recorder.TraceWriter.event;

/**
 * The broker side of POP consumption on a 5.x broker (docs/recorder.md, "POP"). Observation points:
 * <ul>
 * <li>the POP request processors (POP_MESSAGE, ACK_MESSAGE, BATCH_ACK_MESSAGE,
 * CHANGE_MESSAGE_INVISIBLETIME, QUERY_ASSIGNMENT) re-registered wrapped, with their executors,
 * and the pop long-polling service's processor wrapped too (a held pop is processed again there,
 * outside the RPC hooks);</li>
 * <li>the remoting servers' encoder, which sees each answer as the broker writes it to the
 * channel: PopMessageProcessor answers a pop asynchronously (a future writes it), so only the
 * channel sees a pop's answer and the messages it hands out;</li>
 * <li>a commit-log dispatcher, first in the store's list: the checkpoints the pops and changes
 * append to the revive log (through the timer wheel), and revive's copies in the POP retry
 * topics;</li>
 * <li>the revive services (AckMessageProcessor's array), replaced before the broker starts by
 * subclasses that note each checkpoint offset revive reads the message of (getBizMessage, the
 * step just before reviveRetry puts the copy);</li>
 * <li>with the RocksDB POP path on, PopConsumerService's store, wrapped (KvStoreTap): its records
 * are the checkpoints, and a revive scan's records the offsets revive reads next.</li>
 * </ul>
 */
final class PopRecorder implements PopObserver, KvStoreTap.Sink {
    private final BrokerController bc;
    private final BrokerRecorder br;
    private final TraceWriter w;
    private final Object lock;
    private final String broker;
    private final String reviveTopic;

    /** (channel address # opaque) -> a pop the broker is processing, until its answer is written. */
    private final Map<String, Object[]> pops = new ConcurrentHashMap<>();
    /** group|topic|queue|offset -> {handle, pop time, invisible time, reconsume times, msg id}: handed out, not yet acked or revived. */
    private final Map<String, Object[]> held = new HashMap<>();
    /** group|topic|queue|offset of changes of invisible time being processed (their checkpoint's cause). */
    private final Set<String> changing = ConcurrentHashMap.newKeySet();
    /** checkpoint unique key # re-put times already reported. */
    private final Set<String> checkpoints = ConcurrentHashMap.newKeySet();
    /** retry topic # message key # reconsume times -> {checkpoint, offset, message}: revive is putting this copy. */
    private final Map<String, LinkedList<Object[]>> reviving = new HashMap<>();
    /** POP retry topic -> group: the topics revive wrote copies to. */
    private final Map<String, String> retryTopics = new HashMap<>();

    private PopRecorder(BrokerController bc, BrokerRecorder br, TraceWriter w) {
        this.bc = bc;
        this.br = br;
        this.w = w;
        this.lock = br.lock();
        this.broker = br.brokerName();
        this.reviveTopic = org.apache.rocketmq.common.PopAckConstants.buildClusterReviveTopic(bc.getBrokerConfig().getBrokerClusterName());
    }

    /** The store settings POP needs: PopMessageProcessor refuses every pop while the timer wheel is off. */
    static void configure(Object brokerConfig, MessageStoreConfig msc) {
        msc.setTimerWheelEnable(true);
    }

    /** Installs the observation points; after BrokerRecorder.attach(false), before the broker starts. */
    static PopObserver attach(BrokerController bc, BrokerRecorder br, TraceWriter w) {
        PopRecorder p = new PopRecorder(bc, br, w);
        p.install();
        return p;
    }

    /** A push consumer in POP mode: the broker's assignment (clientRebalance false) and the POP settings. */
    static void configureConsumer(DefaultMQPushConsumer c, JSONObject cfg) {
        c.setClientRebalance(false);
        c.setPopInvisibleTime(cfg.getLongValue("pop_invisible_time"));
        c.setPopBatchNums(cfg.getIntValue("pop_batch_nums"));
        c.setPopThresholdForQueue(cfg.getIntValue("pop_threshold_for_queue"));
    }

    @Override
    public void popMode(DefaultMQAdminExt admin, String brokerAddr, String topic, String group) throws Exception {
        admin.setMessageRequestMode(brokerAddr, topic, group, MessageRequestMode.POP, -1, 5000);
    }

    @Override
    public void simpleGroup(DefaultMQAdminExt admin, String brokerAddr, String group, int maxReconsumeTimes,
        boolean orderly) throws Exception {
        org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig sg =
            new org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig();
        sg.setGroupName(group);
        sg.setRetryMaxTimes(maxReconsumeTimes < 0 ? 16 : maxReconsumeTimes);
        sg.setConsumeMessageOrderly(orderly);
        admin.createAndUpdateSubscriptionGroupConfig(brokerAddr, sg);
    }

    /**
     * Nothing held, and every POP retry topic revive wrote to popped to its end (a concurrent pop
     * commits the queue's pop offset at once).
     */
    @Override
    public boolean quiet() {
        Map<String, String> topics;
        synchronized (lock) {
            if (!held.isEmpty()) {
                return false;
            }
            topics = new HashMap<>(retryTopics);
        }
        for (Map.Entry<String, String> t : topics.entrySet()) {
            org.apache.rocketmq.common.TopicConfig tc = bc.getTopicConfigManager().selectTopicConfig(t.getKey());
            for (int q = 0; tc != null && q < tc.getReadQueueNums(); q++) {
                long max = BrokerRecorder.maxOffset(bc.getMessageStore(), t.getKey(), q);
                if (max > 0 && bc.getConsumerOffsetManager().queryOffset(t.getValue(), t.getKey(), q) < max) {
                    return false;
                }
            }
        }
        return true;
    }

    // ------------------------------------------------------------------ installation
    @SuppressWarnings("unchecked")
    private void install() {
        DefaultMessageStore store = (DefaultMessageStore) bc.getMessageStore();
        LinkedList<CommitLogDispatcher> list = new LinkedList<>(store.getDispatcherList());
        list.addFirst(this::dispatched);
        Reflect.set(store, "dispatcherList", list);

        Processor popProcessor = null;
        for (RemotingServer s : new RemotingServer[] {bc.getRemotingServer(), bc.getFastRemotingServer()}) {
            if (s == null) {
                continue;
            }
            for (int code : new int[] {RequestCode.POP_MESSAGE, RequestCode.ACK_MESSAGE, RequestCode.BATCH_ACK_MESSAGE,
                RequestCode.CHANGE_MESSAGE_INVISIBLETIME, RequestCode.QUERY_ASSIGNMENT}) {
                Pair<NettyRequestProcessor, ExecutorService> pair = s.getProcessorPair(code);
                if (pair == null || pair.getObject1() instanceof Processor) {
                    continue;
                }
                Processor wrapped = new Processor(pair.getObject1());
                if (code == RequestCode.POP_MESSAGE && popProcessor == null) {
                    popProcessor = wrapped;
                }
                s.registerProcessor(code, wrapped, pair.getObject2());
            }
            Reflect.set(s, "encoder", new Encoder());
        }
        if (popProcessor != null) {
            // a held pop is processed again by the long-polling service, with its own reference
            Reflect.set(bc.getPopMessageProcessor().getPopLongPollingService(), "processor", popProcessor);
        }
        if (bc.getBrokerConfig().isPopConsumerKVServiceEnable() && bc.getPopConsumerService() != null) {
            Object service = bc.getPopConsumerService();
            Reflect.set(service, "popConsumerStore",
                new KvStoreTap((org.apache.rocketmq.broker.pop.PopConsumerKVStore) Reflect.get(service, "popConsumerStore"), this));
        }
        PopReviveService[] revive = bc.getAckMessageProcessor().getPopReviveServices();
        for (int i = 0; i < revive.length; i++) {
            PopReviveService old = revive[i];
            Revive mine = new Revive(bc, (String) Reflect.get(old, "reviveTopic"), old.getQueueId());
            mine.setShouldRunPopRevive(old.isShouldRunPopRevive());
            revive[i] = mine;
        }
    }

    private static String key(String group, String topic, int queue, long offset) {
        return group + "|" + topic + "|" + queue + "|" + offset;
    }

    // ------------------------------------------------------------------ requests
    /** A POP processor, wrapped: the request as it arrives, and (synchronous answers) its response. */
    private final class Processor implements NettyRequestProcessor {
        final NettyRequestProcessor inner;

        Processor(NettyRequestProcessor inner) {
            this.inner = inner;
        }

        @Override
        public boolean rejectRequest() {
            return inner.rejectRequest();
        }

        @Override
        public RemotingCommand processRequest(ChannelHandlerContext ctx, RemotingCommand req) throws Exception {
            String addr = RemotingHelper.parseChannelRemoteAddr(ctx.channel());
            String client = br.requester(addr, req);
            try {
                before(addr, client, req);
            } catch (RuntimeException e) {
                System.err.println("rocketspec pop recorder (before " + req.getCode() + "): " + e);
            }
            RemotingCommand resp;
            br.processing(req.getCode(), client);
            try {
                resp = inner.processRequest(ctx, req);
            } finally {
                br.doneProcessing();
            }
            try {
                after(client, req, resp);
            } catch (RuntimeException e) {
                System.err.println("rocketspec pop recorder (after " + req.getCode() + "): " + e);
            }
            return resp;
        }
    }

    private void before(String addr, String client, RemotingCommand req) throws Exception {
        switch (req.getCode()) {
            case RequestCode.POP_MESSAGE: {
                PopMessageRequestHeader h = req.decodeCommandCustomHeader(PopMessageRequestHeader.class);
                // a held pop comes here again when woken: the first arrival stands
                pops.putIfAbsent(addr + "#" + req.getOpaque(), new Object[] {client, h});
                break;
            }
            case RequestCode.CHANGE_MESSAGE_INVISIBLETIME: {
                ChangeInvisibleTimeRequestHeader h = req.decodeCommandCustomHeader(ChangeInvisibleTimeRequestHeader.class);
                changing.add(key(h.getConsumerGroup(), h.getTopic(), h.getQueueId(), h.getOffset()));
                break;
            }
            default:
                break;
        }
    }

    private void after(String client, RemotingCommand req, RemotingCommand resp) throws Exception {
        switch (req.getCode()) {
            case RequestCode.ACK_MESSAGE:
                if (resp != null) {
                    acked(client, req.decodeCommandCustomHeader(AckMessageRequestHeader.class), resp);
                }
                break;
            case RequestCode.BATCH_ACK_MESSAGE:
                if (resp != null) {
                    batchAcked(client, req, resp);
                }
                break;
            case RequestCode.CHANGE_MESSAGE_INVISIBLETIME: {
                ChangeInvisibleTimeRequestHeader h = req.decodeCommandCustomHeader(ChangeInvisibleTimeRequestHeader.class);
                try {
                    if (resp != null) {
                        br.dispatchedSoFar();   // its checkpoint is reported first
                        changed(client, h, resp);
                    }
                } finally {
                    changing.remove(key(h.getConsumerGroup(), h.getTopic(), h.getQueueId(), h.getOffset()));
                }
                break;
            }
            case RequestCode.QUERY_ASSIGNMENT:
                if (resp != null) {
                    assigned(client, req, resp);
                }
                break;
            default:
                break;
        }
    }

    /** An ack: it takes effect when its handle is the one the copy is held by now (its pop time). */
    private void acked(String client, AckMessageRequestHeader h, RemotingCommand resp) {
        String[] info = ExtraInfoUtil.split(h.getExtraInfo());
        long popTime = ExtraInfoUtil.getPopTime(info);
        boolean order = ExtraInfoUtil.getReviveQid(info) == org.apache.rocketmq.common.KeyBuilder.POP_ORDER_REVIVE_QUEUE;
        ackEvent(client, h.getConsumerGroup(), h.getTopic(), h.getQueueId(), h.getOffset(), h.getExtraInfo(), popTime, order, resp);
    }

    private void ackEvent(String client, String group, String topic, int queue, long offset, String handle, long popTime,
        boolean order, RemotingCommand resp) {
        ackEvent(client, group, topic, queue, offset, handle, popTime, order, resp.getCode(), null);
    }

    /** An ack answered with code (null: the answer has no code, as the proxy's AckResult). */
    private void ackEvent(String client, String group, String topic, int queue, long offset, String handle, long popTime,
        boolean order, Integer code, String reason) {
        synchronized (lock) {
            TraceWriter.Event e = event("message_acked").put("client", client).put("group", group).put("topic", topic)
                .put("broker", broker).put("queue", queue).put("offset", offset).put("handle", handle)
                .put("pop_time", popTime).put("order", order);
            if (reason != null) {
                e.put("reason", reason);
            }
            if (code == null || code != ResponseCode.SUCCESS) {
                e.put("result", "rejected");
                if (code != null) {
                    e.put("response_code", code);
                }
            } else {
                String k = key(group, topic, queue, offset);
                Object[] hd = held.get(k);
                if (hd != null && (Long) hd[1] == popTime) {
                    held.remove(k);
                    e.put("result", "acked");
                } else {
                    e.put("result", "stale");
                }
            }
            w.emit(e);
        }
    }

    /** BATCH_ACK_MESSAGE: one message_acked per offset, with the handle a client holds for it. */
    private void batchAcked(String client, RemotingCommand req, RemotingCommand resp) {
        if (req.getBody() == null) {
            return;
        }
        BatchAckMessageRequestBody body = BatchAckMessageRequestBody.decode(req.getBody(), BatchAckMessageRequestBody.class);
        if (body == null || body.getAcks() == null) {
            return;
        }
        for (BatchAck a : body.getAcks()) {
            String topic = ExtraInfoUtil.getRealTopic(a.getTopic(), a.getConsumerGroup(), a.getRetry());
            BitSet bits = a.getBitSet();
            for (int i = bits.nextSetBit(0); i >= 0; i = bits.nextSetBit(i + 1)) {
                long offset = a.getStartOffset() + i;
                String handle = ExtraInfoUtil.buildExtraInfo(a.getStartOffset(), a.getPopTime(), a.getInvisibleTime(),
                    a.getReviveQueueId(), topic, broker, a.getQueueId(), offset);
                ackEvent(client, a.getConsumerGroup(), topic, a.getQueueId(), offset, handle, a.getPopTime(),
                    a.getReviveQueueId() == KeyBuilder.POP_ORDER_REVIVE_QUEUE, resp);
            }
        }
    }

    /**
     * A change of invisible time. The broker writes a new checkpoint popped now and acks the old
     * one, whatever the old handle's state: a SUCCESS answer issued the new handle.
     */
    private void changed(String client, ChangeInvisibleTimeRequestHeader h, RemotingCommand resp) throws Exception {
        String[] info = ExtraInfoUtil.split(h.getExtraInfo());
        long popTime = ExtraInfoUtil.getPopTime(info);
        boolean order = ExtraInfoUtil.isOrder(info);
        synchronized (lock) {
            TraceWriter.Event e = event("invisible_time_changed").put("client", client).put("group", h.getConsumerGroup())
                .put("topic", h.getTopic()).put("broker", broker).put("queue", h.getQueueId()).put("offset", h.getOffset())
                .put("handle", h.getExtraInfo()).put("pop_time", popTime).put("order", order)
                .put("suspend", suspendFlag(h));
            if (resp.getCode() != ResponseCode.SUCCESS) {
                e.put("result", "rejected").put("response_code", resp.getCode());
            } else {
                // the header object itself: the broker has not written it to the wire yet
                ChangeInvisibleTimeResponseHeader r = (ChangeInvisibleTimeResponseHeader) resp.readCustomHeader();
                // what the client builds from the answer (MQClientAPIImpl.changeInvisibleTimeAsync)
                String handle = ExtraInfoUtil.buildExtraInfo(h.getOffset(), r.getPopTime(), r.getInvisibleTime(),
                    r.getReviveQid(), h.getTopic(), broker, h.getQueueId()) + MessageConst.KEY_SEPARATOR + h.getOffset();
                e.put("result", "changed").put("new_handle", handle).put("new_pop_time", r.getPopTime())
                    .put("invisible_time", r.getInvisibleTime());
                String k = key(h.getConsumerGroup(), h.getTopic(), h.getQueueId(), h.getOffset());
                Object[] was = held.get(k);
                int times = was == null ? 0 : (Integer) was[3];
                held.put(k, new Object[] {handle, r.getPopTime(), r.getInvisibleTime(), times, was == null ? "" : was[4]});
            }
            w.emit(e);
        }
    }

    /** QUERY_ASSIGNMENT's answer: the mode and the queues the client may consume. */
    private void assigned(String client, RemotingCommand req, RemotingCommand resp) {
        if (resp.getCode() != ResponseCode.SUCCESS || req.getBody() == null || resp.getBody() == null) {
            return;
        }
        QueryAssignmentRequestBody q = QueryAssignmentRequestBody.decode(req.getBody(), QueryAssignmentRequestBody.class);
        QueryAssignmentResponseBody a = QueryAssignmentResponseBody.decode(resp.getBody(), QueryAssignmentResponseBody.class);
        if (q == null || a == null || a.getMessageQueueAssignments() == null || q.getTopic().startsWith(MixAll.RETRY_GROUP_TOPIC_PREFIX)) {
            // no answer to act on; the group's %RETRY% topic is always pulled (QueryAssignmentProcessor)
            return;
        }
        SetMessageRequestModeRequestBody mode = bc.getQueryAssignmentProcessor().getMessageRequestModeManager()
            .getMessageRequestMode(q.getTopic(), q.getConsumerGroup());
        String m = mode == null ? bc.getBrokerConfig().getDefaultMessageRequestMode().name() : mode.getMode().name();
        Set<List<Object>> allocated = new TreeSet<>((x, y) -> x.toString().compareTo(y.toString()));
        for (MessageQueueAssignment qa : a.getMessageQueueAssignments()) {
            m = qa.getMode().name();
            allocated.add(Ids.mq(qa.getMessageQueue()));
        }
        TraceWriter.Event e = event("assignment_answered").put("client", client).put("group", q.getConsumerGroup())
            .put("topic", q.getTopic()).put("broker", broker).put("mode", m).put("allocated", new ArrayList<>(allocated));
        if (mode != null && mode.getMode() == MessageRequestMode.POP) {
            e.put("pop_share_queue_num", mode.getPopShareQueueNum());
        }
        w.emit(e);
    }

    // ------------------------------------------------------------------ a pop's answer, as written
    /** The remoting servers' encoder: sees each answer the broker writes, a pop's among them. */
    private final class Encoder extends NettyEncoder {
        @Override
        public void encode(ChannelHandlerContext ctx, RemotingCommand cmd, ByteBuf out) throws Exception {
            if (cmd != null && cmd.isResponseType() && !pops.isEmpty()) {
                Object[] p = pops.remove(RemotingHelper.parseChannelRemoteAddr(ctx.channel()) + "#" + cmd.getOpaque());
                if (p != null) {
                    try {
                        popAnswered((String) p[0], (PopMessageRequestHeader) p[1], cmd);
                    } catch (RuntimeException e) {
                        System.err.println("rocketspec pop recorder (pop answer): " + e);
                    }
                }
            }
            super.encode(ctx, cmd, out);
        }
    }

    private void popAnswered(String client, PopMessageRequestHeader req, RemotingCommand resp) {
        int popId = resp.getOpaque();
        TraceWriter.Event answer = event("pop_answered").put("client", client).put("group", req.getConsumerGroup())
            .put("topic", req.getTopic()).put("broker", broker).put("pop_id", popId);
        if (resp.getCode() != ResponseCode.SUCCESS || resp.getBody() == null) {
            // MQClientAPIImpl.processPopResponse's reading of the code
            String status = resp.getCode() == ResponseCode.POLLING_FULL ? "POLLING_FULL"
                : resp.getCode() == ResponseCode.POLLING_TIMEOUT || resp.getCode() == ResponseCode.PULL_NOT_FOUND
                ? "POLLING_NOT_FOUND" : resp.getCode() == ResponseCode.SUCCESS ? "NO_NEW_MSG" : "FAILED";
            answer.put("status", status).put("count", 0).put("response_code", resp.getCode());
            if (resp.getRemark() != null) {
                answer.put("remark", resp.getRemark());
            }
            w.emit(answer);
            return;
        }
        br.dispatchedSoFar();   // the pop's checkpoints are reported before what it handed out
        PopMessageResponseHeader h = (PopMessageResponseHeader) resp.readCustomHeader();
        List<MessageExt> msgs = MessageDecoder.decodesBatch(ByteBuffer.wrap(resp.getBody()), true, false, false);
        Map<String, Long> starts = ExtraInfoUtil.parseStartOffsetInfo(h.getStartOffsetInfo());
        Map<String, Integer> counts = req.isOrder() ? ExtraInfoUtil.parseOrderCountInfo(h.getOrderCountInfo()) : null;
        synchronized (lock) {
            for (MessageExt m : msgs) {
                String topic = m.getTopic();
                String qKey = ExtraInfoUtil.getStartOffsetInfoMapKey(topic, m.getQueueId());
                Long start = starts == null ? null : starts.get(qKey);
                long ck = start == null ? m.getQueueOffset() : start;
                // the handle exactly as the client builds it (MQClientAPIImpl.processPopResponse)
                String handle = ExtraInfoUtil.buildExtraInfo(ck, h.getPopTime(), h.getInvisibleTime(), h.getReviveQid(),
                    topic, broker, m.getQueueId(), m.getQueueOffset());
                String given = m.getProperty(MessageConst.PROPERTY_POP_CK);
                if (given != null) {
                    // a copy popped from a POP retry topic is re-encoded under the requested topic,
                    // with its handle set by the broker (popMsgFromQueue, popResponseReturnActualRetryTopic
                    // false): the client keeps that handle, which names the retry topic it is stored in
                    String[] info = ExtraInfoUtil.split(given);
                    handle = given;
                    topic = ExtraInfoUtil.getRealTopic(info, req.getTopic(), req.getConsumerGroup());
                    ck = ExtraInfoUtil.getCkQueueOffset(info);
                    qKey = ExtraInfoUtil.getStartOffsetInfoMapKey(topic, m.getQueueId());
                }
                int times = m.getReconsumeTimes();
                if (counts != null) {
                    Integer c = counts.get(ExtraInfoUtil.getQueueOffsetMapKey(topic, m.getQueueId(), m.getQueueOffset()));
                    if (c == null) {
                        c = counts.get(qKey);
                    }
                    if (c != null && c > 0) {
                        times = c;
                    }
                }
                TraceWriter.Event e = event("message_popped").put("client", client).put("group", req.getConsumerGroup())
                    .put("topic", topic).put("broker", broker).put("queue", m.getQueueId()).put("offset", m.getQueueOffset())
                    .put("msg_id", m.getMsgId()).put("pop_id", popId).put("handle", handle).put("pop_time", h.getPopTime())
                    .put("invisible_time", h.getInvisibleTime()).put("reconsume_times", times).put("order", req.isOrder())
                    .put("origin_msg_id", originOf(m, topic)).put("revive_qid", h.getReviveQid()).put("ck_offset", ck);
                if (req.getAttemptId() != null) {
                    e.put("attempt_id", req.getAttemptId());
                }
                w.emit(e);
                held.put(key(req.getConsumerGroup(), topic, m.getQueueId(), m.getQueueOffset()),
                    new Object[] {handle, h.getPopTime(), h.getInvisibleTime(), times, m.getMsgId()});
            }
            w.emit(answer.put("status", "FOUND").put("count", msgs.size()));
        }
    }

    // ------------------------------------------------------------------ the proxy (local mode)
    /*
     * The gRPC proxy in local mode calls the broker's POP processors directly, past the remoting
     * servers' processor table and encoder: ProxyRecorder sees its pops, acks, changes and DLQ
     * forwards at its message service and reports them here, with the gRPC client's id.
     */

    /** A change of invisible time the proxy is about to make (its checkpoint's cause). */
    void proxyChanging(String group, String topic, int queue, long offset, boolean start) {
        if (start) {
            changing.add(key(group, topic, queue, offset));
        } else {
            changing.remove(key(group, topic, queue, offset));
        }
    }

    /**
     * A pop's answer as the proxy read it: status FOUND with the messages, each carrying its
     * handle in POP_CK (the broker's for a copy of a POP retry topic, else the one the proxy
     * builds), its queue offset and, orderly, the consumed count as its reconsume times.
     */
    void proxyPopped(String client, String group, String requestedTopic, boolean order, String attemptId, int popId,
        String status, long popTime, long invisibleTime, List<MessageExt> msgs, String remark) {
        TraceWriter.Event answer = event("pop_answered").put("client", client).put("group", group)
            .put("topic", requestedTopic).put("broker", broker).put("pop_id", popId);
        if (!"FOUND".equals(status) || msgs == null || msgs.isEmpty()) {
            answer.put("status", "FOUND".equals(status) ? "NO_NEW_MSG" : status).put("count", 0);
            if (remark != null) {
                answer.put("remark", remark);
            }
            w.emit(answer);
            return;
        }
        br.dispatchedSoFar();   // the pop's checkpoints are reported before what it handed out
        synchronized (lock) {
            for (MessageExt m : msgs) {
                String ck = m.getProperty(MessageConst.PROPERTY_POP_CK);
                String[] info = ExtraInfoUtil.split(ck);
                // the receipt handle the client gets and acks with: the proxy appends the copy's
                // commit log offset (ConsumerProcessor.createHandle)
                String handle = ck + MessageConst.KEY_SEPARATOR + m.getCommitLogOffset();
                String topic = ExtraInfoUtil.getRealTopic(info, requestedTopic, group);
                String msgId = m instanceof org.apache.rocketmq.common.message.MessageClientExt
                    ? ((org.apache.rocketmq.common.message.MessageClientExt) m).getOffsetMsgId() : m.getMsgId();
                int times = m.getReconsumeTimes();
                TraceWriter.Event e = event("message_popped").put("client", client).put("group", group)
                    .put("topic", topic).put("broker", broker).put("queue", m.getQueueId()).put("offset", m.getQueueOffset())
                    .put("msg_id", msgId).put("pop_id", popId).put("handle", handle).put("pop_time", popTime)
                    .put("invisible_time", invisibleTime).put("reconsume_times", times).put("order", order)
                    .put("origin_msg_id", originOf(m, topic)).put("revive_qid", ExtraInfoUtil.getReviveQid(info))
                    .put("ck_offset", ExtraInfoUtil.getCkQueueOffset(info));
                if (attemptId != null) {
                    e.put("attempt_id", attemptId);
                }
                w.emit(e);
                held.put(key(group, topic, m.getQueueId(), m.getQueueOffset()),
                    new Object[] {handle, popTime, invisibleTime, times, msgId});
            }
            w.emit(answer.put("status", "FOUND").put("count", msgs.size()));
        }
    }

    /** An ack the proxy made: the client's (reason consumed) or its own after a DLQ forward. */
    void proxyAcked(String client, String group, String topic, int queue, long offset, String handle, boolean ok,
        String reason) {
        String[] info = ExtraInfoUtil.split(handle);
        ackEvent(client, group, topic, queue, offset, handle, ExtraInfoUtil.getPopTime(info),
            ExtraInfoUtil.getReviveQid(info) == KeyBuilder.POP_ORDER_REVIVE_QUEUE, ok ? ResponseCode.SUCCESS : null,
            reason);
    }

    /** A change of invisible time the proxy made; ok: the broker issued a new handle popped at newPopTime. */
    void proxyChanged(String client, String group, String topic, int queue, long offset, String handle,
        long invisibleTime, boolean suspend, boolean ok, long newPopTime, String newHandle) {
        String[] info = ExtraInfoUtil.split(handle);
        if (ok) {
            br.dispatchedSoFar();   // its checkpoint is reported first
        }
        synchronized (lock) {
            TraceWriter.Event e = event("invisible_time_changed").put("client", client).put("group", group)
                .put("topic", topic).put("broker", broker).put("queue", queue).put("offset", offset)
                .put("handle", handle).put("pop_time", ExtraInfoUtil.getPopTime(info))
                .put("order", ExtraInfoUtil.isOrder(info)).put("suspend", suspend);
            if (!ok) {
                e.put("result", "rejected");
            } else {
                e.put("result", "changed").put("new_handle", newHandle).put("new_pop_time", newPopTime)
                    .put("invisible_time", invisibleTime);
                String k = key(group, topic, queue, offset);
                Object[] was = held.get(k);
                int times = was == null ? 0 : (Integer) was[3];
                held.put(k, new Object[] {newHandle, newPopTime, invisibleTime, times, was == null ? "" : was[4]});
            }
            w.emit(e);
        }
    }

    /**
     * The proxy sent a copy at its max attempts to the group's DLQ (CONSUMER_SEND_MSG_BACK with
     * maxReconsumeTimes 0) instead of to the client; its ack follows.
     */
    void proxyDeadLettered(String client, String group, String topic, int queue, long offset, String handle,
        int maxAttempts, String givenMsgId) {
        synchronized (lock) {
            Object[] hd = held.get(key(group, topic, queue, offset));
            TraceWriter.Event e = event("pop_dead_lettered").put("client", client).put("group", group)
                .put("topic", topic).put("broker", broker).put("queue", queue).put("offset", offset)
                .put("msg_id", hd == null ? givenMsgId : hd[4]).put("reconsume_times", hd == null ? 0 : hd[3])
                .put("max_attempts", maxAttempts).put("handle", handle);
            w.emit(e);
        }
    }

    private String originOf(MessageExt m, String topic) {
        return br.originOf(m, topic);
    }

    // ------------------------------------------------------------------ store: checkpoints, revive's copies
    private void dispatched(DispatchRequest r) {
        String topic = r.getTopic();
        boolean timer = TimerMessageStore.TIMER_TOPIC.equals(topic);
        boolean reviveLog = reviveTopic.equals(topic);
        boolean retry = topic.startsWith(MixAll.RETRY_GROUP_TOPIC_PREFIX);
        if (!timer && !reviveLog && !retry) {
            return;
        }
        MessageExt m = ((DefaultMessageStore) bc.getMessageStore()).lookMessageByOffset(r.getCommitLogOffset(), r.getMsgSize());
        if (m == null) {
            return;
        }
        if (timer || reviveLog) {
            // a checkpoint goes through the timer wheel (deliver time = its revive time - 1 s) into
            // the revive log: reported once, when it is first stored
            String real = timer ? m.getProperty(MessageConst.PROPERTY_REAL_TOPIC) : topic;
            if (reviveTopic.equals(real) && org.apache.rocketmq.common.PopAckConstants.CK_TAG.equals(m.getTags())) {
                int qid = timer ? Integer.parseInt(m.getProperty(MessageConst.PROPERTY_REAL_QUEUE_ID)) : r.getQueueId();
                checkpoint(m, qid);
            }
            return;
        }
        // a %RETRY% copy: revived() matches it to a revive getBizMessage noted (5.3.3's reviveRetry
        // sets no ORIGIN_GROUP on the copy), else leaves it to the ordinary dispatcher
        revived(r, m);
    }

    private void checkpoint(MessageExt m, int reviveQid) {
        PopCheckPoint ck = com.alibaba.fastjson2.JSON.parseObject(new String(m.getBody(), StandardCharsets.UTF_8), PopCheckPoint.class);
        int reput = ck.parseRePutTimes();
        if (!checkpoints.add(m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) + "#" + reput)) {
            return;
        }
        List<Long> offsets = new ArrayList<>();
        for (int i = 0; i < ck.getNum(); i++) {
            offsets.add(ck.ackOffsetByIndex((byte) i));
        }
        String cause = reput > 0 ? "reput"
            : ck.getNum() == 1 && changing.contains(key(ck.getCId(), ck.getTopic(), ck.getQueueId(), ck.getStartOffset()))
            ? "change_invisible" : "pop";
        checkpointWritten(ck, offsets, reviveQid, cause, reput, "revive_log");
    }

    /**
     * A checkpoint stored (in the revive log, or a record of the KV path) and, for a re-put, the
     * revive it stands in for: revive could not put the copy, and the checkpoint waits again
     * (PopReviveService.rePutCK; the KV path's backed-off rewrite, whose pop time is the
     * rewrite's, so its pending revive is matched by the offset alone).
     */
    private void checkpointWritten(PopCheckPoint ck, List<Long> offsets, int reviveQid, String cause, int reput,
        String store) {
        synchronized (lock) {
            TraceWriter.Event e = event("pop_checkpoint_written").put("group", ck.getCId()).put("topic", ck.getTopic())
                .put("broker", broker).put("queue", ck.getQueueId()).put("ck_offset", ck.getStartOffset())
                .put("offsets", offsets).put("pop_time", ck.getPopTime()).put("invisible_time", ck.getInvisibleTime())
                .put("revive_qid", reviveQid).put("cause", cause).put("store", store);
            if (reput > 0) {
                e.put("reput_times", reput);
            }
            w.emit(e);
            if (reput > 0) {
                for (long offset : offsets) {
                    Object[] p = takeReviving(ck, offset, "revive_log".equals(store));
                    if (p != null) {
                        MessageExt msg = (MessageExt) p[2];
                        w.emit(event("message_revived").put("group", ck.getCId()).put("topic", ck.getTopic())
                            .put("broker", broker).put("queue", ck.getQueueId()).put("offset", offset)
                            .put("msg_id", msg.getMsgId()).put("origin_msg_id", originOf(msg, ck.getTopic()))
                            .put("pop_time", ((PopCheckPoint) p[0]).getPopTime()).put("outcome", "reput")
                            .put("reput_times", reput));
                    }
                }
            }
        }
    }

    private static String messageKey(MessageExt m) {
        String uniq = m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
        return uniq != null ? uniq : m.getBornTimestamp() + "/" + (m.getBody() == null ? 0 : m.getBody().length);
    }

    private String retryTopicOf(PopCheckPoint ck) {
        return ck.getTopic().startsWith(MixAll.RETRY_GROUP_TOPIC_PREFIX) ? ck.getTopic()
            : KeyBuilder.buildPopRetryTopic(ck.getTopic(), ck.getCId(), bc.getBrokerConfig().isEnableRetryTopicV2());
    }

    // ------------------------------------------------------------------ the RocksDB POP path
    /** A record of the KV store as the one-offset checkpoint it stands for. */
    private PopCheckPoint kvCheckpoint(org.apache.rocketmq.broker.pop.PopConsumerRecord r) {
        PopCheckPoint ck = new PopCheckPoint();
        ck.setCId(r.getGroupId());
        ck.setTopic(r.getTopicId());
        ck.setQueueId(r.getQueueId());
        ck.setStartOffset(r.getOffset());
        ck.setPopTime(r.getPopTime());
        ck.setInvisibleTime(r.getInvisibleTime());
        ck.setNum((byte) 1);
        ck.setBitMap(0);
        List<Integer> diff = new ArrayList<>();
        diff.add(0);
        ck.setQueueOffsetDiff(diff);
        ck.setBrokerName(broker);
        if (r.getAttemptTimes() > 0) {
            ck.setRePutTimes(String.valueOf(r.getAttemptTimes()));
        }
        if (suspendFlag(r)) {
            try {
                ck.getClass().getMethod("setSuspend", boolean.class).invoke(ck, true);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("a suspended record on a release without suspend", e);
            }
        }
        return ck;
    }

    @Override
    public void kvWritten(org.apache.rocketmq.broker.pop.PopConsumerRecord r) {
        int reput = r.getAttemptTimes();
        String cause = reput > 0 ? "reput"
            : changing.contains(key(r.getGroupId(), r.getTopicId(), r.getQueueId(), r.getOffset())) ? "change_invisible" : "pop";
        List<Long> offsets = new ArrayList<>();
        offsets.add(r.getOffset());
        checkpointWritten(kvCheckpoint(r), offsets, 0, cause, reput, "kv");
    }

    @Override
    public void kvReviving(org.apache.rocketmq.broker.pop.PopConsumerRecord r) {
        // the read revive makes next (PopConsumerService.getMessageAsync: the escape bridge, local)
        Triple<MessageExt, String, Boolean> t = bc.getEscapeBridge().getMessage(r.getTopicId(), r.getOffset(),
            r.getQueueId(), broker, false);
        reading(kvCheckpoint(r), r.getOffset(), t == null ? null : t.getLeft(), t != null && Boolean.TRUE.equals(t.getRight()));
    }

    /**
     * Under the lock: the revive of (checkpoint, offset) noted by getBizMessage, if still pending;
     * of the checkpoint's pop time unless samePopTime is false.
     */
    private Object[] takeReviving(PopCheckPoint ck, long offset, boolean samePopTime) {
        for (LinkedList<Object[]> l : reviving.values()) {
            for (java.util.Iterator<Object[]> it = l.iterator(); it.hasNext(); ) {
                Object[] p = it.next();
                PopCheckPoint c = (PopCheckPoint) p[0];
                if ((Long) p[1] == offset && (!samePopTime || c.getPopTime() == ck.getPopTime()) && c.getQueueId() == ck.getQueueId()
                    && c.getTopic().equals(ck.getTopic()) && c.getCId().equals(ck.getCId())) {
                    it.remove();
                    return p;
                }
            }
        }
        return null;
    }

    /** A copy revive stored in a POP retry topic: matched to its checkpoint by (topic, key, reconsume times). */
    private void revived(DispatchRequest r, MessageExt copy) {
        synchronized (lock) {
            LinkedList<Object[]> l = reviving.get(r.getTopic() + "#" + messageKey(copy) + "#" + copy.getReconsumeTimes());
            Object[] p = l == null ? null : l.poll();
            if (p == null) {
                return;   // not a copy revive is putting: the ordinary dispatcher reports it
            }
            PopCheckPoint ck = (PopCheckPoint) p[0];
            long offset = (Long) p[1];
            MessageExt msg = (MessageExt) p[2];
            br.storedElsewhere.add(copy.getMsgId());
            retryTopics.put(r.getTopic(), ck.getCId());
            String k = key(ck.getCId(), ck.getTopic(), ck.getQueueId(), offset);
            Object[] hd = held.get(k);
            TraceWriter.Event e = event("message_revived").put("group", ck.getCId()).put("topic", ck.getTopic())
                .put("broker", broker).put("queue", ck.getQueueId()).put("offset", offset).put("msg_id", msg.getMsgId())
                .put("pop_time", ck.getPopTime()).put("outcome", "retry").put("origin_msg_id", originOf(msg, ck.getTopic()))
                .put("target_topic", r.getTopic()).put("target_queue", r.getQueueId())
                .put("target_offset", r.getConsumeQueueOffset()).put("target_msg_id", copy.getMsgId())
                .put("reconsume_times", copy.getReconsumeTimes());
            if (hd != null && (Long) hd[1] == ck.getPopTime()) {
                e.put("handle", hd[0]);
                held.remove(k);
            }
            if (ck.parseRePutTimes() > 0) {
                e.put("reput_times", ck.parseRePutTimes());
            }
            w.emit(e);
        }
    }

    /** Revive read the message of a checkpoint's offset (PopReviveService.reviveMsgFromCk). */
    private void reading(PopCheckPoint ck, long offset, MessageExt msg, boolean needRetry) {
        synchronized (lock) {
            if (msg == null) {
                String k = key(ck.getCId(), ck.getTopic(), ck.getQueueId(), offset);
                Object[] hd = held.get(k);
                boolean current = hd != null && (Long) hd[1] == ck.getPopTime();
                if (!needRetry && current) {
                    held.remove(k);
                }
                // needRetry: rePutCK follows and reports it; else nothing is revived for the offset
                if (!needRetry) {
                    w.emit(event("message_revived").put("group", ck.getCId()).put("topic", ck.getTopic())
                        .put("broker", broker).put("queue", ck.getQueueId()).put("offset", offset)
                        .put("msg_id", hd == null ? "" : hd[4]).put("pop_time", ck.getPopTime()).put("outcome", "skipped"));
                }
                return;
            }
            int times = suspendFlag(ck) ? msg.getReconsumeTimes() : msg.getReconsumeTimes() + 1;
            reviving.computeIfAbsent(retryTopicOf(ck) + "#" + messageKey(msg) + "#" + times, k -> new LinkedList<>())
                .add(new Object[] {ck, offset, msg});
        }
    }

    /** A revive service that reports each message it reads to revive, just before it puts the copy. */
    private final class Revive extends PopReviveService {
        Revive(BrokerController bc, String reviveTopic, int queueId) {
            super(bc, reviveTopic, queueId);
        }

        @Override
        public CompletableFuture<Triple<MessageExt, String, Boolean>> getBizMessage(PopCheckPoint ck, long offset) {
            return super.getBizMessage(ck, offset).thenApply(t -> {
                try {
                    reading(ck, offset, t.getLeft(), Boolean.TRUE.equals(t.getRight()));
                } catch (RuntimeException e) {
                    System.err.println("rocketspec pop recorder (revive): " + e);
                }
                return t;
            });
        }
    }

    /**
     * The suspend flag of a change-invisible-time request or a checkpoint (5.5.0's isSuspend;
     * 5.3.3 has none: false), read by name so the 5.x line compiles against every 5.x release.
     */
    private static boolean suspendFlag(Object o) {
        try {
            return Boolean.TRUE.equals(o.getClass().getMethod("isSuspend").invoke(o));
        } catch (ReflectiveOperationException e) {
            return false;
        }
    }
}
