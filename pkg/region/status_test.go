package region

import (
	"context"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/natsnode"
)

// TestRegionStatuses runs one region's node alone: its own log, a mirror
// of b whose origin domain is unreachable (no link), and a region whose
// stream does not exist here.
func TestRegionStatuses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := natsnode.Start(&natsnode.Options{Name: "a", DataDir: t.TempDir(), Listen: "127.0.0.1:0", Auth: true,
		Domain: Domain("a"), EdgeLogs: EdgeLogs([]string{"a", "b"})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Shutdown)
	_, js := connect(t, n.ClientURL(), n.ControllerAccess())
	log, err := events.OpenLog(ctx, js, LogOptions("a", 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := EnsureMirrors(ctx, js, "a", []string{"a", "b"}, nil); err != nil {
		t.Fatal(err)
	}
	w, err := events.NewWriter(ctx, log, "controller-a")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i, name := range []string{"alpha", "beta"} {
		if _, err := w.Publish(ctx, events.NewBackendAdded(now, "shared", name, cfg(name)), "a-"+name); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}

	got := Statuses(ctx, js, "a", []string{"a", "b", "c"})
	if len(got) != 3 {
		t.Fatalf("statuses: %d, want 3: %+v", len(got), got)
	}
	a, b, c := got[0], got[1], got[2]
	if a.Region != "a" || !a.Local || a.Head != 2 || a.Err != "" || a.MirrorLag != 0 || a.MirrorActive != 0 {
		t.Errorf("local a: %+v, want local at head 2", a)
	}
	if b.Region != "b" || b.Local || b.Head != 0 || b.Err != "" {
		t.Errorf("mirror b: %+v, want a readable mirror at head 0", b)
	}
	// The origin was never reached: the server reports no activity
	// (Active -1) or an error of the mirror.
	if b.MirrorActive >= 0 && b.MirrorError == "" {
		t.Errorf("mirror b: %+v, want inactive (-1) or an error", b)
	}
	// Its lag is unknown, not 0: the origin's head cannot be read.
	if b.Lag != nil || b.OriginError == "" {
		t.Errorf("mirror b: lag %v, origin error %q: want no lag and why", b.Lag, b.OriginError)
	}
	t.Logf("mirror of an unreachable origin: server's lag %d, active %v, error %q, origin %q", b.MirrorLag, b.MirrorActive, b.MirrorError, b.OriginError)
	if c.Region != "c" || c.Err == "" {
		t.Errorf("missing c: %+v, want an error", c)
	}

	// An ended context reads nothing and says so for every region.
	done, stop := context.WithCancel(ctx)
	stop()
	for _, s := range Statuses(done, js, "a", []string{"a", "b"}) {
		if s.Err == "" {
			t.Errorf("ended context: %+v, want an error", s)
		}
	}
	if bad := Statuses(ctx, js, "a", []string{"A"}); len(bad) != 1 || bad[0].Err == "" {
		t.Errorf("bad name: %+v, want an error", bad)
	}
}
