package test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/controller"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/natsnode"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// randomText is n bytes of random text: compression cannot bring a
// catalog made of it under the payload limit.
func randomText(n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(rand.Text())
	}
	return b.String()
}

// On a NATS with the default max_payload of 1 MiB, a backend whose catalog
// does not fit in one event is reported unadvertisable with the reason on
// that backend, and the other backend's events keep reaching the edge.
func TestRegionLimitsCatalogOverMaxPayload(t *testing.T) {
	node, err := natsnode.Start(&natsnode.Options{DataDir: t.TempDir(), Listen: "127.0.0.1:0", MaxPayload: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Shutdown)
	alpha := startBackend(t, "alpha", nil)
	huge := startBackend(t, "huge", nil)
	for i := range 300 { // 300 tools of 8 KiB random text: ~2.4 MB, ~1.5 MB compressed
		huge.AddTool(&mcp.Tool{Name: fmt.Sprintf("big_%03d", i), Description: randomText(8 << 10),
			InputSchema: map[string]any{"type": "object"}})
	}
	// Listing 2.4 MB of tools takes seconds under -race on a loaded
	// machine: the probe timeout is the interval (not half of it).
	yaml := strings.Replace(fleetYAML(4*time.Second, 100*time.Millisecond, alpha, huge), "timeout: 2s", "timeout: 4s", 1)
	c := startController(t, node.ClientURL(), "c1", yaml)
	el := followLog(t, node.ClientURL())
	defer func() {
		if t.Failed() {
			for _, ev := range el.all() {
				t.Logf("event %d %s %s %v", ev.Generation, events.Kind(ev), ev.Backend, ev.GetHealthChanged())
			}
		}
	}()
	_, ev, _ := el.waitEvent(t, 0, 90*time.Second, "huge reported too large", func(ev *eventspb.Event) bool {
		h := ev.GetHealthChanged()
		return ev.Backend == "huge" && h != nil && !h.Advertisable && strings.HasPrefix(h.Reason, events.ReasonTooLarge)
	})
	t.Logf("huge: %s", ev.GetHealthChanged().Reason)
	el.waitEvent(t, 0, 60*time.Second, "alpha advertised", healthOf("alpha", true))
	if b := el.r.State().Backend("default", "huge"); b == nil || b.Advertisable || !strings.Contains(b.Reason, "max_payload") ||
		(b.Catalog != nil && len(b.Catalog.Tools) != 0) {
		t.Fatalf("huge in the log's state = %+v, want unadvertisable with the max_payload reason and no tools", b)
	}
	// /v1/state says why too (not the probe's live "healthy").
	var st controller.StateJSON
	httpJSON(t, "GET", c.admin+"/v1/state", "", &st)
	for _, b := range st.Groups[0].Backends {
		if b.Name == "huge" && b.Advertisable {
			t.Fatalf("huge in /v1/state: %+v, want unadvertisable", b)
		}
	}

	e := startEdge(t, node.ClientURL())
	cl := connectMCP(t, e.MCPURL(), "")
	eventually(t, 10*time.Second, "alpha's tools on the edge", func() bool { return slices.Contains(cl.tools(t), "alpha_echo") })
	if names := cl.tools(t); slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "huge_") }) {
		t.Fatalf("the edge lists huge's tools: %v", names)
	}
	// A later health change of the other backend still reaches the edge.
	from := el.len()
	alpha.Stop()
	el.waitEvent(t, from, 60*time.Second, "alpha withdrawn", healthOf("alpha", false))
	eventually(t, 10*time.Second, "alpha's tools gone from the edge", func() bool { return !slices.Contains(cl.tools(t), "alpha_echo") })
}

// A full session bucket evicts its least recently written records and
// takes every new one, and the event log stays writable: the bucket has
// its own MaxBytes under the store's limit.
func TestRegionLimitsSessionBucketFull(t *testing.T) {
	node, err := natsnode.Start(&natsnode.Options{DataDir: t.TempDir(), Listen: "127.0.0.1:0", MaxStore: 300 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Shutdown)
	js := jsConnect(t, node.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lg, err := events.OpenLog(ctx, js, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := sessionstore.Provision(ctx, js, &sessionstore.ProvisionOptions{MaxBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	store, err := sessionstore.Open(ctx, js, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Three times what the 1 MiB bucket holds: every create succeeds.
	var first string
	created := 0
	for i := 0; i < 3*(1<<20)/2000; i++ {
		rec := &sessionstore.Record{ID: fmt.Sprintf("s%06d%s", i, rand.Text()), Group: "default",
			Mode: sessionstore.ModePassthrough, RegistryDigest: randomText(2000), CreatedAt: time.Now(), LastSeen: time.Now()}
		if _, err := store.Create(ctx, rec); err != nil {
			t.Fatalf("create session %d in the full bucket: %v", i, err)
		}
		if first == "" {
			first = rec.ID
		}
		created++
	}
	if _, _, err := store.Get(ctx, first); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Fatalf("the first record after three bucketfuls: %v, want it evicted", err)
	}
	w, err := events.NewWriter(ctx, lg, "c1")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		ev := events.NewHealthChanged(time.Now(), "default", "alpha", "unknown", "healthy", true, randomText(2000))
		if _, err := w.Publish(ctx, ev, fmt.Sprintf("ev-%d", i)); err != nil {
			t.Fatalf("event %d after the session bucket filled (%d sessions): %v", i, created, err)
		}
	}
	t.Logf("%d sessions created in a 1 MiB bucket (the oldest evicted); 200 events published after", created)
}
