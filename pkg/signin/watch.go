package signin

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Run attaches the bucket (waiting for it) and follows it until ctx
// ends: every edge's sign-ins and sign-outs reach this edge's memory (a
// sign-out drops the access token) and OnChange. A watch that fails or
// ends is made again (after a pause from watchRetryFirst doubling to
// watchRetryMax). Meanwhile it writes the held rotated refresh tokens
// again (heldwriter.go), a last time when ctx ends (bounded by
// finalSaveTimeout), and returns nil after that.
func (m *Manager) Run(ctx context.Context) error {
	kv, err := m.attach(ctx)
	if err != nil {
		return nil // ctx ended
	}
	m.kv.Store(&kv)
	var writer sync.WaitGroup
	writer.Go(func() { m.writeHeldLoop(ctx) })
	defer writer.Wait()
	pause, failing, caughtUp := watchRetryFirst, false, false
	for {
		delivered, err := m.follow(ctx, kv, caughtUp)
		if ctx.Err() != nil {
			return nil
		}
		caughtUp = caughtUp || delivered
		if delivered { // the failed watch had worked: a new streak
			pause, failing = watchRetryFirst, false
		}
		if !failing {
			failing = true
			m.o.Log.Error().Err(err).Str("op", "watch the sign-in bucket").
				Msg("sign-in bucket not followed: watched again until it works (the held rotated refresh tokens are still written)")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(pause):
		}
		pause = min(2*pause, watchRetryMax)
	}
}

// The pauses between two watches of the bucket, after one failed or
// ended: watchRetryFirst, doubling up to watchRetryMax.
const (
	watchRetryFirst = time.Second
	watchRetryMax   = 30 * time.Second
)

// errWatchEnded: the bucket's watch ended by itself.
var errWatchEnded = errors.New("the watch ended")

// follow watches the bucket, applying its updates, until ctx ends or the
// watch fails or ends; delivered: the watch brought the bucket's content.
// A watch made again (caughtUp: an earlier one brought it) brings the
// content again: what changed meanwhile is applied and told (OnChange).
func (m *Manager) follow(ctx context.Context, kv jetstream.KeyValue, caughtUp bool) (delivered bool, err error) {
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return false, fmt.Errorf("sign-ins: watch %s: %w", m.o.Bucket, err)
	}
	defer func() { _ = w.Stop() }()
	var seen map[string]bool // of a watch made again: the keys of its initial content
	if caughtUp {
		seen = map[string]bool{}
	}
	for {
		select {
		case <-ctx.Done():
			return delivered, nil
		case u, ok := <-w.Updates():
			if !ok {
				return delivered, fmt.Errorf("sign-ins: watch %s: %w", m.o.Bucket, errWatchEnded)
			}
			if u == nil { // the end of the initial content
				if !delivered {
					delivered = true
					m.readyOnce.Do(func() { close(m.ready) })
					if seen != nil {
						m.dropVanished(ctx, kv, seen)
					}
				}
				continue
			}
			if !delivered && seen != nil {
				seen[u.Key()] = true
			}
			m.apply(u, caughtUp || delivered)
		}
	}
}

// dropVanished ends the sign-ins this edge holds whose records left the
// bucket while it was not watched with nothing in their place (the
// initial content of the new watch, seen, has no update of their key): a
// delete marker evicted with them, or an expiry. Each is looked up first
// (a record written since the watch began is kept); one whose token is
// held unsaved is left to the writer, whose conditional write then finds
// the record gone.
func (m *Manager) dropVanished(ctx context.Context, kv jetstream.KeyValue, seen map[string]bool) {
	m.mu.Lock()
	var keys []string
	for key, e := range m.entries {
		if !seen[key] && e.sealed != nil && !e.unsaved {
			keys = append(keys, key)
		}
	}
	m.mu.Unlock()
	for _, key := range keys {
		gctx, cancel := context.WithTimeout(ctx, vanishedLookup)
		_, err := kv.Get(gctx, key)
		cancel()
		if !errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // there, or not known: the watch goes on with it
		}
		m.mu.Lock()
		e := m.entries[key]
		if e == nil || e.unsaved || seen[key] {
			m.mu.Unlock()
			continue
		}
		m.dropEntry(key)
		m.mu.Unlock()
		m.o.OnChange(e.identity, e.backend)
	}
}

// vanishedLookup bounds the read of one sign-in's record after a watch
// was made again.
const vanishedLookup = 2 * time.Second

// apply takes one update of the bucket.
func (m *Manager) apply(u jetstream.KeyValueEntry, notify bool) {
	key := u.Key()
	m.mu.Lock()
	e := m.entries[key]
	if u.Operation() != jetstream.KeyValuePut {
		if e != nil && e.rev > u.Revision() { // a sign-in made after it (a watch made again replays it)
			m.mu.Unlock()
			return
		}
		m.dropEntry(key)
		m.mu.Unlock()
		if e != nil && notify {
			m.o.OnChange(e.identity, e.backend)
		}
		return
	}
	if e != nil && e.rev >= u.Revision() {
		m.mu.Unlock()
		return // our own write, already held
	}
	m.mu.Unlock()
	r, err := m.o.Key.OpenRecord(key, u.Value())
	if err != nil {
		return // sealed under another key, or altered: not a sign-in of ours
	}
	m.mu.Lock()
	if e = m.entries[key]; e == nil {
		if len(m.entries) >= m.o.MaxEntries {
			m.mu.Unlock()
			return
		}
		e = &entry{identity: r.Identity, backend: r.Backend}
		m.entries[key] = e
	}
	fresh := e.sealed == nil
	e.sealed, e.rev = u.Value(), u.Revision()
	m.setUnsaved(key, e, false) // the bucket's newer record wins over an unsaved one
	m.signal()
	m.mu.Unlock()
	if fresh && notify {
		m.o.OnChange(r.Identity, r.Backend)
	}
}
