/*
 * Differential driver: applies scripted operations to RocketMQ's real ProcessQueue and
 * RebalanceLockManager and prints the observable state after every step, for
 * tests/test_real_pq_lock.py to compare with rocketspec's reference classes.
 *
 * Usage: java -cp <driver dir>:<RocketMQ classpath> PqDiff LOCK_LIFETIME_MS
 * stdin: one JSON object per line, {"kind": "pq" | "lock", "ops": [...]}
 * stdout: one JSON line per script, {"steps": [{...}, ...]}
 *
 * Virtual clocks. Both classes read System.currentTimeMillis(). Time is scaled so that real
 * drift cannot change a decision: a virtual age a (ms) becomes the real age a*K, and a virtual
 * limit L the real limit L*K + K/2, so "real age + drift > L*K + K/2" holds exactly when
 * "a > L", as long as the drift stays below K/2. Before each step every stored timestamp is
 * rewritten from its virtual value (lock entries by reflection, CONSUME_START_TIME as the
 * property the class parses); a timestamp the step changed was set at the step's virtual now.
 */
import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import org.apache.rocketmq.broker.client.rebalance.RebalanceLockManager;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.impl.consumer.ProcessQueue;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.*;
import java.util.concurrent.ConcurrentMap;

public class PqDiff {
    static final long LOCK_K = 10_000L;        // lock clock scale: drift tolerance 5 s
    static final long CLEAN_K = 120_000L;      // consumeTimeout is in minutes: (2T+1) min = T*K + K/2

