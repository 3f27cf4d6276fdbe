package kvbucket

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/fleetgate/fleetgate/pkg/logtest"
	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
)

func TestNewKeeperRefusesOtherStreams(t *testing.T) {
	if _, err := NewKeeper(&fakeStreams{}, []jetstream.StreamConfig{{Name: "EVENTS"}}, nil); err == nil {
		t.Fatal("a stream that is no KV bucket's was taken")
	}
}

// On a real JetStream: a hardened bucket loosened by a stream update (as
// nats kv edit does) is hardened again by the keeper's look, its records
// kept; roll-ups and purges are refused again; a look at current buckets
// changes nothing.
func TestKeeperRestoresLoosenedBucket(t *testing.T) {
	node := natstest.Start(t)
	js := natstest.JetStream(t, node.ClientURL())
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	want := []jetstream.StreamConfig{
		Hardened("s", jetstream.StreamConfig{MaxBytes: 1 << 20, Storage: jetstream.FileStorage, Discard: jetstream.DiscardOld, AllowMsgTTL: true}),
		Hardened("e", jetstream.StreamConfig{MaxBytes: 1 << 20, MaxAge: time.Hour, Storage: jetstream.FileStorage}),
	}
	for _, w := range want {
		if err := Provision(ctx, js, w); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	k, err := NewKeeper(js, want, &KeeperOptions{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if r := k.Keep(ctx); len(r) != 0 {
		t.Fatalf("current buckets repaired: %+v", r)
	}
	kv, err := js.KeyValue(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "kept", []byte("v")); err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, "KV_s")
	if err != nil {
		t.Fatal(err)
	}
	loose := st.CachedInfo().Config
	// What nats kv edit --history 5 --max-bucket-size -1 and a DiscardNew
	// would set: unbounded, full buckets refusing writes. (The server
	// refuses to turn DenyPurge or DenyDelete off once on, and roll-ups on
	// while purges are denied.)
	loose.MaxMsgsPerSubject, loose.MaxBytes, loose.Discard, loose.AllowDirect = 5, -1, jetstream.DiscardNew, false
	if _, err := js.UpdateStream(ctx, loose); err != nil {
		t.Fatal(err)
	}
	r := k.Keep(ctx)
	if len(r) != 1 || r[0].Bucket() != "s" || !slices.Equal(r[0].Drift, []string{"max_bytes", "allow_direct", "discard", "max_msgs_per_subject"}) {
		t.Fatalf("repairs %+v", r)
	}
	st, err = js.Stream(ctx, "KV_s")
	if err != nil {
		t.Fatal(err)
	}
	if !Current(st.CachedInfo().Config, want[0]) {
		t.Fatalf("not hardened again: %+v", st.CachedInfo().Config)
	}
	m := &nats.Msg{Subject: "$KV.s.mine", Header: nats.Header{"Nats-Rollup": []string{"all"}}}
	if _, err := js.PublishMsg(ctx, m); err == nil {
		t.Fatal("roll-up accepted after the keeper's look")
	}
	if err := st.Purge(ctx); err == nil {
		t.Fatal("purge accepted after the keeper's look")
	}
	if e, err := kv.Get(ctx, "kept"); err != nil || string(e.Value()) != "v" {
		t.Fatalf("kept: %v", err)
	}
	if n := testutil.ToFloat64(k.reapplied.WithLabelValues("s")); n != 1 {
		t.Fatalf("reapplied{s} = %v", n)
	}
	if r := k.Keep(ctx); len(r) != 0 {
		t.Fatalf("repaired again: %+v", r)
	}
}

// The server itself refuses to loosen a hardened stream's switches: purge
// and API deletion denials cannot be cancelled, nor roll-ups allowed while
// purges are denied. What a Keeper restores is the rest (limits, history,
// discard, direct gets); should a server version accept these updates,
// this test tells, and the keeper restores them too (TestRepairs).
func TestServerKeepsHardeningSwitches(t *testing.T) {
	node := natstest.Start(t)
	js := natstest.JetStream(t, node.ClientURL())
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	want := Hardened("h", jetstream.StreamConfig{MaxBytes: 1 << 20, Storage: jetstream.MemoryStorage})
	if err := Provision(ctx, js, want); err != nil {
		t.Fatal(err)
	}
	for name, loosen := range map[string]func(*jetstream.StreamConfig){
		"roll-ups":      func(c *jetstream.StreamConfig) { c.AllowRollup = true },
		"purges":        func(c *jetstream.StreamConfig) { c.DenyPurge = false },
		"API deletions": func(c *jetstream.StreamConfig) { c.DenyDelete = false },
		"all three":     func(c *jetstream.StreamConfig) { c.AllowRollup, c.DenyPurge, c.DenyDelete = true, false, false },
	} {
		cfg := want
		loosen(&cfg)
		if _, err := js.UpdateStream(ctx, cfg); err == nil {
			t.Errorf("the server allowed %s on a hardened stream", name)
		}
	}
}

// writeCounter counts the stream writes through a StreamManager.
type writeCounter struct {
	jetstream.StreamManager
	mu     sync.Mutex
	writes int
}

func (w *writeCounter) CreateStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	w.mu.Lock()
	w.writes++
	w.mu.Unlock()
	return w.StreamManager.CreateStream(ctx, cfg)
}

func (w *writeCounter) UpdateStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	w.mu.Lock()
	w.writes++
	w.mu.Unlock()
	return w.StreamManager.UpdateStream(ctx, cfg)
}

