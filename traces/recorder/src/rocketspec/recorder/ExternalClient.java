package rocketspec.recorder;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONObject;

import java.io.BufferedReader;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A scenario client run by a program rocketspec did not write, through the client driver
 * protocol (docs/driver-protocol.md): the driver writes the `start` request on the program's
 * stdin and copies every line the program prints, unread, to the part's `.proto` file;
 * `rocketspec record` checks and merges them. The process itself is killed, frozen and resumed
 * with real signals, as a ClientMain JVM is.
 */
final class ExternalClient {
    static final int PROTOCOL = 1;

    /** Client name to the id its `started` report gave (the id the library registers with the broker). */
    private static final Map<String, String> REPORTED_IDS = new ConcurrentHashMap<>();

    private ExternalClient() {
    }

    /** The id the client's latest life reported in `started`; null before. */
    static String reportedId(String client) {
        return REPORTED_IDS.get(client);
    }

    static boolean enabled(JSONObject plan) {
        return plan.getJSONObject("external_client") != null;
    }

    /** The line that asks a client to shut down gracefully. */
    static String shutdownLine(JSONObject plan) {
        return enabled(plan) ? "{\"type\":\"shutdown\"}\n" : "shutdown\n";
    }

    static JSONObject startRequest(JSONObject plan, String client, String group, String namesrv) {
        JSONObject g = plan.getJSONObject("groups").getJSONObject(group);
        JSONObject own = plan.getJSONObject("client_subscriptions") == null ? null
            : plan.getJSONObject("client_subscriptions").getJSONObject(client);
        JSONObject config = new JSONObject(true);
        config.putAll(g.getJSONObject("config"));
        config.putAll(plan.getJSONObject("client"));
        JSONObject req = new JSONObject(true);
        req.put("type", "start");
        req.put("protocol", PROTOCOL);
        req.put("client", client);
        req.put("group", group);
        req.put("namesrv", namesrv);
        if (plan.getString("proxy") != null) {
            req.put("proxy", plan.getString("proxy"));   // the gRPC proxy's endpoint (SimpleConsumers)
        }
        req.put("seed", plan.getLongValue("seed") * 31 + client.hashCode());
        req.put("subscriptions", own != null ? own : g.getJSONObject("subscriptions"));
        req.put("config", config);
        req.put("listener", g.getJSONObject("listener"));
        return req;
    }

    /** Starts the program for one life of a client; returns once it reported `started`. */
    static Process spawn(JSONObject plan, String client, String group, String namesrv, String dir, String part)
        throws Exception {
        List<String> cmd = new ArrayList<>(plan.getJSONObject("external_client").getJSONArray("cmd").toJavaList(String.class));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        Map<String, String> env = pb.environment();
        env.put("ROCKETSPEC_CLIENT", client);
        pb.redirectError(new File(dir, part + ".err"));
        pb.redirectOutput(ProcessBuilder.Redirect.PIPE);
        Process p = pb.start();
        OutputStream in = p.getOutputStream();
        in.write((startRequest(plan, client, group, namesrv).toJSONString() + "\n").getBytes(StandardCharsets.UTF_8));
        in.flush();
        File proto = new File(plan.getString("out_dir"), part + ".proto");
        Writer out = new OutputStreamWriter(new FileOutputStream(proto), StandardCharsets.UTF_8);
        BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String line;
        String type = null;
        while ((line = r.readLine()) != null) {
            out.write(line + "\n");
            out.flush();
            type = fieldOf(line, "type");
            if ("started".equals(type) || "error".equals(type)) {
                break;
            }
        }
        if ("started".equals(type)) {
            String id = fieldOf(line, "client_id");
            if (id != null) {
                REPORTED_IDS.put(client, id);
            }
        }
        if (!"started".equals(type)) {
            out.close();
            throw new IllegalStateException("client " + client + " (" + String.join(" ", cmd) + ") did not report started"
                + " (its lines: " + proto + ", its stderr: " + dir + "/" + part + ".err)");
        }
        Thread drain = new Thread(() -> {
            try (Writer o = out) {
                String l;
                while ((l = r.readLine()) != null) {
                    o.write(l + "\n");
                    o.flush();
                }
            } catch (IOException ignored) {
                // the client is gone
            }
        }, "rocketspec-protocol-" + part);
        drain.setDaemon(true);
        drain.start();
        return p;
    }

    private static String fieldOf(String line, String key) {
        try {
            Object o = JSON.parse(line);
            return o instanceof JSONObject ? ((JSONObject) o).getString(key) : null;
        } catch (RuntimeException e) {
            return null;   // rocketspec record names the bad line after the run
        }
    }
}
