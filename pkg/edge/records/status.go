package records

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/edgestatus"
)

// The recorder also keeps this edge's status record (package edgestatus:
// the edge, its stdio instances) in the edges' bucket, which the
// controller provisions, for the dashboard. A fleet without the bucket
// (an older controller) gets none: the edge looks for it again every
// statusAttachRetry and serves meanwhile.

// statusAttachRetry is the pause between two looks for the bucket.
const statusAttachRetry = 10 * time.Second

// runStatus writes the edge's status record until ctx ends.
func (r *Recorder) runStatus(ctx context.Context) {
	var kv jetstream.KeyValue
	for kv == nil {
		// Looked up, never made: an edge user may not create streams
		// (the attempt is a permission violation on the server).
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var err error
		kv, err = r.js.KeyValue(actx, edgestatus.Bucket)
		cancel()
		if err != nil {
			kv = nil
			r.log.Debug().Err(err).Str("bucket", edgestatus.Bucket).Msg("edge status bucket not available")
			select {
			case <-ctx.Done():
				return
			case <-time.After(statusAttachRetry):
			}
		}
	}
	p := &edgestatus.Publisher{Store: statusStore{r, kv}, Edge: r.w.Edge, Status: r.w.Stdio, Log: r.log}
	_ = p.Run(ctx)
}

// statusStore is the bucket, written only while the recorder is not
// halted (a killed edge writes nothing).
type statusStore struct {
	r  *Recorder
	kv jetstream.KeyValue
}

func (s statusStore) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	if s.r.halted.Load() {
		return 0, nil
	}
	return s.kv.Put(ctx, key, value)
}