func (w *writeCounter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes
}

// On a real JetStream: an operator raises a bucket's MaxBytes (nats kv
// edit --max-bucket-size), replicas as they were; the keeper leaves the
// larger size (no write, nothing counted, logged once at info). A
// loosening on top of it is restored with the larger size kept.
func TestKeeperLeavesRaisedMaxBytes(t *testing.T) {
	node := natstest.Start(t)
	js := natstest.JetStream(t, node.ClientURL())
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	want := Hardened("s", jetstream.StreamConfig{MaxBytes: 1 << 20, MaxMsgSize: 16 << 10, MaxAge: time.Hour,
		Storage: jetstream.FileStorage, Discard: jetstream.DiscardOld, AllowMsgTTL: true})
	if err := Provision(ctx, js, want); err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, "KV_s")
	if err != nil {
		t.Fatal(err)
	}
	raised := st.CachedInfo().Config
	raised.MaxBytes = 4 << 20
	if _, err := js.UpdateStream(ctx, raised); err != nil {
		t.Fatal(err)
	}
	wc := &writeCounter{StreamManager: js}
	var logs logtest.Buffer
	zl := zerolog.New(&logs)
	k, err := NewKeeper(wc, []jetstream.StreamConfig{want}, &KeeperOptions{Logger: &zl})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if r := k.Keep(ctx); len(r) != 0 {
			t.Fatalf("repaired a raised MaxBytes: %+v", r)
		}
	}
	if n := wc.count(); n != 0 {
		t.Fatalf("%d writes", n)
	}
	if n := testutil.ToFloat64(k.reapplied.WithLabelValues("s")); n != 0 {
		t.Fatalf("reapplied{s} = %v", n)
	}
	if n := logs.Count(logtest.Level("info"), `"bucket":"s"`, "max_bytes 4194304 (provisioned 1048576)"); n != 1 {
		t.Fatalf("%d info lines on the raise:\n%s", n, logs.String())
	}
	st, err = js.Stream(ctx, "KV_s")
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	if cfg.MaxBytes != 4<<20 || cfg.Replicas != 1 {
		t.Fatalf("max bytes %d, replicas %d", cfg.MaxBytes, cfg.Replicas)
	}

	cfg.MaxMsgsPerSubject, cfg.MaxAge, cfg.Duplicates, cfg.AllowDirect = 5, 0, 3*time.Hour, false
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	r := k.Keep(ctx)
	if len(r) != 1 || !slices.Equal(r[0].Drift, []string{"max_age", "allow_direct", "max_msgs_per_subject"}) {
		t.Fatalf("repairs %+v", r)
	}
	st, err = js.Stream(ctx, "KV_s")
	if err != nil {
		t.Fatal(err)
	}
	if cfg := st.CachedInfo().Config; cfg.MaxBytes != 4<<20 || len(Drift(cfg, want)) != 0 || cfg.MaxAge != time.Hour {
		t.Fatalf("after the repair: %+v", cfg)
	}
	if n := wc.count(); n != 1 {
		t.Fatalf("%d writes, want 1", n)
	}
	if n := testutil.ToFloat64(k.reapplied.WithLabelValues("s")); n != 1 {
		t.Fatalf("reapplied{s} = %v", n)
	}
}
