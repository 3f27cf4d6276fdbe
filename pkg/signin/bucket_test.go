package signin

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
)

// The sign-in bucket is bounded in bytes, per record and in time, and a
// bucket made before the bounds gets them.
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
	if cfg.MaxBytes != BucketMaxBytes || cfg.MaxMsgSize != MaxRecord || cfg.MaxAge != BucketTTL {
		t.Fatalf("bucket limits: max bytes %d, max record %d, max age %v; want %d, %d, %v",
			cfg.MaxBytes, cfg.MaxMsgSize, cfg.MaxAge, BucketMaxBytes, MaxRecord, BucketTTL)
	}
}
