package rebuild

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"golang.org/x/sync/singleflight"

	"github.com/fleetgate/fleetgate/pkg/edge/calls"
	"github.com/fleetgate/fleetgate/pkg/edge/evidence"
	"github.com/fleetgate/fleetgate/pkg/edge/ledger"
	"github.com/fleetgate/fleetgate/pkg/edge/records"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/edge/sessionserver"

	"github.com/fleetgate/fleetgate/pkg/mcpwire"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// Options configure a Rebuilder; all but Log are required.
type Options struct {
	Group          string // the group served: a record of another is not found
	IdentityHeader string // passed on to the replayed requests ("" for none)
	// MaxInitializeBytes bounds a stored initialize's params, as a
	// client's (admission.Options).
	MaxInitializeBytes int64
	Sessions           *session.Registry
	Records            *records.Recorder
	Ledger             *ledger.Ledger // the adopted record's evidence
	// Identity is the caller's identity of a request (the gate's).
	Identity func(*http.Request) string
	// Owners is the key of the owners the records hold; nil: unkeyed. A
	// record an edge without the key wrote (sessionstore.OwnerKey.Unkeyed)
	// is its owner's too, and its owner is rewritten keyed when the
	// session is rebuilt here.
	Owners *sessionstore.OwnerKey
	// Refusals counts identity refusals by reason (owner_mismatch).
	Refusals *prometheus.CounterVec
	Log      zerolog.Logger
	Registry prometheus.Registerer
}

// Rebuilder rebuilds here the sessions held by another edge (or by none).
type Rebuilder struct {
	o                Options
	flights          singleflight.Group // rebuilds, by id and owner
	rehydrated       prometheus.Counter
	rehydrateSeconds prometheus.Histogram
}

// New returns the Rebuilder of o, its collectors registered on
// o.Registry.
func New(o Options) *Rebuilder {
	b := &Rebuilder{o: o,
		rehydrated: prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetgate_edge_sessions_rehydrated_total",
			Help: "Sessions created on another edge that this edge rebuilt from their stored record."}),
		rehydrateSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "fleetgate_edge_rehydration_seconds",
			Help:    "Time to rebuild a session from its stored record (read, replayed initialize, takeover write).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)})}
	o.Registry.MustRegister(b.rehydrated, b.rehydrateSeconds)
	return b
}

// ReplayHeader marks the requests an edge makes to its own go-sdk handler
// while rebuilding a session (they never come from a client: the edge
// refuses a request that has it).
const ReplayHeader = "X-Fleetgate-Replay"

// ErrForeign is a session presented by an identity other than its owner's.
var ErrForeign = errors.New("session belongs to another identity")

// DeleteStored ends a session this edge does not hold.
func (b *Rebuilder) DeleteStored(w http.ResponseWriter, r *http.Request, sid, owner string) {
	rec, _, err := b.o.Records.Store().Get(r.Context(), sid)
	switch {
	case errors.Is(err, sessionstore.ErrNotFound):
		http.Error(w, "session not found", http.StatusNotFound)
	case err != nil:
		http.Error(w, "session store unavailable", http.StatusServiceUnavailable)
	case rec.Owner != owner && !b.o.Owners.Unkeyed(rec.Owner, b.o.Identity(r)):
		b.o.Refusals.WithLabelValues("owner_mismatch").Inc()
		http.Error(w, "session belongs to another identity", http.StatusForbidden)
	default:
		b.o.Records.Deleted(r.Context(), sid, nil)
		w.WriteHeader(http.StatusNoContent)
	}
}

