package edgestatus

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/kvbucket"
)

// streamConfig is the bucket as a stream, hardened (package kvbucket): one
// Nats-Rollup: all header on an edge's own key would otherwise wipe every
// edge's record. Records expire by the stream's MaxAge; a full bucket
// evicts the records written least recently (an edge rewrites its own
// every DefaultRefresh), so a flood never locks an edge out.
func streamConfig(replicas int) jetstream.StreamConfig {
	return kvbucket.Hardened(Bucket, jetstream.StreamConfig{
		Description: "fleetgate edges: each edge's status and its stdio instances",
		MaxBytes:    BucketMaxBytes,
		MaxMsgSize:  MaxRecord + recordOverhead,
		MaxAge:      RecordTTL,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		Discard:     jetstream.DiscardOld,
	})
}

// BucketConfig is the stream of the bucket with replicas as Provision
// makes it: what the controller's kvbucket.Keeper restores loosened
// settings to.
func BucketConfig(replicas int) jetstream.StreamConfig { return streamConfig(replicas) }

// recordOverhead is room for a record's subject and headers in a stream
// message.
const recordOverhead = 1 << 10

// Provision creates the bucket (the controller does, for edges that may
// not create it) with replicas (at least 1), or bounds and hardens an
// existing one in place (one an earlier version made as a plain KV
// bucket).
func Provision(ctx context.Context, js jetstream.JetStream, replicas int) error {
	if err := kvbucket.Provision(ctx, js, streamConfig(replicas)); err != nil {
		return fmt.Errorf("edge status: provision bucket %s: %w", Bucket, err)
	}
	return nil
}
