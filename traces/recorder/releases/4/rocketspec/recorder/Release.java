package rocketspec.recorder;

import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.broker.client.ConsumerManager;
import org.apache.rocketmq.client.consumer.store.OffsetStore;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.common.protocol.ResponseCode;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.schedule.ScheduleMessageService;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/** Where the 4.x line keeps what the recorder reads (the 5.x line has its own Release). */
final class Release {
    private Release() {
    }

    /** The broker as RocketMQ 4.x builds it: nothing to turn off. */
    static void configureBroker(BrokerConfig bc, MessageStoreConfig msc) {
    }

    /** How long AsyncTraceDispatcher may hold a trace record before sending it: a batch waits at
     * most waitTimeThresholdMil (500 ms) after its first record, polled every 100 ms. */
    static long traceFlushMs() {
        return 600;
    }

    /** The schedule (delay level) service lives in the store. */
    static ScheduleMessageService scheduleService(BrokerController b) {
        return ((DefaultMessageStore) b.getMessageStore()).getScheduleMessageService();
    }

    /** ConsumerManager's constant. */
    static long channelExpiredTimeoutMs(BrokerController b) {
        return (Long) Reflect.getStatic(ConsumerManager.class, "CHANNEL_EXPIRED_TIMEOUT");
    }

    /** The client offset store's table (RemoteBrokerOffsetStore, LocalFileOffsetStore): AtomicLong values. */
    static Map<MessageQueue, Long> offsets(OffsetStore store) {
        @SuppressWarnings("unchecked")
        Map<MessageQueue, AtomicLong> table = (Map<MessageQueue, AtomicLong>) Reflect.get(store, "offsetTable");
        Map<MessageQueue, Long> out = new HashMap<>();
        for (Map.Entry<MessageQueue, AtomicLong> e : table.entrySet()) {
            out.put(e.getKey(), e.getValue().get());
        }
        return out;
    }

    /**
     * A pull the processor returned no response for was held by long polling (4.x writes every
     * other answer through the hook, as the processor's return value; transferMsgByHeap, on by
     * default, keeps found messages so).
     */
    static boolean pullHeld(RemotingCommand request) {
        return true;
    }

    /**
     * A producer send the broker refused before storing it: 4.x runs the after-hook with the
     * answer of its async processor (asyncProcessRequest's callback), so no answer or another
     * code than SUCCESS.
     */
    static boolean sendRefused(RemotingCommand response) {
        return response == null || response.getCode() != ResponseCode.SUCCESS;
    }

    /**
     * No tap, and false: 4.x runs the RPC after-hook of every request, a send's among them (its
     * asynchronous put's callback), before it writes the answer, so the after-hook is the last
     * point before the client can learn it.
     */
    static boolean tapAnswers(BrokerController b, java.util.function.BiConsumer<String, RemotingCommand> written) {
        return false;
    }
}
