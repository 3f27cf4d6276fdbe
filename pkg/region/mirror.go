package region

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/events"
)

// MirrorOptions configure EnsureMirrors. A nil *MirrorOptions means
// defaults.
type MirrorOptions struct {
	// MaxBytes bounds each mirrored stream; default events.DefaultMaxBytes.
	MaxBytes int64
	// Replicas of the mirrors; default 1.
	Replicas int
}

// EnsureMirrors creates or updates, in local's JetStream (js), a mirror of
// every other region's event stream and snapshot bucket, under the
// origin's names, fed from the origin's domain over the region link. A
// mirror binds no subjects, so nothing published in local can land in it;
// it keeps the origin's sequences, so generation == sequence holds in it.
// The controller of local calls it at start; edges only read the mirrors.
func EnsureMirrors(ctx context.Context, js jetstream.JetStream, local string, regions []string, o *MirrorOptions) error {
	if err := CheckName(local); err != nil {
		return err
	}
	maxBytes, replicas := int64(events.DefaultMaxBytes), 1
	if o != nil && o.MaxBytes != 0 {
		maxBytes = o.MaxBytes
	}
	if o != nil && o.Replicas != 0 {
		replicas = o.Replicas
	}
	for _, r := range regions {
		if r == local {
			continue
		}
		if err := CheckName(r); err != nil {
			return err
		}
		_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name:        StreamName(r),
			Description: "fleetgate events of region " + r + " (mirror)",
			Storage:     jetstream.FileStorage,
			Retention:   jetstream.LimitsPolicy,
			Discard:     jetstream.DiscardOld,
			MaxBytes:    maxBytes,
			Replicas:    replicas,
			Mirror:      &jetstream.StreamSource{Name: StreamName(r), Domain: Domain(r)},
		})
		if err != nil {
			return fmt.Errorf("region %s: mirror stream %s: %w", local, StreamName(r), err)
		}
		_, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      SnapshotBucket(r),
			Description: "fleetgate snapshots of region " + r + " (mirror)",
			Storage:     jetstream.FileStorage,
			MaxBytes:    maxBytes,
			Replicas:    replicas,
			History:     16,
			Mirror:      &jetstream.StreamSource{Name: SnapshotBucket(r), Domain: Domain(r)},
		})
		if err != nil {
			return fmt.Errorf("region %s: mirror bucket %s: %w", local, SnapshotBucket(r), err)
		}
	}
	return nil
}
