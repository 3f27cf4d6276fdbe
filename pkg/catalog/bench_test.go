package catalog

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// benchSources is a group of nBackends backends of nTools tools each, with
// a schema of a few properties per tool (about 600 bytes a definition).
func benchSources(nBackends, nTools int) []Source {
	sources := make([]Source, nBackends)
	for b := range sources {
		tools := make([]json.RawMessage, nTools)
		for i := range tools {
			tools[i] = json.RawMessage(fmt.Sprintf(`{"name":"tool_%d","title":"Tool %d","description":"Does thing %d of backend %d, with a sentence or two of prose as real servers write.",
				"inputSchema":{"type":"object","properties":{"query":{"type":"string","description":"what to look for"},"limit":{"type":"integer","minimum":1,"maximum":100},
				"filters":{"type":"object","properties":{"kind":{"type":"string","enum":["a","b","c"]}}}},"required":["query"]},
				"annotations":{"readOnlyHint":true,"openWorldHint":false},"_meta":{"backend":%d}}`, i, i, i, b, b))
		}
		sources[b] = Source{Backend: fmt.Sprintf("backend-%03d", b), Tools: tools}
	}
	return sources
}

// BenchmarkAggregate measures building the View (which includes its
// digest) of 200 backends x 50 tools.
func BenchmarkAggregate(b *testing.B) {
	sources := benchSources(200, 50)
	b.ReportAllocs()
	for b.Loop() {
		v := Aggregate(sources, nil)
		if len(v.Tools) != 200*50 {
			b.Fatalf("tools = %d", len(v.Tools))
		}
	}
}

// BenchmarkDigest measures Digest over the 10000 exposed definitions.
func BenchmarkDigest(b *testing.B) {
	v := Aggregate(benchSources(200, 50), nil)
	defs := make([]json.RawMessage, len(v.Tools))
	for i, e := range v.Tools {
		defs[i] = e.Def
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Digest(defs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDiff measures comparing two 10000-tool Views that differ in one
// tool.
func BenchmarkDiff(b *testing.B) {
	sources := benchSources(200, 50)
	old := Aggregate(sources, nil)
	sources[7].Tools = append([]json.RawMessage(nil), sources[7].Tools...)
	sources[7].Tools[3] = json.RawMessage(`{"name":"tool_3","inputSchema":{"type":"object"}}`)
	next := Aggregate(sources, nil)
	b.ReportAllocs()
	for b.Loop() {
		if d := Diff(old, next); len(d.Changed) != 1 {
			b.Fatalf("delta = %+v", d)
		}
	}
}

// BenchmarkAggregateWithPrevious measures the next generation of the same
// group when one backend's tools changed and the previous View is given.
func BenchmarkAggregateWithPrevious(b *testing.B) {
	sources := benchSources(200, 50)
	prev := Aggregate(sources, nil)
	changed := benchSources(1, 50)[0].Tools
	for i := range changed {
		changed[i] = json.RawMessage(strings.Replace(string(changed[i]), "Does thing", "Now does thing", 1))
	}
	sources[42].Tools = changed
	opts := &AggregateOptions{Previous: prev}
	b.ReportAllocs()
	for b.Loop() {
		v := Aggregate(sources, opts)
		if len(v.Tools) != 200*50 {
			b.Fatalf("tools = %d", len(v.Tools))
		}
	}
}
