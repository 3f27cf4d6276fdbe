package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/kvbucket"
)

// DefaultMaxBytes bounds the session bucket, so that a flood of sessions
// fills this bucket and never the store the event log shares.
const DefaultMaxBytes = 256 << 20

// MinRecords is the fewest records of the largest size a bucket holds:
// RecordLimit keeps records at most 1/MinRecords of the bucket, so that
// no handful of records fills it.
const MinRecords = 64

// recordOverhead is what the bucket's per-message limit allows beyond a
// record: the subject and headers of its message.
const recordOverhead = 512

// RecordLimit is the largest record a bucket of maxBytes takes:
// MaxRecordSize, or 1/MinRecords of a smaller bucket (at least 1 KiB).
// The controller sets the bucket's per-message limit from it, which the
// server enforces on every writer, and each edge reads it back (Open).
func RecordLimit(maxBytes int64) int {
	return int(max(1<<10, min(MaxRecordSize, maxBytes/MinRecords)))
}

// ProvisionOptions configure the bucket the controller creates. A nil
// *ProvisionOptions means defaults.
type ProvisionOptions struct {
	// Bucket is the KV bucket name; default DefaultBucket.
	Bucket string
	// Replicas of the bucket's stream; default 1.
	Replicas int
	// MaxBytes bounds the bucket; default DefaultMaxBytes.
	MaxBytes int64
}

// streamConfig is the bucket as a stream, hardened against the writes
// subject permissions cannot refuse: no roll-ups (a Nats-Rollup: all
// header on any key would wipe every record), no purge, no message
// deletion through the API. Records expire by per-message TTLs; the bucket
// has no subject delete markers (they would turn roll-ups back on), so an
// expired record simply disappears.
//
// A full bucket evicts its oldest messages (DiscardOld): with one message
// per key, the records of the sessions written least recently. It never
// refuses a new session's record: a flood of records, whoever sends it,
// costs the least recently active sessions their record (an edge
// holding such a session writes it again, see ErrLost) instead of
// locking every new session out until the flood's records expire.
func streamConfig(o ProvisionOptions) jetstream.StreamConfig {
	return kvbucket.Hardened(o.Bucket, jetstream.StreamConfig{
		Description: "fleetgate MCP session records",
		MaxBytes:    o.MaxBytes,
		MaxMsgSize:  int32(RecordLimit(o.MaxBytes) + recordOverhead),
		Storage:     jetstream.FileStorage,
		Replicas:    o.Replicas,
		Discard:     jetstream.DiscardOld,
		AllowMsgTTL: true,
	})
}

func (o *ProvisionOptions) withDefaults() ProvisionOptions {
	var c ProvisionOptions
	if o != nil {
		c = *o
	}
	if c.Bucket == "" {
		c.Bucket = DefaultBucket
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	return c
}

// BucketConfig is the stream of the session bucket o configures (nil:
// defaults), as Provision makes it: what the controller's kvbucket.Keeper
// restores loosened settings to.
func BucketConfig(o *ProvisionOptions) jetstream.StreamConfig {
	return streamConfig(o.withDefaults())
}

// Provision creates the session bucket, or updates the limits of an
// existing one, with full rights: the controller calls it at start, so
// that edges, which may only read and write records, find the bucket.
func Provision(ctx context.Context, js jetstream.JetStream, o *ProvisionOptions) error {
	opts := o.withDefaults()
	if opts.Replicas < 0 || opts.MaxBytes < 0 {
		return fmt.Errorf("sessionstore: provision bucket %q: replicas %d, max bytes %d", opts.Bucket, opts.Replicas, opts.MaxBytes)
	}
	if err := kvbucket.Provision(ctx, js, streamConfig(opts)); err != nil {
		return fmt.Errorf("sessionstore: provision bucket %q: %w", opts.Bucket, err)
	}
	return nil
}

// attach returns the bucket: an existing one as it is (an edge may not
// change it), or, when it does not exist, one made by Provision with
// opts' replicas (a client with full rights, a fleet without a controller
// provisioning). A client that may not create it waits for it until ctx
// ends.
func attach(ctx context.Context, js jetstream.JetStream, opts Options) (jetstream.KeyValue, error) {
	for {
		kv, err := js.KeyValue(ctx, opts.Bucket)
		if err == nil {
			return kv, nil
		}
		if !errors.Is(err, jetstream.ErrBucketNotFound) {
			return nil, err
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		perr := Provision(cctx, js, &ProvisionOptions{Bucket: opts.Bucket, Replicas: opts.Replicas})
		cancel()
		if perr == nil || errors.Is(perr, jetstream.ErrStreamNameAlreadyInUse) {
			continue
		}
		var api *jetstream.APIError
		if errors.As(perr, &api) {
			// The server refused the bucket (bad replicas, no storage):
			// waiting does not help. A create the client may not make is
			// not answered at all and ends in a timeout instead.
			return nil, perr
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (waiting for the bucket; creating it: %v)", ctx.Err(), perr)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// deleteMarker is the KV delete of id as a publish, so that the marker
// carries a TTL and expires: KeyValue.Delete sends none, and Purge is a
// roll-up, which the bucket refuses.
func (s *Store) deleteMarker(ctx context.Context, id string) error {
	m := &nats.Msg{Subject: s.subject + id, Header: nats.Header{"KV-Operation": []string{"DEL"}}}
	_, err := s.js.PublishMsg(ctx, m, jetstream.WithMsgTTL(markerTTL), jetstream.WithExpectStream(s.stream))
	return err
}
