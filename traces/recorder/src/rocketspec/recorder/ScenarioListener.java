package rocketspec.recorder;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.common.message.MessageExt;

import java.util.List;
import java.util.Random;

/**
 * The application's listener as a scenario describes it (reference/client/listener.py gives the
 * meaning of each field): per call a status and a duration, from the first matching rule or
 * drawn from the rates. It is the application under test, not RocketMQ.
 */
final class ScenarioListener {
    private final JSONObject spec;
    private final boolean orderly;
    private final Random rng;

    ScenarioListener(JSONObject spec, boolean orderly, long seed) {
        this.spec = spec == null ? new JSONObject() : spec;
        this.orderly = orderly;
        this.rng = new Random(seed);
    }

    private JSONObject rule(List<MessageExt> msgs) {
        JSONArray rules = spec.getJSONArray("rules");
        if (rules == null) {
            return null;
        }
        for (int i = 0; i < rules.size(); i++) {
            JSONObject r = rules.getJSONObject(i);
            for (MessageExt m : msgs) {
                if (r.containsKey("tags") && !r.getJSONArray("tags").contains(m.getTags())) {
                    continue;
                }
                if (r.containsKey("keys") && !r.getJSONArray("keys").contains(m.getKeys())) {
                    continue;
                }
                if (r.containsKey("until_reconsume_times") && m.getReconsumeTimes() >= r.getIntValue("until_reconsume_times")) {
                    continue;
                }
                return r;
            }
        }
        return null;
    }

    private static int[] range(Object d, int[] dflt) {
        if (d == null) {
            return dflt;
        }
        if (d instanceof Number) {
            int v = ((Number) d).intValue();
            return new int[] {v, v};
        }
        JSONArray a = (JSONArray) d;
        return new int[] {a.getIntValue(0), a.getIntValue(1)};
    }

    /** The status name (or NULL / EXCEPTION) after sleeping the call's duration. */
    private synchronized String[] decide(List<MessageExt> msgs) {
        JSONObject r = rule(msgs);
        int[] d = range(spec.get("duration_ms"), new int[] {1, 10});
        if (r != null && r.containsKey("duration_ms")) {
            d = range(r.get("duration_ms"), d);
        }
        long duration = d[0] + (d[1] > d[0] ? rng.nextInt(d[1] - d[0] + 1) : 0);
        String status;
        if (r != null && r.containsKey("status")) {
            status = r.getString("status");
        } else {
            double x = rng.nextDouble();
            double exc = spec.getDoubleValue("exception_rate");
            double nul = spec.getDoubleValue("null_rate");
            double fail = spec.getDoubleValue("fail_rate");
            if (x < exc) {
                status = "EXCEPTION";
            } else if ((x -= exc) < nul) {
                status = "NULL";
            } else if (x - nul < fail) {
                status = spec.getString("fail_status") != null ? spec.getString("fail_status")
                    : orderly ? "SUSPEND_CURRENT_QUEUE_A_MOMENT" : "RECONSUME_LATER";
            } else {
                status = spec.getString("success_status") != null ? spec.getString("success_status")
                    : orderly ? "SUCCESS" : "CONSUME_SUCCESS";
            }
        }
        return new String[] {status, Long.toString(duration)};
    }

    private static void sleep(String ms) {
        try {
            Thread.sleep(Long.parseLong(ms));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    MessageListenerConcurrently concurrently() {
        return (List<MessageExt> msgs, ConsumeConcurrentlyContext ctx) -> {
            String[] sd = decide(msgs);
            if (spec.containsKey("ack_index")) {
                ctx.setAckIndex(spec.getIntValue("ack_index"));
            }
            if (spec.containsKey("delay_level_when_next_consume")) {
                ctx.setDelayLevelWhenNextConsume(spec.getIntValue("delay_level_when_next_consume"));
            }
            sleep(sd[1]);
            switch (sd[0]) {
                case "NULL": return null;
                case "EXCEPTION": throw new IllegalStateException("scenario listener throws");
                default: return ConsumeConcurrentlyStatus.valueOf(sd[0]);
            }
        };
    }

    @SuppressWarnings("deprecation")
    MessageListenerOrderly orderly() {
        return (List<MessageExt> msgs, ConsumeOrderlyContext ctx) -> {
            String[] sd = decide(msgs);
            if (spec.containsKey("auto_commit")) {
                ctx.setAutoCommit(spec.getBooleanValue("auto_commit"));
            }
            if (spec.containsKey("suspend_ms") && spec.getIntValue("suspend_ms") >= 0) {
                ctx.setSuspendCurrentQueueTimeMillis(spec.getIntValue("suspend_ms"));
            }
            sleep(sd[1]);
            switch (sd[0]) {
                case "NULL": return null;
                case "EXCEPTION": throw new IllegalStateException("scenario listener throws");
                default: return ConsumeOrderlyStatus.valueOf(sd[0]);
            }
        };
    }
}
