package edgestatus

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/kvbucket"
	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
)

// The edges' bucket an earlier version made (a plain KV, roll-ups
// allowed) is bounded and hardened by Provision: an edge's record is still
// a KV put, and one edge's roll-up on its own key no longer wipes the
// others' records.
func TestProvisionHardensBucket(t *testing.T) {
	node := natstest.Start(t)
	js := natstest.JetStream(t, node.ClientURL())
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: Bucket, History: 1, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := Provision(ctx, js, 1); err != nil {
		t.Fatalf("provision: %v", err)
	}
	st, err := js.Stream(ctx, "KV_"+Bucket)
	if err != nil {
		t.Fatal(err)
	}
	if c := st.CachedInfo().Config; !kvbucket.Current(c, streamConfig(1)) || c.MaxAge != RecordTTL || c.MaxBytes != BucketMaxBytes {
		t.Fatalf("config after provision: %+v", c)
	}
	kv, err := js.KeyValue(ctx, Bucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, Key("edge-a"), []byte(`{"edge":"edge-a"}`)); err != nil {
		t.Fatal(err)
	}
	rollup := &nats.Msg{Subject: "$KV." + Bucket + "." + Key("edge-b"), Data: []byte("{}"),
		Header: nats.Header{"Nats-Rollup": []string{"all"}}}
	if _, err := js.PublishMsg(ctx, rollup); err == nil {
		t.Fatal("edge-b's roll-up of the whole bucket was accepted")
	}
	if _, err := kv.Get(ctx, Key("edge-a")); err != nil {
		t.Fatalf("edge-a's record after the refused roll-up: %v", err)
	}
}
