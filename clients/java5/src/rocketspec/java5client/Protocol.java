package rocketspec.java5client;

import com.alibaba.fastjson.JSONObject;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * The report side of the driver protocol (docs/driver-protocol.md): one JSON object per line on
 * the process's real stdout, stamped with the wall clock in ns (the key that merges the reports
 * with the broker's events). System.out is pointed at stderr before any RocketMQ class loads, so
 * the library's own console output (5.x's logging prints status lines there) cannot corrupt the
 * protocol stream.
 */
final class Protocol {
    private static final OutputStream OUT = new FileOutputStream(FileDescriptor.out);

    private Protocol() {
    }

    static void claimStdout() {
        System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.err), true));
    }

    /** Nanoseconds since the Unix epoch (Instant has the resolution the clock gives). */
    static long nowNs() {
        java.time.Instant t = java.time.Instant.now();
        return t.getEpochSecond() * 1_000_000_000L + t.getNano();
    }

    /** Writes one report whole, under a lock: listener calls run on many threads. */
    static synchronized void report(String type, Map<String, Object> fields) {
        JSONObject o = new JSONObject(true);
        o.put("type", type);
        o.put("ts_ns", nowNs());
        o.putAll(fields);
        try {
            OUT.write((o.toJSONString() + "\n").getBytes(StandardCharsets.UTF_8));
            OUT.flush();
        } catch (java.io.IOException e) {
            // rocketspec is gone (its end of the pipe closed): nothing is left to report to
            Runtime.getRuntime().halt(0);
        }
    }

    static void report(String type) {
        report(type, new JSONObject());
    }

    /** Reports an error and exits 2 (bad input or a start the library refused). */
    static void fail(String message) {
        JSONObject f = new JSONObject(true);
        f.put("message", message);
        report("error", f);
        Runtime.getRuntime().halt(2);
    }
}
