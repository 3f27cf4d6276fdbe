package controller

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/health"
	"github.com/fleetgate/fleetgate/pkg/timeline"
)

// Every change of a backend's status is one log line naming the backend,
// the old and the new status and the reason: info, warn when it became
// unhealthy; a publication without a change writes nothing. The status
// history (the dashboard's timeline) has the same changes and the
// backend's first status of the term.
func TestStatusChangeLogged(t *testing.T) {
	var buf bytes.Buffer
	c := &Controller{zl: zerolog.New(&buf).Level(zerolog.InfoLevel), metrics: newMetrics(nil), statuses: map[BackendKey]liveStatus{},
		history: timeline.NewRecorder(0)}
	policy := health.Policy{Interval: time.Second, Timeout: 500 * time.Millisecond, UnhealthyAfter: 2, Debounce: 5 * time.Second}
	core := NewCore(policy, nil)
	k := BackendKey{"default", "alpha"}
	core.SetDesired(map[BackendKey]events.BackendConfig{k: {URL: "http://127.0.0.1:1/mcp", Transport: "streamable-http"}})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c.publishStatuses(core) // the term's first publication: no change
	step := func(r health.Result, reason string) {
		now = now.Add(10 * time.Second)
		core.Observe(k, health.Observation{At: now, Result: r, Reason: reason, Latency: time.Millisecond})
		c.publishStatuses(core)
	}
	step(health.OK, "")
	step(health.OK, "") // no change: no line
	step(health.Failure, "connection refused")
	step(health.Failure, "connection refused")
	type line struct{ Level, Message, Backend, From, To, Reason string }
	var got []line
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var v line
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		got = append(got, v)
	}
	want := []line{
		{"info", "backend status changed", "default/alpha", "unknown", "healthy", "probe succeeded"},
		{"info", "backend status changed", "default/alpha", "healthy", "unknown", "probe failed (1 of 2 failures before unhealthy): connection refused"},
		{"warn", "backend status changed", "default/alpha", "unknown", "unhealthy", "2 consecutive probe failures: connection refused"},
	}
	if len(got) != len(want) {
		t.Fatalf("log:\n%s\nwant %d lines", buf.String(), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	hist, _ := c.history.Since(0)
	var steps []string
	for _, ch := range hist {
		if ch.Group != "default" || ch.Backend != "alpha" || !ch.Live || ch.At.IsZero() {
			t.Errorf("history change %+v", ch)
		}
		steps = append(steps, ch.From+">"+ch.To)
	}
	if want := []string{">unknown", "unknown>healthy", "healthy>unknown", "unknown>unhealthy"}; !slices.Equal(steps, want) {
		t.Errorf("history %v, want %v", steps, want)
	}
}
