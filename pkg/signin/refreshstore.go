package signin

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/tokenexchange"
)

// Reasons a rotated refresh token's bucket write failed (the
// StoreFailures label).
const (
	// ReasonConflict: the bucket's record changed since this edge read
	// it (another edge rotated it first, or signed the user out); the
	// watch brings the bucket's record.
	ReasonConflict = "conflict"
	// ReasonStoreError: the write itself failed (the bucket unreachable
	// or refusing); the rotated token is held and written again.
	ReasonStoreError = "store_error"
)

// saveRetryPause is the least time between two writes of a held rotated
// refresh token; saveRetryTimeout bounds each (the caller whose use
// triggers it waits for it).
const (
	saveRetryPause   = 10 * time.Second
	saveRetryTimeout = 2 * time.Second
)

// saveDue reports whether e holds a rotated refresh token to write again
// now.
func (e *entry) saveDue(now time.Time) bool { return e.unsaved && !now.Before(e.saveAt) }

// storeFailed takes a refresh whose rotated token r could not be written
// over the bucket's revision rev (err). A conflict is as before: the
// access token is held, the bucket's record wins. Any other failure
// would lose the rotated token (an authorization server that rotates
// refresh tokens has spent the one in the bucket, so the next refresh
// from it would sign the user out): the record is held in memory over
// rev, unsaved, used by this edge's next refresh and written again at the
// first use after saveRetryPause (saveHeld).
func (m *Manager) storeFailed(key string, r Record, rev uint64, access tokenexchange.Token, start time.Time, err error) {
	until := tokenexchange.UseUntil(access, start, time.Time{})
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		m.count(ReasonConflict)
		m.o.Log.Info().Str("signin", key).Str("op", "refresh: write the rotated refresh token").
			Msg("sign-in changed in the bucket meanwhile (another edge or a sign-out): the bucket's record wins; the access token is used")
		m.mu.Lock()
		if e := m.entries[key]; e != nil {
			e.access, e.until, e.unsaved = access, until, false
		}
		m.mu.Unlock()
		return
	}
	m.count(ReasonStoreError)
	sealed, serr := m.o.Key.SealRecord(r)
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[key]
	held := serr == nil && e != nil && e.rev <= rev
	if e != nil {
		e.access, e.until = access, until
	}
	if held {
		e.sealed, e.rev, e.unsaved, e.saveAt = sealed, rev, true, m.o.Now().Add(saveRetryPause)
	}
	m.o.Log.Warn().Err(err).Str("signin", key).Str("op", "refresh: write the rotated refresh token").Bool("held", held).
		Msg("sign-in bucket write failed: the rotated refresh token is held in memory and written again at a later use (held false: not held, the bucket's token is spent at a rotating server)")
}

// saveHeld writes key's held rotated refresh token sealed over the
// bucket's revision rev (the caller runs it in key's refresh flight, so
// no other write of key runs meanwhile).
func (m *Manager) saveHeld(ctx context.Context, key string, sealed []byte, rev uint64) {
	kv, err := m.bucket()
	var nrev uint64
	if err == nil {
		wctx, cancel := context.WithTimeout(ctx, saveRetryTimeout)
		nrev, err = kv.Update(wctx, key, sealed, rev)
		cancel()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[key]
	ours := e != nil && e.unsaved && bytes.Equal(e.sealed, sealed)
	op := "retry: write the held rotated refresh token"
	switch {
	case err == nil:
		if ours {
			e.rev, e.unsaved = max(e.rev, nrev), false
		}
		m.o.Log.Info().Str("signin", key).Str("op", op).Msg("held rotated refresh token written to the sign-in bucket")
	case errors.Is(err, jetstream.ErrKeyRevisionMismatch):
		if ours {
			e.unsaved = false
		}
		m.count(ReasonConflict)
		m.o.Log.Info().Str("signin", key).Str("op", op).Msg("sign-in changed in the bucket meanwhile: the bucket's record wins over the held one")
	default:
		m.count(ReasonStoreError)
		m.o.Log.Warn().Err(err).Str("signin", key).Str("op", op).Msg("sign-in bucket write failed again: the rotated refresh token stays held")
	}
}

func (m *Manager) count(reason string) {
	if m.o.StoreFailures != nil {
		m.o.StoreFailures.WithLabelValues(reason).Inc()
	}
}
