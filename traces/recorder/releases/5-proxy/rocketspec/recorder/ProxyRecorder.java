package rocketspec.recorder;

import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.client.consumer.AckResult;
import org.apache.rocketmq.client.consumer.AckStatus;
import org.apache.rocketmq.client.consumer.PopResult;
import org.apache.rocketmq.common.consumer.ReceiptHandle;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.proxy.common.ProxyContext;
import org.apache.rocketmq.proxy.config.Configuration;
import org.apache.rocketmq.proxy.config.ConfigurationManager;
import org.apache.rocketmq.proxy.grpc.GrpcServer;
import org.apache.rocketmq.proxy.grpc.GrpcServerBuilder;
import org.apache.rocketmq.proxy.grpc.v2.GrpcMessagingApplication;
import org.apache.rocketmq.proxy.metrics.ProxyMetricsManager;
import org.apache.rocketmq.proxy.processor.DefaultMessagingProcessor;
import org.apache.rocketmq.proxy.service.cert.TlsCertificateManager;
import org.apache.rocketmq.proxy.service.message.MessageService;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.ResponseCode;
import org.apache.rocketmq.remoting.protocol.header.AckMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.ChangeInvisibleTimeRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.ConsumerSendMsgBackRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.PopMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig;

import java.io.File;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * RocketMQ's gRPC proxy in local mode, in the broker's JVM, as ProxyStartup starts it with
 * proxyMode local (docs/recorder.md, "POP through the proxy"): the messaging processor over the
 * running broker, the gRPC messaging application and its server. Local mode calls the broker's
 * POP processors directly (LocalMessageService), past the remoting servers where PopRecorder
 * listens, so the proxy's message service is wrapped: each pop, ack, change of invisible time and
 * DLQ forward it makes is reported to PopRecorder with the gRPC client's id (ProxyContext).
 */
final class ProxyRecorder {
    private final PopRecorder pop;
    private final BrokerController bc;
    private final AtomicInteger popIds = new AtomicInteger();
    /** Handles whose copy the proxy just sent to the DLQ: their ack is the proxy's (reason dead_lettered). */
    private final Set<String> deadLettered = ConcurrentHashMap.newKeySet();
    private final List<Runnable> stops = new java.util.ArrayList<>();

    private ProxyRecorder(BrokerController bc, PopRecorder pop) {
        this.bc = bc;
        this.pop = pop;
    }

