package edge

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/calltrail"
	"github.com/fleetgate/fleetgate/pkg/demobackend"
)

// BenchmarkToolsListEvidence lists every tool of a 1,000-tool view (one
// page) through two edges on the same log, one keeping convergence
// evidence and one not, alternately, and reports both p50s and the
// bookkeeping's share.
func BenchmarkToolsListEvidence(b *testing.B) {
	f := newFleet(b)
	be := startBackend(b, "alpha", &demobackend.Options{ExtraTools: 998})
	f.healthyBackend("default", be)
	with := startEdge(b, f, nil)
	without := startEdge(b, f, &Options{CallTimeout: 10 * time.Second, paths: pathSwitches{noListEvidence: true}})
	cw := connect(b, with.MCPURL(), "2025-11-25")
	co := connect(b, without.MCPURL(), "2025-11-25")
	ctx := context.Background()
	list := func(c *client) time.Duration {
		start := time.Now()
		n := 0
		for _, err := range c.cs.Tools(ctx, nil) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 1000 {
			b.Fatalf("listed %d tools, want 1000", n)
		}
		return time.Since(start)
	}
	compareP50(b, "evidence", func() time.Duration { return list(cw) }, "plain", func() time.Duration { return list(co) })
}

// compareP50 runs two measured operations alternately, once each per
// benchmark iteration after one warm-up, and reports both p50s and the
// ratio of the first to the second.
func compareP50(b *testing.B, nameA string, a func() time.Duration, nameB string, c func() time.Duration) {
	a()
	c()
	var as, cs []time.Duration
	for b.Loop() {
		as = append(as, a())
		cs = append(cs, c())
	}
	slices.Sort(as)
	slices.Sort(cs)
	b.ReportMetric(float64(percentile(as, 0.5).Microseconds()), nameA+"-p50-µs")
	b.ReportMetric(float64(percentile(cs, 0.5).Microseconds()), nameB+"-p50-µs")
	b.ReportMetric(float64(percentile(as, 0.5))/float64(percentile(cs, 0.5)), "p50-ratio")
}

// BenchmarkToolCallAudit makes the same tools/call through two edges on
// one log, one recording every call in the call trail and one not,
// alternately, and reports both p50s and their ratio.
func BenchmarkToolCallAudit(b *testing.B) {
	f := newSharedFleet(b)
	be := startBackend(b, "alpha", nil)
	f.healthyBackend("default", be)
	trail, err := calltrail.Open(context.Background(), f.js, nil)
	if err != nil {
		b.Fatal(err)
	}
	with := startRecordEdge(b, f, "audited", nil, func(o *Options) { o.CallTrail, o.IdentityHeader = trail, "" })
	without := startRecordEdge(b, f, "plain", nil, func(o *Options) { o.IdentityHeader = "" })
	cw := connect(b, with.MCPURL(), "2025-11-25")
	co := connect(b, without.MCPURL(), "2025-11-25")
	ctx := context.Background()
	args := map[string]any{"text": "bench"}
	call := func(c *client) time.Duration {
		start := time.Now()
		res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha_echo", Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("call: %v %+v", err, res)
		}
		return time.Since(start)
	}
	compareP50(b, "audited", func() time.Duration { return call(cw) }, "plain", func() time.Duration { return call(co) })
	if st := trail.Stats(); st.Dropped > 0 {
		b.Logf("call trail dropped %d entries", st.Dropped)
	}
}
