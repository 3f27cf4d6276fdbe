package edgestatus

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
)

// A bucket an earlier version made (a plain KV, roll-ups allowed) is
// hardened by Provision: an edge's record is still a KV put and read,
// and a Nats-Rollup: all header on an edge's own key, a purge or a
// message deletion no longer wipes the other edges' records.
func TestProvisionHardensBucket(t *testing.T) {
	node := natstest.Start(t)
	js := natstest.JetStream(t, node.ClientURL())
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: Bucket, History: 1, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second finds nothing to change
		if err := Provision(ctx, js, 1); err != nil {
			t.Fatalf("provision: %v", err)
		}
	}
	st, err := js.Stream(ctx, "KV_"+Bucket)
	if err != nil {
		t.Fatal(err)
	}
	if c := st.CachedInfo().Config; c.AllowRollup || !c.DenyPurge || !c.DenyDelete || c.MaxAge != RecordTTL ||
		c.MaxBytes != BucketMaxBytes || c.Discard != jetstream.DiscardOld {
		t.Fatalf("config after provision: %+v", c)
	}
	kv, err := js.KeyValue(ctx, Bucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, Key("edge-a"), []byte(`{"edge":"edge-a"}`)); err != nil {
		t.Fatal(err)
	}
	m := &nats.Msg{Subject: "$KV." + Bucket + "." + Key("edge-b"), Data: []byte("{}"),
		Header: nats.Header{"Nats-Rollup": []string{"all"}}}
	if _, err := js.PublishMsg(ctx, m); err == nil {
		t.Fatal("a roll-up of the whole bucket was accepted")
	}
	if err := st.Purge(ctx); err == nil {
		t.Fatal("a purge of the bucket was accepted")
	}
	if err := st.DeleteMsg(ctx, 1); err == nil {
		t.Fatal("a message deletion was accepted")
	}
	if e, err := kv.Get(ctx, Key("edge-a")); err != nil || string(e.Value()) != `{"edge":"edge-a"}` {
		t.Fatalf("edge-a's record after the refused writes: %v", err)
	}
}

// A new bucket is made hardened.
func TestProvisionNewBucket(t *testing.T) {
	node := natstest.Start(t)
	js := natstest.JetStream(t, node.ClientURL())
	if err := Provision(t.Context(), js, 1); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(t.Context(), Bucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(t.Context(), "k", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(t.Context(), "KV_"+Bucket)
	if err != nil {
		t.Fatal(err)
	}
	if c := st.CachedInfo().Config; c.AllowRollup || !c.DenyPurge || c.MaxMsgSize != MaxRecord+recordOverhead {
		t.Fatalf("config: %+v", c)
	}
}
