package rocketspec.recorder;

import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;

/** RocketMQ's own message ids as the trace uses them. */
final class Ids {
    private Ids() {
    }

    /**
     * msg_id: the broker's offset message id (store host + commit log offset). It is new for
     * every stored copy, as the trace's msg_id must be; the client-side unique key is not (a
     * retry copy keeps its UNIQ_KEY property).
     */
    static String msgId(MessageExt m) {
        if (m instanceof MessageClientExt) {
            return ((MessageClientExt) m).getOffsetMsgId();
        }
        return m.getMsgId();
    }

    /** origin_msg_id: the ORIGIN_MESSAGE_ID property of a retry or DLQ copy, else its own id. */
    static String originMsgId(MessageExt m) {
        String o = m.getProperty(MessageConst.PROPERTY_ORIGIN_MESSAGE_ID);
        return o == null || o.isEmpty() ? msgId(m) : o;
    }

    static List<Object> mq(MessageQueue mq) {
        return Arrays.asList(mq.getTopic(), mq.getBrokerName(), mq.getQueueId());
    }

    static List<List<Object>> mqs(Collection<MessageQueue> mqs) {
        List<MessageQueue> sorted = new ArrayList<>(mqs);
        sorted.sort(null);
        List<List<Object>> out = new ArrayList<>();
        for (MessageQueue q : sorted) {
            out.add(mq(q));
        }
        return out;
    }
}
