package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// snapshotKey is the KV key of the latest snapshot; the bucket's history
// keeps older ones for replay.
const snapshotKey = "state"

// SaveSnapshot stores s as the latest snapshot. It refuses to move the
// snapshot backwards: a snapshot older than the stored one is ignored.
func (l *Log) SaveSnapshot(ctx context.Context, s *State) error {
	cur, err := l.LoadSnapshot(ctx)
	if err != nil {
		return err
	}
	if cur != nil && cur.Generation >= s.Generation {
		return nil
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("save snapshot at generation %d: %w", s.Generation, err)
	}
	if _, err := l.snapshots.Put(ctx, snapshotKey, compress(raw)); err != nil {
		return fmt.Errorf("save snapshot at generation %d: %w", s.Generation, err)
	}
	return nil
}

// LoadSnapshot returns the latest snapshot, or nil when there is none.
func (l *Log) LoadSnapshot(ctx context.Context) (*State, error) {
	e, err := l.snapshots.Get(ctx, snapshotKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load snapshot: %w", err)
	}
	return decodeSnapshot(e.Value())
}

// snapshotAtOrBelow returns the newest kept snapshot whose generation is
// at most gen, or nil.
func (l *Log) snapshotAtOrBelow(ctx context.Context, gen uint64) (*State, error) {
	if l.opts.BySequence {
		return l.snapshotAtOrBelowByRevision(ctx, gen)
	}
	hist, err := l.snapshots.History(ctx, snapshotKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot history: %w", err)
	}
	var best *State
	for _, e := range hist {
		if e.Operation() != jetstream.KeyValuePut {
			continue
		}
		s, err := decodeSnapshot(e.Value())
		if err != nil {
			return nil, err
		}
		if s.Generation <= gen && (best == nil || s.Generation > best.Generation) {
			best = s
		}
	}
	return best, nil
}

// snapshotAtOrBelowByRevision is snapshotAtOrBelow without a consumer:
// it reads the kept revisions one by one, newest first (a bucket keeps at
// most 64).
func (l *Log) snapshotAtOrBelowByRevision(ctx context.Context, gen uint64) (*State, error) {
	e, err := l.snapshots.Get(ctx, snapshotKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot history: %w", err)
	}
	rev := e.Revision()
	for range 64 {
		if e.Operation() == jetstream.KeyValuePut {
			s, err := decodeSnapshot(e.Value())
			if err != nil {
				return nil, err
			}
			if s.Generation <= gen {
				return s, nil
			}
		}
		if rev <= 1 {
			return nil, nil
		}
		rev--
		if e, err = l.snapshots.GetRevision(ctx, snapshotKey, rev); errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, nil
		} else if err != nil {
			return nil, fmt.Errorf("snapshot history: revision %d: %w", rev, err)
		}
	}
	return nil, nil
}

func decodeSnapshot(b []byte) (*State, error) {
	raw, err := decompress(b)
	if err != nil {
		return nil, fmt.Errorf("decode snapshot: %w", err)
	}
	s := NewState()
	if err := json.Unmarshal(raw, s); err != nil {
		return nil, fmt.Errorf("decode snapshot: %w", err)
	}
	if s.Groups == nil {
		s.Groups = map[string]*Group{}
	}
	return s, nil
}
