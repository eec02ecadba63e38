package rocketspec.recorder;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.store.schedule.ScheduleMessageService;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.namesrv.NamesrvConfig;
import org.apache.rocketmq.common.protocol.ResponseCode;
import org.apache.rocketmq.common.protocol.heartbeat.MessageModel;
import org.apache.rocketmq.common.topic.TopicValidator;
import org.apache.rocketmq.namesrv.NamesrvController;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyServerConfig;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.common.protocol.route.TopicRouteData;
import org.apache.rocketmq.store.MessageStore;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;

import static rocketspec.recorder.TraceWriter.event;

/**
 * Runs one scenario plan (JSON written by `rocketspec record` from a scenario file) on a real
 * in-process RocketMQ: a namesrv, one broker and the producers in this JVM; consumers in this
 * JVM (own instanceName each) or, when a step kills or freezes them, in their own JVM
 * ({@link ClientMain}). Writes trace parts into the plan's out_dir: driver.jsonl here and one
 * file per separate client; `rocketspec record` merges them.
 *
 * <p>Exit status: 0 trace written; 2 a step or setting real RocketMQ cannot do; 3 an error.
 */
public final class Driver {
    private final JSONObject plan;
    private final String dir;
    private final TraceWriter w;
    private final long t0Deadline;
    private NamesrvController namesrv;
    private BrokerController broker;
    private BrokerRecorder brokerRecorder;
    /** The broker side of POP (5.x), when a group of the plan consumes by POP; else null. */
    private PopObserver pop;
    private DefaultMQProducer producer;
    private String namesrvAddr;
    private String brokerAddr;
    private final Map<String, ScenarioConsumer> inProcess = new LinkedHashMap<>();
    private final Map<String, Process> separate = new LinkedHashMap<>();
    private final Map<String, String> groupOf = new HashMap<>();
    private final Map<String, Boolean> alive = new ConcurrentHashMap<>();
    /** Clients stopped by SIGSTOP and not resumed yet: a run is not quiescent while one is. */
    private final Map<String, Boolean> paused = new ConcurrentHashMap<>();
    private final Map<String, Integer> lives = new HashMap<>();   // client JVMs spawned so far, per client
    private final Random rng;
    private final JSONArray refusedSteps = new JSONArray();
    private final JSONArray issuedSteps = new JSONArray();
    private long t0;
    private volatile int producersRunning;

    private Driver(JSONObject plan) throws IOException {
        this.plan = plan;
        this.dir = plan.getString("work_dir");
        new File(plan.getString("out_dir")).mkdirs();
        this.w = new TraceWriter(plan.getString("out_dir") + "/driver.jsonl");
        this.t0Deadline = System.currentTimeMillis() + plan.getLongValue("timeout_ms");
        this.rng = new Random(plan.getLongValue("seed"));
    }

