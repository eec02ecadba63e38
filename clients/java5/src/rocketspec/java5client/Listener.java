package rocketspec.java5client;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The application's listener: each call is reported (`consume_started`), decided by the
 * scenario's rules, slept for its duration, reported (`consume_finished`) and handed to the
 * library. The library's two listener kinds carry the same calls; a mutant (Mutants) changes what
 * the library is given, never what is reported as the application's own outcome.
 */
final class Listener {
    private final Rules rules;
    private final boolean orderly;
    private final String mutant;
    private final AtomicLong calls = new AtomicLong();

    Listener(Rules rules, boolean orderly, String mutant) {
        this.rules = rules;
        this.orderly = orderly;
        this.mutant = mutant;
    }

    private static final String NULL = "NULL";
    private static final String EXCEPTION = "EXCEPTION";

    /** The status handed to the library: a status name of the listener kind `asOrderly`, NULL or EXCEPTION. */
    private String call(List<MessageExt> msgs, MessageQueue mq, boolean asOrderly,
                        ConsumeConcurrentlyContext cc, ConsumeOrderlyContext oc) {
        long id = calls.incrementAndGet();
        if ("skip-message".equals(mutant)) {
            List<MessageExt> kept = new ArrayList<>();
            for (MessageExt m : msgs) {
                if (!(m.getQueueOffset() % 5 == 4 && m.getReconsumeTimes() == 0)) {
                    kept.add(m);
                }
            }
            if (kept.isEmpty()) {
                return asOrderly ? "SUCCESS" : "CONSUME_SUCCESS";
            }
            msgs = kept;
        }
        JSONArray batch = new JSONArray();
        for (MessageExt m : msgs) {
            JSONObject o = new JSONObject(true);
            String stored = m instanceof MessageClientExt ? ((MessageClientExt) m).getOffsetMsgId() : m.getMsgId();
            String origin = m.getProperty(MessageConst.PROPERTY_ORIGIN_MESSAGE_ID);
            o.put("offset", m.getQueueOffset());
            o.put("msg_id", stored);
            o.put("origin_msg_id", origin != null && !origin.isEmpty() ? origin : stored);
            o.put("reconsume_times", m.getReconsumeTimes());
            o.put("tags", m.getTags());
            o.put("keys", m.getKeys());
            batch.add(o);
        }
        JSONObject started = new JSONObject(true);
        started.put("consume_id", id);
        started.put("topic", mq.getTopic());
        started.put("broker", mq.getBrokerName());
        started.put("queue", mq.getQueueId());
        started.put("messages", batch);
        Protocol.report("consume_started", started);

        Rules.Outcome out = rules.decide(msgs);
        JSONObject spec = rules.spec;
        if (cc != null) {
            if (spec.containsKey("ack_index")) {
                cc.setAckIndex(spec.getIntValue("ack_index"));
            }
            if (spec.containsKey("delay_level_when_next_consume")) {
                cc.setDelayLevelWhenNextConsume(spec.getIntValue("delay_level_when_next_consume"));
            }
        }
        if (oc != null) {
            if (spec.containsKey("auto_commit")) {
                oc.setAutoCommit(spec.getBooleanValue("auto_commit"));
            }
            if (spec.containsKey("suspend_ms") && spec.getIntValue("suspend_ms") >= 0) {
                oc.setSuspendCurrentQueueTimeMillis(spec.getIntValue("suspend_ms"));
            }
        }
        try {
            Thread.sleep(out.durationMs);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        // What the library is given, named as the listener kind in use names it; a status the
        // kind has no form for (NULL, a thrown exception, another kind's name) takes the library's
        // own fallback for a listener that returned nothing: RECONSUME_LATER, SUSPEND for orderly.
        String given = out.status;
        String error = null;
        if (!valid(given, asOrderly)) {
            String mapped = orderly != asOrderly ? across(given, asOrderly) : null;
            if (mapped != null) {
                given = mapped;      // an orderly group's outcome given to a concurrent listener (a mutant)
            } else {
                error = given;
                given = asOrderly ? "SUSPEND_CURRENT_QUEUE_A_MOMENT" : "RECONSUME_LATER";
            }
        }
        JSONObject finished = new JSONObject(true);
        finished.put("consume_id", id);
        finished.put("status", given);
        if (error != null) {
            finished.put("listener_error", error);
        }
        Protocol.report("consume_finished", finished);
        boolean ok = "SUCCESS".equals(given) || "CONSUME_SUCCESS".equals(given) || "COMMIT".equals(given);
        if ("ack-failed".equals(mutant) && !ok) {
            return asOrderly ? "SUCCESS" : "CONSUME_SUCCESS";
        }
        if ("nack-succeeded".equals(mutant) && ok && error == null && msgs.get(0).getReconsumeTimes() == 0
            && msgs.get(0).getQueueOffset() % 5 == 2) {
            return asOrderly ? "SUSPEND_CURRENT_QUEUE_A_MOMENT" : "RECONSUME_LATER";
        }
        if (error != null) {
            return NULL.equals(error) ? NULL : EXCEPTION;
        }
        return given;
    }

    private static boolean valid(String status, boolean asOrderly) {
        try {
            if (asOrderly) {
                ConsumeOrderlyStatus.valueOf(status);
            } else {
                ConsumeConcurrentlyStatus.valueOf(status);
            }
            return true;
        } catch (IllegalArgumentException | NullPointerException e) {
            return false;
        }
    }

    /** An orderly status in concurrent terms and back (success for success, a retry for a retry). */
    @SuppressWarnings("deprecation")
    private static String across(String status, boolean toOrderly) {
        switch (status) {
            case "SUCCESS": case "COMMIT": return toOrderly ? null : "CONSUME_SUCCESS";
            case "SUSPEND_CURRENT_QUEUE_A_MOMENT": case "ROLLBACK": return toOrderly ? null : "RECONSUME_LATER";
            case "CONSUME_SUCCESS": return toOrderly ? "SUCCESS" : null;
            case "RECONSUME_LATER": return toOrderly ? "SUSPEND_CURRENT_QUEUE_A_MOMENT" : null;
            default: return null;
        }
    }

    private String callMaybeDetached(List<MessageExt> msgs, MessageQueue mq, boolean asOrderly,
                                     ConsumeConcurrentlyContext cc, ConsumeOrderlyContext oc) {
        if ("ack-before-listener".equals(mutant)) {
            List<MessageExt> copy = new ArrayList<>(msgs);
            Thread t = new Thread(() -> call(copy, mq, asOrderly, cc, oc), "rocketspec-detached-listener");
            t.setDaemon(true);
            t.start();
            return asOrderly ? "SUCCESS" : "CONSUME_SUCCESS";
        }
        return call(msgs, mq, asOrderly, cc, oc);
    }

    MessageListenerConcurrently concurrently() {
        return (List<MessageExt> msgs, ConsumeConcurrentlyContext ctx) -> {
            String s = callMaybeDetached(msgs, ctx.getMessageQueue(), false, ctx, null);
            if (NULL.equals(s)) {
                return null;
            }
            if (EXCEPTION.equals(s)) {
                throw new IllegalStateException("scenario listener throws");
            }
            return ConsumeConcurrentlyStatus.valueOf(s);
        };
    }

    MessageListenerOrderly orderly() {
        return (List<MessageExt> msgs, ConsumeOrderlyContext ctx) -> {
            String s = callMaybeDetached(msgs, ctx.getMessageQueue(), true, null, ctx);
            if (NULL.equals(s)) {
                return null;
            }
            if (EXCEPTION.equals(s)) {
                throw new IllegalStateException("scenario listener throws");
            }
            return ConsumeOrderlyStatus.valueOf(s);
        };
    }
}
