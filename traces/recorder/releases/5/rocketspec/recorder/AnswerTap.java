package rocketspec.recorder;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.remoting.RemotingServer;
import org.apache.rocketmq.remoting.common.RemotingHelper;
import org.apache.rocketmq.remoting.netty.NettyEncoder;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

import java.util.function.BiConsumer;

/**
 * An encoder in front of the one a remoting server has (RocketMQ's own, or PopRecorder's): sees
 * each answer the broker writes to a channel just before it is encoded, on the channel's event
 * executor, whichever thread wrote it. A 5.x broker writes some answers outside the RPC hooks
 * (SendMessageProcessor's asynchronous put answers from the put's callback), so only the channel
 * sees when the client can learn them. Wrapping, not replacing, keeps every earlier observer.
 */
final class AnswerTap extends NettyEncoder {
    private final NettyEncoder inner;
    private final BiConsumer<String, RemotingCommand> written;

    private AnswerTap(NettyEncoder inner, BiConsumer<String, RemotingCommand> written) {
        this.inner = inner;
        this.written = written;
    }

    /**
     * Puts a tap in front of the encoder of each of the broker's remoting servers; before the
     * broker starts (a server's pipelines take the encoder field when a connection opens).
     * written gets (channel remote address, answer) for each answer, before it is encoded.
     */
    static void install(BrokerController bc, BiConsumer<String, RemotingCommand> written) {
        for (RemotingServer s : new RemotingServer[] {bc.getRemotingServer(), bc.getFastRemotingServer()}) {
            if (s != null) {
                Reflect.set(s, "encoder", new AnswerTap((NettyEncoder) Reflect.get(s, "encoder"), written));
            }
        }
    }

    @Override
    public void encode(ChannelHandlerContext ctx, RemotingCommand cmd, ByteBuf out) throws Exception {
        if (cmd != null && cmd.isResponseType()) {
            try {
                written.accept(RemotingHelper.parseChannelRemoteAddr(ctx.channel()), cmd);
            } catch (RuntimeException e) {
                System.err.println("rocketspec answer tap: " + e);
            }
        }
        inner.encode(ctx, cmd, out);
    }
}
