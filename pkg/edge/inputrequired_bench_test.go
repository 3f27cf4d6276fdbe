package edge

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/inputstate"
	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
)

// BenchmarkInputRoundTrip is an input-request round trip of a 2026-07-28
// client (the call, its input-required result, the retry with the answer,
// the result) to a backend of that revision: directly, through one edge,
// and with the retry on another edge of the group; and to a backend of the
// session-based revisions that elicits during the call (a call held on the
// first edge), with the retry on that edge and on another edge of the
// group (forwarded to the holder over NATS); interleaved in one run. It
// reports each leg's p50, the edges' p50 ratios to direct, and the held
// call's across-edges p50 ratio to the same edge's.
func BenchmarkInputRoundTrip(b *testing.B) {
	f, js := openFleet(b)
	be := startInputBackend(b, f)
	startAskingBackend(b, f, "ask")
	key, _ := inputstate.New([]byte(strings.Repeat("b", 32)))
	natsURL := js.Conn().ConnectedUrl()
	e1 := startEdge(b, f, &Options{ID: "bench-1", CallTimeout: 10 * time.Second, InputState: key, HeldRelay: natstest.Connect(b, natsURL)})
	e2 := startEdge(b, f, &Options{ID: "bench-2", CallTimeout: 10 * time.Second, InputState: key, HeldRelay: natstest.Connect(b, natsURL)})
	for _, e := range []*Edge{e1, e2} {
		eventually(b, 10*time.Second, "confirm served", func() bool { _, ok := e.current().Catalog.Tool("alpha_confirm"); return ok })
		eventually(b, 10*time.Second, "ask served", func() bool { _, ok := e.current().Catalog.Tool("ask_elicit"); return ok })
	}
	ctx := context.Background()
	connect := func(url string) *mcp.ClientSession {
		// The handler declares the elicitation capability (the held call
		// needs it); the benchmark answers the input requests itself.
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "b"}, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return nil, errors.New("not asked here")
			}}).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: newProtocol})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		return cs
	}
	direct, c1, c2 := connect(be.URL()), connect(e1.MCPURL()), connect(e2.MCPURL())
	round := func(first, retry *mcp.ClientSession, tool string) time.Duration {
		start := time.Now()
		r1, err := first.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		if err != nil || !r1.NeedsInput() {
			b.Fatalf("first call: %v %+v", err, r1)
		}
		answer := mcp.InputResponseMap{}
		for k := range r1.InputRequests {
			answer[k] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}
		}
		r2, err := retry.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}, InputResponses: answer, RequestState: r1.RequestState})
		if err != nil || r2.IsError || r2.NeedsInput() {
			b.Fatalf("retry: %v %+v", err, r2)
		}
		return time.Since(start)
	}
	var ds, d1, d2, h1, h2 []time.Duration
	for i := 0; b.Loop(); i++ {
		legs := []func(){
			func() { ds = append(ds, round(direct, direct, "confirm")) },
			func() { d1 = append(d1, round(c1, c1, "alpha_confirm")) },
			func() { d2 = append(d2, round(c1, c2, "alpha_confirm")) },
			func() { h1 = append(h1, round(c1, c1, "ask_elicit")) },
			func() { h2 = append(h2, round(c1, c2, "ask_elicit")) },
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
	b.ReportMetric(p50(h1), "held-edge-p50-µs")
	b.ReportMetric(p50(h2), "held-other-edge-p50-µs")
	b.ReportMetric(p50(h2)/p50(h1), "held-other-edge-ratio")
}
