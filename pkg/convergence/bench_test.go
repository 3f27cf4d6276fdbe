package convergence

import (
	"encoding/json"
	"fmt"
	"testing"
)

// BenchmarkListPageTraversal records a 10-page traversal of 100 tools with a
// trivial digest, measuring the recorder's own cost (accumulation, cursor
// chain), not the digest's.
func BenchmarkListPageTraversal(b *testing.B) {
	pages := make([][]json.RawMessage, 10)
	for p := range pages {
		for i := range 10 {
			pages[p] = append(pages[p], tool(fmt.Sprintf("backend__tool%02d%02d", p, i)))
		}
	}
	digest := func(tools []json.RawMessage) (string, error) { return fmt.Sprint(len(tools)), nil }
	b.ReportAllocs()
	for b.Loop() {
		var r Record
		for p, tools := range pages {
			cursor, next := "", ""
			if p > 0 {
				cursor = fmt.Sprint(p)
			}
			if p < len(pages)-1 {
				next = fmt.Sprint(p + 1)
			}
			if err := r.ListPage(base, cursor, tools, next, digest); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// convergedRecord is a record of one page that served the current digest.
func convergedRecord(b *testing.B) Record {
	r := Record{ClientListChanged: true, ServerListChanged: true}
	r.SetCurrent("sha256:0123456789abcdef0123456789abcdef", 2)
	r.Signal(base, 2)
	if err := r.ListPage(base, "", []json.RawMessage{tool("a")}, "", func([]json.RawMessage) (string, error) {
		return "sha256:0123456789abcdef0123456789abcdef", nil
	}); err != nil {
		b.Fatal(err)
	}
	return r
}

func BenchmarkExplain(b *testing.B) {
	r := convergedRecord(b)
	b.ReportAllocs()
	for b.Loop() {
		if v, _ := Explain(r); v != Converged {
			b.Fatal(v)
		}
	}
}

// BenchmarkVerdict is the verdict alone, as the resync's fan-out asks it of
// every session (GenerationLag): no reason is built.
func BenchmarkVerdict(b *testing.B) {
	r := convergedRecord(b)
	b.ReportAllocs()
	for b.Loop() {
		if v := Verdict(r); v != Converged {
			b.Fatal(v)
		}
	}
}
