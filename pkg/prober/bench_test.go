package prober

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/health"
)

// benchSession connects a Prober to a local demo backend and returns the
// live session; the backend runs in this process, so the figures include
// its side of each exchange.
func benchSession(b *testing.B, o *demobackend.Options, transport string) (*Prober, *session) {
	be := startBackend(b, "bench", o)
	tr := &http.Transport{}
	b.Cleanup(tr.CloseIdleConnections)
	p := New(target(be, transport), Sink{}, &Options{HTTPClient: &http.Client{Transport: tr},
		Policy: health.Policy{Interval: time.Hour, Timeout: 10 * time.Second}})
	s, err := p.connect(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.close)
	return p, s
}

// BenchmarkProbe measures one ping probe (round trip plus reporting) over
// a persistent session.
func BenchmarkProbe(b *testing.B) {
	for _, transport := range []string{TransportStreamable, TransportSSE} {
		b.Run(transport, func(b *testing.B) {
			p, s := benchSession(b, &demobackend.Options{SSE: transport == TransportSSE}, transport)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if ok, _ := p.probe(ctx, s); !ok {
					b.Fatal("probe failed")
				}
			}
		})
	}
}

// BenchmarkDiscover measures a complete listing of 2,500 tools in pages of
// 100 (plus one resource and one prompt), up to the Catalog.
func BenchmarkDiscover(b *testing.B) {
	p, s := benchSession(b, &demobackend.Options{ExtraTools: 2498, PageSize: 100}, "")
	b.ReportAllocs()
	for b.Loop() {
		c, err := p.list(s)
		if err != nil || len(c.Tools) != 2500 {
			b.Fatalf("list: %d tools, %v", len(c.Tools), err)
		}
	}
}
