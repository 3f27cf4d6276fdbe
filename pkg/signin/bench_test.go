package signin

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/tokenexchange"
)

// BenchmarkSignInMemory reports the heap an edge's Manager holds per
// signed-in identity (its sealed record, a copy of the bucket's, and an
// access token of the size of a JWT), over 1,000 identities stored
// through the bucket on embedded NATS; the per-caller backend session of
// an identity is the pool's (BenchmarkPerCallerMemory in
// pkg/edge/backend).
//
//	go test -run '^$' -bench 'SignInMemory' -benchtime 1x ./pkg/signin/
func BenchmarkSignInMemory(b *testing.B) {
	const n = 1000
	access := tokenexchange.Token{Value: credential.NewSecret(strings.Repeat("a", 900)), Lifetime: time.Hour}
	for range b.N {
		b.StopTimer()
		f := newFleet(b, nil)
		m := f.a
		ctx := context.Background()
		r := func(i int) Record {
			return Record{Identity: fmt.Sprintf("https://idp.example user-%d", i), Backend: "docs", Refresh: strings.Repeat("r", 43),
				ClientID: "dcr-1", TokenEndpoint: "https://as.example/token", Resource: "https://docs.example/mcp"}
		}
		if err := m.store(ctx, r(0), access, time.Now(), 0); err != nil {
			b.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		b.StartTimer()
		for i := 1; i < n; i++ {
			if err := m.store(ctx, r(i), access, time.Now(), 0); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		f.waitFor(b, func() bool { held, _ := f.b.Stats(); return held == n }) // the other edge's watch caught up
		f.cancel()
		f.done.Wait() // the watches end: their buffers are not counted
		runtime.GC()
		runtime.ReadMemStats(&after)
		if held, _ := m.Stats(); held != n {
			b.Fatalf("%d held, want %d", held, n)
		}
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(n-1), "bytes/identity")
		runtime.KeepAlive(m)
	}
}
