package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/convergence"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// SessionJSON is one session record as the dashboard shows it: no owner,
// no initialize params (the client's name and version only), no evidence
// (its verdict only).
type SessionJSON struct {
	ID                string `json:"id"`
	Edge              string `json:"edge"`
	Group             string `json:"group"`
	Mode              string `json:"mode"`
	ProtocolVersion   string `json:"protocol_version"`
	Client            string `json:"client,omitempty"`
	AppliedGeneration uint64 `json:"applied_generation"`
	Digest            string `json:"digest,omitempty"`
	Verdict           string `json:"verdict"`
	VerdictReason     string `json:"verdict_reason,omitempty"`
	// Class is the verdict, or idle (Class), when the session is served.
	Class     string    `json:"class,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	LastSeen  time.Time `json:"last_seen"`
}

// maxField bounds every string taken from a record, in runes.
const maxField = 128

// ErrRecord is wrapped by the errors of Summarize.
var ErrRecord = errors.New("session record")

// Summarize reads the stored value of the session record under key (a
// session id) into its dashboard form. The value is hostile: it is
// bounded (sessionstore.MaxRecordSize), must name the key's session, and
// its strings are clipped.
func Summarize(key string, value []byte) (SessionJSON, error) {
	if len(value) > sessionstore.MaxRecordSize {
		return SessionJSON{}, fmt.Errorf("%w %q: %d bytes, more than %d", ErrRecord, clip(key, 64), len(value), sessionstore.MaxRecordSize)
	}
	if err := sessionstore.ValidateID(key); err != nil {
		return SessionJSON{}, fmt.Errorf("%w: %w", ErrRecord, err)
	}
	var rec sessionstore.Record
	if err := json.Unmarshal(value, &rec); err != nil {
		return SessionJSON{}, fmt.Errorf("%w %q: decode: %w", ErrRecord, key, err)
	}
	if rec.ID != key {
		return SessionJSON{}, fmt.Errorf("%w %q: the record names session %q", ErrRecord, key, clip(rec.ID, 64))
	}
	verdict, reason := convergence.Explain(rec.Convergence)
	return SessionJSON{
		ID: rec.ID, Edge: clip(rec.Edge, maxField), Group: clip(rec.Group, maxField), Mode: clip(string(rec.Mode), 16),
		ProtocolVersion: clip(rec.ProtocolVersion, 32), Client: clientOf(rec.InitializeParams),
		AppliedGeneration: rec.AppliedGeneration, Digest: clip(rec.RegistryDigest, 80),
		Verdict: string(verdict), VerdictReason: clip(reason, maxSummary),
		CreatedAt: jsonTime(rec.CreatedAt), LastSeen: jsonTime(rec.LastSeen),
	}, nil
}

// clientOf is "name version" of the initialize params' clientInfo.
func clientOf(params json.RawMessage) string {
	var p struct {
		ClientInfo struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"clientInfo"`
	}
	if len(params) == 0 || json.Unmarshal(params, &p) != nil {
		return ""
	}
	s := clip(p.ClientInfo.Name, 64)
	if v := clip(p.ClientInfo.Version, 32); v != "" {
		s += " " + v
	}
	return s
}

// jsonTime is t, or zero when JSON cannot carry it.
func jsonTime(t time.Time) time.Time {
	if y := t.Year(); y < 0 || y > 9999 {
		return time.Time{}
	}
	return t.UTC()
}

// sessionIndex holds the sessions of the bucket (up to max of them) and
// the changes not yet pushed to the streams.
type sessionIndex struct {
	max int

	mu        sync.Mutex
	live      map[string]SessionJSON
	untracked int // live records beyond max, counted since the last scan
	ready     bool
	scanned   time.Time
	changed   map[string]bool // id -> removed
	more      bool            // changes beyond maxChanged since the last push
	notify    chan struct{}

	// Unreadable records are reported at most once per reportEvery, with
	// the number left unreported since.
	lastReport time.Time
	unreported int
}

// reportEvery throttles the reports of unreadable records (anyone who
// may write records could otherwise fill the log).
const reportEvery = 10 * time.Second

func (x *sessionIndex) bad(report func(error), err error) {
	x.mu.Lock()
	now := time.Now()
	if now.Sub(x.lastReport) < reportEvery {
		x.unreported++
		x.mu.Unlock()
		return
	}
	n := x.unreported
	x.lastReport, x.unreported = now, 0
	x.mu.Unlock()
	if n > 0 {
		err = fmt.Errorf("%w (and %d more unreadable records since the last report)", err, n)
	}
	report(err)
}

// maxChanged bounds the sessions one FrameSessions carries.
const maxChanged = 64

func newSessionIndex(max int) *sessionIndex {
	return &sessionIndex{max: max, live: map[string]SessionJSON{}, changed: map[string]bool{}, notify: make(chan struct{}, 1)}
}

