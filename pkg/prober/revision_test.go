package prober

import (
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/health"
)

// TestDiscoveryRevision: a catalog says which stateless revision its
// backend answered server/discover with: a backend serving the go-sdk's
// stateless handler to clients of 2026-07-28 speaks it; the go-sdk's
// stateful and SSE handlers, and a backend that answers server/discover
// with an error, speak none.
func TestDiscoveryRevision(t *testing.T) {
	for _, tc := range []struct {
		name      string
		transport string
		stateless bool
		want      string
	}{
		{"go-sdk stateless", TransportStreamable, true, statelessRevision},
		{"go-sdk stateful", TransportStreamable, false, ""},
		{"go-sdk sse", TransportSSE, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := startBackend(t, "alpha", &demobackend.Options{SSE: tc.transport == TransportSSE, NewProtocol: tc.stateless})
			rec := newRecorder()
			run(t, target(b, tc.transport), rec.sink(), &Options{Policy: health.Policy{Interval: time.Hour}})
			if got := rec.waitCatalog(t, 0, "first", anyCatalog).v.ProtocolVersion; got != tc.want {
				t.Errorf("protocol version %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("no server/discover", func(t *testing.T) {
		rec := newRecorder()
		run(t, startRaw(t, &rawBackend{caps: `{"tools":{}}`, lists: map[string]string{"tools/list ": `{"tools":[]}`}}),
			rec.sink(), &Options{Policy: health.Policy{Interval: time.Hour}})
		if got := rec.waitCatalog(t, 0, "first", anyCatalog).v.ProtocolVersion; got != "" {
			t.Errorf("protocol version %q, want none", got)
		}
	})
}
