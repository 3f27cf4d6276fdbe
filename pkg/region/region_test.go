package region

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/natsnode"
	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// twoRegions is region a and region b, each one embedded authenticated
// node with its own JetStream domain, b dialling a's leaf listener through
// a proxy that stands for the link between them. Each region has a
// controller (its writer) and an edge (a Follower on the edge user, which
// talks to its own region's node only).
type twoRegions struct {
	link    *natstest.LinkProxy
	node    map[string]*natsnode.Node
	log     map[string]*events.Log
	writer  map[string]*events.Writer
	follow  map[string]*Follower
	edgeJS  map[string]jetstream.JetStream
	fleetJS map[string]jetstream.JetStream
	regions []string
}

func connect(t *testing.T, url string, a natsnode.Access) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	opts, err := a.Options()
	if err != nil {
		t.Fatal(err)
	}
	opts = append(opts, nats.MaxReconnects(-1))
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

func startTwoRegions(t *testing.T, ctx context.Context) *twoRegions {
	t.Helper()
	regions := []string{"a", "b"}
	e := &twoRegions{link: natstest.NewLinkProxy(t), regions: regions, node: map[string]*natsnode.Node{}, log: map[string]*events.Log{},
		writer: map[string]*events.Writer{}, follow: map[string]*Follower{}, edgeJS: map[string]jetstream.JetStream{}, fleetJS: map[string]jetstream.JetStream{}}
	start := func(name string, leaf *natsnode.LeafOptions) *natsnode.Node {
		n, err := natsnode.Start(&natsnode.Options{Name: name, DataDir: t.TempDir(), Listen: "127.0.0.1:0", Auth: true,
			Domain: Domain(name), EdgeLogs: EdgeLogs(regions), Leaf: leaf})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(n.Shutdown)
		return n
	}
	e.node["a"] = start("a", &natsnode.LeafOptions{Listen: "127.0.0.1:0", Advertise: e.link.Addr()})
	e.link.SetTarget(strings.TrimPrefix(e.node["a"].LeafURL(), "nats-leaf://"))
	e.node["b"] = start("b", &natsnode.LeafOptions{Remotes: []string{"nats-leaf://" + e.link.Addr()}, RemoteSeed: e.node["a"].LeafSeed()})
	e.waitLinked(t, true)
	for _, r := range regions {
		_, js := connect(t, e.node[r].ClientURL(), e.node[r].ControllerAccess())
		log, err := events.OpenLog(ctx, js, LogOptions(r, 0))
		if err != nil {
			t.Fatal(err)
		}
		if err := EnsureMirrors(ctx, js, r, regions, nil); err != nil {
			t.Fatal(err)
		}
		_, jsEdges := connect(t, e.node[r].ClientURL(), e.node[r].ControllerEdgeAccess())
		if err := sessionstore.Provision(ctx, jsEdges, nil); err != nil {
			t.Fatal(err)
		}
		w, err := events.NewWriter(ctx, log, "controller-"+r)
		if err != nil {
			t.Fatal(err)
		}
		e.log[r], e.writer[r] = log, w
	}
	for _, r := range regions {
		nc, js := connect(t, e.node[r].ClientURL(), e.node[r].EdgeAccess())
		// The edge reads the logs in the fleet account through its read
		// services, by sequence.
		fjs, split, err := natsnode.FleetJetStream(ctx, nc, StreamName(r))
		if err != nil || !split {
			t.Fatalf("region %s: edge reads: split %v, %v", r, split, err)
		}
		f, err := NewFollower(fjs, regions, &FollowerOptions{BySequence: true})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- f.Run(ctx) }()
		t.Cleanup(func() {
			if err := <-done; err != nil {
				t.Errorf("follower %s: %v", r, err)
			}
		})
		if err := f.WaitStarted(ctx); err != nil {
			t.Fatalf("follower %s: %v", r, err)
		}
		e.follow[r], e.edgeJS[r], e.fleetJS[r] = f, js, fjs
	}
	return e
}

