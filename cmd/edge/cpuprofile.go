//go:build benchprofile

package main

import (
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"time"
)

// With the build tag benchprofile (never in a release build), the edge
// writes a CPU profile to FLEETGATE_BENCH_CPUPROFILE of the
// FLEETGATE_BENCH_CPUPROFILE_SECONDS (default 10) that follow the first
// FLEETGATE_BENCH_CPUPROFILE_AFTER seconds (default 0) of its life: a
// benchmark reads where a running edge process spends its time, e.g.
//
//	go build -tags benchprofile -o /tmp/edge-prof ./cmd/edge
//	FLEETGATE_BENCH_CPUPROFILE=/tmp/edge.prof FLEETGATE_BENCH_EDGE_BIN=/tmp/edge-prof \
//	  go test -run '^$' -bench '^BenchmarkCallOverheadProcess$' -benchtime 8000x ./test/
//
// The allocations of its whole life so far go to the same path plus
// ".allocs" at the window's end (every one of them with
// FLEETGATE_BENCH_MEMPROFILE_ALL=1, else a sample). Both are written only if the edge lives
// that long.
func init() {
	path := os.Getenv("FLEETGATE_BENCH_CPUPROFILE")
	if path == "" {
		return
	}
	if os.Getenv("FLEETGATE_BENCH_MEMPROFILE_ALL") == "1" {
		runtime.MemProfileRate = 1 // every allocation (slow: for counting, not timing)
	}
	seconds := func(name string, def int) time.Duration {
		n, err := strconv.Atoi(os.Getenv(name))
		if err != nil || n < 0 {
			n = def
		}
		return time.Duration(n) * time.Second
	}
	after, span := seconds("FLEETGATE_BENCH_CPUPROFILE_AFTER", 0), seconds("FLEETGATE_BENCH_CPUPROFILE_SECONDS", 10)
	time.AfterFunc(after, func() {
		f, err := os.Create(path)
		if err != nil {
			return
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return
		}
		time.AfterFunc(span, func() {
			pprof.StopCPUProfile()
			f.Close()
			if m, err := os.Create(path + ".allocs"); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(m, 0)
				m.Close()
			}
		})
	})
}
