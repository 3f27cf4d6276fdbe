package test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/pkg/config"
	"github.com/fleetgate/fleetgate/pkg/controller"
	"github.com/fleetgate/fleetgate/pkg/edge"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/natsnode"
	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
	"github.com/fleetgate/fleetgate/pkg/region"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// startRegionNodes starts region a's and region b's NATS, each its own
// JetStream domain, b joined to a by a leaf link (through a proxy never
// cut); the tests make the mirrors.
func startRegionNodes(t *testing.T) (a, b *natsnode.Node) {
	t.Helper()
	return startLinkedRegions(t, natstest.NewLinkProxy(t))
}

// startRegionController is startController on region r's log; with
// regions (every region of the fleet) its group views merge their logs.
func startRegionController(t *testing.T, natsURL, r, yaml string, regions ...string) *ctl {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	fleet, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	js := jsConnect(t, natsURL)
	ctx, cancel := context.WithCancel(context.Background())
	lg, err := events.OpenLog(ctx, js, region.LogOptions(r, 0))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	c, err := controller.New(controller.Options{ID: "controller-" + r, Fleet: fleet, ConfigPath: path, JetStream: js, Log: lg,
		OutboxDir: filepath.Join(dir, "outbox"), LeaseTTL: time.Second, Registerer: reg, Regions: regions})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: c.Handler(reg)}
	go srv.Serve(ln)
	x := &ctl{c: c, admin: "http://" + ln.Addr().String(), cancel: cancel, done: make(chan error, 1), path: path}
	go func() { x.done <- c.Run(ctx) }()
	t.Cleanup(func() {
		x.stop(t)
		srv.Close()
	})
	return x
}

// startRegionEdge is startEdge following region r's log in the NATS at
// natsURL (its own log, or the local mirror of another region's).
func startRegionEdge(t *testing.T, natsURL, r string) *edge.Edge {
	t.Helper()
	return startEdgeOn(t, natsURL, region.LogOptions(r, 0), edge.Options{Coalesce: time.Millisecond})
}

// followRegionLog is followLog on region r's log.
func followRegionLog(t *testing.T, natsURL, r string) *eventLog {
	t.Helper()
	js := jsConnect(t, natsURL)
	actx, acancel := context.WithTimeout(context.Background(), 30*time.Second)
	lg, err := events.AttachLog(actx, js, region.LogOptions(r, 0))
	acancel()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	el := &eventLog{}
	el.r = events.NewReader(lg, &events.ReaderOptions{OnEvent: func(ev *eventspb.Event, _ *events.State) {
		el.mu.Lock()
		el.evs = append(el.evs, ev)
		el.at = append(el.at, time.Now())
		el.mu.Unlock()
	}})
	done := make(chan struct{})
	go func() { defer close(done); _ = el.r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return el
}

// TestRegionBackendChangeReachesSessionInB: region a's controller probes
// its backends; an edge connected only to region b's NATS serves a's
// group from b's mirror of a's log. A backend lost and recovered in a
// reaches a session on b's edge as list_changed, every time; the time from
// the event in a's log to the notification on b's session is reported.
func TestRegionBackendChangeReachesSessionInB(t *testing.T) {
	a, b := startRegionNodes(t)
	jsB := jsConnect(t, b.ClientURL())
	alpha := startBackend(t, "alpha", nil)
	beta := startBackend(t, "beta", nil)
	startRegionController(t, a.ClientURL(), "a", fleetYAML(100*time.Millisecond, 100*time.Millisecond, alpha, beta))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err := region.EnsureMirrors(ctx, jsB, "b", []string{"a", "b"}, nil)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	el := followRegionLog(t, a.ClientURL(), "a")
	el.waitEvent(t, 0, 20*time.Second, "beta advertised", healthOf("beta", true))
	e := startRegionEdge(t, b.ClientURL(), "a")
	notified := make(chan time.Time, 64)
	cl := &mcpClient{}
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e-region"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			cl.changed.Add(1)
			select {
			case notified <- time.Now():
			default:
			}
		},
	})
	cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
	cs, err := c.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: e.MCPURL()}, nil)
	ccancel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	cl.cs = cs
	eventually(t, 20*time.Second, "a's tools on b's edge", func() bool {
		names := cl.tools(t)
		return slices.Contains(names, "alpha_echo") && slices.Contains(names, "beta_echo")
	})
	const rounds = 25
	var lat []time.Duration
	for i := range rounds {
		for _, up := range []bool{false, true} {
			from := el.len()
			for len(notified) > 0 {
				<-notified
			}
			if up {
				if err := beta.Restart(); err != nil {
					t.Fatal(err)
				}
			} else {
				beta.Stop()
			}
			_, _, at := el.waitEvent(t, from, 20*time.Second, "beta's health in a", healthOf("beta", up))
			select {
			case got := <-notified:
				lat = append(lat, got.Sub(at))
			case <-time.After(20 * time.Second):
				t.Fatalf("round %d: no list_changed on b's session for beta up=%v", i, up)
			}
			// A late list_changed of the round before (a trailing one of a
			// coalesced burst) may be the one taken: the list follows.
			eventually(t, 10*time.Second, fmt.Sprintf("round %d: beta listed %v on b's edge", i, up), func() bool {
				return slices.Contains(cl.tools(t), "beta_echo") == up
			})
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	t.Logf("a's event -> list_changed on b's session: n=%d p50 %v p99 %v max %v (edge coalesce 1ms)",
		len(lat), lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])
}
