package rocketspec.recorder;

import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * The broker side of POP consumption (RocketMQ 5.x only): the driver reaches it through this
 * interface, so the shared sources compile on the 4.x line too. The 5.x line's PopRecorder
 * (traces/recorder/releases/5) implements it.
 */
interface PopObserver {
    /** The class that implements it on a 5.x line (absent on 4.x, which has no POP consumer). */
    String IMPLEMENTATION = "rocketspec.recorder.PopRecorder";

    /**
     * What an operator does with `mqadmin setConsumeMode -m POP`: the broker answers the group's
     * QUERY_ASSIGNMENT for the topic with POP queues (popShareQueueNum -1: every client pops every
     * queue, written as queue -1).
     */
    void popMode(DefaultMQAdminExt admin, String brokerAddr, String topic, String group) throws Exception;

    /**
     * A SimpleConsumer group as an operator creates it (`mqadmin updateSubGroup`): the proxy gives
     * its gRPC clients maxAttempts = retryMaxTimes + 1 (maxReconsumeTimes -1: 16) and FIFO from
     * consumeMessageOrderly (GrpcClientSettingsManager).
     */
    void simpleGroup(DefaultMQAdminExt admin, String brokerAddr, String group, int maxReconsumeTimes, boolean orderly)
        throws Exception;

    /** No popped message is still held: every handle was acked, or revived, or dead-lettered. */
    boolean quiet();
}
