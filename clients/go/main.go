// rocketspec-go-client: drives upstream's rocketmq-client-go v2 push consumer through
// rocketspec's client driver protocol (docs/driver-protocol.md): one JSON object per line,
// requests on stdin, reports on stdout. Logs go to stderr; stdout carries protocol lines only.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

const protocolVersion = 1

// The library's timing constants, which it does not let an application change (v2.1.2:
// internal/client.go and consumer/process_queue.go); reported in `started` as the config in force.
var fixedTiming = map[string]interface{}{
	"rebalance_interval_ms":               20000,
	"heartbeat_broker_interval_ms":        30000,
	"persist_consumer_offset_interval_ms": 5000,
	"poll_name_server_interval_ms":        30000,
	"client_lock_max_live_ms":             30000,
	"pull_max_idle_ms":                    120000,
}

type subscription struct {
	Type string `json:"type"`
	Expr string `json:"expr"`
}

type startRequest struct {
	Type          string                  `json:"type"`
	Protocol      int                     `json:"protocol"`
	Client        string                  `json:"client"`
	Group         string                  `json:"group"`
	Namesrv       string                  `json:"namesrv"`
	Seed          int64                   `json:"seed"`
	Subscriptions map[string]subscription `json:"subscriptions"`
	Config        map[string]interface{}  `json:"config"`
	Listener      *listenerSpec           `json:"listener"`
}

var (
	outMu sync.Mutex
	out   = bufio.NewWriter(os.Stdout)
)

// report writes one protocol line, stamped with the wall clock in ns (the merge key).
func report(kind string, fields map[string]interface{}) {
	outMu.Lock()
	defer outMu.Unlock()
	fields["type"] = kind
	fields["ts_ns"] = time.Now().UnixNano()
	b, err := json.Marshal(fields)
	if err != nil {
		b, _ = json.Marshal(map[string]interface{}{"type": "error", "ts_ns": time.Now().UnixNano(),
			"message": "cannot encode report: " + err.Error()})
	}
	out.Write(b)
	out.WriteByte('\n')
	out.Flush()
}

func fail(msg string) {
	report("error", map[string]interface{}{"message": msg})
	os.Exit(2)
}

func num(cfg map[string]interface{}, key string) (int64, bool) {
	v, ok := cfg[key].(float64)
	return int64(v), ok
}

func main() {
	rlog.SetLogLevel("warn")
	if err := parseArgs(os.Args[1:]); err != nil {
		fail(err.Error())
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	if !in.Scan() {
		fail("stdin closed before the start request")
	}
	var req startRequest
	if err := json.Unmarshal(in.Bytes(), &req); err != nil || req.Type != "start" {
		fail(fmt.Sprintf("first line: expected a start request, got %q", in.Text()))
	}
	if req.Protocol != protocolVersion {
		fail(fmt.Sprintf("start: protocol %d; this client speaks %d", req.Protocol, protocolVersion))
	}
	orderly := req.Config["consume_mode"] == "ORDERLY"
	pc, applied, err := build(req, orderly)
	if err != nil {
		fail("start: " + err.Error())
	}
	lst := newListener(req.Listener, orderly, req.Seed)
	var calls int64
	// The application's listener runs once Start has returned and `started` is reported: the
	// library may hand a batch over before Start returns (a restart with a backlog), and the
	// protocol's reports of a life follow its `started`
	ready := make(chan struct{})
	handler := func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		<-ready
		return consume(ctx, lst, atomic.AddInt64(&calls, 1), orderly, msgs)
	}
	for topic, s := range req.Subscriptions {
		sel := consumer.MessageSelector{Type: consumer.TAG, Expression: s.Expr}
		if s.Type == "SQL92" {
			sel.Type = consumer.SQL92
		}
		if err := pc.Subscribe(topic, sel, handler); err != nil {
			fail(fmt.Sprintf("start: subscribe %s: %v", topic, err))
		}
	}
	if err := pc.Start(); err != nil {
		fail("start: " + err.Error())
	}
	report("started", map[string]interface{}{
		"client_id": clientID(req.Client), "library": "github.com/apache/rocketmq-client-go/v2",
		"library_version": "v2.1.2", "config": applied})
	close(ready)
	// "shutdown" (or stdin closing: rocketspec is gone) stops the consumer gracefully.
	for in.Scan() {
		var m map[string]interface{}
		if json.Unmarshal(in.Bytes(), &m) != nil {
			report("error", map[string]interface{}{"message": fmt.Sprintf("expected a JSON request, got %q", in.Text())})
			continue
		}
		if m["type"] == "shutdown" {
			if mutant == "stop-early" {
				report("stopped", map[string]interface{}{})
				time.Sleep(3 * time.Second)
				pc.Shutdown()
				return
			}
			break
		}
		report("error", map[string]interface{}{"message": fmt.Sprintf("unknown request type %v", m["type"])})
	}
	if err := pc.Shutdown(); err != nil {
		report("error", map[string]interface{}{"message": "shutdown: " + err.Error()})
	}
	report("stopped", map[string]interface{}{})
}

