package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/evidence"
	"github.com/fleetgate/fleetgate/pkg/edge/fastpath"
	"github.com/fleetgate/fleetgate/pkg/edge/session"

	"github.com/fleetgate/fleetgate/pkg/mcpwire"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// replayHeader marks the requests an edge makes to its own go-sdk handler
// while rebuilding a session (they never come from a client).
const replayHeader = "X-Fleetgate-Replay"

// errForeign is a session presented by an identity other than its owner's.
var errForeign = errors.New("session belongs to another identity")

// identity is the caller's identity: the go-sdk TokenInfo's UserID when an
// auth middleware set one, else the Options.IdentityHeader value. ok is
// false when an identity header is configured and the request lacks it.
func (e *Edge) identity(r *http.Request) (id string, ok bool) {
	return e.adm.gate.Identity(r.Header, tokenUserID(r))
}

// deleteStored ends a session this edge does not hold.
func (e *Edge) deleteStored(w http.ResponseWriter, r *http.Request, sid, owner string) {
	rec, _, err := e.recs.Store().Get(r.Context(), sid)
	switch {
	case errors.Is(err, sessionstore.ErrNotFound):
		http.Error(w, "session not found", http.StatusNotFound)
	case err != nil:
		http.Error(w, "session store unavailable", http.StatusServiceUnavailable)
	case rec.Owner != owner:
		e.rm.refusals.WithLabelValues("owner_mismatch").Inc()
		http.Error(w, "session belongs to another identity", http.StatusForbidden)
	default:
		e.recs.Deleted(r.Context(), sid, nil)
		w.WriteHeader(http.StatusNoContent)
	}
}

