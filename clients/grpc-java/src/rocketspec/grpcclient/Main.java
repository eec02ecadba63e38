package rocketspec.grpcclient;

import com.google.gson.Gson;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.java.impl.ClientImpl;
import org.apache.rocketmq.client.java.message.MessageViewImpl;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * A driver program (docs/driver-protocol.md) over upstream's gRPC consumers (rocketmq-client-java).
 * client_type SIMPLE, the SimpleConsumer: it receives from the proxy named in `start` with the
 * group's invisible duration and batch size, hands each message to the scenario's listener rules
 * one at a time, and acks it on success; on failure it changes its invisible duration
 * (config.retry_invisible_ms) or leaves it to come back. A FIFO group stops a batch at its first
 * failure. client_type GRPC_PUSH, the PushConsumer: the library receives, retries and acks; the
 * listener answers SUCCESS or FAILURE by the same rules, with the cache size of
 * config.max_cache_message_count. Each listener call is reported as a pop_consume_started /
 * pop_consume_finished pair.
 */
public final class Main {
    private static final long AWAIT_MS = 5000;   // the receive's long poll (the proxy takes 5 to 20 s)
    private static PrintStream out;
    private static final Gson GSON = new Gson();
    private static volatile boolean running = true;

    private Main() {
    }

    static synchronized void report(JsonObject o) {
        o.addProperty("ts_ns", System.currentTimeMillis() * 1_000_000L + System.nanoTime() % 1_000_000L);
        out.println(GSON.toJson(o));
        out.flush();
    }

    static JsonObject line(String type) {
        JsonObject o = new JsonObject();
        o.addProperty("type", type);
        return o;
    }

    static void error(String message) {
        JsonObject o = line("error");
        o.addProperty("message", message);
        report(o);
    }

    public static void main(String[] args) throws Exception {
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        System.setOut(System.err);   // stdout carries protocol lines only
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String first = in.readLine();
        if (first == null) {
            return;
        }
        JsonObject start;
        try {
            start = JsonParser.parseString(first).getAsJsonObject();
        } catch (RuntimeException e) {
            error("the first line is not a JSON object: " + e.getMessage());
            System.exit(2);
            return;
        }
        if (!"start".equals(str(start, "type")) || start.get("protocol") == null || start.get("protocol").getAsInt() != 1) {
            error("expected a start request of protocol 1, got " + first);
            System.exit(2);
        }
        String proxy = str(start, "proxy");
        if (proxy == null) {
            error("the start request names no proxy: a SimpleConsumer is a gRPC client of RocketMQ's proxy "
                + "(record starts it for scenarios whose groups are client_type SIMPLE)");
            System.exit(2);
        }
        JsonObject cfg = start.getAsJsonObject("config");
        String group = str(start, "group");
        boolean orderly = "ORDERLY".equals(str(cfg, "consume_mode"));
        long invisibleMs = cfg.get("pop_invisible_time").getAsLong();
        int batch = cfg.get("pop_batch_nums").getAsInt();
        Long retryInvisibleMs = cfg.has("retry_invisible_ms") && !cfg.get("retry_invisible_ms").isJsonNull()
            ? cfg.get("retry_invisible_ms").getAsLong() : null;
        Map<String, FilterExpression> subs = new HashMap<>();
        for (Map.Entry<String, JsonElement> e : start.getAsJsonObject("subscriptions").entrySet()) {
            JsonObject s = e.getValue().getAsJsonObject();
            subs.put(e.getKey(), new FilterExpression(str(s, "expr"),
                "SQL92".equals(str(s, "type")) ? FilterExpressionType.SQL92 : FilterExpressionType.TAG));
        }
        Rules rules = new Rules(start.get("listener") == null || start.get("listener").isJsonNull() ? new JsonObject()
            : start.getAsJsonObject("listener"), orderly, start.get("seed").getAsLong());

        ClientServiceProvider provider = ClientServiceProvider.loadService();
        ClientConfiguration cc = ClientConfiguration.newBuilder().setEndpoints(proxy).enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(3)).build();
        if ("GRPC_PUSH".equals(str(cfg, "client_type"))) {
            runPush(provider, cc, group, subs, rules, orderly, cfg, in);
            return;
        }
        SimpleConsumer consumer;
        try {
            consumer = provider.newSimpleConsumerBuilder().setClientConfiguration(cc).setConsumerGroup(group)
                .setSubscriptionExpressions(subs).setAwaitDuration(Duration.ofMillis(AWAIT_MS)).build();
        } catch (Exception e) {
            error("the SimpleConsumer did not start: " + e);
            System.exit(2);
            return;
        }
        JsonObject started = line("started");
        started.addProperty("client_id", ((ClientImpl) consumer).getClientId().toString());
        JsonObject used = new JsonObject();
        used.addProperty("client_type", "SIMPLE");
        used.addProperty("pop_invisible_time", invisibleMs);
        used.addProperty("pop_batch_nums", batch);
        used.addProperty("await_duration_ms", AWAIT_MS);
        started.add("config", used);
        started.addProperty("library", "rocketmq-client-java");
        started.addProperty("library_version", "5.2.0");
        report(started);

