package rocketspec.recorder;

import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.broker.schedule.ScheduleMessageService;
import org.apache.rocketmq.client.consumer.store.ControllableOffset;
import org.apache.rocketmq.client.consumer.store.OffsetStore;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.ResponseCode;
import org.apache.rocketmq.store.config.MessageStoreConfig;

import java.util.HashMap;
import java.util.Map;

/** Where the 5.x line keeps what the recorder reads (the 4.x line has its own Release). */
final class Release {
    private Release() {
    }

    /**
     * The broker as a 5.x operator starts it from BrokerStartup, less the services the observation
     * contract (docs/recorder.md) does not observe and a remoting push consumer never uses: the
     * timer wheel (TIMER_DELIVER_MS messages; delay levels still go through the schedule service,
     * timerInterceptDelayLevel being false). Pop, the controller (enableControllerMode, false by
     * default) and RocksDB (storeType default) are left at their defaults: unused by a push
     * consumer that pulls.
     */
    static void configureBroker(BrokerConfig bc, MessageStoreConfig msc) {
        msc.setTimerWheelEnable(false);
    }

    /** How long AsyncTraceDispatcher may hold a trace record before sending it: fewer than
     * batchNum records are flushed once flushTraceInterval (5000 ms) has passed since the last
     * flush. */
    static long traceFlushMs() {
        return 5000;
    }

    /** The schedule (delay level) service moved from the store to the broker in 5.0. */
    static ScheduleMessageService scheduleService(BrokerController b) {
        return b.getScheduleMessageService();
    }

    /** A BrokerConfig setting since 5.0 (ConsumerManager's constant before). */
    static long channelExpiredTimeoutMs(BrokerController b) {
        return b.getBrokerConfig().getChannelExpiredTimeout();
    }

    /** The client offset store's table: ControllableOffset values since 5.2.0 (#7634; a reset freezes them). */
    static Map<MessageQueue, Long> offsets(OffsetStore store) {
        @SuppressWarnings("unchecked")
        Map<MessageQueue, ControllableOffset> table = (Map<MessageQueue, ControllableOffset>) Reflect.get(store, "offsetTable");
        Map<MessageQueue, Long> out = new HashMap<>();
        for (Map.Entry<MessageQueue, ControllableOffset> e : table.entrySet()) {
            out.put(e.getKey(), e.getValue().getOffset());
        }
        return out;
    }

    /**
     * A pull the processor returned no response for: 5.x answers every pull that reached the store
     * outside the hook (getMessageAsync, then writeResponse), so only one that
     * PullRequestHoldService.suspendPullRequest marked suspended was held.
     */
    static boolean pullHeld(RemotingCommand request) {
        return request.isSuspended();
    }

    /**
     * A producer send the broker refused before storing it. 5.x stores a send asynchronously
     * (asyncSendEnable, true by default: the processor returns no response and answers when the
     * put completes), so no response means stored or being stored; only an answer with another
     * code than SUCCESS is a refusal.
     */
    static boolean sendRefused(RemotingCommand response) {
        return response != null && response.getCode() != ResponseCode.SUCCESS;
    }

    /**
     * Shows written each answer as the broker writes it to a channel (channel address, answer),
     * and returns true: a 5.x broker answers a send from the asynchronous put's callback, after
     * the RPC after-hook has run (see sendRefused), so only the channel sees when the client can
     * learn that a send stored. Before the broker starts.
     */
    static boolean tapAnswers(BrokerController b, java.util.function.BiConsumer<String, RemotingCommand> written) {
        AnswerTap.install(b, written);
        return true;
    }
}
