package region

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/events"
)

// MirrorOptions configure EnsureMirrors. A nil *MirrorOptions means
// defaults.
type MirrorOptions struct {
	// MaxBytes bounds each mirrored stream and snapshot bucket; default
	// events.DefaultMaxBytes.
	MaxBytes int64
	// Replicas of the mirrors; default 1.
	Replicas int
}

func (o *MirrorOptions) withDefaults() MirrorOptions {
	c := MirrorOptions{MaxBytes: events.DefaultMaxBytes, Replicas: 1}
	if o != nil && o.MaxBytes != 0 {
		c.MaxBytes = o.MaxBytes
	}
	if o != nil && o.Replicas != 0 {
		c.Replicas = o.Replicas
	}
	return c
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
	for _, r := range regions {
		if r == local {
			continue
		}
		if err := CheckName(r); err != nil {
			return err
		}
		for _, a := range []Asset{EventStream, SnapshotStream} {
			if err := ensureMirror(ctx, js, r, a, o); err != nil {
				return fmt.Errorf("region %s: %w", local, err)
			}
		}
	}
	return nil
}

// Asset is one of the two JetStream streams a region mirrors of another:
// its event stream or the stream of its snapshot bucket.
type Asset int

const (
	EventStream Asset = iota
	SnapshotStream
)

// Stream is the name of asset a of region r (the same in the origin and
// in every mirror).
func (a Asset) Stream(r string) string {
	if a == SnapshotStream {
		return "KV_" + SnapshotBucket(r)
	}
	return StreamName(r)
}

func (a Asset) String() string {
	if a == SnapshotStream {
		return "snapshots"
	}
	return "events"
}

// ensureMirror creates or updates the mirror of asset a of region r.
func ensureMirror(ctx context.Context, js jetstream.JetStream, r string, a Asset, o *MirrorOptions) error {
	c := o.withDefaults()
	if a == SnapshotStream {
		_, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      SnapshotBucket(r),
			Description: "fleetgate snapshots of region " + r + " (mirror)",
			Storage:     jetstream.FileStorage,
			MaxBytes:    c.MaxBytes,
			Replicas:    c.Replicas,
			History:     16,
			Mirror:      &jetstream.StreamSource{Name: SnapshotBucket(r), Domain: Domain(r)},
		})
		if err != nil {
			return fmt.Errorf("mirror bucket %s: %w", SnapshotBucket(r), err)
		}
		return nil
	}
	_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        StreamName(r),
		Description: "fleetgate events of region " + r + " (mirror)",
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxBytes:    c.MaxBytes,
		Replicas:    c.Replicas,
		Mirror:      &jetstream.StreamSource{Name: StreamName(r), Domain: Domain(r)},
	})
	if err != nil {
		return fmt.Errorf("mirror stream %s: %w", StreamName(r), err)
	}
	return nil
}

// recreateMirror deletes the mirror of asset a of region r and creates it
// again: the server sets a new mirror up at once, where the old one may
// wait on its retry timers (up to 30 s for a consumer request sent while
// the link was down, then a back-off). The new mirror copies the origin
// again from its first message, keeping its sequences, so readers of the
// mirror resume where they were.
func recreateMirror(ctx context.Context, js jetstream.JetStream, r string, a Asset, o *MirrorOptions) error {
	if err := js.DeleteStream(ctx, a.Stream(r)); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("recreate mirror %s: delete: %w", a.Stream(r), err)
	}
	if err := ensureMirror(ctx, js, r, a, o); err != nil {
		return fmt.Errorf("recreate %w", err)
	}
	return nil
}