    public static void main(String[] args) throws Exception {
        JSONObject plan = JSON.parseObject(new String(Files.readAllBytes(Paths.get(args[0])), StandardCharsets.UTF_8));
        // What NamesrvStartup and BrokerStartup set first: the version every request carries.
        // Unset, the broker's first registration goes out as version 0, which the name server
        // reads with its pre-3.0.11 handler (DefaultRequestProcessor.registerBroker) that finds
        // no topic in the body: the broker's own topics (RMQ_SYS_TRACE_TOPIC, TBW102) got no
        // route until its next full registration (30 s, or a new %RETRY% topic).
        System.setProperty(RemotingCommand.REMOTING_VERSION_KEY, Integer.toString(MQVersion.CURRENT_VERSION));
        Driver d = new Driver(plan);
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(Math.max(1000, d.t0Deadline - System.currentTimeMillis() + 20_000));
            } catch (InterruptedException e) {
                return;
            }
            System.err.println("rocketspec driver: watchdog: run exceeded its time bound; stopping");
            d.killChildren();
            Runtime.getRuntime().halt(3);
        }, "rocketspec-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
        int rc;
        try {
            rc = d.run();
        } catch (Throwable e) {
            e.printStackTrace();
            rc = 3;
        } finally {
            d.killChildren();
        }
        System.out.flush();
        Runtime.getRuntime().halt(rc);
    }

    private static int freePort(int gap) throws IOException {
        for (int i = 0; i < 50; i++) {
            int p;
            try (ServerSocket s = new ServerSocket(0)) {
                p = s.getLocalPort();
            }
            if (p - gap < 1024) {
                continue;
            }
            try (ServerSocket a = new ServerSocket(p - gap)) {
                return p;
            } catch (IOException ignored) {
                // try another
            }
        }
        throw new IOException("no free port pair");
    }

    private int run() throws Exception {
        JSONObject trace = new JSONObject(true);
        // schema version 4: every push consumer's start() return is marked (client_start_returned)
        w.emit(event("trace_started").put("schema_version", 4).put("profile", plan.getString("profile"))
            .put("seed", plan.getLongValue("seed")).put("scenario", plan.getString("name"))
            .put("config", plan.getJSONObject("scenario")));
        startCluster();
        if (plan.getString("msgtrace_out") != null) {
            awaitTraceTopicRoute();
        }
        createTopics();
        startProducer();
        t0 = System.currentTimeMillis();
        List<JSONObject> steps = new ArrayList<>();
        for (Object o : plan.getJSONArray("steps")) {
            steps.add((JSONObject) o);
        }
        steps.sort((a, b) -> Long.compare(a.getLongValue("at_ms"), b.getLongValue("at_ms")));
        for (Object o : plan.getJSONArray("producers")) {
            startProducerThread((JSONObject) o);
        }
        long attachAt = plan.getLongValue("attach_broker_after_ms");
        if (attachAt >= 0) {
            // Attach to the running broker later, as to a cluster that was already running.
            JSONObject late = new JSONObject();
            late.put("at_ms", attachAt);
            late.put("action", "attach_broker");
            steps.add(late);
            steps.sort((a, b) -> Long.compare(a.getLongValue("at_ms"), b.getLongValue("at_ms")));
        }
        for (JSONObject st : steps) {
            sleepUntil(t0 + st.getLongValue("at_ms"));
            issued(st);
            step(st);
        }
        long duration = plan.getLongValue("duration_ms");
        long minEnd = t0 + plan.getLongValue("min_run_ms");
        String reason = "duration";
        int stable = 0;
        while (System.currentTimeMillis() < t0 + duration) {
            Thread.sleep(500);
            if (producersRunning > 0 || System.currentTimeMillis() < minEnd) {
                continue;
            }
            if (quiescent()) {
                if (++stable >= 2) {
                    reason = "quiescent";
                    break;
                }
            } else {
                stable = 0;
            }
        }
        w.emit(event("trace_ended").put("reason", reason));
        System.err.println("rocketspec driver: trace ended (" + reason + ") after "
            + (System.currentTimeMillis() - t0) + " ms");
        for (ScenarioConsumer c : inProcess.values()) {
            c.recorder.halt();
        }
        brokerRecorder.stop();
        w.close();
        if (plan.getString("msgtrace_out") != null) {
            dumpMsgTrace(plan.getString("msgtrace_out"));
        }
        killChildren();
        // The trace is complete: main() halts this JVM, which stops the broker, the namesrv and
        // the in-process clients at once (their store is scratch); a graceful shutdown adds ~7 s.
        return 0;
    }

    // The bodies of RMQ_SYS_TRACE_TOPIC, in store order, one per line, as an operator would
    // dump them. The clients' AsyncTraceDispatcher sends its batches asynchronously, holding a
    // record up to the release's flush time (Release.traceFlushMs): wait that long, and the send.
    private void dumpMsgTrace(String path) throws Exception {
        Thread.sleep(Release.traceFlushMs() + 2500);
        String topic = org.apache.rocketmq.common.topic.TopicValidator.RMQ_SYS_TRACE_TOPIC;
        MessageStore store = broker.getMessageStore();
        org.apache.rocketmq.common.TopicConfig tc = broker.getTopicConfigManager().selectTopicConfig(topic);
        int records = 0;
        try (java.io.Writer out = new java.io.OutputStreamWriter(new java.io.FileOutputStream(path),
                java.nio.charset.StandardCharsets.UTF_8)) {
            for (int q = 0; tc != null && q < tc.getReadQueueNums(); q++) {
                long off = store.getMinOffsetInQueue(topic, q);
                long max = BrokerRecorder.maxOffset(store, topic, q);
                while (off < max) {
                    org.apache.rocketmq.store.GetMessageResult r =
                        store.getMessage("rocketspec_msgtrace_dump", topic, q, off, 256, null);
                    if (r == null || r.getMessageBufferList().isEmpty()) {
                        break;
                    }
                    for (java.nio.ByteBuffer bb : r.getMessageBufferList()) {
                        org.apache.rocketmq.common.message.MessageExt m =
                            org.apache.rocketmq.common.message.MessageDecoder.decode(bb, true, true);   // bodies over 4 KiB are zlib-compressed
                        out.write(new String(m.getBody(), java.nio.charset.StandardCharsets.UTF_8));
                        out.write('\n');
                        records++;
                    }
                    off = r.getNextBeginOffset();
                    r.release();
                }
            }
        }
        System.err.println("rocketspec driver: " + records + " message-trace bodies -> " + path);
    }

    private void sleepUntil(long t) throws InterruptedException {
        long d = t - System.currentTimeMillis();
        if (d > 0) {
            Thread.sleep(d);
        }
    }

    // ------------------------------------------------------------------ cluster
    private void startCluster() throws Exception {
        JSONObject bcfg = plan.getJSONObject("broker");
        int nsPort = freePort(0);
        NamesrvConfig nc = new NamesrvConfig();
        nc.setRocketmqHome(dir);
        nc.setKvConfigPath(dir + "/namesrv/kvConfig.json");
        nc.setConfigStorePath(dir + "/namesrv/namesrv.properties");
        NettyServerConfig nsc = new NettyServerConfig();
        nsc.setListenPort(nsPort);
        namesrv = new NamesrvController(nc, nsc);
        if (!namesrv.initialize()) {
            throw new IllegalStateException("namesrv failed to initialize");
        }
        namesrv.start();
        namesrvAddr = "127.0.0.1:" + nsPort;

        int port = freePort(2);
        BrokerConfig bc = new BrokerConfig();
        bc.setBrokerName(bcfg.getString("name"));
        bc.setBrokerClusterName("rocketspec");
        bc.setBrokerId(MixAll.MASTER_ID);
        bc.setNamesrvAddr(namesrvAddr);
        bc.setBrokerIP1("127.0.0.1");
        bc.setRocketmqHome(dir);
        bc.setEnablePropertyFilter(bcfg.getBooleanValue("enable_property_filter"));
        bc.setFilterSupportRetry(bcfg.getBooleanValue("filter_support_retry"));
        bc.setLongPollingEnable(bcfg.getBooleanValue("long_polling_enable"));
        bc.setTraceTopicEnable(plan.getString("msgtrace_out") != null);   // creates RMQ_SYS_TRACE_TOPIC
        NettyServerConfig bsc = new NettyServerConfig();
        bsc.setListenPort(port);
        bsc.setServerChannelMaxIdleTimeSeconds(bcfg.getIntValue("server_channel_max_idle_s"));
        MessageStoreConfig msc = new MessageStoreConfig();
        msc.setStorePathRootDir(dir + "/store");
        msc.setStorePathCommitLog(dir + "/store/commitlog");
        msc.setMappedFileSizeCommitLog(64 * 1024 * 1024);
        msc.setMappedFileSizeConsumeQueue(30_000 * 20);
        msc.setHaListenPort(freePort(0));
        msc.setMessageDelayLevel(bcfg.getString("message_delay_level"));
        Release.configureBroker(bc, msc);
        if (bcfg.getBooleanValue("pop_consumer_kv_service")) {
            // the RocksDB POP path (5.x only: read by name, so the 4.x line compiles)
            bc.getClass().getMethod("setPopConsumerKVServiceInit", boolean.class).invoke(bc, true);
            bc.getClass().getMethod("setPopConsumerKVServiceEnable", boolean.class).invoke(bc, true);
        }
        if (usesPop()) {
            popClass().getDeclaredMethod("configure", Object.class, MessageStoreConfig.class).invoke(null, bc, msc);
        }
        broker = new BrokerController(bc, bsc, new NettyClientConfig(), msc);
        if (!broker.initialize()) {
            throw new IllegalStateException("broker failed to initialize");
        }
        brokerRecorder = new BrokerRecorder(broker, w);
        if (plan.getLongValue("attach_broker_after_ms") < 0) {
            brokerRecorder.attach(false);
            if (usesPop()) {
                java.lang.reflect.Method attach = popClass().getDeclaredMethod("attach", BrokerController.class,
                    BrokerRecorder.class, TraceWriter.class);
                attach.setAccessible(true);
                pop = (PopObserver) attach.invoke(null, broker, brokerRecorder, w);
            }
            brokerRecorder.tapAnswers();   // last: its tap wraps the encoder the POP recorder installed
        }
        broker.start();
        brokerAddr = "127.0.0.1:" + port;
        // The broker registers with the namesrv at start; wait until the route lists it. A 5.x
        // broker registers only with the name servers its remoting client has found available
        // (getAvailableNameSrvList, filled by a scan that may not have run yet), and its next
        // registration is 10 s later: ask again each second, as that scheduled one would.
        long until = System.currentTimeMillis() + 15_000;
        long again = System.currentTimeMillis() + 1000;
        while (namesrv.getRouteInfoManager().getAllClusterInfo().getBrokerAddrTable().isEmpty()) {
            if (System.currentTimeMillis() > until) {
                throw new IllegalStateException("broker did not register with the namesrv");
            }
            if (System.currentTimeMillis() > again) {
                broker.registerBrokerAll(true, false, true);
                again = System.currentTimeMillis() + 1000;
            }
            Thread.sleep(50);
        }
        if (usesProxy()) {
            startProxy();
        }
    }

    /**
     * RocketMQ's gRPC proxy in local mode in this JVM, over the broker (ProxyStartup with proxyMode
     * local), for the SimpleConsumers of the plan: the 5.x line's ProxyRecorder, built only against
     * a classpath with rocketmq-proxy (record's RELEASE-proxy build). Its address goes to each
     * client program's start request (`proxy`).
     */
    private void startProxy() throws Exception {
        Class<?> c;
        try {
            c = Class.forName(PROXY_IMPLEMENTATION);
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException("SimpleConsumers need RocketMQ's gRPC proxy: this recorder build has no "
                + "ProxyRecorder (record builds it against the release's proxy jars)");
        }
        int grpcPort = freePort(0);
        java.lang.reflect.Method start = c.getDeclaredMethod("start", BrokerController.class, Object.class, String.class,
            String.class, int.class, int.class);
        start.setAccessible(true);
        start.invoke(null, broker, pop, dir, namesrvAddr, grpcPort, freePort(0));
        plan.put("proxy", "127.0.0.1:" + grpcPort);
    }

    /** The 5.x line's proxy starter (traces/recorder/releases/5-proxy). */
    static final String PROXY_IMPLEMENTATION = "rocketspec.recorder.ProxyRecorder";

    /** A group of the plan is a gRPC client of the proxy: a SimpleConsumer or a PushConsumer. */
    private boolean usesProxy() {
        for (Object g : plan.getJSONObject("groups").values()) {
            if (viaProxy(((JSONObject) g).getJSONObject("config").getString("client_type"))) {
                return true;
            }
        }
        return false;
    }

    /** client_type SIMPLE or GRPC_PUSH: a gRPC client program through the proxy. */
    static boolean viaProxy(String clientType) {
        return "SIMPLE".equals(clientType) || "GRPC_PUSH".equals(clientType);
    }

    /**
     * The name server routes RMQ_SYS_TRACE_TOPIC before any client starts, as in an operator's
     * running cluster: each client's AsyncTraceDispatcher drops its records while it finds no
     * route. The broker's start registers it (all its topics); should that registration not
     * have carried it, a full registration (registerBrokerAll, forced) is asked for once.
     */
    private void awaitTraceTopicRoute() throws Exception {
        String topic = TopicValidator.RMQ_SYS_TRACE_TOPIC;
        long until = System.currentTimeMillis() + 10_000;
        boolean asked = false;
        while (true) {
            TopicRouteData r = namesrv.getRouteInfoManager().pickupTopicRouteData(topic);
            if (r != null && r.getQueueDatas() != null && !r.getQueueDatas().isEmpty() && !r.getBrokerDatas().isEmpty()) {
                return;
            }
            if (System.currentTimeMillis() > until) {
                throw new IllegalStateException("the name server has no route to " + topic + " after the broker's registration");
            }
            if (!asked) {
                broker.registerBrokerAll(true, false, true);
                asked = true;
            }
            Thread.sleep(50);
        }
    }

    private void createTopics() throws Exception {
        DefaultMQAdminExt admin = new DefaultMQAdminExt("admin");
        admin.setNamesrvAddr(namesrvAddr);
        admin.setInstanceName("rocketspec-admin");
        admin.start();
        try {
            for (Object o : plan.getJSONArray("topics")) {
                JSONObject t = (JSONObject) o;
                TopicConfig tc = new TopicConfig(t.getString("name"), t.getIntValue("queues"), t.getIntValue("queues"), 6);
                admin.createAndUpdateTopicConfig(brokerAddr, tc);
            }
            for (Object o : plan.getJSONArray("topics")) {
                String name = ((JSONObject) o).getString("name");
                long until = System.currentTimeMillis() + 10_000;
                while (true) {
                    try {
                        if (!admin.examineTopicRouteInfo(name).getQueueDatas().isEmpty()) {
                            break;
                        }
                    } catch (Exception e) {
                        if (System.currentTimeMillis() > until) {
                            throw e;
                        }
                    }
                    Thread.sleep(50);
                }
            }
            // the POP groups' topics in POP mode before any client starts, as an operator sets them
            for (Map.Entry<String, Object> g : plan.getJSONObject("groups").entrySet()) {
                JSONObject group = (JSONObject) g.getValue();
                if (viaProxy(group.getJSONObject("config").getString("client_type"))) {
                    JSONObject cfg = group.getJSONObject("config");
                    pop.simpleGroup(admin, brokerAddr, g.getKey(), cfg.getIntValue("max_reconsume_times"),
                        "ORDERLY".equals(cfg.getString("consume_mode")));
                    continue;
                }
                if (!"POP_PUSH".equals(group.getJSONObject("config").getString("client_type"))) {
                    continue;
                }
                for (String topic : group.getJSONObject("subscriptions").keySet()) {
                    pop.popMode(admin, brokerAddr, topic, g.getKey());
                }
            }
        } finally {
            admin.shutdown();
        }
    }

    private void startProducer() throws Exception {
        producer = new DefaultMQProducer("rocketspec_producer", plan.getString("msgtrace_out") != null, null);
        producer.setNamesrvAddr(namesrvAddr);
        producer.setInstanceName("rocketspec-producer");
        producer.setClientIP("127.0.0.1");
        producer.start();
    }

    // ------------------------------------------------------------------ producers
    private void startProducerThread(JSONObject spec) {
        producersRunning++;
        Thread t = new Thread(() -> {
            try {
                sleepUntil(t0 + spec.getLongValue("start_ms"));
                int count = spec.getIntValue("count");
                double rate = spec.containsKey("rate_per_s") ? spec.getDoubleValue("rate_per_s") : 100;
                long interval = Math.max(1, Math.round(1000 / rate));
                long next = System.currentTimeMillis();
                for (int i = 0; i < count; i++) {
                    send(spec.getString("topic"), spec, null, null, null);
                    next += interval;
                    sleepUntil(next);
                }
            } catch (Exception e) {
                System.err.println("rocketspec driver: producer: " + e);
            } finally {
                synchronized (this) {
                    producersRunning--;
                }
            }
        }, "rocketspec-producer-" + spec.getString("topic"));
        t.setDaemon(true);
        t.start();
    }

    /** Message i's tags in a produce step: the step's one tag, or its list's i-th round-robin ("" untagged). */
    private static String nth(Object tags, int i) {
        if (tags instanceof JSONArray) {
            JSONArray a = (JSONArray) tags;
            String t = a.getString(i % a.size());
            return t == null || t.isEmpty() ? null : t;
        }
        return tags == null ? null : String.valueOf(tags);
    }

    /** Message i's properties in a produce step: a list of values is taken round-robin (a step draws nothing). */
    private static JSONObject nthProps(JSONObject props, int i) {
        if (props == null) {
            return null;
        }
        JSONObject one = new JSONObject();
        for (Map.Entry<String, Object> p : props.entrySet()) {
            Object v = p.getValue();
            one.put(p.getKey(), v instanceof JSONArray ? ((JSONArray) v).get(i % ((JSONArray) v).size()) : v);
        }
        return one;
    }

    private synchronized void send(String topic, JSONObject spec, String tags, String keys, JSONObject props) throws Exception {
        JSONArray tagChoices = spec.getJSONArray("tags");
        if (tags == null && tagChoices != null && !tagChoices.isEmpty()) {
            tags = tagChoices.getString(rng.nextInt(tagChoices.size()));
            tags = tags.isEmpty() ? null : tags;
        }
        int nKeys = spec.getIntValue("sharding_keys");
        if (keys == null && nKeys > 0) {
            keys = "order-" + rng.nextInt(nKeys);
        }
        JSONObject propSpec = props != null ? props : spec.getJSONObject("props");
        byte[] body = new byte[spec.containsKey("body_size") ? spec.getIntValue("body_size") : 128];
        Arrays.fill(body, (byte) 'x');
        Message m = new Message(topic, tags, keys, body);
        if (propSpec != null) {
            for (Map.Entry<String, Object> p : propSpec.entrySet()) {
                Object v = p.getValue();
                if (v instanceof JSONArray) {
                    JSONArray a = (JSONArray) v;
                    v = a.get(rng.nextInt(a.size()));
                }
                m.putUserProperty(p.getKey(), String.valueOf(v));
            }
        }
        // A broker under load refuses a send with SYSTEM_BUSY (flow control: the request waited
        // in the send queue past waitTimeMillsInSendQueue) before storing anything; an application
        // sends again, and so does the driver, a bounded number of times
        for (int attempt = 1; ; attempt++) {
            try {
                if (keys != null && nKeys > 0) {
                    final String k = keys;
                    MessageQueueSelector byKey = (mqs, msg, arg) -> mqs.get(Math.abs(k.hashCode()) % mqs.size());
                    producer.send(m, byKey, null);
                } else {
                    producer.send(m);
                }
                return;
            } catch (MQBrokerException e) {
                if (e.getResponseCode() != ResponseCode.SYSTEM_BUSY || attempt >= 20) {
                    throw e;
                }
                System.err.println("rocketspec driver: send refused (" + e.getErrorMessage() + "), again in 100 ms");
                Thread.sleep(100);
            }
        }
    }

    // ------------------------------------------------------------------ steps
    private void step(JSONObject st) throws Exception {
        String action = st.getString("action");
        String client = st.getString("client");
        switch (action) {
            case "start": {
                String group = st.getString("group");
                groupOf.put(client, group);
                alive.put(client, true);
                if (plan.getJSONArray("separate_clients").contains(client)) {
                    separate.put(client, spawn(client, group));
                } else {
                    ScenarioConsumer c = new ScenarioConsumer(plan, client, group, namesrvAddr, w);
                    inProcess.put(client, c);
                    c.start();
                }
                break;
            }
            case "shutdown":
                alive.put(client, false);
                if (separate.containsKey(client)) {
                    stopChild(separate.get(client));
                } else {
                    inProcess.get(client).shutdown();
                }
                break;
            case "crash": {
                Process p = separate.get(client);
                alive.put(client, false);
                p.destroyForcibly();   // SIGKILL: the OS closes its sockets
                p.waitFor();
                w.emit(event("client_crashed").put("client", clientId(client)).put("group", groupOf.get(client)));
                break;
            }
            case "pause": {
                Process p = separate.get(client);
                long ms = st.getLongValue("duration_ms");
                paused.put(client, true);
                signal(p, "STOP");
                // the pause's time is taken once every thread of the child has stopped: an event
                // the child stamped before then has a time no later than the pause's
                awaitStopped(p, 2000);
                w.emit(event("client_paused").put("client", clientId(client)).put("group", groupOf.get(client)).put("duration", ms));
                Thread resume = new Thread(() -> {
                    try {
                        Thread.sleep(ms);
                        signal(p, "CONT");
                        w.emit(event("client_resumed").put("client", clientId(client)).put("group", groupOf.get(client)));
                        paused.remove(client);
                    } catch (Exception e) {
                        System.err.println("rocketspec driver: resume: " + e);
                    }
                }, "rocketspec-resume-" + client);
                resume.setDaemon(true);
                resume.start();
                break;
            }
            case "produce":
                for (int i = 0; i < st.getIntValue("count"); i++) {
                    send(st.getString("topic"), new JSONObject(), nth(st.get("tags"), i), st.getString("keys"),
                        nthProps(st.getJSONObject("props"), i));
                }
                break;
            case "attach_broker":
                brokerRecorder.attach(true);
                break;
            case "reset_offset": {
                DefaultMQAdminExt admin = new DefaultMQAdminExt("admin");
                admin.setNamesrvAddr(namesrvAddr);
                admin.setInstanceName("rocketspec-admin-reset");
                admin.start();
                try {
                    admin.resetOffsetByTimestamp(st.getString("topic"), st.getString("group"), t0 + st.getLongValue("timestamp_ms"), true);
                } catch (MQClientException e) {
                    // Broker2Client.resetOffset answers SYSTEM_ERROR "THe consumer group <G> not exist"
                    // while a queue of the topic has no committed offset of the group, before it
                    // changes or sends anything: the run goes on as one without this step.
                    String remark = e.getErrorMessage();
                    if (e.getResponseCode() != ResponseCode.SYSTEM_ERROR || remark == null || !remark.contains("not exist")) {
                        throw e;
                    }
                    refused(st, remark);
                } finally {
                    admin.shutdown();
                }
                break;
            }
            default:
                throw new IllegalStateException("step " + action + " reached the driver; rocketspec record should have refused it");
        }
    }

    /**
     * Appends a step, with the wall-clock time it is issued at, to work_dir/steps.json ({t0, issued:
     * [{at_ms, action, group, client, topic, ts}]}, rewritten at each step): the operator's own log
     * of what was done when. The steps' at_ms count from t0, which follows the cluster's start.
     */
    private void issued(JSONObject st) throws IOException {
        JSONObject r = new JSONObject(new LinkedHashMap<>());
        r.put("at_ms", st.getLongValue("at_ms"));
        r.put("action", st.getString("action"));
        r.put("group", st.getString("group"));
        r.put("client", st.getString("client"));
        r.put("topic", st.getString("topic"));
        r.put("ts", System.currentTimeMillis());
        issuedSteps.add(r);
        JSONObject log = new JSONObject(new LinkedHashMap<>());
        log.put("t0", t0);
        log.put("issued", issuedSteps);
        Files.write(Paths.get(dir, "steps.json"), log.toJSONString().getBytes(StandardCharsets.UTF_8));
    }

    /**
     * Writes a step RocketMQ refused, with its remark, to work_dir/refused-steps.json (a JSON
     * array of {at_ms, action, group, topic, remark}, rewritten at each refusal): the run's
     * judges take it as a step that did not happen.
     */
    private synchronized void refused(JSONObject st, String remark) throws IOException {
        JSONObject r = new JSONObject(new LinkedHashMap<>());
        r.put("at_ms", st.getLongValue("at_ms"));
        r.put("action", st.getString("action"));
        r.put("group", st.getString("group"));
        r.put("topic", st.getString("topic"));
        r.put("remark", remark);
        refusedSteps.add(r);
        Files.write(Paths.get(dir, "refused-steps.json"), refusedSteps.toJSONString().getBytes(StandardCharsets.UTF_8));
        System.err.println("rocketspec driver: step refused by RocketMQ: " + r.toJSONString());
    }

    /** The offset a broadcasting client in its own JVM last persisted for `mq` (-1: none). */
    private static long localOffset(String name, String group, MessageQueue mq) {
        java.nio.file.Path f = Paths.get(System.getProperty("user.home"), ".rocketmq_offsets", clientId(name), group, "offsets.json");
        try {
            if (!Files.exists(f)) {
                return -1;
            }
            String text = new String(Files.readAllBytes(f), StandardCharsets.UTF_8);
            org.apache.rocketmq.client.consumer.store.OffsetSerializeWrapper w =
                org.apache.rocketmq.client.consumer.store.OffsetSerializeWrapper.fromJson(text,
                    org.apache.rocketmq.client.consumer.store.OffsetSerializeWrapper.class);
            java.util.concurrent.atomic.AtomicLong off = w == null || w.getOffsetTable() == null ? null : w.getOffsetTable().get(mq);
            return off == null ? -1 : off.get();
        } catch (Exception e) {
            return -1;      // being rewritten (persistAll writes a tmp file and renames): ask again later
        }
    }

    private static String clientId(String name) {
        return "127.0.0.1@" + name;
    }

    /** Waits (at most `ms`) until every thread of `p` is stopped (state T in /proc/PID/task/TID/stat). */
    private static void awaitStopped(Process p, long ms) throws InterruptedException {
        java.io.File tasks = new java.io.File("/proc/" + p.pid() + "/task");
        long until = System.currentTimeMillis() + ms;
        while (System.currentTimeMillis() < until) {
            String[] tids = tasks.list();
            if (tids == null) {
                return;     // no /proc (not Linux) or the process is gone
            }
            boolean all = true;
            for (String tid : tids) {
                try {
                    String stat = new String(Files.readAllBytes(Paths.get(tasks.getPath(), tid, "stat")), StandardCharsets.UTF_8);
                    int close = stat.lastIndexOf(')');   // the command name may hold spaces and ')'
                    char state = close > 0 && close + 2 < stat.length() ? stat.charAt(close + 2) : '?';
                    if (state != 'T' && state != 't' && state != 'Z' && state != 'X') {
                        all = false;
                        break;
                    }
                } catch (IOException gone) {
                    // a thread that ended meanwhile
                }
            }
            if (all) {
                return;
            }
            Thread.sleep(1);
        }
    }

    private static void signal(Process p, String sig) throws IOException, InterruptedException {
        Process k = new ProcessBuilder("kill", "-" + sig, Long.toString(p.pid())).inheritIO().start();
        k.waitFor();
    }

    private Process spawn(String client, String group) throws Exception {
        if (ExternalClient.enabled(plan)) {   // a client program under test (record --client)
            return ExternalClient.spawn(plan, client, group, namesrvAddr, dir, partName(client, lives.merge(client, 1, Integer::sum)));
        }
        List<String> cmd = new ArrayList<>();
        cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(plan.getJSONArray("jvm_args").toJavaList(String.class));
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add("rocketspec.recorder.ClientMain");
        cmd.add(plan.getString("plan_path"));
        cmd.add(client);
        cmd.add(group);
        cmd.add(namesrvAddr);
        // Each life of a client JVM (a killed client started again) writes its own part: the
        // next life must not truncate the events of the one before.
        String part = partName(client, lives.merge(client, 1, Integer::sum));
        cmd.add(plan.getString("out_dir") + "/" + part + ".jsonl");
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.redirectError(new File(dir, part + ".err"));
        pb.redirectOutput(ProcessBuilder.Redirect.PIPE);
        Process p = pb.start();
        // The child prints "started" once its consumer runs. 5.x's logging prints its own status
        // lines on stdout first: those, and whatever follows, go to the part's .out file (drained,
        // so a child that prints never blocks on a full pipe).
        BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        java.io.Writer out = new java.io.OutputStreamWriter(new java.io.FileOutputStream(new File(dir, part + ".out")),
            StandardCharsets.UTF_8);
        String line;
        while ((line = r.readLine()) != null && !"started".equals(line)) {
            out.write(line + "\n");
        }
        out.flush();
        if (line == null) {
            out.close();
            throw new IllegalStateException("client JVM " + client + " did not start (see " + dir + "/" + part + ".err)");
        }
        Thread drain = new Thread(() -> {
            try (java.io.Writer o = out) {
                String l;
                while ((l = r.readLine()) != null) {
                    o.write(l + "\n");
                }
            } catch (IOException ignored) {
                // the child is gone
            }
        }, "rocketspec-stdout-" + part);
        drain.setDaemon(true);
        drain.start();
        return p;
    }

    /** The trace part of a client JVM's life (1, 2, ...): client-NAME.life-N; merge_parts reads lives in order. */
    static String partName(String client, int life) {
        return "client-" + client + ".life-" + life;
    }

    private void stopChild(Process p) throws Exception {
        if (!p.isAlive()) {
            return;
        }
        signal(p, "CONT");
        try {
            OutputStream in = p.getOutputStream();
            in.write(ExternalClient.shutdownLine(plan).getBytes(StandardCharsets.UTF_8));
            in.flush();
        } catch (IOException ignored) {
            // already gone
        }
        if (!p.waitFor(15, java.util.concurrent.TimeUnit.SECONDS)) {
            p.destroyForcibly();
        }
    }

    private void killChildren() {
        for (Process p : separate.values()) {
            if (p.isAlive()) {
                p.destroyForcibly();
            }
        }
    }

    /** A group of the plan consumes by POP (client_type POP_PUSH; record refuses the others). */
    private boolean usesPop() {
        for (Object g : plan.getJSONObject("groups").values()) {
            String type = ((JSONObject) g).getJSONObject("config").getString("client_type");
            if (type != null && !"PUSH".equals(type)) {
                return true;
            }
        }
        return false;
    }

    /** The 5.x line's PopRecorder; a 4.x build has none (4.x has no POP consumer). */
    static Class<?> popClass() {
        try {
            return Class.forName(PopObserver.IMPLEMENTATION);
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException("POP consumption needs a RocketMQ 5.x release (this recorder build has no PopRecorder)");
        }
    }

    // ------------------------------------------------------------------ quiescence
    /**
     * The live clients under test (record --client) of remoting (PUSH) groups that their group's
     * registration on the broker does not list under the id they reported (Membership).
     */
    private List<String> outOfGroup() {
        Map<String, String> live = new HashMap<>();
        Map<String, String> ids = new HashMap<>();
        Map<String, List<String>> registered = new HashMap<>();
        for (Map.Entry<String, Process> e : separate.entrySet()) {
            String name = e.getKey();
            String group = groupOf.get(name);
            JSONObject g = plan.getJSONObject("groups").getJSONObject(group);
            String type = g == null ? null : g.getJSONObject("config").getString("client_type");
            if (!Boolean.TRUE.equals(alive.get(name)) || !e.getValue().isAlive()
                || (type != null && !"PUSH".equals(type))) {
                continue;
            }
            live.put(name, group);
            String id = ExternalClient.reportedId(name);
            if (id != null) {
                ids.put(name, id);
            }
            if (!registered.containsKey(group)) {
                List<String> listed = new ArrayList<>();
                org.apache.rocketmq.broker.client.ConsumerGroupInfo gi = broker.getConsumerManager().getConsumerGroupInfo(group);
                if (gi != null) {
                    for (org.apache.rocketmq.broker.client.ClientChannelInfo ci : gi.getChannelInfoTable().values()) {
                        listed.add(ci.getClientId());
                    }
                }
                registered.put(group, listed);
            }
        }
        return Membership.outOfGroup(live, ids, registered);
    }

    /**
     * Nothing left to do: producers done (checked by the caller), no scheduled message waiting,
     * and for every group with a live consumer, every queue of every topic it consumes (its
     * retry topic included) has a broker committed offset at its max offset (consumed and the
     * offset persisted), or for broadcasting, each live in-process client's offset store there;
     * no in-process client holds messages in a ProcessQueue; and every live client under test is
     * registered in its group (outOfGroup).
     */
    private boolean quiescent() {
        MessageStore store = broker.getMessageStore();
        ScheduleMessageService sched = Release.scheduleService(broker);
        @SuppressWarnings("unchecked")
        Map<Integer, Long> delivered = (Map<Integer, Long>) Reflect.get(sched, "offsetTable");
        for (int level = 1; level <= 18; level++) {
            long max = BrokerRecorder.maxOffset(store, TopicValidator.RMQ_SYS_SCHEDULE_TOPIC, level - 1);
            if (max > delivered.getOrDefault(level, 0L)) {
                return false;
            }
        }
        if (!paused.isEmpty()) {
            return false;
        }
        if (ExternalClient.enabled(plan) && !outOfGroup().isEmpty()) {
            return false;   // a live client the broker dropped: it comes back at its next heartbeat
        }
        if (pop != null && !pop.quiet()) {
            return false;   // a popped message still held: its ack, or its revive, is to come
        }
        for (ScenarioConsumer c : inProcess.values()) {
            if (Boolean.TRUE.equals(alive.get(c.name)) && !c.recorder.idle()) {
                return false;
            }
        }
        Map<String, Boolean> liveGroups = new HashMap<>();
        for (Map.Entry<String, String> e : groupOf.entrySet()) {
            if (Boolean.TRUE.equals(alive.get(e.getKey()))) {
                liveGroups.put(e.getValue(), true);
            }
        }
        for (String group : liveGroups.keySet()) {
            JSONObject g = plan.getJSONObject("groups").getJSONObject(group);
            boolean broadcast = "BROADCASTING".equals(g.getJSONObject("config").getString("message_model"));
            List<String> topics = new ArrayList<>(g.getJSONObject("subscriptions").keySet());
            if (!broadcast) {
                topics.add(MixAll.getRetryTopic(group));
            }
            for (String topic : topics) {
                TopicConfig tc = broker.getTopicConfigManager().selectTopicConfig(topic);
                if (tc == null) {
                    continue;
                }
                for (int q = 0; q < tc.getReadQueueNums(); q++) {
                    long max = BrokerRecorder.maxOffset(store, topic, q);
                    if (max == 0) {
                        continue;
                    }
                    if (broadcast) {
                        MessageQueue mq = new MessageQueue(topic, broker.getBrokerConfig().getBrokerName(), q);
                        for (ScenarioConsumer c : inProcess.values()) {
                            if (c.group.equals(group) && Boolean.TRUE.equals(alive.get(c.name))) {
                                long off = c.consumer.getDefaultMQPushConsumerImpl().getOffsetStore()
                                    .readOffset(mq, org.apache.rocketmq.client.consumer.store.ReadOffsetType.READ_FROM_MEMORY);
                                if (off < max) {
                                    return false;
                                }
                            }
                        }
                        // a client in its own JVM: only its offsets file tells (LocalFileOffsetStore.persistAll,
                        // every persist interval from 10 s after its start); no file yet is not quiescent
                        for (Map.Entry<String, Process> e : separate.entrySet()) {
                            String name = e.getKey();
                            if (group.equals(groupOf.get(name)) && Boolean.TRUE.equals(alive.get(name))
                                && localOffset(name, group, mq) < max) {
                                return false;
                            }
                        }
                    } else if (broker.getConsumerOffsetManager().queryOffset(group, topic, q) < max) {
                        return false;
                    }
                }
            }
        }
        return true;
    }
}
