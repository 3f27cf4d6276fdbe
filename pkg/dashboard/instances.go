package dashboard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/edgestatus"
)

// The edges' status records (package edgestatus: each edge and its own
// instances of stdio backends) are followed like the session records:
// one watch of the bucket, each record decoded as hostile, at most
// MaxEdges*4 kept. A record its edge stopped writing expires from the
// bucket without a delete marker, so a record the server stored longer
// than edgestatus.RecordTTL ago is not shown, and forgotten. GET /v1/edges gives each edge card
// its instances; FrameEdges tells the page to reload it.

// FrameEdges says an edge's status record changed: reload GET /v1/edges.
// Its data is {"edge": id}.
const FrameEdges = "edges"

// edgeStatuses are the edges' status records by key, each with when the
// NATS server stored it (its lifetime is counted from that, not from the
// writer's clock).
type edgeStatuses struct {
	mu      sync.Mutex
	records map[string]storedStatus
	max     int
	ttl     time.Duration
}

type storedStatus struct {
	r  edgestatus.Record
	at time.Time // the server's time of the write
}

func newEdgeStatuses(max int) *edgeStatuses {
	return &edgeStatuses{records: map[string]storedStatus{}, max: max, ttl: edgestatus.RecordTTL}
}

// put keeps r, stored at at, under key; it reports whether the edge is
// new or its instances changed. A full index first forgets the records
// past their lifetime (expired from the bucket, which tells no one); if
// still full, r is not kept.
func (x *edgeStatuses) put(key string, r edgestatus.Record, at, now time.Time) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	old, ok := x.records[key]
	if !ok && len(x.records) >= x.max {
		x.forget(now)
		if len(x.records) >= x.max {
			return false
		}
	}
	x.records[key] = storedStatus{r, at}
	return !ok || !slices.Equal(old.r.Stdio, r.Stdio)
}

// forget drops the records past their lifetime (mu held).
func (x *edgeStatuses) forget(now time.Time) {
	for k, s := range x.records {
		if now.Sub(s.at) > x.ttl {
			delete(x.records, k)
		}
	}
}

func (x *edgeStatuses) remove(key string) {
	x.mu.Lock()
	delete(x.records, key)
	x.mu.Unlock()
}

// current are the records within their lifetime at now, by edge id;
// the others are forgotten.
func (x *edgeStatuses) current(now time.Time) map[string]edgestatus.Record {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.forget(now)
	out := make(map[string]edgestatus.Record, len(x.records))
	for _, s := range x.records {
		out[s.r.Edge] = s.r
	}
	return out
}

// followEdges watches the bucket until ctx ends, again after
// RetryDelay when a watch fails.
func (d *Dashboard) followEdges(ctx context.Context) error {
	for {
		err := d.watchEdges(ctx)
		if ctx.Err() != nil {
			return nil
		}
		d.report(fmt.Errorf("dashboard: edge status records: %w", err))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(d.o.RetryDelay):
		}
	}
}

// watchEdges is one watch of the edges' bucket, ended by a failure.
func (d *Dashboard) watchEdges(ctx context.Context) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := d.o.Edges.WatchAll(wctx)
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			switch {
			case !ok:
				return errors.New("watch ended")
			case e == nil: // the listing is complete
			case e.Operation() != jetstream.KeyValuePut:
				d.instances.remove(e.Key())
				d.hub.broadcast(frame(FrameEdges, 0, map[string]string{"edge": e.Key()}))
			default:
				r, err := edgestatus.DecodeRecord(e.Key(), e.Value())
				if err != nil {
					d.sessions.bad(d.report, err)
					continue
				}
				if d.instances.put(e.Key(), r, e.Created(), d.now()) {
					d.hub.broadcast(frame(FrameEdges, 0, map[string]string{"edge": r.Edge}))
				}
			}
		}
	}
}