// waitLinked waits until the leaf link is up (or down) on both sides.
func (e *twoRegions) waitLinked(t *testing.T, up bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		a, b := e.node["a"].Server().NumLeafNodes(), e.node["b"].Server().NumLeafNodes()
		if (a > 0 && b > 0) == up && (a == 0 && b == 0) == !up {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("leaf link up=%v not reached", up)
}

// waitVector waits until region's edge view covers want and returns it.
func waitVector(t *testing.T, ctx context.Context, f *Follower, want Vector) (*events.State, Vector) {
	t.Helper()
	ch, stop := f.Watch()
	defer stop()
	for {
		s, v, _ := f.View()
		if v.Covers(want) {
			return s, v
		}
		select {
		case <-ch:
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			t.Fatalf("view at %s never covered %s", v, want)
		}
	}
}

func cfg(name string) events.BackendConfig {
	return events.BackendConfig{URL: "http://127.0.0.1:1/" + name, Transport: "streamable-http"}
}

// TestRegionChangeInAReachesEdgeInB: a backend added by region a's
// controller reaches the view of region b's edge, which reads only b's
// NATS (the edge user, least privilege); a group spanning both regions
// holds both regions' backends, and the view names both generations.
func TestRegionChangeInAReachesEdgeInB(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e := startTwoRegions(t, ctx)
	now := time.Now()
	if _, err := e.writer["a"].Publish(ctx, events.NewBackendAdded(now, "shared", "alpha", cfg("alpha")), "a-1"); err != nil {
		t.Fatal(err)
	}
	s, v := waitVector(t, ctx, e.follow["b"], Vector{"a": 1})
	if s.Backend("shared", "alpha") == nil {
		t.Fatalf("b's view at %s has no shared/alpha", v)
	}
	if _, err := e.writer["b"].Publish(ctx, events.NewBackendAdded(now, "shared", "beta", cfg("beta")), "b-1"); err != nil {
		t.Fatal(err)
	}
	for _, r := range e.regions {
		s, v := waitVector(t, ctx, e.follow[r], Vector{"a": 1, "b": 1})
		if got := s.Group("shared").BackendNames(); fmt.Sprint(got) != "[alpha beta]" {
			t.Fatalf("region %s view at %s: shared = %v", r, v, got)
		}
		if v.String() != "a=1,b=1" {
			t.Fatalf("region %s vector %s", r, v)
		}
	}
	// Session records are regional: a record created by a's edge is not
	// found by b's edge while the link is up (a moved session gets 404
	// and re-initializes).
	stores := map[string]*sessionstore.Store{}
	for _, r := range e.regions {
		st, err := sessionstore.Open(ctx, e.edgeJS[r], nil)
		if err != nil {
			t.Fatalf("region %s: open session records: %v", r, err)
		}
		stores[r] = st
	}
	rec := &sessionstore.Record{ID: "sess-regional-1", Group: "shared", Mode: sessionstore.ModePassthrough,
		ProtocolVersion: "2025-06-18", Edge: "edge-a", CreatedAt: now, LastSeen: now}
	if _, err := stores["a"].Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if _, _, err := stores["a"].Get(ctx, rec.ID); err != nil {
		t.Fatalf("a's own record: %v", err)
	}
	// An event published after the record has reached b: the link is
	// carrying replication, and still no record crossed it.
	if _, err := e.writer["a"].Publish(ctx, events.NewHealthChanged(now, "shared", "alpha", "unknown", "healthy", true, ""), "a-2"); err != nil {
		t.Fatal(err)
	}
	waitVector(t, ctx, e.follow["b"], Vector{"a": 2})
	if _, _, err := stores["b"].Get(ctx, rec.ID); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Fatalf("b's edge got a's session record: %v", err)
	}
	// The edge cannot write into the other region's mirror nor publish
	// events in its own region.
	pctx, pcancel := context.WithTimeout(ctx, time.Second)
	defer pcancel()
	if _, err := e.edgeJS["b"].Publish(pctx, SubjectPrefix("b")+".shared.forged", []byte("x")); err == nil {
		t.Fatal("b's edge published an event")
	}
}

// TestRegionPartitionHeals: the link between the regions is cut; both
// regions keep publishing (probing) and serving their own changes; after
// the link heals each side has the other's changes, in order, none lost,
// no generation reused: the mirror's generation N is the origin's event N,
// byte for byte.
func TestRegionPartitionHeals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	e := startTwoRegions(t, ctx)
	now := time.Now()
	for _, r := range e.regions {
		if _, err := e.writer[r].Publish(ctx, events.NewBackendAdded(now, "shared", "be-"+r, cfg("be-"+r)), r+"-1"); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range e.regions {
		waitVector(t, ctx, e.follow[r], Vector{"a": 1, "b": 1})
	}

	e.link.Cut()
	e.waitLinked(t, false)
	const during = 50
	for _, r := range e.regions {
		for i := range during {
			to, from := "healthy", "unhealthy"
			if i%2 == 1 {
				to, from = from, to
			}
			ev := events.NewHealthChanged(now, "shared", "be-"+r, from, to, to == "healthy", "")
			if _, err := e.writer[r].Publish(ctx, ev, fmt.Sprintf("%s-h%d", r, i)); err != nil {
				t.Fatalf("region %s publish during the cut: %v", r, err)
			}
		}
	}
	// Each region serves its own changes during the cut, and has not seen
	// the other's.
	for _, r := range e.regions {
		_, v := waitVector(t, ctx, e.follow[r], Vector{r: 1 + during})
		if other := otherRegion(r); v[other] != 1 {
			t.Fatalf("region %s saw %s's events through a cut link: %s", r, other, v)
		}
	}

	cut := time.Now()
	e.link.Heal()
	e.waitLinked(t, true)
	want := Vector{"a": 1 + during, "b": 1 + during}
	for _, r := range e.regions {
		s, v := waitVector(t, ctx, e.follow[r], want)
		t.Logf("region %s caught up to %s %v after the heal", r, v, time.Since(cut).Round(time.Millisecond))
		if got := s.Group("shared").BackendNames(); fmt.Sprint(got) != "[be-a be-b]" {
			t.Fatalf("region %s: shared = %v", r, got)
		}
	}
	// In order, none lost, none reused: every generation of each origin
	// log is the same event in the other region's mirror.
	for _, r := range e.regions {
		origin := e.log[r]
		lo := LogOptions(r, 0)
		lo.BySequence = true
		mirror, err := events.AttachLog(ctx, e.fleetJS[otherRegion(r)], lo)
		if err != nil {
			t.Fatal(err)
		}
		first, last, err := mirror.Bounds(ctx)
		if err != nil || first != 1 || last != 1+during {
			t.Fatalf("mirror of %s in %s: bounds %d..%d, %v", r, otherRegion(r), first, last, err)
		}
		for gen := uint64(1); gen <= last; gen++ {
			want, err := origin.Event(ctx, gen)
			if err != nil {
				t.Fatal(err)
			}
			got, err := mirror.Event(ctx, gen)
			if err != nil {
				t.Fatalf("mirror of %s generation %d: %v", r, gen, err)
			}
			if !proto.Equal(got, want) || got.Generation != gen {
				t.Fatalf("mirror of %s generation %d differs: %v vs %v", r, gen, got, want)
			}
		}
	}
}

func otherRegion(r string) string {
	if r == "a" {
		return "b"
	}
	return "a"
}
