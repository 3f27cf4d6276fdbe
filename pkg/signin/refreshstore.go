package signin

import (
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
	// bucket's record wins.
	ReasonConflict = "conflict"
	// ReasonStoreError: the write itself failed (the bucket unreachable
	// or refusing); the rotated token is held and written again.
	ReasonStoreError = "store_error"
	// ReasonSealError: the rotated token could not be sealed (a record
	// over MaxRecord); it is neither written nor held.
	ReasonSealError = "seal_error"
)

// storeFailed takes a refresh whose rotated token r could not be written
// over the bucket's revision rev (err). A conflict is as before: the
// access token is held, the bucket's record wins. Any other failure
// would lose the rotated token (an authorization server that rotates
// refresh tokens has spent the one in the bucket, so the next refresh
// from it would sign the user out): the record is held in memory over
// rev, unsaved, used by this edge's next refresh and written again by
// Run's writer from SaveRetry on (heldwriter.go); once that writer made
// its last round, the token is logged as lost.
func (m *Manager) storeFailed(key string, r Record, rev uint64, access tokenexchange.Token, start time.Time, err error) {
	until := tokenexchange.UseUntil(access, start, time.Time{})
	const op = "refresh: write the rotated refresh token"
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		m.count(ReasonConflict)
		m.o.Log.Info().Str("signin", key).Str("op", op).
			Msg("sign-in changed in the bucket meanwhile (another edge or a sign-out): the bucket's record wins; the access token is used")
		m.mu.Lock()
		if e := m.entries[key]; e != nil {
			e.access, e.until = access, until
			m.setUnsaved(key, e, false)
		}
		m.mu.Unlock()
		return
	}
	sealed, serr := m.o.Key.SealRecord(r)
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[key]
	if e != nil {
		e.access, e.until = access, until
	}
	switch {
	case serr != nil:
		m.count(ReasonSealError)
		m.o.Log.Warn().Err(serr).Str("signin", key).Str("op", op).Bool("held", false).
			Msg("rotated refresh token cannot be sealed: neither written nor held; the access token is used (the bucket's refresh token may be spent if the server rotates them)")
	case e == nil || e.rev > rev:
		m.count(ReasonStoreError)
		m.o.Log.Warn().Err(err).Str("signin", key).Str("op", op).Bool("held", false).
			Msg("sign-in bucket write failed; the rotated refresh token is not held (the sign-in left this edge's memory, or a newer record of the bucket came meanwhile); the access token is used")
	case m.writerStopped:
		// Run's writer made its last writes: this edge's refreshes still
		// use the token, but it is lost at the edge's exit.
		m.count(ReasonStoreError)
		e.sealed, e.rev = sealed, rev
		m.setUnsaved(key, e, true)
		m.o.Log.Warn().Err(err).Str("signin", key).Str("op", op).Bool("held", false).Bool("lost", true).
			Msg("sign-in bucket write failed after the writer of held tokens stopped: the rotated refresh token is lost (the bucket keeps its spent predecessor); the access token is used")
	default:
		m.count(ReasonStoreError)
		e.sealed, e.rev, e.saveAt = sealed, rev, m.o.Now().Add(m.o.SaveRetry)
		m.setUnsaved(key, e, true)
		m.o.Log.Warn().Err(err).Str("signin", key).Str("op", op).Bool("held", true).
			Msg("sign-in bucket write failed: the rotated refresh token is held in memory and written again in the background")
	}
}

// setUnsaved marks key's entry e unsaved or not, keeping the held keys
// and the Unsaved gauge; m.mu is held.
func (m *Manager) setUnsaved(key string, e *entry, unsaved bool) {
	e.unsaved = unsaved
	if unsaved {
		m.held[key] = struct{}{}
	} else {
		delete(m.held, key)
	}
	m.gaugeUnsaved()
}

// dropEntry forgets key's entry; m.mu is held.
func (m *Manager) dropEntry(key string) {
	delete(m.entries, key)
	delete(m.held, key)
	m.gaugeUnsaved()
}

func (m *Manager) gaugeUnsaved() {
	if m.o.Unsaved != nil {
		m.o.Unsaved.Set(float64(len(m.held)))
	}
}

func (m *Manager) count(reason string) {
	if m.o.StoreFailures != nil {
		m.o.StoreFailures.WithLabelValues(reason).Inc()
	}
}