    /**
     * Starts the proxy over bc (started) on grpcPort; returns what stops it. The proxy's settings
     * (rmq-proxy.json in dir) are its defaults but for local mode, the ports, the cluster, and
     * minInvisibleTimeMillsForRecv: 1 s in place of 10 s, so a scenario's invisible time (at least
     * 1 s) is taken as written.
     */
    static Runnable start(BrokerController bc, Object popObserver, String dir, String namesrvAddr, int grpcPort,
        int remotingPort) throws Exception {
        File conf = new File(dir, "proxy/rmq-proxy.json");
        conf.getParentFile().mkdirs();
        String json = "{\"proxyMode\":\"local\",\"grpcServerPort\":" + grpcPort + ",\"remotingListenPort\":" + remotingPort
            + ",\"rocketMQClusterName\":\"" + bc.getBrokerConfig().getBrokerClusterName() + "\",\"namesrvAddr\":\""
            + namesrvAddr + "\",\"minInvisibleTimeMillsForRecv\":1000,\"enablePrintJstack\":false}";
        Files.write(conf.toPath(), json.getBytes(StandardCharsets.UTF_8));
        System.setProperty(Configuration.CONFIG_PATH_PROPERTY, conf.getAbsolutePath());
        ConfigurationManager.initEnv();
        ConfigurationManager.initConfig();
        ProxyMetricsManager.initLocalMode(bc.getBrokerMetricsManager(), ConfigurationManager.getProxyConfig());

        ProxyRecorder r = new ProxyRecorder(bc, (PopRecorder) popObserver);
        DefaultMessagingProcessor mp = DefaultMessagingProcessor.createForLocalMode(bc);
        Object services = Reflect.get(mp, "serviceManager");
        MessageService inner = (MessageService) Reflect.get(services, "messageService");
        Reflect.set(services, "messageService", java.lang.reflect.Proxy.newProxyInstance(
            MessageService.class.getClassLoader(), new Class<?>[] {MessageService.class}, r.new Tap(inner)));
        mp.start();
        r.stops.add(() -> quietly(mp::shutdown));

        int threads = ConfigurationManager.getProxyConfig().getGrpcThreadPoolNums();
        ThreadPoolExecutor executor = new ThreadPoolExecutor(threads, threads, 1, TimeUnit.MINUTES,
            new LinkedBlockingQueue<>(ConfigurationManager.getProxyConfig().getGrpcThreadPoolQueueCapacity()));
        GrpcMessagingApplication app = GrpcMessagingApplication.create(mp);
        TlsCertificateManager tls = new TlsCertificateManager();
        GrpcServer server = GrpcServerBuilder.newBuilder(executor, grpcPort, tls)
            .addService(app).configInterceptor().shutdownTime(1, TimeUnit.SECONDS).build();
        tls.start();
        app.start();
        server.start();
        r.stops.add(0, () -> quietly(tls::shutdown));
        r.stops.add(0, () -> quietly(app::shutdown));
        r.stops.add(0, () -> quietly(server::shutdown));
        r.stops.add(executor::shutdownNow);
        return () -> r.stops.forEach(Runnable::run);
    }

    interface Step {
        void run() throws Exception;
    }

    private static void quietly(Step s) {
        try {
            s.run();
        } catch (Exception e) {
            System.err.println("rocketspec proxy: stopping: " + e);
        }
    }

    private int maxAttempts(String group) {
        SubscriptionGroupConfig g = bc.getSubscriptionGroupManager().findSubscriptionGroupConfig(group);
        // the proxy's backoff policy for a consumer group (GrpcClientSettingsManager)
        return (g == null ? new SubscriptionGroupConfig().getRetryMaxTimes() : g.getRetryMaxTimes()) + 1;
    }

    /** The message service, tapped: every call goes to the proxy's own, the POP ones are reported too. */
    private final class Tap implements InvocationHandler {
        private final MessageService inner;

        Tap(MessageService inner) {
            this.inner = inner;
        }

