package main

import (
	"encoding/json"
	"math/rand"
	"sync"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// listenerSpec is a scenario's listener (docs/scenarios.md): per call a status and a duration,
// from the first rule matching a message of the batch, else drawn from the rates.
type listenerSpec struct {
	Rules         []rule          `json:"rules"`
	DurationMs    json.RawMessage `json:"duration_ms"`
	FailRate      float64         `json:"fail_rate"`
	NullRate      float64         `json:"null_rate"`
	ExceptionRate float64         `json:"exception_rate"`
	FailStatus    string          `json:"fail_status"`
	SuccessStatus string          `json:"success_status"`
	SuspendMs     *int            `json:"suspend_ms"`
	DelayLevel    *int            `json:"delay_level_when_next_consume"`
	AckIndex      *int32          `json:"ack_index"`
}

type rule struct {
	Tags       []string        `json:"tags"`
	Keys       []string        `json:"keys"`
	Until      *int32          `json:"until_reconsume_times"`
	Status     string          `json:"status"`
	DurationMs json.RawMessage `json:"duration_ms"`
}

type listener struct {
	spec    listenerSpec
	orderly bool
	mu      sync.Mutex
	rng     *rand.Rand
}

func newListener(spec *listenerSpec, orderly bool, seed int64) *listener {
	l := &listener{orderly: orderly, rng: rand.New(rand.NewSource(seed))}
	if spec != nil {
		l.spec = *spec
	}
	return l
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (l *listener) match(msgs []*primitive.MessageExt) *rule {
	for i := range l.spec.Rules {
		r := &l.spec.Rules[i]
		for _, m := range msgs {
			if r.Tags != nil && !contains(r.Tags, m.GetTags()) {
				continue
			}
			if r.Keys != nil && !contains(r.Keys, m.GetKeys()) {
				continue
			}
			if r.Until != nil && m.ReconsumeTimes >= *r.Until {
				continue
			}
			return r
		}
	}
	return nil
}

// span reads a duration: a number of ms or [low, high].
func span(raw json.RawMessage, dflt [2]int) [2]int {
	if len(raw) == 0 {
		return dflt
	}
	var n int
	if json.Unmarshal(raw, &n) == nil {
		return [2]int{n, n}
	}
	var pair [2]int
	if json.Unmarshal(raw, &pair) == nil {
		return pair
	}
	return dflt
}

// decide gives the call's status (a RocketMQ status name, or NULL / EXCEPTION) and duration in ms.
func (l *listener) decide(msgs []*primitive.MessageExt) (string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.match(msgs)
	d := span(l.spec.DurationMs, [2]int{1, 10})
	if r != nil {
		d = span(r.DurationMs, d)
	}
	duration := d[0]
	if d[1] > d[0] {
		duration += l.rng.Intn(d[1] - d[0] + 1)
	}
	if r != nil && r.Status != "" {
		return r.Status, duration
	}
	x := l.rng.Float64()
	switch {
	case x < l.spec.ExceptionRate:
		return "EXCEPTION", duration
	case x-l.spec.ExceptionRate < l.spec.NullRate:
		return "NULL", duration
	case x-l.spec.ExceptionRate-l.spec.NullRate < l.spec.FailRate:
		if l.spec.FailStatus != "" {
			return l.spec.FailStatus, duration
		}
		if l.orderly {
			return "SUSPEND_CURRENT_QUEUE_A_MOMENT", duration
		}
		return "RECONSUME_LATER", duration
	}
	if l.spec.SuccessStatus != "" {
		return l.spec.SuccessStatus, duration
	}
	if l.orderly {
		return "SUCCESS", duration
	}
	return "CONSUME_SUCCESS", duration
}
