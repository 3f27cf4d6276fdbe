package edge

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"
)

// BenchmarkTaskGet alternates a tasks/get of one task straight at its
// backend and through the edge (the session's table, the id swapped both
// ways, the pooled backend session), in one run, and reports their p50s
// and ratio.
func BenchmarkTaskGet(b *testing.B) {
	f := newFleet(b)
	alpha := startTaskBackend(b, "alpha")
	addTaskBackend(f, alpha)
	e := startEdge(b, f, nil)
	eventually(b, 10*time.Second, "alpha served", func() bool { _, ok := e.current().Catalog.Tool("alpha_slow"); return ok })
	c, _ := openRaw(b, e.MCPURL())
	var created struct{ Task wireTask }
	c.ok("tools/call", map[string]any{"name": "alpha_slow", "arguments": map[string]any{}, "task": map[string]any{}}, &created)
	direct := connect(b, alpha.URL(), "2025-11-25") // a session of the backend's own
	hc := &http.Client{}
	ctx := context.Background()
	getDirect := func() time.Duration {
		start := time.Now()
		if _, rerr, err := tbPost(ctx, hc, alpha.URL(), direct.cs.ID(), "tasks/get", map[string]any{"taskId": "t-1"}); err != nil || rerr != nil {
			b.Fatalf("direct tasks/get: %v %v", err, rerr)
		}
		return time.Since(start)
	}
	getEdge := func() time.Duration {
		start := time.Now()
		c.ok("tasks/get", map[string]any{"taskId": created.Task.TaskID}, nil)
		return time.Since(start)
	}
	getDirect()
	getEdge()
	var ds, es []time.Duration
	for b.Loop() {
		if len(ds)%2 == 0 {
			ds, es = append(ds, getDirect()), append(es, getEdge())
		} else {
			es, ds = append(es, getEdge()), append(ds, getDirect())
		}
	}
	slices.Sort(ds)
	slices.Sort(es)
	p := func(d []time.Duration, q float64) float64 { return float64(percentile(d, q).Microseconds()) }
	b.ReportMetric(p(ds, 0.5), "direct-p50-µs")
	b.ReportMetric(p(es, 0.5), "edge-p50-µs")
	b.ReportMetric(p(es, 0.99), "edge-p99-µs")
	b.ReportMetric(p(es, 0.5)/p(ds, 0.5), "p50-ratio")
}
