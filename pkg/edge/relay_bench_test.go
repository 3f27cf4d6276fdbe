package edge

import (
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkRelay measures what the edge adds to what a backend sends its
// client during a call, directly and through the edge, alternately, with
// the same backend and the same kind of client: the age of a progress
// notification when the client's handler gets it (from the backend's
// send), and the round trip of a sampling request as the backend sees it
// (from its request to the client's answer). It reports p50 and p99 of
// both legs and the added time at p50.
func BenchmarkRelay(b *testing.B) {
	f := newFleet(b)
	url := startAskingBackendWith(b, f, "ask", &atomic.Value{})
	e := startEdge(b, f, nil)
	eventually(b, 10*time.Second, "tools served", func() bool { return len(e.current().Catalog.Tools) == 8 })
	type leg struct {
		c                *askedClient
		tool, sample     string
		progress, sampls []time.Duration
	}
	legs := []*leg{
		{c: connectAsked(b, url, true), tool: "tick", sample: "sampletime"},
		{c: connectAsked(b, e.MCPURL(), true), tool: "ask_tick", sample: "ask_sampletime"},
	}
	for _, l := range legs {
		l.c.call(b, l.tool, mcp.Meta{"progressToken": "warm"})
	}
	seen := func(l *leg) int { p, _ := l.c.heard(); return len(p) }
	for b.Loop() {
		for _, l := range legs {
			n := seen(l)
			l.c.call(b, l.tool, mcp.Meta{"progressToken": "t"})
			eventually(b, 5*time.Second, "the progress notification", func() bool { return seen(l) > n })
			res := l.c.call(b, l.sample, nil)
			ns, err := strconv.ParseInt(text(res), 10, 64)
			if err != nil {
				b.Fatalf("sampletime: %q", text(res))
			}
			l.sampls = append(l.sampls, time.Duration(ns))
		}
	}
	for _, l := range legs {
		l.c.mu.Lock()
		l.progress = append(l.progress, l.c.messages[1:]...) // the first is the warm-up's
		l.c.mu.Unlock()
	}
	report := func(name string, d []time.Duration) float64 {
		slices.Sort(d)
		p50 := float64(percentile(d, 0.5).Microseconds())
		b.ReportMetric(p50, name+"-p50-µs")
		b.ReportMetric(float64(percentile(d, 0.99).Microseconds()), name+"-p99-µs")
		return p50
	}
	pd, pe := report("progress-direct", legs[0].progress), report("progress-edge", legs[1].progress)
	sd, se := report("sampling-direct", legs[0].sampls), report("sampling-edge", legs[1].sampls)
	b.ReportMetric(pe-pd, "progress-added-p50-µs")
	b.ReportMetric(se-sd, "sampling-added-p50-µs")
}
