package rocketspec.recorder;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.serializer.SerializerFeature;

import java.io.BufferedWriter;
import java.io.Closeable;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Writes rocketspec trace events as JSON Lines. Each line carries seq, ts (wall clock ms) and
 * kind first; "_t" is the wall clock in ns, strictly increasing within one writer, so that the
 * files of several JVMs on one machine can be merged into one trace (rocketspec record does it).
 */
public final class TraceWriter implements Closeable {
    private final Writer out;
    private long seq;
    private long lastNs;
    private boolean held;
    private boolean heldStarted;
    private boolean closed;

    public TraceWriter(String path) throws IOException {
        this.out = new BufferedWriter(new OutputStreamWriter(new FileOutputStream(path), StandardCharsets.UTF_8));
    }

    /** An event under construction: kind plus fields in insertion order. */
    public static final class Event {
        final String kind;
        final Map<String, Object> fields = new LinkedHashMap<>();

        Event(String kind) {
            this.kind = kind;
        }

        public Event put(String key, Object value) {
            fields.put(key, value);
            return this;
        }

        /** Polled state (seen at ts, changed at or before it). */
        public Event sampled() {
            return put("obs", "sampled");
        }

        /** Not observed: derived from observed events with RocketMQ's documented behaviour. */
        public Event inferred() {
            return put("obs", "inferred");
        }
    }

    public static Event event(String kind) {
        return new Event(kind);
    }

    /**
     * Until {@link #releaseClock()}, events after the next one are stamped right after it (1 ns
     * apart): a snapshot written over a few milliseconds is the state of one instant (the broker
     * recorder's lock holds the stores and commits meanwhile), so another writer's event of those
     * milliseconds merges after it, not into it.
     */
    public synchronized void holdClock() {
        held = true;
        heldStarted = false;
    }

    public synchronized void releaseClock() {
        held = false;
    }

    public synchronized void emit(Event e) {
        if (closed) {
            return;
        }
        Instant now = Instant.now();
        long ns = now.getEpochSecond() * 1_000_000_000L + now.getNano();
        if (held && heldStarted) {
            ns = lastNs + 1;
        }
        heldStarted = held;
        if (ns <= lastNs) {
            ns = lastNs + 1;
        }
        lastNs = ns;
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("seq", seq++);
        line.put("ts", ns / 1_000_000L);
        line.put("kind", e.kind);
        line.putAll(e.fields);
        line.put("_t", ns);
        try {
            out.write(JSON.toJSONString(line, SerializerFeature.WriteMapNullValue, SerializerFeature.DisableCircularReferenceDetect));
            out.write('\n');
            out.flush();
        } catch (IOException ex) {
            throw new IllegalStateException("cannot write trace: " + ex, ex);
        }
    }

    @Override
    public synchronized void close() throws IOException {
        if (!closed) {
            closed = true;
            out.close();
        }
    }
}