// mark records a change of id; the caller holds mu.
func (x *sessionIndex) mark(id string, removed bool) {
	if _, ok := x.changed[id]; !ok && len(x.changed) >= maxChanged {
		x.more = true
	} else {
		x.changed[id] = removed
	}
	select {
	case x.notify <- struct{}{}:
	default:
	}
}

// put adds or replaces a session.
func (x *sessionIndex) put(s SessionJSON) {
	x.mu.Lock()
	defer x.mu.Unlock()
	old, ok := x.live[s.ID]
	switch {
	case ok && old == s:
		return
	case !ok && len(x.live) >= x.max:
		x.untracked++
		return
	}
	x.live[s.ID] = s
	x.mark(s.ID, false)
}

// remove forgets a session.
func (x *sessionIndex) remove(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.live[id]; !ok {
		return
	}
	delete(x.live, id)
	x.mark(id, true)
}

// replace adopts the result of a full scan, marking what differs.
func (x *sessionIndex) replace(fresh map[string]SessionJSON, untracked int, at time.Time) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for id, s := range fresh {
		if old, ok := x.live[id]; !ok || old != s {
			x.mark(id, false)
		}
	}
	for id := range x.live {
		if _, ok := fresh[id]; !ok {
			x.mark(id, true)
		}
	}
	x.live, x.untracked, x.ready, x.scanned = fresh, untracked, true, at
	select {
	case x.notify <- struct{}{}:
	default:
	}
}

// run follows the bucket: each pass lists it (a fresh index), then
// applies changes as they come until the next rescan.
func (x *sessionIndex) run(ctx context.Context, kv jetstream.KeyValue, rescan, retry time.Duration, report func(error)) error {
	for {
		err := x.pass(ctx, kv, rescan, report)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			continue
		}
		report(fmt.Errorf("dashboard: session records: %w", err))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(retry):
		}
	}
}

// pass is one watch of the bucket, ended by the rescan period (nil) or a
// failure.
func (x *sessionIndex) pass(ctx context.Context, kv jetstream.KeyValue, rescan time.Duration, report func(error)) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := kv.WatchAll(wctx)
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer func() { _ = w.Stop() }()
	fresh, untracked := map[string]SessionJSON{}, 0
	var next <-chan time.Time // armed once the listing is complete
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-next:
			return nil
		case e, ok := <-w.Updates():
			switch {
			case !ok:
				return errors.New("watch ended")
			case e == nil: // the listing is complete
				x.replace(fresh, untracked, time.Now())
				fresh, next = nil, time.After(rescan)
			case fresh != nil:
				if e.Operation() != jetstream.KeyValuePut {
					delete(fresh, e.Key())
					continue
				}
				s, err := Summarize(e.Key(), e.Value())
				switch {
				case err != nil:
					x.bad(report, err)
				case len(fresh) >= x.max:
					untracked++
				default:
					fresh[s.ID] = s
				}
			case e.Operation() != jetstream.KeyValuePut:
				x.remove(e.Key())
			default:
				s, err := Summarize(e.Key(), e.Value())
				if err != nil {
					x.bad(report, err)
					continue
				}
				x.put(s)
			}
		}
	}
}

// SessionsFrame is the data of FrameSessions: the sessions that changed
// since the last frame (at most 64; More means there were more: reload),
// those removed, and the total.
type SessionsFrame struct {
	Total     int           `json:"total"`
	Untracked int           `json:"untracked,omitempty"`
	Changed   []SessionJSON `json:"changed"`
	Removed   []string      `json:"removed"`
	More      bool          `json:"more,omitempty"`
}

// take returns the pending changes, classed at now, and clears them.
func (x *sessionIndex) take(now time.Time, idleAfter time.Duration) (SessionsFrame, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.changed) == 0 && !x.more {
		return SessionsFrame{}, false
	}
	f := SessionsFrame{Total: len(x.live) + x.untracked, Untracked: x.untracked, More: x.more,
		Changed: []SessionJSON{}, Removed: []string{}}
	for id, removed := range x.changed {
		if s, ok := x.live[id]; ok && !removed {
			s.Class = Class(s.Verdict, s.LastSeen, now, idleAfter)
			f.Changed = append(f.Changed, s)
		} else {
			f.Removed = append(f.Removed, id)
		}
	}
	clear(x.changed)
	x.more = false
	return f, true
}

// pushSessions sends the pending changes at most once per SessionsEvery.
func (d *Dashboard) pushSessions(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-d.sessions.notify:
		}
		if f, ok := d.sessions.take(d.now(), d.o.IdleAfter); ok {
			d.hub.broadcast(frame(FrameSessions, 0, f))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(d.o.SessionsEvery):
		}
	}
}
