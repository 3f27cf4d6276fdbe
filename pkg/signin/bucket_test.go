package signin

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
)

// The sign-in bucket is bounded in bytes, per record and in time, and
// hardened (no roll-up, purge or API deletion: an edge may publish to
// it); a bucket made before the bounds gets them.
func TestProvisionBounds(t *testing.T) {
	node := natstest.Start(t)
	js, err := jetstream.New(natstest.Connect(t, node.ClientURL()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: DefaultBucket, History: 1}); err != nil {
		t.Fatal(err) // an older, unbounded bucket
	}
	if err := Provision(ctx, js, "", 1); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config
	if cfg.MaxBytes != BucketMaxBytes || cfg.MaxMsgSize != MaxRecord+recordOverhead || cfg.MaxAge != BucketTTL {
		t.Fatalf("bucket limits: max bytes %d, max record %d, max age %v; want %d, %d, %v",
			cfg.MaxBytes, cfg.MaxMsgSize, cfg.MaxAge, BucketMaxBytes, MaxRecord+recordOverhead, BucketTTL)
	}
	if cfg.AllowRollup || !cfg.DenyPurge || !cfg.DenyDelete || cfg.Discard != jetstream.DiscardOld {
		t.Fatalf("bucket not hardened: %+v", cfg)
	}
	if _, err := kv.Put(ctx, "alice", []byte("sealed")); err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, "alice"); err != nil {
		t.Fatalf("a sign-out's delete marker: %v", err)
	}
	if _, err := kv.Put(ctx, "bob", []byte("sealed")); err != nil {
		t.Fatal(err)
	}
	m := &nats.Msg{Subject: "$KV." + DefaultBucket + ".mallory", Header: nats.Header{"Nats-Rollup": []string{"all"}}}
	if _, err := js.PublishMsg(ctx, m); err == nil {
		t.Fatal("a roll-up of the whole bucket was accepted")
	}
	if _, err := kv.Get(ctx, "bob"); err != nil {
		t.Fatalf("bob's sign-in after the refused roll-up: %v", err)
	}
}
