package rocketspec.recorder;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONObject;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;

/**
 * One scenario consumer in its own JVM, so that the driver can freeze it (SIGSTOP/SIGCONT) or
 * kill it (SIGKILL) as a real process. Args: plan.json client group namesrvAddr trace-part.
 * Prints "started" once the consumer runs; "shutdown" on stdin (or stdin closing: the driver
 * is gone) shuts it down gracefully.
 */
public final class ClientMain {
    private ClientMain() {
    }

    public static void main(String[] args) throws Exception {
        JSONObject plan = JSON.parseObject(new String(Files.readAllBytes(Paths.get(args[0])), StandardCharsets.UTF_8));
        long bound = plan.getLongValue("timeout_ms") + 30_000;
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(bound);
            } catch (InterruptedException e) {
                return;
            }
            Runtime.getRuntime().halt(3);
        }, "rocketspec-client-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
        TraceWriter w = new TraceWriter(args[4]);
        ScenarioConsumer c = new ScenarioConsumer(plan, args[1], args[2], args[3], w);
        c.start();
        System.out.println("started");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null && !"shutdown".equals(line.trim())) {
            // wait for the driver
        }
        c.shutdown();
        w.close();
        Runtime.getRuntime().halt(0);
    }
}
