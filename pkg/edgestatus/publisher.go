package edgestatus

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/fleetgate/fleetgate/pkg/stdio"
)

// Bucket is the KV bucket of the edges' status records, in the edges'
// account next to the session records.
const Bucket = "fleetgate_edges"

// Bounds of the bucket: every edge's record fits many times over; a
// record not written for RecordTTL (its edge stopped) expires.
const (
	BucketMaxBytes = 4 << 20
	RecordTTL      = 2 * time.Minute
)

// Store is where a Publisher writes (a jetstream.KeyValue).
type Store interface {
	Put(ctx context.Context, key string, value []byte) (uint64, error)
}

// Defaults of a Publisher.
const (
	DefaultPoll    = time.Second
	DefaultRefresh = RecordTTL / 4
)

// Publisher writes an edge's record (see the package doc). Store, Edge
// and Status are required; zero durations take the defaults, a nil Now
// time.Now.
type Publisher struct {
	Store  Store
	Edge   string
	Status func() []stdio.Status
	// Poll is how often Status is looked at; Refresh the longest a
	// written record goes unwritten.
	Poll, Refresh time.Duration
	Now           func() time.Time
	Log           zerolog.Logger
}

// Key is the record key of edge id: the id when it is a plain key token
// (letters, digits, - and _, at most 64 bytes), else a hash of it.
func Key(edge string) string {
	ok := edge != "" && len(edge) <= 64
	for i := 0; ok && i < len(edge); i++ {
		c := edge[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
	}
	if ok {
		return edge
	}
	sum := sha256.Sum256([]byte(edge))
	return "h" + hex.EncodeToString(sum[:16])
}

// Run writes the record until ctx ends, then returns nil. A failed write
// is logged and tried again at the next poll.
func (p *Publisher) Run(ctx context.Context) error {
	poll, refresh, now := p.Poll, p.Refresh, p.Now
	if poll <= 0 {
		poll = DefaultPoll
	}
	if refresh <= 0 {
		refresh = DefaultRefresh
	}
	if now == nil {
		now = time.Now
	}
	var last []Instance
	var written time.Time // by now(): with time.Now, its monotonic reading
	ok := false           // last was written
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		at := now()
		r := FromStdio(p.Edge, at, p.Status())
		if !ok || !slices.Equal(r.Stdio, last) || at.Sub(written) >= refresh {
			ok = p.write(ctx, r) == nil
			if ok {
				last, written = r.Stdio, at
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// write puts r, within a poll's time or 5 s.
func (p *Publisher) write(ctx context.Context, r Record) error {
	b, err := r.Encode()
	if err == nil {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = p.Store.Put(wctx, Key(r.Edge), b) // the record's edge: clipped as DecodeRecord reads it
		cancel()
	}
	if err != nil && ctx.Err() == nil {
		p.Log.Warn().Err(err).Str("bucket", Bucket).Msg("edge status not written")
	}
	return err
}