// build makes the push consumer from the start request; `applied` is the config in force:
// what the request asked that the library took, and the library's own fixed values.
func build(req startRequest, orderly bool) (rocketmq.PushConsumer, map[string]interface{}, error) {
	cfg := req.Config
	applied := map[string]interface{}{}
	for k, v := range fixedTiming {
		applied[k] = v
	}
	opts := []consumer.Option{
		consumer.WithGroupName(req.Group),
		consumer.WithNameServer([]string{req.Namesrv}),
		consumer.WithInstance(req.Client),
		consumer.WithConsumerOrder(orderly && mutant != "orderly-as-concurrent"),
	}
	applied["consume_mode"] = cfg["consume_mode"]
	switch cfg["message_model"] {
	case "BROADCASTING":
		opts = append(opts, consumer.WithConsumerModel(consumer.BroadCasting))
	default:
		opts = append(opts, consumer.WithConsumerModel(consumer.Clustering))
	}
	applied["message_model"] = cfg["message_model"]
	switch cfg["strategy"] {
	case "AVG", nil:
		opts = append(opts, consumer.WithStrategy(consumer.AllocateByAveragely))
	case "AVG_BY_CIRCLE":
		opts = append(opts, consumer.WithStrategy(consumer.AllocateByAveragelyCircle))
	case "CONSISTENT_HASH":
		n, _ := num(cfg, "virtual_node_cnt")
		if n <= 0 {
			n = 10
		}
		opts = append(opts, consumer.WithStrategy(consumer.AllocateByConsistentHash(int(n))))
	default:
		return nil, nil, fmt.Errorf("strategy %v is not offered by rocketmq-client-go", cfg["strategy"])
	}
	applied["strategy"] = cfg["strategy"]
	switch cfg["consume_from_where"] {
	case "CONSUME_FROM_FIRST_OFFSET":
		opts = append(opts, consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	case "CONSUME_FROM_TIMESTAMP":
		opts = append(opts, consumer.WithConsumeFromWhere(consumer.ConsumeFromTimestamp))
	default:
		opts = append(opts, consumer.WithConsumeFromWhere(consumer.ConsumeFromLastOffset))
	}
	applied["consume_from_where"] = cfg["consume_from_where"]
	if n, ok := num(cfg, "max_reconsume_times"); ok {
		opts = append(opts, consumer.WithMaxReconsumeTimes(int32(n)))
		applied["max_reconsume_times"] = n
	}
	if n, ok := num(cfg, "consume_message_batch_max_size"); ok {
		opts = append(opts, consumer.WithConsumeMessageBatchMaxSize(int(n)))
		applied["consume_message_batch_max_size"] = n
	}
	if n, ok := num(cfg, "pull_batch_size"); ok {
		opts = append(opts, consumer.WithPullBatchSize(int32(n)))
		applied["pull_batch_size"] = n
	}
	if n, ok := num(cfg, "pull_interval"); ok {
		opts = append(opts, consumer.WithPullInterval(time.Duration(n)*time.Millisecond))
		applied["pull_interval"] = n
	}
	if n, ok := num(cfg, "pull_threshold_for_queue"); ok {
		opts = append(opts, consumer.WithPullThresholdForQueue(n))
		applied["pull_threshold_for_queue"] = n
	}
	if n, ok := num(cfg, "pull_threshold_size_for_queue"); ok {
		opts = append(opts, consumer.WithPullThresholdSizeForQueue(int(n)))
		applied["pull_threshold_size_for_queue"] = n
	}
	if n, ok := num(cfg, "consume_concurrently_max_span"); ok {
		opts = append(opts, consumer.WithConsumeConcurrentlyMaxSpan(int(n)))
		applied["consume_concurrently_max_span"] = n
	}
	if n, ok := num(cfg, "suspend_current_queue_time_millis"); ok {
		opts = append(opts, consumer.WithSuspendCurrentQueueTimeMillis(time.Duration(n)*time.Millisecond))
		applied["suspend_current_queue_time_millis"] = n
	}
	if n, ok := num(cfg, "consume_timeout"); ok {
		// Java's consumeTimeout is in minutes; the Go option is a duration
		opts = append(opts, consumer.WithConsumeTimeout(time.Duration(n)*time.Minute))
		applied["consume_timeout"] = n
	}
	if n, ok := num(cfg, "lock_interval_ms"); ok {
		opts = append(opts, consumer.WithRebalanceLockInterval(time.Duration(n)*time.Millisecond))
		applied["lock_interval_ms"] = n
	}
	if os.Getenv("ROCKETSPEC_MSGTRACE") == "1" {
		// `rocketspec record --msgtrace`: the library's own message trace (RIP-6) to RMQ_SYS_TRACE_TOPIC
		opts = append(opts, consumer.WithTrace(&primitive.TraceConfig{
			NamesrvAddrs: []string{req.Namesrv}, GroupName: req.Group}))
	}
	pc, err := consumer.NewPushConsumer(opts...)
	if err != nil {
		return nil, nil, err
	}
	return pc, applied, nil
}

// clientID is the id rocketmq-client-go gives itself (internal/client.go ClientID): its first
// up, non-loopback IPv4 address (empty when it has none) "@" the instance name.
func clientID(instance string) string {
	ip := ""
	ifaces, _ := net.Interfaces()
	for _, iface := range ifaces {
		if ip != "" || iface.Flags&net.FlagLoopback != 0 || iface.Flags&net.FlagUp == 0 {
			continue
		}
		addrs, _ := iface.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
				ip = n.IP.To4().String()
				break
			}
		}
	}
	return ip + "@" + instance
}

