package rocketspec.java5client;

import com.alibaba.fastjson.JSONObject;
import org.apache.rocketmq.client.consumer.AllocateMessageQueueStrategy;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragelyByCircle;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueConsistentHash;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.remoting.protocol.heartbeat.MessageModel;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The library's push consumer built from a `start` request; `applied` is the config in force:
 * every setting of the request the library took, as the consumer reports it back.
 */
final class Consumer {
    final DefaultMQPushConsumer consumer;
    final Map<String, Object> applied = new LinkedHashMap<>();

    Consumer(JSONObject req, String mutant) throws MQClientException {
        JSONObject cfg = req.get("config") instanceof JSONObject ? req.getJSONObject("config") : new JSONObject();
        String clientType = cfg.getString("client_type");
        if (clientType != null && !"PUSH".equals(clientType)) {
            throw new IllegalArgumentException("client_type " + clientType + " is not driven by this program "
                + "(a remoting push consumer that pulls: client_type PUSH)");
        }
        boolean orderly = "ORDERLY".equals(cfg.getString("consume_mode"));
        String strategy = cfg.getString("strategy") == null ? "AVG" : cfg.getString("strategy");
        AllocateMessageQueueStrategy alloc;
        switch (strategy) {
            case "AVG": alloc = new AllocateMessageQueueAveragely(); break;
            case "AVG_BY_CIRCLE": alloc = new AllocateMessageQueueAveragelyByCircle(); break;
            case "CONSISTENT_HASH":
                int nodes = cfg.get("virtual_node_cnt") instanceof Number ? cfg.getIntValue("virtual_node_cnt") : 10;
                alloc = new AllocateMessageQueueConsistentHash(nodes);
                applied.put("virtual_node_cnt", nodes);
                break;
            default:
                throw new IllegalArgumentException("strategy " + strategy + " is not driven by this program "
                    + "(AVG, AVG_BY_CIRCLE, CONSISTENT_HASH)");
        }
        boolean trace = "1".equals(System.getenv("ROCKETSPEC_MSGTRACE"));
        // the library's message trace (RIP-6) to RMQ_SYS_TRACE_TOPIC when rocketspec asks for it
        consumer = new DefaultMQPushConsumer(null, req.getString("group"), null, alloc, trace, null);
        consumer.setNamesrvAddr(req.getString("namesrv"));
        consumer.setInstanceName(req.getString("client"));
        // the address rocketspec's own clients register with; the run's namespace has only loopback
        consumer.setClientIP("127.0.0.1");
        applied.put("consume_mode", orderly ? "ORDERLY" : "CONCURRENTLY");
        applied.put("strategy", strategy);
        String model = cfg.getString("message_model") == null ? "CLUSTERING" : cfg.getString("message_model");
        consumer.setMessageModel(MessageModel.valueOf(model));
        applied.put("message_model", consumer.getMessageModel().name());
        if (cfg.getString("consume_from_where") != null) {
            consumer.setConsumeFromWhere(ConsumeFromWhere.valueOf(cfg.getString("consume_from_where")));
        }
        applied.put("consume_from_where", consumer.getConsumeFromWhere().name());
        if (cfg.getString("consume_timestamp") != null) {
            consumer.setConsumeTimestamp(cfg.getString("consume_timestamp"));
            applied.put("consume_timestamp", consumer.getConsumeTimestamp());
        }
        if (has(cfg, "max_reconsume_times")) {
            consumer.setMaxReconsumeTimes(cfg.getIntValue("max_reconsume_times"));
        }
        applied.put("max_reconsume_times", consumer.getMaxReconsumeTimes());
        if (has(cfg, "consume_message_batch_max_size")) {
            consumer.setConsumeMessageBatchMaxSize(cfg.getIntValue("consume_message_batch_max_size"));
        }
        applied.put("consume_message_batch_max_size", consumer.getConsumeMessageBatchMaxSize());
        if (has(cfg, "pull_batch_size")) {
            consumer.setPullBatchSize(cfg.getIntValue("pull_batch_size"));
        }
        applied.put("pull_batch_size", consumer.getPullBatchSize());
        if (has(cfg, "pull_interval")) {
            consumer.setPullInterval(cfg.getLongValue("pull_interval"));
        }
        applied.put("pull_interval", consumer.getPullInterval());
        if (has(cfg, "consume_thread_max")) {
            int threads = cfg.getIntValue("consume_thread_max");
            consumer.setConsumeThreadMin(Math.min(threads, 20));
            consumer.setConsumeThreadMax(threads);
        }
        applied.put("consume_thread_max", consumer.getConsumeThreadMax());
        if (has(cfg, "pull_threshold_for_queue")) {
            consumer.setPullThresholdForQueue(cfg.getIntValue("pull_threshold_for_queue"));
        }
        applied.put("pull_threshold_for_queue", consumer.getPullThresholdForQueue());
        if (has(cfg, "pull_threshold_size_for_queue")) {
            consumer.setPullThresholdSizeForQueue(cfg.getIntValue("pull_threshold_size_for_queue"));
        }
        applied.put("pull_threshold_size_for_queue", consumer.getPullThresholdSizeForQueue());
        if (has(cfg, "pull_threshold_for_topic")) {
            consumer.setPullThresholdForTopic(cfg.getIntValue("pull_threshold_for_topic"));
        }
        applied.put("pull_threshold_for_topic", consumer.getPullThresholdForTopic());
        if (has(cfg, "pull_threshold_size_for_topic")) {
            consumer.setPullThresholdSizeForTopic(cfg.getIntValue("pull_threshold_size_for_topic"));
        }
        applied.put("pull_threshold_size_for_topic", consumer.getPullThresholdSizeForTopic());
        if (has(cfg, "consume_concurrently_max_span")) {
            consumer.setConsumeConcurrentlyMaxSpan(cfg.getIntValue("consume_concurrently_max_span"));
        }
        applied.put("consume_concurrently_max_span", consumer.getConsumeConcurrentlyMaxSpan());
        if (has(cfg, "suspend_current_queue_time_millis")) {
            consumer.setSuspendCurrentQueueTimeMillis(cfg.getLongValue("suspend_current_queue_time_millis"));
        }
        applied.put("suspend_current_queue_time_millis", consumer.getSuspendCurrentQueueTimeMillis());
        if (has(cfg, "consume_timeout")) {
            consumer.setConsumeTimeout(cfg.getLongValue("consume_timeout"));   // minutes, as the request's
        }
        applied.put("consume_timeout", consumer.getConsumeTimeout());
        if (has(cfg, "persist_consumer_offset_interval_ms")) {
            consumer.setPersistConsumerOffsetInterval(cfg.getIntValue("persist_consumer_offset_interval_ms"));
        }
        applied.put("persist_consumer_offset_interval_ms", consumer.getPersistConsumerOffsetInterval());
        if (has(cfg, "heartbeat_broker_interval_ms")) {
            consumer.setHeartbeatBrokerInterval(cfg.getIntValue("heartbeat_broker_interval_ms"));
        }
        applied.put("heartbeat_broker_interval_ms", consumer.getHeartbeatBrokerInterval());
        if (has(cfg, "poll_name_server_interval_ms")) {
            consumer.setPollNameServerInterval(cfg.getIntValue("poll_name_server_interval_ms"));
        }
        applied.put("poll_name_server_interval_ms", consumer.getPollNameServerInterval());

        JSONObject subs = req.getJSONObject("subscriptions");
        for (String topic : subs.keySet()) {
            JSONObject s = subs.get(topic) instanceof JSONObject ? subs.getJSONObject(topic) : null;
            if (s == null || s.getString("expr") == null) {
                throw new IllegalArgumentException("subscriptions." + topic + ": expected {type, expr}");
            }
            if ("SQL92".equals(s.getString("type"))) {
                consumer.subscribe(topic, MessageSelector.bySql(s.getString("expr")));
            } else {
                consumer.subscribe(topic, s.getString("expr"));
            }
        }
        JSONObject spec = req.get("listener") instanceof JSONObject ? req.getJSONObject("listener") : null;
        Listener l = new Listener(new Rules(spec, orderly, req.getLongValue("seed")), orderly, mutant);
        if (orderly && !"orderly-as-concurrent".equals(mutant)) {
            consumer.registerMessageListener(l.orderly());
        } else {
            consumer.registerMessageListener(l.concurrently());
        }
    }

    private static boolean has(JSONObject cfg, String key) {
        return cfg.get(key) instanceof Number;
    }

    void start() throws MQClientException {
        consumer.start();
    }

    String clientId() {
        return consumer.buildMQClientId();
    }

    void shutdown() {
        consumer.shutdown();
    }

    static String libraryVersion() {
        return MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION);
    }
}
