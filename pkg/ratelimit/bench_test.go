package ratelimit_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/ratelimit"
)

// benchLimits never refuse at the benchmarks' pace (1µs of injected time
// per operation), so the allowed path is measured.
var benchLimits = ratelimit.Limits{
	Identity: &ratelimit.IdentityLimits{RequestsPerSecond: 1e6, Burst: 1000, ConcurrentCalls: 100},
	Tools: []ratelimit.ToolRule{
		{Name: "shared", Tools: []string{"search_*"}, RequestsPerSecond: 1e6, Burst: 1000},
		{Name: "mine", Tools: []string{"tool_*"}, RequestsPerSecond: 1e6, Burst: 1000, PerIdentity: true},
	},
}

func benchIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "https://issuer.example/ user-" + strconv.Itoa(i)
	}
	return ids
}

func BenchmarkRequest(b *testing.B) {
	for _, n := range []int{1, 10_000} {
		b.Run("identities="+strconv.Itoa(n), func(b *testing.B) {
			lim := mustNew(b, benchLimits, nil)
			ids := benchIDs(n)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if !lim.Request(t0.Add(time.Duration(i)*time.Microsecond), ids[i%n]).Allowed {
					b.Fatal("refused")
				}
				i++
			}
		})
	}
}

func BenchmarkCall(b *testing.B) {
	for _, tool := range []string{"search_docs", "tool_x", "unlimited"} {
		for _, n := range []int{1, 10_000} {
			b.Run(tool+"/identities="+strconv.Itoa(n), func(b *testing.B) {
				lim := mustNew(b, benchLimits, nil)
				ids := benchIDs(n)
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					d, release := lim.Call(t0.Add(time.Duration(i)*time.Microsecond), ids[i%n], tool)
					if !d.Allowed {
						b.Fatal("refused")
					}
					release()
					i++
				}
			})
		}
	}
}

func BenchmarkRequestParallel(b *testing.B) {
	lim := mustNew(b, benchLimits, nil)
	ids := benchIDs(10_000)
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			lim.Request(t0.Add(time.Duration(i)*time.Microsecond), ids[i%len(ids)])
			i++
		}
	})
}

// BenchmarkNoLimits: a Request and a Call of a nil Limiter, and of one
// whose limits are empty (what an edge holds with no rate_limits).
func BenchmarkNoLimits(b *testing.B) {
	for name, lim := range map[string]*ratelimit.Limiter{"nil": nil, "empty": mustNew(b, ratelimit.Limits{}, nil)} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				lim.Request(t0, "a")
				_, r := lim.Call(t0, "a", "t")
				r()
			}
		})
	}
}