func consume(ctx context.Context, lst *listener, id int64, orderly bool, msgs []*primitive.MessageExt) (consumer.ConsumeResult, error) {
	if mutant == "ack-before-listener" {
		go listen(ctx, lst, id, orderly, msgs)
		return consumer.ConsumeSuccess, nil
	}
	return listen(ctx, lst, id, orderly, msgs)
}

// listen is one listener call: report it, apply the scenario's rules, report its end, and give
// the library its result.
func listen(ctx context.Context, lst *listener, id int64, orderly bool, msgs []*primitive.MessageExt) (consumer.ConsumeResult, error) {
	mc, _ := primitive.GetConsumerCtx(ctx)
	var topic, broker string
	var queue int
	if mc != nil && mc.MQ != nil {
		topic, broker, queue = mc.MQ.Topic, mc.MQ.BrokerName, mc.MQ.QueueId
	}
	if mutant == "skip-message" {
		kept := msgs[:0:0]
		for _, m := range msgs {
			if !(m.QueueOffset%5 == 4 && m.ReconsumeTimes == 0) {
				kept = append(kept, m)
			}
		}
		if len(kept) == 0 {
			return consumer.ConsumeSuccess, nil
		}
		msgs = kept
	}
	batch := make([]map[string]interface{}, 0, len(msgs))
	for _, m := range msgs {
		origin := m.GetProperty(primitive.PropertyOriginMessageId)
		if origin == "" {
			origin = m.OffsetMsgId
		}
		batch = append(batch, map[string]interface{}{
			"offset": m.QueueOffset, "msg_id": m.OffsetMsgId, "origin_msg_id": origin,
			"reconsume_times": m.ReconsumeTimes, "tags": m.GetTags(), "keys": m.GetKeys()})
	}
	report("consume_started", map[string]interface{}{
		"consume_id": id, "topic": topic, "broker": broker, "queue": queue, "messages": batch})
	status, duration := lst.decide(msgs)
	if lst.spec.SuspendMs != nil && orderly {
		if oc, ok := primitive.GetOrderlyCtx(ctx); ok && *lst.spec.SuspendMs >= 0 {
			oc.SuspendCurrentQueueTimeMillis = *lst.spec.SuspendMs
		}
	}
	if lst.spec.DelayLevel != nil && !orderly {
		if cc, ok := primitive.GetConcurrentlyCtx(ctx); ok {
			cc.DelayLevelWhenNextConsume = *lst.spec.DelayLevel
		}
	}
	// The scenario's ackIndex, set as an application sets it: the messages past it are declared
	// not consumed. What the library then does with them is its own behaviour, not the driver's.
	ackSet := false
	if lst.spec.AckIndex != nil && !orderly {
		if cc, ok := primitive.GetConcurrentlyCtx(ctx); ok {
			cc.AckIndex = *lst.spec.AckIndex
			ackSet = true
		}
	}
	time.Sleep(time.Duration(duration) * time.Millisecond)
	var res consumer.ConsumeResult
	switch status {
	case "CONSUME_SUCCESS", "SUCCESS":
		res = consumer.ConsumeSuccess
	case "RECONSUME_LATER":
		res = consumer.ConsumeRetryLater
	case "SUSPEND_CURRENT_QUEUE_A_MOMENT":
		res = consumer.SuspendCurrentQueueAMoment
	case "COMMIT":
		res = consumer.Commit
	case "ROLLBACK":
		res = consumer.Rollback
	default:
		// NULL and EXCEPTION have no Go form (ConsumeResult is an int; a listener returns an
		// error instead of throwing): an error with RECONSUME_LATER, as the library treats errors.
		res = consumer.ConsumeRetryLater
		if orderly {
			res = consumer.SuspendCurrentQueueAMoment
		}
		fin := map[string]interface{}{"consume_id": id, "status": javaStatus(res, orderly), "listener_error": status}
		if ackSet {
			fin["ack_index"] = -1
		}
		report("consume_finished", fin)
		if mutant == "ack-failed" {
			return consumer.ConsumeSuccess, nil
		}
		return res, fmt.Errorf("scenario listener fails (%s)", status)
	}
	fin := map[string]interface{}{"consume_id": id, "status": javaStatus(res, orderly)}
	if ackSet {
		fin["ack_index"] = ackIndex(*lst.spec.AckIndex, res, len(msgs))
	}
	report("consume_finished", fin)
	if mutant == "ack-failed" {
		return consumer.ConsumeSuccess, nil
	}
	if mutant == "nack-succeeded" && res == consumer.ConsumeSuccess && msgs[0].ReconsumeTimes == 0 &&
		msgs[0].QueueOffset%5 == 2 {
		if orderly {
			return consumer.SuspendCurrentQueueAMoment, nil
		}
		return consumer.ConsumeRetryLater, nil
	}
	return res, nil
}

// ackIndex is the last message of the batch the application declared consumed, as RocketMQ's
// processConsumeResult reads a ConsumeConcurrentlyContext: CONSUME_SUCCESS acknowledges
// [0..min(ackIndex, n-1)], any other status none (the trace's consume_finished.ack_index).
func ackIndex(set int32, res consumer.ConsumeResult, n int) int {
	if res != consumer.ConsumeSuccess {
		return -1
	}
	if int(set) > n-1 {
		return n - 1
	}
	return int(set)
}

// javaStatus names a Go ConsumeResult as the trace names RocketMQ's statuses.
func javaStatus(r consumer.ConsumeResult, orderly bool) string {
	switch r {
	case consumer.ConsumeSuccess:
		if orderly {
			return "SUCCESS"
		}
		return "CONSUME_SUCCESS"
	case consumer.ConsumeRetryLater:
		return "RECONSUME_LATER"
	case consumer.SuspendCurrentQueueAMoment:
		return "SUSPEND_CURRENT_QUEUE_A_MOMENT"
	case consumer.Commit:
		return "COMMIT"
	case consumer.Rollback:
		return "ROLLBACK"
	}
	return strings.ToUpper(fmt.Sprint(r))
}
