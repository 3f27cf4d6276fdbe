package signin

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// DefaultSaveRetry is the default Options.SaveRetry.
const DefaultSaveRetry = 10 * time.Second

// saveRetryTimeout bounds each write of a held token (and the read of the
// bucket's record after its conflict); finalSaveTimeout bounds all the
// writes Run makes when its context ends.
const (
	saveRetryTimeout = 2 * time.Second
	finalSaveTimeout = 2 * time.Second
)

// heldWrite is the result of a write of a held token in its key's
// refresh flight: an Authorization that joins it refreshes next.
type heldWrite struct{}

// errHeldWrite: a write of a held token failed other than by a conflict
// (the bucket is likely unavailable: the round stops).
var errHeldWrite = errors.New("write the held rotated refresh token")

// writeHeldLoop writes the held tokens due at each tick until ctx ends,
// then, within finalSaveTimeout, every token still held (Run's writer).
func (m *Manager) writeHeldLoop(ctx context.Context) {
	ticks := m.saveTicks
	if ticks == nil {
		t := time.NewTicker(m.o.SaveRetry)
		defer t.Stop()
		ticks = t.C
	}
	for {
		select {
		case <-ctx.Done():
			m.mu.Lock()
			m.writerStopped = true // a token failing to be written from now on is lost
			m.mu.Unlock()
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalSaveTimeout)
			m.writeHeldRound(fctx, true)
			cancel()
			m.mu.Lock()
			lost := len(m.held)
			m.mu.Unlock()
			if lost > 0 {
				m.o.Log.Warn().Int("held", lost).Str("op", "stop: write the held rotated refresh tokens").
					Msg("rotated refresh tokens still held at stop are lost: the bucket holds their spent predecessors")
			}
			return
		case <-ticks:
			m.writeHeldRound(ctx, false)
		}
		if m.afterRound != nil {
			m.afterRound()
		}
	}
}

// writeHeldRound writes the held tokens due now (all of them with all),
// the longest due first, each in its key's refresh flight; it stops at
// the first failure other than a conflict (the others wait for the next
// round) or when ctx ends. A refresh of a key running meanwhile is joined
// instead (it writes its own rotated token, or holds it): that wait is
// bounded by the refresh's own (Options.Timeout, then its bucket write),
// not by ctx.
func (m *Manager) writeHeldRound(ctx context.Context, all bool) {
	now := m.o.Now()
	type due struct {
		key string
		at  time.Time
	}
	m.mu.Lock()
	var keys []due
	for k := range m.held {
		if e := m.entries[k]; e != nil && e.unsaved && (all || !now.Before(e.saveAt)) {
			keys = append(keys, due{k, e.saveAt})
		}
	}
	m.mu.Unlock()
	slices.SortFunc(keys, func(a, b due) int { return cmp.Compare(a.at.UnixNano(), b.at.UnixNano()) })
	for _, d := range keys {
		if ctx.Err() != nil {
			return
		}
		var err error
		_, _, _ = m.flight.Do(refreshFlight+d.key, func() (any, error) {
			err = m.writeHeld(ctx, d.key, now, all)
			return heldWrite{}, nil // a joined Authorization refreshes next
		})
		if err != nil {
			return
		}
	}
}

// writeHeld writes key's held token, if still held (and, unless all, due
// at now), over the bucket revision it was rotated from: a held token
// never replaces a newer record. It runs in key's refresh flight, so no
// refresh of key on this edge writes meanwhile. It fails (errHeldWrite)
// when the write failed other than by a conflict; a write cut by ctx's
// cancellation is neither counted nor logged (Run's last round follows).
func (m *Manager) writeHeld(ctx context.Context, key string, now time.Time, all bool) error {
	m.mu.Lock()
	e := m.entries[key]
	if e == nil || !e.unsaved || (!all && now.Before(e.saveAt)) {
		m.mu.Unlock()
		return nil // written by a refresh, or replaced by the bucket's record, meanwhile
	}
	sealed, rev := e.sealed, e.rev
	e.saveAt = now.Add(m.o.SaveRetry)
	m.mu.Unlock()
	const op = "retry: write the held rotated refresh token"
	kv, err := m.bucket()
	var nrev uint64
	if err == nil {
		wctx, cancel := context.WithTimeout(ctx, saveRetryTimeout)
		nrev, err = kv.Update(wctx, key, sealed, rev)
		cancel()
	}
	switch {
	case err == nil:
		m.mu.Lock()
		if e := m.entries[key]; e != nil && e.unsaved && bytes.Equal(e.sealed, sealed) {
			e.rev = max(e.rev, nrev)
			m.setUnsaved(key, e, false)
		}
		m.mu.Unlock()
		m.o.Log.Info().Str("signin", key).Str("op", op).Msg("held rotated refresh token written to the sign-in bucket")
		return nil
	case errors.Is(err, jetstream.ErrKeyRevisionMismatch):
		m.count(ReasonConflict)
		m.o.Log.Info().Str("signin", key).Str("op", op).Msg("sign-in changed in the bucket meanwhile: the bucket's record wins over the held one")
		m.takeBucketRecord(ctx, kv, key, sealed)
		return nil
	case errors.Is(ctx.Err(), context.Canceled):
		return ctx.Err()
	default:
		m.count(ReasonStoreError)
		m.o.Log.Warn().Err(err).Str("signin", key).Str("op", op).Msg("sign-in bucket write failed again: the rotated refresh token stays held")
		return fmt.Errorf("%w: %w", errHeldWrite, err)
	}
}

// takeBucketRecord ends the held state of key's token sealed after its
// write conflicted: the bucket's current record replaces it (a refresh
// must not present it over a stale revision); none (a sign-out: no
// record, or its delete marker): the entry is dropped, as the watch
// would; unreadable: the token stays held, its write and this read are
// made again at the next round.
func (m *Manager) takeBucketRecord(ctx context.Context, kv jetstream.KeyValue, key string, sealed []byte) {
	rctx, cancel := context.WithTimeout(ctx, saveRetryTimeout)
	cur, err := kv.Get(rctx, key)
	cancel()
	signedOut := errors.Is(err, jetstream.ErrKeyNotFound)
	if err != nil && !signedOut {
		m.o.Log.Warn().Err(err).Str("signin", key).Str("op", "retry: read the sign-in after a conflict").
			Msg("sign-in bucket unreadable: the rotated refresh token stays held")
		return
	}
	if err == nil {
		if _, oerr := m.o.Key.OpenRecord(key, cur.Value()); oerr != nil {
			cur = nil // not a record of this key: the watch ignores it too
		}
	}
	m.mu.Lock()
	e := m.entries[key]
	if e == nil || !e.unsaved || !bytes.Equal(e.sealed, sealed) {
		m.mu.Unlock()
		return // the watch or a refresh replaced it meanwhile
	}
	if signedOut {
		m.dropEntry(key)
		m.mu.Unlock()
		m.o.OnChange(e.identity, e.backend) // the watch finds no entry to tell of
		return
	}
	m.setUnsaved(key, e, false)
	if cur != nil && cur.Revision() > e.rev {
		e.sealed, e.rev = cur.Value(), cur.Revision()
	}
	m.mu.Unlock()
}

// WriterStopped reports whether Run's writer of held tokens began its
// last round (Run's context ended): a rotated refresh token whose write
// fails from then on is lost.
func (m *Manager) WriterStopped() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.writerStopped
}
