package edge

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/inputstate"
)

// BenchmarkInputRoundTrip is an input-request round trip of a 2026-07-28
// client (the call, its input-required result, the retry with the answer,
// the result) to a backend of that revision: directly, through one edge,
// and with the retry on another edge of the group, interleaved in one run.
// It reports each leg's p50 and the edges' p50 ratios to direct.
func BenchmarkInputRoundTrip(b *testing.B) {
	f := newFleet(b)
	be := startInputBackend(b, f)
	key, _ := inputstate.New([]byte(strings.Repeat("b", 32)))
	e1 := startEdge(b, f, &Options{CallTimeout: 10 * time.Second, InputState: key})
	e2 := startEdge(b, f, &Options{CallTimeout: 10 * time.Second, InputState: key})
	for _, e := range []*Edge{e1, e2} {
		eventually(b, 10*time.Second, "confirm served", func() bool { _, ok := e.current().Catalog.Tool("alpha_confirm"); return ok })
	}
	ctx := context.Background()
	connect := func(url string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "b"}, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: newProtocol})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		return cs
	}
	direct, c1, c2 := connect(be.URL()), connect(e1.MCPURL()), connect(e2.MCPURL())
	answer := mcp.InputResponseMap{"ok": &mcp.ElicitResult{Action: "accept"}}
	round := func(first, retry *mcp.ClientSession, tool string) time.Duration {
		start := time.Now()
		r1, err := first.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		if err != nil || !r1.NeedsInput() {
			b.Fatalf("first call: %v %+v", err, r1)
		}
		r2, err := retry.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}, InputResponses: answer, RequestState: r1.RequestState})
		if err != nil || r2.IsError || r2.NeedsInput() {
			b.Fatalf("retry: %v %+v", err, r2)
		}
		return time.Since(start)
	}
	var ds, d1, d2 []time.Duration
	for i := 0; b.Loop(); i++ {
		legs := []func(){
			func() { ds = append(ds, round(direct, direct, "confirm")) },
			func() { d1 = append(d1, round(c1, c1, "alpha_confirm")) },
			func() { d2 = append(d2, round(c1, c2, "alpha_confirm")) },
		}
		for j := range legs {
			legs[(i+j)%len(legs)]()
		}
	}
	p50 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds())
	}
	b.ReportMetric(p50(ds), "direct-p50-µs")
	b.ReportMetric(p50(d1), "edge-p50-µs")
	b.ReportMetric(p50(d2), "other-edge-p50-µs")
	b.ReportMetric(p50(d1)/p50(ds), "edge-ratio")
	b.ReportMetric(p50(d2)/p50(ds), "other-edge-ratio")
}
