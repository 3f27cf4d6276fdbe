package kvbucket

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/natsnode"
	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
)

func TestHardened(t *testing.T) {
	cfg := Hardened("b", jetstream.StreamConfig{MaxBytes: 1 << 20, MaxAge: time.Minute, AllowRollup: true})
	if cfg.Name != "KV_b" || len(cfg.Subjects) != 1 || cfg.Subjects[0] != "$KV.b.>" || cfg.MaxMsgsPerSubject != 1 ||
		cfg.AllowRollup || !cfg.DenyDelete || !cfg.DenyPurge || !cfg.AllowDirect || cfg.Replicas != 1 ||
		cfg.MaxBytes != 1<<20 || cfg.Duplicates != time.Minute {
		t.Fatalf("%+v", cfg)
	}
	if !Current(cfg, cfg) {
		t.Fatal("a hardened config is not current against itself")
	}
	plain := cfg
	plain.AllowRollup = true
	if Current(plain, cfg) {
		t.Fatal("a bucket allowing roll-ups is current")
	}
}

// Provision hardens a plain KV bucket in place: its records stay, KV
// puts and delete markers work, a roll-up, a purge and an API deletion
// are refused; a second Provision changes nothing.
func TestProvisionHardensPlainBucket(t *testing.T) {
	node := natstest.Start(t)
	js := natstest.JetStream(t, node.ClientURL())
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "b", History: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "kept", []byte("v")); err != nil {
		t.Fatal(err)
	}
	want := Hardened("b", jetstream.StreamConfig{MaxBytes: 1 << 20, MaxMsgSize: 4 << 10, MaxAge: time.Hour,
		Storage: jetstream.FileStorage, Discard: jetstream.DiscardOld})
	for range 2 {
		if err := Provision(ctx, js, want); err != nil {
			t.Fatal(err)
		}
	}
	st, err := js.Stream(ctx, "KV_b")
	if err != nil {
		t.Fatal(err)
	}
	if !Current(st.CachedInfo().Config, want) {
		t.Fatalf("not hardened: %+v", st.CachedInfo().Config)
	}
	if _, err := kv.Put(ctx, "new", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, "new"); err != nil {
		t.Fatalf("delete marker: %v", err)
	}
	m := &nats.Msg{Subject: "$KV.b.mine", Header: nats.Header{"Nats-Rollup": []string{"all"}}}
	if _, err := js.PublishMsg(ctx, m); err == nil {
		t.Fatal("roll-up accepted")
	}
	if err := st.Purge(ctx); err == nil {
		t.Fatal("purge accepted")
	}
	if err := st.DeleteMsg(ctx, 1); err == nil {
		t.Fatal("API deletion accepted")
	}
	if e, err := kv.Get(ctx, "kept"); err != nil || string(e.Value()) != "v" {
		t.Fatalf("kept: %v", err)
	}
}

// Provision creates a missing bucket hardened, usable as a KV bucket.
func TestProvisionCreates(t *testing.T) {
	node := natstest.Start(t)
	js := natstest.JetStream(t, node.ClientURL())
	want := Hardened("c", jetstream.StreamConfig{MaxBytes: 1 << 20, Storage: jetstream.MemoryStorage})
	if err := Provision(t.Context(), js, want); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(t.Context(), "c")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(t.Context(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
}

// On a 3-node cluster, a bucket made with one replica (a fleet that grew
// from one node) gets the replicas asked for, and stays a KV bucket.
func TestProvisionScalesReplicas(t *testing.T) {
	c, err := natsnode.StartCluster(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Shutdown)
	js := natstest.JetStream(t, c.ClientURLs())
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	limits := jetstream.StreamConfig{MaxBytes: 1 << 20, Storage: jetstream.FileStorage}
	if err := Provision(ctx, js, Hardened("r", limits)); err != nil {
		t.Fatal(err)
	}
	limits.Replicas = 3
	want := Hardened("r", limits)
	if err := Provision(ctx, js, want); err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, "KV_r")
	if err != nil {
		t.Fatal(err)
	}
	if cfg := st.CachedInfo().Config; cfg.Replicas != 3 || !Current(cfg, want) {
		t.Fatalf("replicas %d after provision at 3", cfg.Replicas)
	}
	kv, err := js.KeyValue(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	// The stream's leader moves while the new replicas join: a put waits
	// for it (each attempt bounded), as an edge's write would.
	for {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := kv.Put(pctx, "k", []byte("v"))
		pcancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("put after scaling to 3 replicas: %v", err)
		}
	}
}

// Provision brings to a shorter MaxAge and to discarding old records a
// stream whose duplicate window is longer than that age and that
// discarded new records per subject, settings the server refuses
// together with the provisioned ones unless they are adjusted too.
func TestProvisionFixesWindowAndPerSubject(t *testing.T) {
	node := natstest.Start(t)
	js := natstest.JetStream(t, node.ClientURL())
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "w", History: 1}); err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, "KV_w")
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	cfg.MaxAge, cfg.Duplicates = 0, 3*time.Hour
	cfg.MaxMsgsPerSubject, cfg.MaxBytes = 1, 1<<20
	cfg.Discard, cfg.DiscardNewPerSubject = jetstream.DiscardNew, true
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatalf("loosen: %v", err)
	}
	want := Hardened("w", jetstream.StreamConfig{MaxBytes: 1 << 20, MaxAge: time.Hour, Discard: jetstream.DiscardOld})
	if err := Provision(ctx, js, want); err != nil {
		t.Fatal(err)
	}
	st, err = js.Stream(ctx, "KV_w")
	if err != nil {
		t.Fatal(err)
	}
	got := st.CachedInfo().Config
	if !Current(got, want) || got.Duplicates > time.Hour || got.DiscardNewPerSubject {
		t.Fatalf("after provisioning: %+v", got)
	}
}
