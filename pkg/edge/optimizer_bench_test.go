package edge

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/edge/calls"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/events"
)

const benchTools = 10_000

// findArgs are the find_tool arguments of the synthetic queries.
func findArgs() []json.RawMessage {
	out := make([]json.RawMessage, len(synthQueries))
	for i, q := range synthQueries {
		out[i], _ = json.Marshal(map[string]any{"query": q})
	}
	return out
}

// BenchmarkFindToolHandler10k measures find_tool at the handler level over
// a 10,000-tool view: argument validation, index search (limit 8) and the
// marshalled result, i.e. all the edge does for a call besides JSON-RPC
// and HTTP. It reports the median and 99th percentile of single calls and
// the mean result size.
func BenchmarkFindToolHandler10k(b *testing.B) {
	sv := servedOf(b, 1, synthCatalogs(benchTools, 42), nil)
	sv.Index = view.NewIndex(sv, nil, nil)
	pl := calls.New(calls.Options{Optimizer: true})
	args := findArgs()
	var durs []time.Duration
	var bytes int
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		start := time.Now()
		res := pl.FindTool(sv, args[i%len(args)], "")
		durs = append(durs, time.Since(start))
		if res.IsError {
			b.Fatal(text(res))
		}
		bytes += len(text(res))
		i++
	}
	slices.Sort(durs)
	b.ReportMetric(float64(percentile(durs, 0.5).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(durs, 0.99).Microseconds()), "p99-µs")
	b.ReportMetric(float64(bytes)/float64(len(durs)), "result-bytes")
}

// BenchmarkToolIndexBuild10k measures building the tool index of a
// 10,000-tool view, from nothing and after a view that shares all but one
// tool (token estimates reused), and reports the heap the index retains
// beyond the served view it indexes.
func BenchmarkToolIndexBuild10k(b *testing.B) {
	cats := synthCatalogs(benchTools, 42)
	sv := servedOf(b, 1, cats, nil)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ti := view.NewIndex(sv, nil, nil)
	runtime.GC()
	runtime.ReadMemStats(&after)
	retained := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	runtime.KeepAlive(ti)
	b.Run("fresh", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			view.NewIndex(sv, nil, nil)
		}
		b.ReportMetric(retained/(1<<20), "index-MiB")
	})
	b.Run("one-changed", func(b *testing.B) {
		cats["github"] = slices.Clone(cats["github"])
		cats["github"][0] = toolDef("list_issue", "List issues, changed.")
		next := servedOf(b, 2, cats, sv)
		b.ReportAllocs()
		for b.Loop() {
			view.NewIndex(next, nil, ti)
		}
	})
}

// publishSynth publishes a synthetic catalog of n tools as advertisable
// backends (their URLs lead nowhere: nothing is called) and returns the
// last generation.
func publishSynth(f *fleet, n int) uint64 {
	var last uint64
	for name, tools := range synthCatalogs(n, 42) {
		cfg := events.BackendConfig{URL: "http://127.0.0.1:1/mcp", Transport: "streamable-http"}
		f.publish(events.NewBackendAdded(time.Now(), "default", name, cfg))
		d, err := catalog.Digest(tools)
		if err != nil {
			f.t.Fatal(err)
		}
		f.catalog("default", name, &events.Catalog{Tools: tools, Digest: d})
		last = f.health("default", name, true)
	}
	return last
}

// BenchmarkFindToolMCP10k measures find_tool end to end: a go-sdk client
// (protocol 2025-11-25) calling it over streamable HTTP on loopback, with
// a 10,000-tool view.
func BenchmarkFindToolMCP10k(b *testing.B) {
	f := newFleet(b)
	publishSynth(f, benchTools)
	e := startEdge(b, f, &Options{Mode: ModeOptimizer})
	eventually(b, time.Minute, "10,000 tools indexed", func() bool { return len(e.current().ToolList) == benchTools })
	c := connect(b, e.MCPURL(), "2025-11-25")
	ctx := context.Background()
	var durs []time.Duration
	i := 0
	for b.Loop() {
		start := time.Now()
		res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: FindToolName, Arguments: map[string]any{"query": synthQueries[i%len(synthQueries)]}})
		durs = append(durs, time.Since(start))
		if err != nil || res.IsError {
			b.Fatalf("find_tool: %v %+v", err, res)
		}
		i++
	}
	slices.Sort(durs)
	b.ReportMetric(float64(percentile(durs, 0.5).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(durs, 0.99).Microseconds()), "p99-µs")
}

// BenchmarkOptimizerSessionMemory reports the edge's heap and stack growth
// per idle optimizer session (N sessions, FLEETGATE_BENCH_SESSIONS,
// default 1000, held by a child process) with a 100-tool and a 10,000-tool
// view: sessions share the view's index, so the figure does not depend on
// the view's size. Run with -benchtime=1x.
func BenchmarkOptimizerSessionMemory(b *testing.B) {
	n := benchSessions(b)
	for _, tools := range []int{100, benchTools} {
		b.Run(fmt.Sprintf("tools=%d", tools), func(b *testing.B) {
			f := newFleet(b)
			publishSynth(f, tools)
			e := startEdge(b, f, &Options{Mode: ModeOptimizer})
			eventually(b, time.Minute, "view indexed", func() bool { return len(e.current().ToolList) == tools })
			reportSessionMemory(b, e, n)
		})
	}
}
