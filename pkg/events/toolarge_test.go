package events

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fleetgate/fleetgate/pkg/natsnode"
	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

func TestKeepWithdrawn(t *testing.T) {
	at := time.Now()
	s := NewState()
	for i, ev := range []*eventspb.Event{
		NewBackendAdded(at, "g", "a", BackendConfig{URL: "http://a"}),
		NewBackendAdded(at, "g", "b", BackendConfig{URL: "http://b"}),
	} {
		ev.Generation = uint64(i + 1)
		s, _ = Apply(s, ev)
	}
	big, _ := NewCatalogChanged(at, "g", "a", &Catalog{Tools: []json.RawMessage{json.RawMessage(`{"name":"t"}`)}, Digest: "d"})
	subs := tooLargeReplacement(big, "healthy", 2<<20, 1<<20)
	if len(subs) != 2 {
		t.Fatalf("%d replacements, want 2", len(subs))
	}
	subs[0].Generation = 3
	s, err := Apply(s, subs[0])
	if err != nil {
		t.Fatal(err)
	}
	up := NewHealthChanged(at, "g", "a", "healthy", "healthy", true, "probe succeeded")
	upB := NewHealthChanged(at, "g", "b", "unknown", "healthy", true, "probe succeeded")
	down := NewHealthChanged(at, "g", "a", "healthy", "unhealthy", false, "probe failed")
	for _, tc := range []struct {
		name   string
		ev     *eventspb.Event
		adv    bool
		reason string
	}{
		{"advertise the withdrawn backend", up, false, ReasonTooLarge},
		{"another backend", upB, true, "probe succeeded"},
		{"withdraw it anyway", down, false, "probe failed"},
	} {
		got := keepWithdrawn(s, tc.ev).GetHealthChanged()
		if got.Advertisable != tc.adv || !strings.HasPrefix(got.Reason, tc.reason) {
			t.Errorf("%s: advertisable %v reason %q; want %v %q", tc.name, got.Advertisable, got.Reason, tc.adv, tc.reason)
		}
	}
	if !up.GetHealthChanged().Advertisable {
		t.Error("keepWithdrawn modified its input")
	}
	// A catalog that fits lifts it.
	fits, _ := NewCatalogChanged(at, "g", "a", &Catalog{Tools: []json.RawMessage{json.RawMessage(`{"name":"t"}`)}, Digest: "d"})
	fits.Generation = 4
	s, _ = Apply(s, fits)
	if !keepWithdrawn(s, up).GetHealthChanged().Advertisable {
		t.Error("a fitting catalog did not lift the withdrawal")
	}
	if tooLargeReplacement(NewBackendRemoved(at, "g", "a", BackendConfig{}), "", 1, 1) != nil {
		t.Error("a non-catalog event has replacements")
	}
}

// On a server with a 64 KiB max_payload, the relay replaces a catalog too
// large for it, counts it, and goes on with the events behind it.
func TestRelayCatalogOverMaxPayload(t *testing.T) {
	node, err := natsnode.Start(&natsnode.Options{DataDir: t.TempDir(), Listen: "127.0.0.1:0", MaxPayload: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Shutdown)
	js := natstest.JetStream(t, node.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lg, err := OpenLog(ctx, js, nil)
	if err != nil {
		t.Fatal(err)
	}
	ob, err := OpenOutbox(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	w, err := NewWriter(ctx, lg, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if mb := w.MaxEventBytes(); mb != 64<<10-headerAllowance {
		t.Fatalf("MaxEventBytes = %d", mb)
	}
	m := NewMetrics(prometheus.NewRegistry())
	r := NewRelay(ob, w, &RelayOptions{Metrics: m})
	rctx, rcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()
	defer func() { rcancel(); <-done }()

	at := time.Now()
	big, err := NewCatalogChanged(at, "g", "a", &Catalog{Tools: []json.RawMessage{json.RawMessage(fmt.Sprintf(`{"name":"t","description":%q}`, noise(200<<10)))}, Digest: "d"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ob.Append(
		NewBackendAdded(at, "g", "a", BackendConfig{URL: "http://a"}),
		NewBackendAdded(at, "g", "b", BackendConfig{URL: "http://b"}),
		big,
		NewHealthChanged(at, "g", "a", "unknown", "healthy", true, "probe succeeded"),
		NewHealthChanged(at, "g", "b", "unknown", "healthy", true, "probe succeeded"),
	); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := r.State()
		if b := s.Backend("g", "b"); b != nil && b.Advertisable {
			a := s.Backend("g", "a")
			if a.Advertisable || !strings.HasPrefix(a.Reason, ReasonTooLarge) || len(a.Catalog.Tools) != 0 {
				t.Fatalf("a = %+v, want withdrawn for its size", a)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b never advertised; state %+v, outbox depth %d", s, ob.Depth())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := testutil.ToFloat64(m.tooLarge.WithLabelValues("catalog_changed")); n != 1 {
		t.Fatalf("too-large counter = %v, want 1", n)
	}
	if ob.Depth() != 0 {
		t.Fatalf("outbox depth %d, want 0", ob.Depth())
	}
}