        @Override
        public Object invoke(Object self, Method m, Object[] args) throws Throwable {
            Object out;
            try {
                switch (m.getName()) {
                    case "changeInvisibleTime": {
                        ChangeInvisibleTimeRequestHeader h = (ChangeInvisibleTimeRequestHeader) args[3];
                        pop.proxyChanging(h.getConsumerGroup(), h.getTopic(), h.getQueueId(), h.getOffset(), true);
                        break;
                    }
                    default:
                        break;
                }
                out = m.invoke(inner, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
            try {
                return observe(m.getName(), args, out);
            } catch (RuntimeException e) {
                System.err.println("rocketspec proxy recorder (" + m.getName() + "): " + e);
                return out;
            }
        }

        @SuppressWarnings("unchecked")
        private Object observe(String name, Object[] args, Object out) {
            if (!(out instanceof CompletableFuture)) {
                return out;
            }
            switch (name) {
                case "popMessage": {
                    ProxyContext ctx = (ProxyContext) args[0];
                    PopMessageRequestHeader h = (PopMessageRequestHeader) args[2];
                    int popId = popIds.incrementAndGet();
                    return ((CompletableFuture<PopResult>) out).whenComplete((r, t) -> {
                        try {
                            if (t != null) {
                                pop.proxyPopped(ctx.getClientID(), h.getConsumerGroup(), h.getTopic(), h.isOrder(),
                                    h.getAttemptId(), popId, "FAILED", 0, 0, null, String.valueOf(t.getMessage()));
                            } else {
                                pop.proxyPopped(ctx.getClientID(), h.getConsumerGroup(), h.getTopic(), h.isOrder(),
                                    h.getAttemptId(), popId, r.getPopStatus().name(), r.getPopTime(), r.getInvisibleTime(),
                                    r.getMsgFoundList(), null);
                            }
                        } catch (RuntimeException e) {
                            System.err.println("rocketspec proxy recorder (pop): " + e);
                        }
                    });
                }
                case "ackMessage": {
                    ProxyContext ctx = (ProxyContext) args[0];
                    AckMessageRequestHeader h = (AckMessageRequestHeader) args[3];
                    String reason = deadLettered.remove(h.getExtraInfo()) ? "dead_lettered" : "consumed";
                    return ((CompletableFuture<AckResult>) out).whenComplete((r, t) -> {
                        try {
                            pop.proxyAcked(ctx.getClientID(), h.getConsumerGroup(), h.getTopic(), h.getQueueId(),
                                h.getOffset(), h.getExtraInfo(), t == null && r != null && r.getStatus() == AckStatus.OK, reason);
                        } catch (RuntimeException e) {
                            System.err.println("rocketspec proxy recorder (ack): " + e);
                        }
                    });
                }
                case "changeInvisibleTime": {
                    ProxyContext ctx = (ProxyContext) args[0];
                    ReceiptHandle old = (ReceiptHandle) args[1];
                    ChangeInvisibleTimeRequestHeader h = (ChangeInvisibleTimeRequestHeader) args[3];
                    return ((CompletableFuture<AckResult>) out).whenComplete((r, t) -> {
                        try {
                            boolean ok = t == null && r != null && r.getStatus() == AckStatus.OK;
                            // the new handle as the client gets it (ConsumerProcessor.createHandle)
                            String handle = ok ? r.getExtraInfo() + " " + old.getCommitLogOffset() : null;
                            pop.proxyChanged(ctx.getClientID(), h.getConsumerGroup(), h.getTopic(), h.getQueueId(),
                                h.getOffset(), h.getExtraInfo(), h.getInvisibleTime(), h.isSuspend(), ok,
                                ok ? r.getPopTime() : 0, handle);
                        } catch (RuntimeException e) {
                            System.err.println("rocketspec proxy recorder (change): " + e);
                        } finally {
                            pop.proxyChanging(h.getConsumerGroup(), h.getTopic(), h.getQueueId(), h.getOffset(), false);
                        }
                    });
                }
                case "sendMessageBack": {
                    ProxyContext ctx = (ProxyContext) args[0];
                    ReceiptHandle handle = (ReceiptHandle) args[1];
                    String msgId = (String) args[2];
                    ConsumerSendMsgBackRequestHeader h = (ConsumerSendMsgBackRequestHeader) args[3];
                    if (h.getMaxReconsumeTimes() == null || h.getMaxReconsumeTimes() != 0) {
                        return out;   // not the proxy's DLQ forward (ProducerProcessor.forwardMessageToDeadLetterQueue)
                    }
                    String group = h.getGroup();
                    String topic = h.getOriginTopic();   // the stored topic (the forward's getRealTopic)
                    // the ack that follows a forward names the same handle
                    deadLettered.add(handle.getReceiptHandle());
                    return ((CompletableFuture<RemotingCommand>) out).whenComplete((r, t) -> {
                        try {
                            if (t == null && r != null && r.getCode() == ResponseCode.SUCCESS) {
                                pop.proxyDeadLettered(ctx.getClientID(), group, topic, handle.getQueueId(), handle.getOffset(),
                                    handle.getReceiptHandle(), maxAttempts(group), msgId);
                            } else {
                                deadLettered.remove(handle.getReceiptHandle());
                            }
                        } catch (RuntimeException e) {
                            System.err.println("rocketspec proxy recorder (dead letter): " + e);
                        }
                    });
                }
                default:
                    return out;
            }
        }
    }
}
