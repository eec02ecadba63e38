package rocketspec.java5client;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import org.apache.rocketmq.common.message.MessageExt;

import java.util.List;
import java.util.Random;

/**
 * A scenario's listener (docs/scenarios.md; reference/client/listener.py gives each field's
 * meaning): per call a status and a duration, from the first rule matching a message of the batch,
 * else drawn from the rates with the seeded generator, in the order rocketspec's own Java listener
 * draws them, so that the same seed gives the same outcomes.
 */
final class Rules {
    final JSONObject spec;
    private final boolean orderly;
    private final Random rng;

    Rules(JSONObject spec, boolean orderly, long seed) {
        this.spec = spec == null ? new JSONObject() : spec;
        this.orderly = orderly;
        this.rng = new Random(seed);
    }

    private JSONObject match(List<MessageExt> msgs) {
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
                if (r.containsKey("until_reconsume_times")
                    && m.getReconsumeTimes() >= r.getIntValue("until_reconsume_times")) {
                    continue;
                }
                return r;
            }
        }
        return null;
    }

    /** A duration: a number of ms or [low, high]. */
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

    /** The call's outcome: a RocketMQ status name, or NULL / EXCEPTION; and its duration in ms. */
    synchronized Outcome decide(List<MessageExt> msgs) {
        JSONObject r = match(msgs);
        int[] d = range(spec.get("duration_ms"), new int[] {1, 10});
        if (r != null && r.containsKey("duration_ms")) {
            d = range(r.get("duration_ms"), d);
        }
        long duration = d[0] + (d[1] > d[0] ? rng.nextInt(d[1] - d[0] + 1) : 0);
        if (r != null && r.containsKey("status")) {
            return new Outcome(r.getString("status"), duration);
        }
        double x = rng.nextDouble();
        double exc = spec.getDoubleValue("exception_rate");
        double nul = spec.getDoubleValue("null_rate");
        double fail = spec.getDoubleValue("fail_rate");
        String status;
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
        return new Outcome(status, duration);
    }

    static final class Outcome {
        final String status;
        final long durationMs;

        Outcome(String status, long durationMs) {
            this.status = status;
            this.durationMs = durationMs;
        }
    }
}
