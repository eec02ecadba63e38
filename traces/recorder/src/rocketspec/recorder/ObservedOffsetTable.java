package rocketspec.recorder;

import java.util.AbstractMap;
import java.util.Collection;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentMap;
import java.util.function.Function;

/**
 * The broker's consumer offset table (topic@group -> queue -> offset), seen where it changes.
 *
 * <p>ConsumerOffsetManager reads its {@code offsetTable} field on every call and commits with
 * {@code table.get(key).put(queue, offset)} (or, for a key's first commit, a new map put into the
 * table). Pulls and persists of one queue commit on different Netty threads, so the order of the
 * RPC hook's after-calls is not the order of the commits. This view is put into the field in place
 * of the table: it delegates to RocketMQ's own maps (the storage, iteration, serialization and
 * every other use stay RocketMQ's), and reports each put with the value it replaced, under the
 * recorder's lock, so the trace orders commits as the table saw them.
 */
final class ObservedOffsetTable extends AbstractMap<String, ConcurrentMap<Integer, Long>>
    implements ConcurrentMap<String, ConcurrentMap<Integer, Long>> {

    /** Called under the lock, right after the table changed. */
    interface Listener {
        void committed(String topicAtGroup, int queue, long offset, Long previous);

        /** The table no longer holds the queue's offset. */
        void erased(String topicAtGroup, int queue, long previous);
    }

    private final ConcurrentMap<String, ConcurrentMap<Integer, Long>> d;
    private final Object lock;
    private final Listener listener;

    ObservedOffsetTable(ConcurrentMap<String, ConcurrentMap<Integer, Long>> delegate, Object lock, Listener listener) {
        this.d = delegate;
        this.lock = lock;
        this.listener = listener;
    }

    @Override
    public ConcurrentMap<Integer, Long> get(Object key) {
        ConcurrentMap<Integer, Long> m = d.get(key);
        return m == null ? null : new Queues((String) key, m);
    }

    @Override
    public ConcurrentMap<Integer, Long> put(String key, ConcurrentMap<Integer, Long> value) {
        synchronized (lock) {
            ConcurrentMap<Integer, Long> old = d.put(key, unwrap(value));
            reportAll(key, value, old);
            return old;
        }
    }

    /**
     * As ConcurrentMap's default, but the map returned is the observed view: 5.x's
     * assignResetOffset commits through {@code offsetTable.computeIfAbsent(key, ...).put(...)}.
     */
    @Override
    public ConcurrentMap<Integer, Long> computeIfAbsent(String key,
            Function<? super String, ? extends ConcurrentMap<Integer, Long>> create) {
        ConcurrentMap<Integer, Long> m = get(key);
        if (m != null) {
            return m;
        }
        ConcurrentMap<Integer, Long> fresh = create.apply(key);
        if (fresh == null) {
            return null;
        }
        putIfAbsent(key, fresh);
        return get(key);
    }

    @Override
    public ConcurrentMap<Integer, Long> putIfAbsent(String key, ConcurrentMap<Integer, Long> value) {
        synchronized (lock) {
            ConcurrentMap<Integer, Long> old = d.putIfAbsent(key, unwrap(value));
            if (old == null) {
                reportAll(key, value, null);
            }
            return old;
        }
    }

    @Override
    public void putAll(Map<? extends String, ? extends ConcurrentMap<Integer, Long>> m) {
        for (Map.Entry<? extends String, ? extends ConcurrentMap<Integer, Long>> e : m.entrySet()) {
            put(e.getKey(), e.getValue());
        }
    }

    private static ConcurrentMap<Integer, Long> unwrap(ConcurrentMap<Integer, Long> m) {
        return m instanceof Queues ? ((Queues) m).q : m;
    }

    /**
     * A whole map put under the key: the old map's queues that the new one lacks are gone. This
     * happens in RocketMQ itself: commitOffset puts a new map when {@code get(key)} found none, and
     * two threads committing the first offsets of one topic@group at once both do, the second map
     * replacing the first with its commit.
     */
    private void reportAll(String key, Map<Integer, Long> now, Map<Integer, Long> old) {
        if (old != null) {
            for (Map.Entry<Integer, Long> e : new TreeMap<>(old).entrySet()) {
                if (!now.containsKey(e.getKey())) {
                    listener.erased(key, e.getKey(), e.getValue());
                }
            }
        }
        for (Map.Entry<Integer, Long> e : new TreeMap<>(now).entrySet()) {
            listener.committed(key, e.getKey(), e.getValue(), old == null ? null : old.get(e.getKey()));
        }
    }

    @Override
    public boolean containsKey(Object key) {
        return d.containsKey(key);
    }

    @Override
    public ConcurrentMap<Integer, Long> remove(Object key) {
        return d.remove(key);
    }

    @Override
    public boolean remove(Object key, Object value) {
        return d.remove(key, value);
    }

    @Override
    public boolean replace(String key, ConcurrentMap<Integer, Long> oldValue, ConcurrentMap<Integer, Long> newValue) {
        return d.replace(key, oldValue, unwrap(newValue));
    }

    @Override
    public ConcurrentMap<Integer, Long> replace(String key, ConcurrentMap<Integer, Long> value) {
        return d.replace(key, unwrap(value));
    }

    @Override
    public int size() {
        return d.size();
    }

    @Override
    public Set<String> keySet() {
        return d.keySet();
    }

    @Override
    public Collection<ConcurrentMap<Integer, Long>> values() {
        return d.values();
    }

    @Override
    public Set<Map.Entry<String, ConcurrentMap<Integer, Long>>> entrySet() {
        return d.entrySet();
    }

    /** One topic@group's queue offsets: RocketMQ's map, its puts reported. */
    private final class Queues extends AbstractMap<Integer, Long> implements ConcurrentMap<Integer, Long> {
        private final String key;
        private final ConcurrentMap<Integer, Long> q;

        Queues(String key, ConcurrentMap<Integer, Long> q) {
            this.key = key;
            this.q = q;
        }

        /**
         * Whether this map is still the table's (called under the lock). commitOffset's thread may
         * hold a map that another thread's first commit replaced (reportAll): its put reaches no
         * table, so it is no commit, and the queue's next commit finds the table's value, not it.
         */
        private boolean live() {
            return d.get(key) == q;
        }

        @Override
        public Long put(Integer queue, Long offset) {
            synchronized (lock) {
                Long prev = q.put(queue, offset);
                if (live()) {
                    listener.committed(key, queue, offset, prev);   // every commit, a repeated value too
                }
                return prev;
            }
        }

        @Override
        public Long get(Object k) {
            return q.get(k);
        }

        @Override
        public boolean containsKey(Object k) {
            return q.containsKey(k);
        }

        @Override
        public Long putIfAbsent(Integer k, Long v) {
            synchronized (lock) {
                Long prev = q.putIfAbsent(k, v);
                if (prev == null && live()) {
                    listener.committed(key, k, v, null);
                }
                return prev;
            }
        }

        @Override
        public Long remove(Object k) {
            return q.remove(k);
        }

        @Override
        public boolean remove(Object k, Object v) {
            return q.remove(k, v);
        }

        @Override
        public boolean replace(Integer k, Long oldValue, Long newValue) {
            return q.replace(k, oldValue, newValue);
        }

        @Override
        public Long replace(Integer k, Long v) {
            return q.replace(k, v);
        }

        @Override
        public int size() {
            return q.size();
        }

        @Override
        public Set<Integer> keySet() {
            return q.keySet();
        }

        @Override
        public Collection<Long> values() {
            return q.values();
        }

        @Override
        public Set<Map.Entry<Integer, Long>> entrySet() {
            return q.entrySet();
        }
    }
}