    public static void main(String[] args) throws Exception {
        long lifetime = Long.parseLong(args[0]);
        // read once, when RebalanceLockManager initialises
        System.setProperty("rocketmq.broker.rebalance.lockMaxLiveTime", Long.toString(lifetime * LOCK_K + LOCK_K / 2));
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, "UTF-8");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.trim().isEmpty()) continue;
            JSONObject script = JSON.parseObject(line);
            JSONArray steps;
            String kind = script.getString("kind");
            if ("pq".equals(kind)) steps = new PqRun().run(script.getJSONArray("ops"));
            else if ("lock".equals(kind)) steps = new LockRun().run(script.getJSONArray("ops"));
            else throw new IllegalArgumentException("unknown script kind " + kind);
            JSONObject res = new JSONObject();
            res.put("steps", steps);
            out.println(res.toJSONString());
            out.flush();
        }
    }

    static String exc(Throwable t) {
        return t.getClass().getSimpleName() + ": " + t.getMessage();
    }

    // ------------------------------------------------------------------ ProcessQueue
    static class PqRun {
        final ProcessQueue pq = new ProcessQueue();
        final Map<String, MessageExt> msgs = new HashMap<>();
        final Map<String, Long> starts = new HashMap<>();   // id -> virtual consume start
        final List<Object[]> sent = new ArrayList<>();
        final Deque<Boolean> failures = new ArrayDeque<>();
        final DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("pqdiff") {
            @Override
            public void sendMessageBack(MessageExt msg, int delayLevel) throws MQClientException {
                sent.add(new Object[] {msg.getMsgId(), delayLevel});
                Boolean fail = failures.poll();
                if (fail != null && fail) throw new MQClientException("scripted send-back failure", null);
            }
        };

        MessageExt msg(JSONObject m) {
            String id = m.getString("id");
            MessageExt e = msgs.get(id);
            if (e == null) {
                e = new MessageExt();
                e.setMsgId(id);
                e.setTopic("T");
                e.setQueueOffset(m.getLongValue("offset"));
                e.setBody(new byte[m.getIntValue("size")]);
                JSONObject props = m.getJSONObject("props");
                if (props != null) {
                    // putProperty is package-private: properties as the client sets them
                    Map<String, String> p = new HashMap<>();
                    for (String k : props.keySet()) p.put(k, props.getString(k));
                    org.apache.rocketmq.common.message.MessageAccessor.setProperties(e, p);
                }
                if (m.get("start") != null) starts.put(id, m.getLong("start"));
                msgs.put(id, e);
            }
            return e;
        }

        List<MessageExt> list(JSONArray a) {
            List<MessageExt> l = new ArrayList<>();
            for (int i = 0; i < a.size(); i++) l.add(msg(a.getJSONObject(i)));
            return l;
        }

        JSONArray run(JSONArray ops) throws Exception {
            JSONArray steps = new JSONArray();
            for (int i = 0; i < ops.size(); i++) {
                JSONObject op = ops.getJSONObject(i);
                JSONObject st = new JSONObject();
                pq.setLastConsumeTimestamp(0);
                sent.clear();
                try {
                    switch (op.getString("op")) {
                        case "put": st.put("ret", pq.putMessage(list(op.getJSONArray("msgs")))); break;
                        case "remove": st.put("ret", pq.removeMessage(list(op.getJSONArray("msgs")))); break;
                        case "take": {
                            JSONArray ids = new JSONArray();
                            for (MessageExt m : pq.takeMessages(op.getIntValue("n"))) ids.add(m.getMsgId());
                            st.put("ret", ids);
                            break;
                        }
                        case "commit": st.put("ret", pq.commit()); break;
                        case "rollback": pq.rollback(); break;
                        case "again": pq.makeMessageToConsumeAgain(list(op.getJSONArray("msgs"))); break;
                        case "clear": pq.clear(); break;
                        case "dropped": pq.setDropped(op.getBooleanValue("value")); break;
                        case "clean": clean(op); break;
                        default: throw new IllegalArgumentException("unknown pq op " + op.getString("op"));
                    }
                } catch (RuntimeException e) {
                    st.put("exc", e.getClass().getSimpleName());
                    st.put("msg", e.getMessage());
                }
                if (!sent.isEmpty()) {
                    JSONArray s = new JSONArray();
                    for (Object[] x : sent) s.add(Arrays.asList(x));
                    st.put("sent", s);
                }
                state(st);
                steps.add(st);
            }
            return steps;
        }

        void clean(JSONObject op) throws Exception {
            long now = op.getLongValue("now"), timeout = op.getLongValue("timeout_ms");
            setConsumeOrderly(op.getBooleanValue("orderly"));
            consumer.setConsumeTimeout(2 * timeout + 1);
            failures.clear();
            JSONArray f = op.getJSONArray("fail");
            if (f != null) for (int i = 0; i < f.size(); i++) failures.add(f.getBooleanValue(i));
            long r = System.currentTimeMillis();
            for (Map.Entry<String, Long> e : starts.entrySet()) {
                org.apache.rocketmq.common.message.MessageAccessor.putProperty(msgs.get(e.getKey()),
                    MessageConst.PROPERTY_CONSUME_START_TIMESTAMP, Long.toString(r - (now - e.getValue()) * CLEAN_K));
            }
            pq.cleanExpiredMsg(consumer);
        }

        void setConsumeOrderly(boolean v) throws Exception {
            Field f = consumer.getDefaultMQPushConsumerImpl().getClass().getDeclaredField("consumeOrderly");
            f.setAccessible(true);
            f.setBoolean(consumer.getDefaultMQPushConsumerImpl(), v);
        }

        @SuppressWarnings("unchecked")
        void state(JSONObject st) throws Exception {
            JSONArray tree = new JSONArray();
            for (Map.Entry<Long, MessageExt> e : pq.getMsgTreeMap().entrySet()) tree.add(Arrays.asList(e.getKey(), e.getValue().getMsgId()));
            st.put("tree", tree);
            JSONArray cons = new JSONArray();
            TreeMap<Long, MessageExt> ct = (TreeMap<Long, MessageExt>) field("consumingMsgOrderlyTreeMap").get(pq);
            for (Map.Entry<Long, MessageExt> e : ct.entrySet()) cons.add(Arrays.asList(e.getKey(), e.getValue().getMsgId()));
            st.put("consuming_tree", cons);
            st.put("count", pq.getMsgCount().get());
            st.put("size", pq.getMsgSize().get());
            st.put("qmax", field("queueOffsetMax").getLong(pq));
            st.put("consuming", field("consuming").getBoolean(pq));
            st.put("acc", pq.getMsgAccCnt());
            st.put("dropped", pq.isDropped());
            st.put("touched", pq.getLastConsumeTimestamp() != 0);
        }

        static Field field(String name) throws Exception {
            Field f = ProcessQueue.class.getDeclaredField(name);
            f.setAccessible(true);
            return f;
        }
    }

    // ------------------------------------------------------------------ RebalanceLockManager
    static class LockRun {
        final RebalanceLockManager mgr = new RebalanceLockManager();
        // (group, mq) -> virtual last update
        final Map<String, Map<MessageQueue, Long>> virt = new HashMap<>();

        static MessageQueue mq(JSONArray a) {
            return new MessageQueue(a.getString(0), a.getString(1), a.getIntValue(2));
        }

        static Set<MessageQueue> mqs(JSONArray a) {
            Set<MessageQueue> s = new HashSet<>();
            for (int i = 0; i < a.size(); i++) s.add(mq(a.getJSONArray(i)));
            return s;
        }

        @SuppressWarnings("unchecked")
        ConcurrentMap<String, ConcurrentMap<MessageQueue, Object>> table() throws Exception {
            Field f = RebalanceLockManager.class.getDeclaredField("mqLockTable");
            f.setAccessible(true);
            return (ConcurrentMap<String, ConcurrentMap<MessageQueue, Object>>) f.get(mgr);
        }

        static Field entryField(Object entry, String name) throws Exception {
            Field f = entry.getClass().getDeclaredField(name);
            f.setAccessible(true);
            return f;
        }

        JSONArray run(JSONArray ops) throws Exception {
            JSONArray steps = new JSONArray();
            for (int i = 0; i < ops.size(); i++) {
                JSONObject op = ops.getJSONObject(i);
                long now = op.getLongValue("now");
                // rewrite every entry's timestamp from its virtual value
                long r = System.currentTimeMillis();
                Map<Object, Long> written = new IdentityHashMap<>();
                for (Map.Entry<String, ConcurrentMap<MessageQueue, Object>> g : table().entrySet()) {
                    for (Map.Entry<MessageQueue, Object> e : g.getValue().entrySet()) {
                        long v = virt.get(g.getKey()).get(e.getKey());
                        long real = r - (now - v) * LOCK_K;
                        entryField(e.getValue(), "lastUpdateTimestamp").setLong(e.getValue(), real);
                        written.put(e.getValue(), real);
                    }
                }
                JSONObject st = new JSONObject();
                String group = op.getString("group"), client = op.getString("client");
                switch (op.getString("op")) {
                    case "lock": st.put("ret", mgr.tryLock(group, mq(op.getJSONArray("mq")), client)); break;
                    case "lockBatch": {
                        List<List<Object>> got = new ArrayList<>();
                        for (MessageQueue q : mgr.tryLockBatch(group, mqs(op.getJSONArray("mqs")), client))
                            got.add(Arrays.asList(q.getTopic(), q.getBrokerName(), q.getQueueId()));
                        got.sort(Comparator.comparing(Object::toString));
                        st.put("ret", got);
                        break;
                    }
                    case "unlockBatch": mgr.unlockBatch(group, mqs(op.getJSONArray("mqs")), client); break;
                    default: throw new IllegalArgumentException("unknown lock op " + op.getString("op"));
                }
                // read back: a timestamp that changed (or a new entry) was set at virtual now
                Map<String, Map<MessageQueue, Long>> nv = new HashMap<>();
                List<List<Object>> rows = new ArrayList<>();
                for (Map.Entry<String, ConcurrentMap<MessageQueue, Object>> g : table().entrySet()) {
                    for (Map.Entry<MessageQueue, Object> e : g.getValue().entrySet()) {
                        Object entry = e.getValue();
                        long ts = entryField(entry, "lastUpdateTimestamp").getLong(entry);
                        Long w = written.get(entry);
                        long v = (w != null && w == ts) ? virt.get(g.getKey()).get(e.getKey()) : now;
                        nv.computeIfAbsent(g.getKey(), k -> new HashMap<>()).put(e.getKey(), v);
                        MessageQueue q = e.getKey();
                        rows.add(Arrays.asList(g.getKey(), q.getTopic(), q.getBrokerName(), q.getQueueId(),
                            entryField(entry, "clientId").get(entry), v));
                    }
                }
                virt.clear();
                virt.putAll(nv);
                rows.sort(Comparator.comparing(Object::toString));
                st.put("table", rows);
                steps.add(st);
            }
            return steps;
        }
    }
}
