package edge

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// rawInitialize opens a 2025-11-25 session on endpoint as user with plain
// HTTP and returns its id.
func rawInitialize(tb testing.TB, endpoint, user string) string {
	tb.Helper()
	return initializeAt(tb, endpoint, user, "2025-11-25")
}

func quantileMicros(d []time.Duration, p float64) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[min(len(s)-1, int(p*float64(len(s))))].Microseconds())
}

// BenchmarkFirstRequestOnNewEdge measures the first request of a session
// on an edge that did not create it (rehydration included) against a
// request on the edge that holds it.
func BenchmarkFirstRequestOnNewEdge(b *testing.B) {
	f := newSharedFleet(b)
	edgeA := startRecordEdge(b, f, "a", nil, nil)
	edgeB := startRecordEdge(b, f, "b", nil, nil)
	var normal, moved []time.Duration
	for b.Loop() {
		b.StopTimer()
		sid := rawInitialize(b, edgeA.MCPURL(), "alice")
		b.StartTimer()
		start := time.Now()
		if code := rawRequest(b, http.MethodPost, edgeA.MCPURL(), sid, "alice", pingBody()); code != http.StatusOK {
			b.Fatalf("ping on A: %d", code)
		}
		normal = append(normal, time.Since(start))
		start = time.Now()
		if code := rawRequest(b, http.MethodPost, edgeB.MCPURL(), sid, "alice", pingBody()); code != http.StatusOK {
			b.Fatalf("first ping on B: %d", code)
		}
		moved = append(moved, time.Since(start))
	}
	b.ReportMetric(quantileMicros(normal, 0.5), "held-p50-µs")
	b.ReportMetric(quantileMicros(normal, 0.99), "held-p99-µs")
	b.ReportMetric(quantileMicros(moved, 0.5), "moved-p50-µs")
	b.ReportMetric(quantileMicros(moved, 0.99), "moved-p99-µs")
}

// BenchmarkRecordWrites measures the KV writes of one session under
// steady traffic at the default idle timeout (30m, touches every 3m,
// changed evidence flushed at most every 2s): calls only, and a
// tools/list with every request.
func BenchmarkRecordWrites(b *testing.B) {
	for _, tc := range []struct{ name, body string }{
		{"ping", ""},
		{"tools-list", `{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			f := newSharedFleet(b)
			e := startRecordEdge(b, f, "a", nil, func(o *Options) { o.Records.FlushEvery = 0 })
			sid := rawInitialize(b, e.MCPURL(), "alice")
			before := metricValue(b, e.Edge, "fleetgate_edge_session_records_written_total")
			start := time.Now()
			for b.Loop() {
				body := pingBody()
				if tc.body != "" {
					body = strings.Replace(body, `"ping"`, `"tools/list"`, 1)
				}
				if code := rawRequest(b, http.MethodPost, e.MCPURL(), sid, "alice", body); code != http.StatusOK {
					b.Fatalf("request: %d", code)
				}
			}
			e.recs.Flush()
			writes := metricValue(b, e.Edge, "fleetgate_edge_session_records_written_total") - before
			b.ReportMetric(writes/time.Since(start).Minutes(), "writes/session/min")
		})
	}
}
