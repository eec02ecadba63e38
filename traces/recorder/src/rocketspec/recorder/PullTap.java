package rocketspec.recorder;

import org.apache.rocketmq.client.consumer.PullCallback;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.common.message.MessageQueue;

import java.util.function.Supplier;

/**
 * What the release's PullAPIWrapper subclass ({@code TappedPullAPIWrapper}, one per release line:
 * the pull method it overrides has another signature in 5.x) reports to the client recorder.
 */
interface PullTap {
    /**
     * A pull is about to go out: {@code token} is {-1, offset} until the RPC hook fills in the
     * request's opaque; returns the callback to pass on (it reports the answer, or the failure).
     */
    PullCallback issue(MessageQueue mq, long[] token, PullCallback callback);

    /** The send itself threw (after the request went out, or before). */
    void sendFailed(MessageQueue mq, long[] token, Exception e);

    /** The consumer processes a pull result: {@code process} runs RocketMQ's own processing. */
    PullResult processed(MessageQueue mq, PullResult r, Supplier<PullResult> process);
}