// Rebuild rebuilds session sid from its stored record when owner owns
// it, replaying its initialize through h, the go-sdk's handler of the
// session-based protocol. Concurrent requests for one session and owner
// share one rebuild.
func (b *Rebuilder) Rebuild(h http.Handler, r *http.Request, sid, owner string) (*session.Session, error) {
	v, err, _ := b.flights.Do(sid+"\x00"+owner, func() (any, error) {
		if s := b.o.Sessions.Lookup(sid); s != nil && s.Record().Phase() == evidence.PhaseLive {
			return s, nil
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
		defer cancel()
		rec, rev, err := b.o.Records.Store().Get(ctx, sid)
		if err != nil {
			return nil, err
		}
		if rec.Owner != owner {
			if !b.o.Owners.Unkeyed(rec.Owner, b.o.Identity(r)) {
				return nil, fmt.Errorf("session %q: %w", sid, ErrForeign)
			}
			rec.Owner = owner // migrated: the takeover writes it keyed
		}
		if rec.Group != b.o.Group {
			return nil, fmt.Errorf("session %q of group %q: %w", sid, rec.Group, sessionstore.ErrNotFound)
		}
		s, err := b.replay(ctx, h, r, rec)
		if err != nil {
			return nil, err
		}
		b.o.Ledger.Adopt(s, rec, rev, time.Now())
		if err := b.o.Records.Write(s, true); err != nil {
			b.o.Log.Warn().Err(err).Str("session_hash", sessionstore.IDHash(sid)).Msg("rehydrated session's record not taken over")
		}
		b.rehydrated.Inc()
		b.rehydrateSeconds.Observe(time.Since(start).Seconds())
		b.o.Log.Info().Str("session_hash", sessionstore.IDHash(sid)).Str("from_edge", rec.Edge).Dur("took", time.Since(start)).Msg("session rehydrated")
		return s, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*session.Session), nil
}

// replay rebuilds the session by passing its stored initialize, then
// notifications/initialized, through the go-sdk's own handler (R1): the
// session server's fixed id makes it the very session the client holds.
func (b *Rebuilder) replay(ctx context.Context, h http.Handler, orig *http.Request, rec *sessionstore.Record) (*session.Session, error) {
	hd := &sessionserver.Holder{ID: rec.ID, Kind: session.KindSession, Ident: b.o.Identity(orig)}
	b.o.Records.Replaying.Store(rec.ID, struct{}{})
	defer b.o.Records.Replaying.Delete(rec.ID)
	params := rec.InitializeParams
	if len(params) == 0 {
		params = []byte(`{}`)
	}
	// The record came from the bus: its params are bounded like a
	// client's initialize before any parser sees them.
	if int64(len(params)) > b.o.MaxInitializeBytes {
		return nil, fmt.Errorf("session %q: stored initialize params over %d bytes", rec.ID, b.o.MaxInitializeBytes)
	}
	if err := mcpwire.Check(params, mcpwire.MaxDepth); err != nil {
		return nil, fmt.Errorf("session %q: stored initialize params: %w", rec.ID, err)
	}
	body := `{"jsonrpc":"2.0","id":"fleetgate-replay","method":"initialize","params":` + string(params) + `}`
	code, hdr := b.replayPost(sessionserver.WithHolder(ctx, hd), h, orig, "", "", body)
	if hd.Session == nil || code != http.StatusOK || hdr.Get("Mcp-Session-Id") != rec.ID {
		if hd.Session != nil {
			hd.Session.Close()
			b.o.Sessions.Forget(hd.Session)
		}
		return nil, fmt.Errorf("session %q: replay initialize: status %d, session id %q", rec.ID, code, hdr.Get("Mcp-Session-Id"))
	}
	b.o.Sessions.Track(hd.Session)
	code, _ = b.replayPost(ctx, h, orig, rec.ID, rec.ProtocolVersion, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if code != http.StatusAccepted {
		hd.Session.Close()
		return nil, fmt.Errorf("session %q: replay notifications/initialized: status %d", rec.ID, code)
	}
	if rec.LogLevel != "" { // a known level (the store checked it): no escaping needed
		code, _ = b.replayPost(ctx, h, orig, rec.ID, rec.ProtocolVersion,
			`{"jsonrpc":"2.0","id":"fleetgate-replay-level","method":"logging/setLevel","params":{"level":"`+rec.LogLevel+`"}}`)
		if code != http.StatusOK {
			hd.Session.Close()
			return nil, fmt.Errorf("session %q: replay logging/setLevel: status %d", rec.ID, code)
		}
	}
	restoreTasks(hd.Session, rec.Tasks)     // the edge's own table, no replay
	for i, uri := range rec.Subscriptions { // bounded by the store
		q, _ := json.Marshal(uri) // a string: it encodes
		code, _ = b.replayPost(ctx, h, orig, rec.ID, rec.ProtocolVersion,
			fmt.Sprintf(`{"jsonrpc":"2.0","id":"fleetgate-replay-sub-%d","method":"resources/subscribe","params":{"uri":%s}}`, i, q))
		if code != http.StatusOK {
			// The resource may have gone meanwhile: the session goes on
			// without the subscription, as a client's would fail now.
			b.o.Log.Info().Str("session_hash", sessionstore.IDHash(rec.ID)).Int("status", code).Msg("stored subscription not renewed")
		}
	}
	return hd.Session, nil
}

// replayPost sends one replayed message to the go-sdk handler, keeping the
// original request's Host (DNS-rebinding protection) and identity.
func (b *Rebuilder) replayPost(ctx context.Context, h http.Handler, orig *http.Request, sid, version, body string) (int, http.Header) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, orig.URL.Path, strings.NewReader(body))
	if err != nil {
		return 0, http.Header{}
	}
	req.Host, req.RemoteAddr = orig.Host, orig.RemoteAddr
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(ReplayHeader, "1")
	if b.o.IdentityHeader != "" {
		req.Header.Set(b.o.IdentityHeader, orig.Header.Get(b.o.IdentityHeader))
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	if version != "" {
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	w := &replayWriter{header: http.Header{}}
	h.ServeHTTP(w, req)
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.code, w.header
}

// replayWriter collects the go-sdk's answer to a replayed message.
type replayWriter struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (w *replayWriter) Header() http.Header { return w.header }
func (w *replayWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.body.Write(b)
}
func (w *replayWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}
func (w *replayWriter) Flush() {}

// restoreTasks fills the table of s, rebuilt here from its stored record,
// with the record's tasks.
func restoreTasks(s *session.Session, refs []sessionstore.TaskRef) {
	if len(refs) == 0 {
		return
	}
	t := s.Tasks(true)
	for _, r := range refs { // bounded and checked by the store
		t.Add(calls.TaskID(r.Backend, r.ID), r)
	}
}
