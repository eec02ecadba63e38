package rocketspec.java5client;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONObject;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * rocketspec-java5-client: drives upstream's RocketMQ 5.x Java remoting push consumer
 * (DefaultMQPushConsumer of rocketmq-client, pinned from Maven Central) through rocketspec's client
 * driver protocol (docs/driver-protocol.md): the `start` request on stdin, the reports on stdout,
 * the library's log on stderr.
 */
public final class Main {
    static final int PROTOCOL = 1;

    /**
     * The library's timing knobs, which it reads once from JVM system properties (ProcessQueue,
     * RebalanceService, RebalancePushImpl, ConsumeMessageOrderlyService), with their 5.5.0 defaults;
     * set from `start.config` before the classes load.
     */
    static final String[][] KNOBS = {
        {"rebalance_interval_ms", "rocketmq.client.rebalance.waitInterval", "20000"},
        {"lock_interval_ms", "rocketmq.client.rebalance.lockInterval", "20000"},
        {"client_lock_max_live_ms", "rocketmq.client.rebalance.lockMaxLiveTime", "30000"},
        {"pull_max_idle_ms", "rocketmq.client.pull.pullMaxIdleTime", "120000"},
        {"unlock_delay_ms", "rocketmq.client.unlockDelayTimeMills", "20000"},
        {"max_time_consume_continuously_ms", "rocketmq.client.maxTimeConsumeContinuously", "60000"},
    };

    private Main() {
    }

    public static void main(String[] args) throws Exception {
        Protocol.claimStdout();
        String mutant = null;
        try {
            mutant = Mutants.parse(args);
        } catch (IllegalArgumentException e) {
            Protocol.fail(e.getMessage());
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String first = in.readLine();
        if (first == null) {
            Protocol.fail("stdin closed before the start request");
        }
        JSONObject req = null;
        try {
            Object o = JSON.parse(first);
            req = o instanceof JSONObject ? (JSONObject) o : null;
        } catch (RuntimeException e) {
            req = null;
        }
        if (req == null || !"start".equals(req.getString("type"))) {
            Protocol.fail("first line: expected a start request (a JSON object with \"type\": \"start\"), got "
                + JSON.toJSONString(first.length() > 200 ? first.substring(0, 200) + "..." : first));
        }
        Object proto = req.get("protocol");
        if (!(proto instanceof Integer) || (Integer) proto != PROTOCOL) {
            Protocol.fail("start: protocol " + proto + "; this client speaks " + PROTOCOL);
        }
        for (String field : new String[] {"client", "group", "namesrv"}) {
            if (!(req.get(field) instanceof String) || req.getString(field).isEmpty()) {
                Protocol.fail("start: expected '" + field + "', a non-empty string; got " + JSON.toJSONString(req.get(field)));
            }
        }
        if (!(req.get("subscriptions") instanceof JSONObject) || req.getJSONObject("subscriptions").isEmpty()) {
            Protocol.fail("start: expected 'subscriptions', an object {topic: {type, expr}} with at least one topic");
        }
        JSONObject cfg = req.get("config") instanceof JSONObject ? req.getJSONObject("config") : new JSONObject();
        Map<String, Object> knobs = new LinkedHashMap<>();
        for (String[] k : KNOBS) {
            if (cfg.get(k[0]) instanceof Number) {
                System.setProperty(k[1], Long.toString(cfg.getLongValue(k[0])));
            }
            knobs.put(k[0], Long.parseLong(System.getProperty(k[1], k[2])));
        }
        Consumer c = null;
        try {
            c = new Consumer(req, mutant);
            c.start();
        } catch (IllegalArgumentException e) {
            Protocol.fail("start: " + e.getMessage());     // a setting this program does not drive
        } catch (Exception e) {
            Protocol.fail("start: the library refused: " + e);
        }
        JSONObject started = new JSONObject(true);
        started.put("client_id", c.clientId());
        started.put("library", "org.apache.rocketmq:rocketmq-client");
        started.put("library_version", Consumer.libraryVersion());
        JSONObject applied = new JSONObject(true);
        applied.putAll(c.applied);
        applied.putAll(knobs);
        started.put("config", applied);
        Protocol.report("started", started);

        // "shutdown" (or stdin closing: rocketspec is gone) stops the consumer gracefully
        String line;
        while ((line = in.readLine()) != null) {
            JSONObject m = null;
            try {
                Object o = JSON.parse(line);
                m = o instanceof JSONObject ? (JSONObject) o : null;
            } catch (RuntimeException e) {
                m = null;
            }
            if (m == null) {
                JSONObject err = new JSONObject(true);
                err.put("message", "expected a JSON request, got " + JSON.toJSONString(line));
                Protocol.report("error", err);
                continue;
            }
            if ("shutdown".equals(m.getString("type"))) {
                break;
            }
            JSONObject err = new JSONObject(true);
            err.put("message", "unknown request type " + JSON.toJSONString(m.get("type")));
            Protocol.report("error", err);
        }
        if ("stop-early".equals(mutant)) {
            Protocol.report("stopped");
            Thread.sleep(3000);
            c.shutdown();
            Runtime.getRuntime().halt(0);
        }
        c.shutdown();
        Protocol.report("stopped");
        // the library leaves non-daemon threads behind on some paths: the process ends here
        Runtime.getRuntime().halt(0);
    }
}