        Thread loop = new Thread(() -> receiveLoop(consumer, rules, orderly, invisibleMs, batch, retryInvisibleMs),
            "rocketspec-receive");
        loop.start();
        String l;
        while ((l = in.readLine()) != null) {
            if (l.contains("\"shutdown\"")) {
                break;
            }
        }
        running = false;
        loop.join(AWAIT_MS + 15_000);
        consumer.close();
        report(line("stopped"));
        System.exit(0);
    }

    /** pop_consume_started: a listener call on one message, with the proxy's receipt handle. */
    static void reportStarted(int consumeId, MessageViewImpl v, int times) {
        JsonObject s = line("pop_consume_started");
        s.addProperty("consume_id", consumeId);
        s.addProperty("topic", v.getTopic());
        s.addProperty("broker", v.getMessageQueue().getBroker().getName());
        s.addProperty("queue", queueOf(v));
        JsonArray arr = new JsonArray();
        JsonObject one = new JsonObject();
        one.addProperty("offset", v.getOffset());
        one.addProperty("msg_id", v.getMessageId().toString());
        one.addProperty("origin_msg_id", v.getMessageId().toString());
        one.addProperty("reconsume_times", times);
        one.addProperty("handle", v.getReceiptHandle());
        arr.add(one);
        s.add("messages", arr);
        if (v.getTag().isPresent()) {
            s.addProperty("tags", v.getTag().get());
        }
        report(s);
    }

    /** client_type GRPC_PUSH: upstream's PushConsumer, its listener the scenario's rules. */
    private static void runPush(ClientServiceProvider provider, ClientConfiguration cc, String group,
        Map<String, FilterExpression> subs, Rules rules, boolean orderly, JsonObject cfg, BufferedReader in)
        throws Exception {
        int cache = cfg.has("max_cache_message_count") ? cfg.get("max_cache_message_count").getAsInt() : 1024;
        int[] ids = {0};
        PushConsumer consumer;
        try {
            consumer = provider.newPushConsumerBuilder().setClientConfiguration(cc).setConsumerGroup(group)
                .setSubscriptionExpressions(subs).setMaxCacheMessageCount(cache)
                .setMessageListener(m -> {
                    MessageViewImpl v = (MessageViewImpl) m;
                    int times = m.getDeliveryAttempt() - 1;
                    int consumeId;
                    synchronized (ids) {
                        consumeId = ++ids[0];
                    }
                    reportStarted(consumeId, v, times);
                    Rules.Outcome o = rules.decide(m.getTag().orElse(null), m.getKeys(), times);
                    sleep(o.durationMs);
                    boolean ok = o.status.equals("CONSUME_SUCCESS") || o.status.equals("SUCCESS");
                    String status = ok || o.status.equals("RECONSUME_LATER") || o.status.equals("SUSPEND_CURRENT_QUEUE_A_MOMENT")
                        ? o.status : (orderly ? "SUSPEND_CURRENT_QUEUE_A_MOMENT" : "RECONSUME_LATER");
                    JsonObject f = line("pop_consume_finished");
                    f.addProperty("consume_id", consumeId);
                    f.addProperty("status", status);
                    if (!status.equals(o.status)) {
                        f.addProperty("listener_error", o.status);
                    }
                    // the proxy renews the handle while the call runs: a call does not time out
                    f.addProperty("timed_out", false);
                    report(f);
                    return ok ? ConsumeResult.SUCCESS : ConsumeResult.FAILURE;
                }).build();
        } catch (Exception e) {
            error("the PushConsumer did not start: " + e);
            System.exit(2);
            return;
        }
        JsonObject started = line("started");
        started.addProperty("client_id", ((ClientImpl) consumer).getClientId().toString());
        JsonObject used = new JsonObject();
        used.addProperty("client_type", "GRPC_PUSH");
        used.addProperty("message_request_mode", "POP");
        used.addProperty("max_cache_message_count", cache);
        started.add("config", used);
        started.addProperty("library", "rocketmq-client-java");
        started.addProperty("library_version", "5.2.0");
        report(started);
        String l;
        while ((l = in.readLine()) != null) {
            if (l.contains("\"shutdown\"")) {
                break;
            }
        }
        running = false;
        consumer.close();
        report(line("stopped"));
        System.exit(0);
    }

    private static String str(JsonObject o, String k) {
        JsonElement e = o == null ? null : o.get(k);
        return e == null || e.isJsonNull() ? null : e.getAsString();
    }

    private static void receiveLoop(SimpleConsumer consumer, Rules rules, boolean orderly, long invisibleMs, int batch,
        Long retryInvisibleMs) {
        int consumeId = 0;
        while (running) {
            List<MessageView> msgs;
            long receivedAt = System.currentTimeMillis();
            try {
                msgs = consumer.receive(batch, Duration.ofMillis(invisibleMs));
            } catch (Exception e) {
                System.err.println("receive failed: " + e);
                sleep(1000);
                continue;
            }
            for (MessageView m : msgs) {
                if (!running) {
                    return;   // the rest come back when their invisible time ends
                }
                MessageViewImpl v = (MessageViewImpl) m;
                int times = m.getDeliveryAttempt() - 1;
                reportStarted(++consumeId, v, times);
                Rules.Outcome o = rules.decide(m.getTag().orElse(null), m.getKeys(), times);
                sleep(o.durationMs);
                boolean ok = o.status.equals("CONSUME_SUCCESS") || o.status.equals("SUCCESS");
                String status = ok || o.status.equals("RECONSUME_LATER") || o.status.equals("SUSPEND_CURRENT_QUEUE_A_MOMENT")
                    ? o.status : (orderly ? "SUSPEND_CURRENT_QUEUE_A_MOMENT" : "RECONSUME_LATER");
                JsonObject f = line("pop_consume_finished");
                f.addProperty("consume_id", consumeId);
                f.addProperty("status", status);
                if (!status.equals(o.status)) {
                    f.addProperty("listener_error", o.status);   // NULL or EXCEPTION: the application failed
                }
                // the call outlived the message's invisible time
                f.addProperty("timed_out", System.currentTimeMillis() > deadlineOf(v, receivedAt + invisibleMs));
                report(f);
                try {
                    if (ok) {
                        consumer.ack(m);
                    } else if (retryInvisibleMs != null) {
                        consumer.changeInvisibleDuration(m, Duration.ofMillis(retryInvisibleMs));
                    }
                } catch (Exception e) {
                    // a late ack (its handle expired) is refused by the proxy; the message comes back
                    System.err.println((ok ? "ack" : "change") + " of " + m.getMessageId() + " failed: " + e);
                    JsonObject r = line("pop_settle_failed");
                    r.addProperty("consume_id", consumeId);
                    r.addProperty("msg_id", m.getMessageId().toString());
                    r.addProperty("action", ok ? "ack" : "change");
                    r.addProperty("error", String.valueOf(e));
                    report(r);
                }
                if (!ok && orderly) {
                    break;   // FIFO: the rest of the batch waits for this one
                }
            }
        }
    }

    /**
     * The popped copy's queue id. The library's MessageView names the queue its receive request was
     * routed to (MessageViewImpl.fromProtobuf, 5.2.0), not the message's; the proxy's receipt handle
     * names the message's (ExtraInfoUtil's fields: its 7th is the queue id).
     */
    static int queueOf(MessageViewImpl v) {
        String[] f = v.getReceiptHandle().split(" ");
        if (f.length >= 8) {
            try {
                return Integer.parseInt(f[6]);
            } catch (NumberFormatException e) {
                // not the proxy's handle: the library's queue is the best there is
            }
        }
        return v.getMessageQueue().getQueueId();
    }

    /**
     * When the message's handle runs out: the pop time plus the invisible time the proxy's receipt
     * handle carries (ExtraInfoUtil's 2nd and 3rd fields; the pop comes after the receive's start,
     * as late as the end of its long poll), else `otherwise`.
     */
    static long deadlineOf(MessageViewImpl v, long otherwise) {
        String[] f = v.getReceiptHandle().split(" ");
        if (f.length >= 8) {
            try {
                return Long.parseLong(f[1]) + Long.parseLong(f[2]);
            } catch (NumberFormatException e) {
                // not the proxy's handle
            }
        }
        return otherwise;
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The scenario's listener (docs/scenarios.md): the first matching rule, else the seeded rates. */
    static final class Rules {
        private final JsonObject spec;
        private final boolean orderly;
        private final Random rng;

        Rules(JsonObject spec, boolean orderly, long seed) {
            this.spec = spec;
            this.orderly = orderly;
            this.rng = new Random(seed);
        }

        private static boolean has(JsonArray a, String v) {
            for (JsonElement e : a) {
                if (v != null && v.equals(e.getAsString())) {
                    return true;
                }
            }
            return false;
        }

        private JsonObject match(String tag, java.util.Collection<String> keys, int times) {
            JsonArray rs = spec.has("rules") ? spec.getAsJsonArray("rules") : null;
            if (rs == null) {
                return null;
            }
            for (JsonElement e : rs) {
                JsonObject r = e.getAsJsonObject();
                if (r.has("tags") && !has(r.getAsJsonArray("tags"), tag)) {
                    continue;
                }
                if (r.has("keys") && keys.stream().noneMatch(k -> has(r.getAsJsonArray("keys"), k))) {
                    continue;
                }
                if (r.has("until_reconsume_times") && times >= r.get("until_reconsume_times").getAsInt()) {
                    continue;
                }
                return r;
            }
            return null;
        }

        private static long[] range(JsonElement d, long[] dflt) {
            if (d == null || d.isJsonNull()) {
                return dflt;
            }
            if (d.isJsonPrimitive()) {
                return new long[] {d.getAsLong(), d.getAsLong()};
            }
            JsonArray a = d.getAsJsonArray();
            return new long[] {a.get(0).getAsLong(), a.get(1).getAsLong()};
        }

        private double rate(String k) {
            return spec.has(k) && !spec.get(k).isJsonNull() ? spec.get(k).getAsDouble() : 0;
        }

        synchronized Outcome decide(String tag, java.util.Collection<String> keys, int times) {
            JsonObject r = match(tag, keys, times);
            long[] d = range(spec.get("duration_ms"), new long[] {1, 10});
            if (r != null && r.has("duration_ms")) {
                d = range(r.get("duration_ms"), d);
            }
            long duration = d[0] + (d[1] > d[0] ? rng.nextInt((int) (d[1] - d[0] + 1)) : 0);
            if (r != null && r.has("status")) {
                return new Outcome(r.get("status").getAsString(), duration);
            }
            double x = rng.nextDouble();
            double exc = rate("exception_rate");
            double nul = rate("null_rate");
            double fail = rate("fail_rate");
            String status;
            if (x < exc) {
                status = "EXCEPTION";
            } else if ((x -= exc) < nul) {
                status = "NULL";
            } else if (x - nul < fail) {
                status = spec.has("fail_status") ? spec.get("fail_status").getAsString()
                    : orderly ? "SUSPEND_CURRENT_QUEUE_A_MOMENT" : "RECONSUME_LATER";
            } else {
                status = spec.has("success_status") ? spec.get("success_status").getAsString()
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
}