// rehydrate rebuilds session sid from its stored record when owner owns
// it. Concurrent requests for one session and owner share one rebuild.
func (e *Edge) rehydrate(h http.Handler, r *http.Request, sid, owner string) (*session.Session, error) {
	v, err, _ := e.flights.Do(sid+"\x00"+owner, func() (any, error) {
		if s := e.reg.Lookup(sid); s != nil && s.Record().Phase() == evidence.PhaseLive {
			return s, nil
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
		defer cancel()
		rec, rev, err := e.recs.Store().Get(ctx, sid)
		if err != nil {
			return nil, err
		}
		if rec.Owner != owner {
			return nil, fmt.Errorf("session %q: %w", sid, errForeign)
		}
		if rec.Group != e.opts.Group {
			return nil, fmt.Errorf("session %q of group %q: %w", sid, rec.Group, sessionstore.ErrNotFound)
		}
		s, err := e.replay(ctx, h, r, rec)
		if err != nil {
			return nil, err
		}
		e.adopt(s, rec, rev, time.Now())
		if err := e.recs.Write(s, true); err != nil {
			e.log.Warn().Err(err).Str("session_hash", sessionstore.IDHash(sid)).Msg("rehydrated session's record not taken over")
		}
		e.rm.rehydrated.Inc()
		e.rm.rehydrateSeconds.Observe(time.Since(start).Seconds())
		e.log.Info().Str("session_hash", sessionstore.IDHash(sid)).Str("from_edge", rec.Edge).Dur("took", time.Since(start)).Msg("session rehydrated")
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
func (e *Edge) replay(ctx context.Context, h http.Handler, orig *http.Request, rec *sessionstore.Record) (*session.Session, error) {
	ident, _ := e.identity(orig)
	hd := &holder{id: rec.ID, kind: session.KindSession, ident: ident}
	e.recs.Replaying.Store(rec.ID, struct{}{})
	defer e.recs.Replaying.Delete(rec.ID)
	params := rec.InitializeParams
	if len(params) == 0 {
		params = []byte(`{}`)
	}
	// The record came from the bus: its params are bounded like a
	// client's initialize before any parser sees them.
	if int64(len(params)) > e.adm.gate.Options().MaxInitializeBytes {
		return nil, fmt.Errorf("session %q: stored initialize params over %d bytes", rec.ID, e.adm.gate.Options().MaxInitializeBytes)
	}
	if err := mcpwire.Check(params, mcpwire.MaxDepth); err != nil {
		return nil, fmt.Errorf("session %q: stored initialize params: %w", rec.ID, err)
	}
	body := `{"jsonrpc":"2.0","id":"fleetgate-replay","method":"initialize","params":` + string(params) + `}`
	code, hdr := e.replayPost(context.WithValue(ctx, holderKey{}, hd), h, orig, "", "", body)
	if hd.s == nil || code != http.StatusOK || hdr.Get("Mcp-Session-Id") != rec.ID {
		if hd.s != nil {
			hd.s.Close()
			e.reg.Forget(hd.s)
		}
		return nil, fmt.Errorf("session %q: replay initialize: status %d, session id %q", rec.ID, code, hdr.Get("Mcp-Session-Id"))
	}
	e.reg.Track(hd.s)
	code, _ = e.replayPost(ctx, h, orig, rec.ID, rec.ProtocolVersion, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if code != http.StatusAccepted {
		hd.s.Close()
		return nil, fmt.Errorf("session %q: replay notifications/initialized: status %d", rec.ID, code)
	}
	if rec.LogLevel != "" { // a known level (the store checked it): no escaping needed
		code, _ = e.replayPost(ctx, h, orig, rec.ID, rec.ProtocolVersion,
			`{"jsonrpc":"2.0","id":"fleetgate-replay-level","method":"logging/setLevel","params":{"level":"`+rec.LogLevel+`"}}`)
		if code != http.StatusOK {
			hd.s.Close()
			return nil, fmt.Errorf("session %q: replay logging/setLevel: status %d", rec.ID, code)
		}
	}
	restoreTasks(hd.s, rec.Tasks)           // tasks.go: the edge's own table, no replay
	for i, uri := range rec.Subscriptions { // bounded by the store
		q, _ := json.Marshal(uri) // a string: it encodes
		code, _ = e.replayPost(ctx, h, orig, rec.ID, rec.ProtocolVersion,
			fmt.Sprintf(`{"jsonrpc":"2.0","id":"fleetgate-replay-sub-%d","method":"resources/subscribe","params":{"uri":%s}}`, i, q))
		if code != http.StatusOK {
			// The resource may have gone meanwhile: the session goes on
			// without the subscription, as a client's would fail now.
			e.log.Info().Str("session_hash", sessionstore.IDHash(rec.ID)).Int("status", code).Msg("stored subscription not renewed")
		}
	}
	return hd.s, nil
}

// replayPost sends one replayed message to the go-sdk handler, keeping the
// original request's Host (DNS-rebinding protection) and identity.
func (e *Edge) replayPost(ctx context.Context, h http.Handler, orig *http.Request, sid, version, body string) (int, http.Header) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, orig.URL.Path, strings.NewReader(body))
	if err != nil {
		return 0, http.Header{}
	}
	req.Host, req.RemoteAddr = orig.Host, orig.RemoteAddr
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(replayHeader, "1")
	if e.opts.IdentityHeader != "" {
		req.Header.Set(e.opts.IdentityHeader, orig.Header.Get(e.opts.IdentityHeader))
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

// ownsStream reports whether the edge serves this GET of s itself: the
// go-sdk would accept it the same way (a bad Accept, Host or protocol
// version header, more than one Last-Event-ID, or an id longer than the
// edge's own are left to it, so the answers are its).
func ownsStream(r *http.Request, s *session.Session) bool {
	if s.Kind() != session.KindSession || len(r.Header.Values("Last-Event-ID")) > 1 || len(r.Header.Get("Last-Event-ID")) > maxEventID ||
		!fastpath.AcceptsEventStream(r) {
		return false
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && (v >= newProtocol || !slices.Contains(mcp.SupportedProtocolVersions(), v)) {
		return false
	}
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(interface{ String() string }); ok && la != nil && fastpath.Loopback(la.String()) {
		return fastpath.Loopback(r.Host) // the go-sdk's DNS rebinding protection
	}
	return true
}

// maxEventID bounds a Last-Event-ID the edge reads (its own are about 30
// bytes); a longer one goes to the go-sdk, which refuses it.
const maxEventID = 64
