package rocketspec.recorder;

import org.apache.rocketmq.client.consumer.PullCallback;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.impl.CommunicationMode;
import org.apache.rocketmq.client.impl.consumer.PullAPIWrapper;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.heartbeat.SubscriptionData;
import org.apache.rocketmq.remoting.exception.RemotingException;

/** 4.x: the push consumer pulls through the 12-argument pullKernelImpl. */
final class TappedPullAPIWrapper extends PullAPIWrapper {
    private final PullTap tap;

    TappedPullAPIWrapper(MQClientInstance f, String group, boolean unitMode, PullTap tap) {
        super(f, group, unitMode);
        this.tap = tap;
    }

    @Override
    public PullResult pullKernelImpl(MessageQueue mq, String subExpression, String expressionType, long subVersion,
                                     long offset, int maxNums, int sysFlag, long commitOffset,
                                     long brokerSuspendMaxTimeMillis, long timeoutMillis,
                                     CommunicationMode mode, PullCallback callback)
        throws MQClientException, RemotingException, MQBrokerException, InterruptedException {
        long[] token = {-1, offset};
        PullCallback wrapped = tap.issue(mq, token, callback);
        try {
            return super.pullKernelImpl(mq, subExpression, expressionType, subVersion, offset, maxNums, sysFlag,
                commitOffset, brokerSuspendMaxTimeMillis, timeoutMillis, mode, wrapped);
        } catch (MQClientException | RemotingException | MQBrokerException | InterruptedException | RuntimeException e) {
            tap.sendFailed(mq, token, e);
            throw e;
        }
    }

    @Override
    public PullResult processPullResult(MessageQueue mq, PullResult r, SubscriptionData sd) {
        return tap.processed(mq, r, () -> super.processPullResult(mq, r, sd));
    }
}
