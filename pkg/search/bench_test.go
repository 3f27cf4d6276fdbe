package search

import (
	"runtime"
	"slices"
	"testing"
	"time"
)

const benchDocs, benchSeed = 10_000, 42

// BenchmarkSearch1k and BenchmarkSearch10k measure one Search (limit 8)
// over 1,000 and 10,000 synthetic tools, cycling through the queries of
// the evaluation corpus, and report the median and 99th percentile latency
// of single queries.
func BenchmarkSearch1k(b *testing.B)  { benchmarkSearch(b, 1_000) }
func BenchmarkSearch10k(b *testing.B) { benchmarkSearch(b, benchDocs) }

func benchmarkSearch(b *testing.B, n int) {
	ix := Build(syntheticDocs(b, n, benchSeed), nil)
	_, qs := loadCorpus(b, evalCorpus)
	durs := make([]time.Duration, 0, 1024)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := qs[i%len(qs)].Query
		start := time.Now()
		ix.Search(q, DefaultLimit)
		durs = append(durs, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(durs)
	pct := func(p float64) float64 { return float64(durs[int(p*float64(len(durs)-1))].Nanoseconds()) }
	b.ReportMetric(pct(0.50), "p50-ns")
	b.ReportMetric(pct(0.99), "p99-ns")
}

// BenchmarkBuild10k measures Build over 10,000 synthetic tools and reports
// the heap the finished index retains ("index-bytes": live heap after GC
// with the index, minus before). Per-search scratch space, allocated lazily
// by Search, is not included.
func BenchmarkBuild10k(b *testing.B) {
	docs := syntheticDocs(b, benchDocs, benchSeed)
	defaultLexicon() // loaded once per process, not per build
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ix := Build(docs, nil)
	runtime.GC()
	runtime.ReadMemStats(&after)
	retained := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	runtime.KeepAlive(ix)

	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Build(docs, nil)
	}
	b.StopTimer()
	b.ReportMetric(retained, "index-bytes")
	b.ReportMetric(retained/float64(len(docs)), "bytes/tool")
}
