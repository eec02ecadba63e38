package rocketspec.recorder;

import com.alibaba.fastjson.JSONObject;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragelyByCircle;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueConsistentHash;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.filter.ExpressionType;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.common.protocol.heartbeat.MessageModel;

import java.util.Map;

/** One push consumer built from a scenario group, with the client recorder attached. */
final class ScenarioConsumer {
    final String name;
    final String group;
    final DefaultMQPushConsumer consumer;
    final ClientRecorder recorder;

    ScenarioConsumer(JSONObject plan, String name, String group, String namesrv, TraceWriter w) throws MQClientException {
        this.name = name;
        this.group = group;
        JSONObject g = plan.getJSONObject("groups").getJSONObject(group);
        JSONObject cfg = g.getJSONObject("config");
        JSONObject client = plan.getJSONObject("client");
        recorder = new ClientRecorder(w);
        // enableMsgTrace when the plan asks for the message-trace topic (rocketspec record --msgtrace)
        consumer = new DefaultMQPushConsumer(null, group, recorder.rpcHook(), new AllocateMessageQueueAveragely(),
            plan.getString("msgtrace_out") != null, null);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName(name);
        consumer.setClientIP("127.0.0.1");
        boolean orderly = "ORDERLY".equals(cfg.getString("consume_mode"));
        consumer.setMessageModel(MessageModel.valueOf(cfg.getString("message_model")));
        switch (cfg.getString("strategy")) {
            case "AVG": consumer.setAllocateMessageQueueStrategy(new AllocateMessageQueueAveragely()); break;
            case "AVG_BY_CIRCLE": consumer.setAllocateMessageQueueStrategy(new AllocateMessageQueueAveragelyByCircle()); break;
            case "CONSISTENT_HASH":
                consumer.setAllocateMessageQueueStrategy(new AllocateMessageQueueConsistentHash(cfg.getIntValue("virtual_node_cnt")));
                break;
            default: throw new IllegalArgumentException("strategy " + cfg.getString("strategy") + " is not supported on real runs");
        }
        consumer.setConsumeFromWhere(ConsumeFromWhere.valueOf(cfg.getString("consume_from_where")));
        if (cfg.getString("consume_timestamp") != null) {
            consumer.setConsumeTimestamp(cfg.getString("consume_timestamp"));
        }
        consumer.setMaxReconsumeTimes(cfg.getIntValue("max_reconsume_times"));
        consumer.setConsumeMessageBatchMaxSize(cfg.getIntValue("consume_message_batch_max_size"));
        consumer.setPullBatchSize(cfg.getIntValue("pull_batch_size"));
        consumer.setPullInterval(cfg.getLongValue("pull_interval"));
        int threads = cfg.getIntValue("consume_thread_max");
        consumer.setConsumeThreadMin(Math.min(threads, 20));
        consumer.setConsumeThreadMax(threads);
        consumer.setPullThresholdForQueue(cfg.getIntValue("pull_threshold_for_queue"));
        consumer.setPullThresholdSizeForQueue(cfg.getIntValue("pull_threshold_size_for_queue"));
        consumer.setPullThresholdForTopic(cfg.getIntValue("pull_threshold_for_topic"));
        consumer.setPullThresholdSizeForTopic(cfg.getIntValue("pull_threshold_size_for_topic"));
        consumer.setConsumeConcurrentlyMaxSpan(cfg.getIntValue("consume_concurrently_max_span"));
        consumer.setSuspendCurrentQueueTimeMillis(cfg.getLongValue("suspend_current_queue_time_millis"));
        consumer.setConsumeTimeout(cfg.getLongValue("consume_timeout"));
        consumer.setPersistConsumerOffsetInterval(client.getIntValue("persist_consumer_offset_interval_ms"));
        consumer.setHeartbeatBrokerInterval(client.getIntValue("heartbeat_broker_interval_ms"));
        consumer.setPollNameServerInterval(client.getIntValue("poll_name_server_interval_ms"));
        // a start step's own subscriptions replace the group's for this client (record's plan)
        JSONObject own = plan.getJSONObject("client_subscriptions") == null ? null
            : plan.getJSONObject("client_subscriptions").getJSONObject(name);
        for (Map.Entry<String, Object> s : (own != null ? own : g.getJSONObject("subscriptions")).entrySet()) {
            JSONObject sub = (JSONObject) s.getValue();
            if (ExpressionType.SQL92.equals(sub.getString("type"))) {
                consumer.subscribe(s.getKey(), MessageSelector.bySql(sub.getString("expr")));
            } else {
                consumer.subscribe(s.getKey(), sub.getString("expr"));
            }
        }
        long seed = plan.getLongValue("seed") * 31 + name.hashCode();
        ScenarioListener l = new ScenarioListener(g.getJSONObject("listener"), orderly, seed);
        if (orderly) {
            consumer.registerMessageListener(l.orderly());
        } else {
            consumer.registerMessageListener(l.concurrently());
        }
        if ("POP_PUSH".equals(cfg.getString("client_type"))) {
            // message-level load balancing: the broker's assignment, POP queues (5.x setters)
            try {
                java.lang.reflect.Method m = Driver.popClass().getDeclaredMethod("configureConsumer", DefaultMQPushConsumer.class, JSONObject.class);
                m.setAccessible(true);
                m.invoke(null, consumer, cfg);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("POP consumer settings", e);
            }
            recorder.popMode();
        }
        recorder.attach(consumer);
    }

    void start() throws MQClientException {
        consumer.start();
        recorder.started();
    }

    void shutdown() {
        recorder.stopping();
        consumer.shutdown();
        recorder.stopped();
    }
}
