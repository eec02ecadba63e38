/*
 * RocketMQ 4.9.8's own SQL92 filter on one selector and one message's properties, as the
 * broker runs it. One JVM answers many requests: stdin JSON lines {"expr", "props"}
 * (props: an object of string values, or null for none), stdout one JSON line each:
 *
 *   {"compiled": false, "error": "..."}      FilterFactory's SQL92 filter refuses the text
 *                                            (the broker never registers such a filter)
 *   {"compiled": true, "value": "TRUE"|"FALSE"|"NULL"|"<class name>", "matched": bool}
 *   {"compiled": true, "throws": "<exception class>", "error": "...", "matched": bool}
 *
 * "value"/"throws": what the compiled Expression's evaluate returns or throws on a broker
 * MessageEvaluationContext of the properties as given (the evaluator alone); "matched": the
 * broker's decision for a message sent with those properties, ExpressionMessageFilter.
 * isMatchedByCommitLog (an SQL92 subscription, filter data from ConsumerFilterManager.build)
 * on the properties as the broker holds them: encoded by MessageDecoder.
 * messageProperties2String (as a producer sends them) and decoded by string2messageProperties
 * (as SendMessageProcessor and the store's decodeProperties do), which drops empty names
 * and values.
 */
import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONObject;
import org.apache.rocketmq.broker.filter.ConsumerFilterData;
import org.apache.rocketmq.broker.filter.ConsumerFilterManager;
import org.apache.rocketmq.broker.filter.ExpressionMessageFilter;
import org.apache.rocketmq.broker.filter.MessageEvaluationContext;
import org.apache.rocketmq.common.filter.ExpressionType;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.protocol.heartbeat.SubscriptionData;
import org.apache.rocketmq.filter.FilterFactory;
import org.apache.rocketmq.filter.expression.Expression;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

public class SqlDiff {
    static final ConsumerFilterManager MANAGER = new ConsumerFilterManager();

    static JSONObject answer(String expr, JSONObject props) {
        JSONObject r = new JSONObject();
        Expression compiled;
        try {
            compiled = FilterFactory.INSTANCE.get(ExpressionType.SQL92).compile(expr);
        } catch (Throwable e) {
            r.put("compiled", false);
            r.put("error", String.valueOf(e).split("\n")[0]);
            return r;
        }
        r.put("compiled", true);

        Map<String, String> sent = new HashMap<>();
        if (props != null) {
            for (String k : props.keySet()) sent.put(k, props.getString(k));
        }
        Map<String, String> stored = MessageDecoder.string2messageProperties(
            MessageDecoder.messageProperties2String(sent));

        try {
            Object v = compiled.evaluate(new MessageEvaluationContext(sent));
            r.put("value", v == null ? "NULL" : v instanceof Boolean ? ((Boolean) v ? "TRUE" : "FALSE")
                : v.getClass().getName());
        } catch (Throwable e) {
            r.put("throws", e.getClass().getName());
            r.put("error", String.valueOf(e.getMessage()));
        }

        SubscriptionData sub = new SubscriptionData("T", expr);
        sub.setExpressionType(ExpressionType.SQL92);
        ConsumerFilterData data = ConsumerFilterManager.build("T", "G", expr, ExpressionType.SQL92, 0);
        r.put("matched", new ExpressionMessageFilter(sub, data, MANAGER).isMatchedByCommitLog(null, stored));
        return r;
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
        // The broker's filter logs every evaluation (logback's console appender writes to
        // System.out): keep stdout for the answers.
        System.setOut(new PrintStream(java.io.OutputStream.nullOutputStream()));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.trim().isEmpty()) continue;
            JSONObject req = JSON.parseObject(line);
            out.println(answer(req.getString("expr"), req.getJSONObject("props")).toJSONString());
        }
    }
}
