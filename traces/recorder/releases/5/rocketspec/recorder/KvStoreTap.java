package rocketspec.recorder;

import org.apache.rocketmq.broker.pop.PopConsumerKVStore;
import org.apache.rocketmq.broker.pop.PopConsumerRecord;

import java.util.List;

/**
 * The broker's RocksDB POP path (popConsumerKVServiceInit and popConsumerKVServiceEnable on), seen
 * through its store: PopConsumerService keeps one record per popped message keyed by its deadline
 * instead of checkpoints in the revive log. The tap stands in for the service's store and passes
 * every call on. A record written is a checkpoint of one offset (store "kv"): a pop's, a change's
 * (its request is being processed), or revive's rewrite after a failed put (attempt times above 0,
 * backed off). The records a revive scan returns are the ones revive reads next: each is noted as
 * a checkpoint's offset being revived, so the copy the revive puts into the POP retry topic is
 * reported as that record's revive, as on the revive-log path.
 */
final class KvStoreTap implements PopConsumerKVStore {
    /** What the tap reports to: PopRecorder's checkpoint, reading and re-put hooks. */
    interface Sink {
        void kvWritten(PopConsumerRecord r);

        void kvReviving(PopConsumerRecord r);
    }

    private final PopConsumerKVStore inner;
    private final Sink sink;

    KvStoreTap(PopConsumerKVStore inner, Sink sink) {
        this.inner = inner;
        this.sink = sink;
    }

    @Override
    public boolean start() {
        return inner.start();
    }

    @Override
    public boolean shutdown() {
        return inner.shutdown();
    }

    @Override
    public String getFilePath() {
        return inner.getFilePath();
    }

    @Override
    public void writeRecords(List<PopConsumerRecord> records) {
        inner.writeRecords(records);
        for (PopConsumerRecord r : records) {
            try {
                sink.kvWritten(r);
            } catch (RuntimeException e) {
                System.err.println("rocketspec pop recorder (kv write): " + e);
            }
        }
    }

    @Override
    public void deleteRecords(List<PopConsumerRecord> records) {
        inner.deleteRecords(records);
    }

    @Override
    public List<PopConsumerRecord> scanExpiredRecords(long lowerTime, long upperTime, int maxCount) {
        List<PopConsumerRecord> due = inner.scanExpiredRecords(lowerTime, upperTime, maxCount);
        for (PopConsumerRecord r : due) {
            try {
                sink.kvReviving(r);
            } catch (RuntimeException e) {
                System.err.println("rocketspec pop recorder (kv revive): " + e);
            }
        }
        return due;
    }
}
