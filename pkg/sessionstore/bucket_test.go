package sessionstore

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A bucket made by an earlier version (a plain KV with subject delete
// markers, roll-ups allowed) is hardened and bounded by Provision, and a
// Nats-Rollup: all header no longer wipes it.
func TestProvisionHardensOlderBucket(t *testing.T) {
	node := startNode(t)
	ctx := testContext(t)
	js := connect(t, node)
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: DefaultBucket, History: 1, LimitMarkerTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := Provision(ctx, js, &ProvisionOptions{MaxBytes: 8 << 20}); err != nil {
		t.Fatalf("provision over an older bucket: %v", err)
	}
	st, err := js.Stream(ctx, "KV_"+DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	if cfg.AllowRollup || !cfg.DenyPurge || cfg.MaxBytes != 8<<20 {
		t.Fatalf("config after provision: rollup %v deny purge %v max bytes %d", cfg.AllowRollup, cfg.DenyPurge, cfg.MaxBytes)
	}
	s, err := Open(ctx, js, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecord(newID(), time.Now())
	if _, err := s.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	m := &nats.Msg{Subject: "$KV." + DefaultBucket + ".zzzzzzzz", Header: nats.Header{"Nats-Rollup": []string{"all"}}}
	if _, err := js.PublishMsg(ctx, m); err == nil {
		t.Fatal("a roll-up of the whole bucket was accepted")
	}
	if _, _, err := s.Get(ctx, rec.ID); err != nil {
		t.Fatalf("record after the refused roll-up: %v", err)
	}
	// Provision again: nothing to change.
	if err := Provision(ctx, js, &ProvisionOptions{MaxBytes: 8 << 20}); err != nil {
		t.Fatal(err)
	}
}
