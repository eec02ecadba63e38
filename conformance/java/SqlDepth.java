/*
 * How deep RocketMQ's SQL92 selector parser (SelectorParser, JavaCC) can nest on a thread
 * with the JVM's default stack size. Each parse runs on a new Thread(), which gets the
 * default stack (-Xss, 1 MiB on x86-64 Linux); SelectorParser.parse reports a
 * StackOverflowError as MQFilterException("Invalid MessageSelector.") with it as the cause.
 *
 *   java SqlDepth compile        stdin: JSON lines {"expr": ...}; stdout: {"ok", "overflow", "error"}
 *   java SqlDepth edge KIND N    N warm-up parses of KIND at depth 50-150 (JIT), then a binary
 *                                search; prints {"kind", "warmup", "max"}: the deepest that compiles
 * KIND: paren, not, minus, plus, notparen, eqparen, andparen, plusparen (see shape()).
 * SelectorParser caches results by text, so every probe is a text not parsed before.
 */
import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONObject;
import org.apache.rocketmq.filter.parser.SelectorParser;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

public class SqlDepth {
    static int salt = 0;

    static String shape(String kind, int n) {
        StringBuilder b = new StringBuilder();
        switch (kind) {
            case "paren": b.append("(".repeat(n)).append("a = 1").append(")".repeat(n)); break;
            case "not": b.append("NOT ".repeat(n)).append("a"); break;
            case "minus": b.append("a > ").append("- ".repeat(n)).append("1"); break;
            case "plus": b.append("a > ").append("+ ".repeat(n)).append("1"); break;
            case "notparen": b.append("NOT (".repeat(n)).append("a").append(")".repeat(n)); break;
            case "eqparen": b.append("a = (".repeat(n)).append("a").append(")".repeat(n)); break;
            case "andparen": b.append("a AND (".repeat(n)).append("a").append(")".repeat(n)); break;
            case "plusparen": b.append("a > ").append("+(".repeat(n)).append("1").append(")".repeat(n)); break;
            default: throw new IllegalArgumentException("unknown kind " + kind);
        }
        // trailing spaces make each probe a new text for the parse cache
        return b.append(" ".repeat(++salt % 7)).toString();
    }

    /** {ok, overflow, error} of compiling sql on a new default-stack thread. */
    static JSONObject compile(String sql) throws InterruptedException {
        JSONObject r = new JSONObject();
        Thread t = new Thread(() -> {
            try {
                SelectorParser.parse(sql);
                r.put("ok", true);
                r.put("overflow", false);
            } catch (Throwable e) {
                boolean so = false;
                for (Throwable c = e; c != null; c = c.getCause()) so |= c instanceof StackOverflowError;
                r.put("ok", false);
                r.put("overflow", so);
                r.put("error", String.valueOf(e.getCause() != null ? e.getCause() : e).split("\n")[0]);
            }
        });
        t.start();
        t.join();
        return r;
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
        if (args[0].equals("compile")) {
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            String line;
            while ((line = in.readLine()) != null) {
                if (!line.trim().isEmpty()) out.println(compile(JSON.parseObject(line).getString("expr")).toJSONString());
            }
            return;
        }
        String kind = args[1];
        int warmup = Integer.parseInt(args[2]);
        for (int i = 0; i < warmup; i++) compile(shape(kind, 50 + i % 100));
        int lo = 1, hi = 1 << 16;
        while (!compile(shape(kind, hi)).getBooleanValue("overflow")) { lo = hi; hi *= 2; }
        while (hi - lo > 1) {
            int m = (lo + hi) >>> 1;
            if (compile(shape(kind, m)).getBooleanValue("ok")) lo = m; else hi = m;
        }
        JSONObject r = new JSONObject();
        r.put("kind", kind);
        r.put("warmup", warmup);
        r.put("max", lo);
        out.println(r.toJSONString());
    }
}
