package prober

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/backendnet"
	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

// protocolVersion is pinned: it is the newest session-based version, and
// asking for it directly skips the server/discover round trip that the
// SDK's default (2026-07-28) starts with.
const protocolVersion = "2025-11-25"

// session is one live client session with the backend plus the watcher
// that reports its death.
type session struct {
	cs   *mcp.ClientSession
	wire *wire
	stop context.CancelFunc // ends the session context

	// calls is the parent context of pings and list calls; it is cancelled
	// when the session drops, so that no call waits on a dead session.
	calls       context.Context
	cancelCalls context.CancelFunc

	dropOnce sync.Once
	dropped  chan struct{} // closed when the session is known dead
	reason   string        // why; set before dropped is closed
	clean    bool          // the event stream ended normally (verify first)
	// shared: cs is a stdio instance's, which close leaves open.
	shared bool
	// revisionAsked: the backend's stateless revision was answered on
	// this session (Prober.revision; kept in Prober.lastRevision).
	revisionAsked bool
	// stateless: cs is of the stateless generation (stateless.go), made
	// through hc, the backend having refused initialize.
	stateless bool
	hc        *http.Client
	// watch is, for a backend of both generations, a session of the
	// stateless one kept open for its list changes (era.go); nil before
	// its first listing.
	watch *mcp.ClientSession

	wg sync.WaitGroup // the Wait watcher
}

func (s *session) drop(reason string, clean bool) {
	s.dropOnce.Do(func() {
		s.reason, s.clean = reason, clean
		close(s.dropped)
		s.cancelCalls()
	})
}

// close tears the session down and waits for its watcher. Requests still
// in flight fail at once (see errStopped).
func (s *session) close() {
	s.wire.closing.Store(true)
	s.stop()
	if s.cs != nil && !s.shared {
		_ = s.cs.Close()
	}
	if s.watch != nil {
		_ = s.watch.Close()
	}
	s.wg.Wait()
}

// connectError is a failed connect attempt, classified.
type connectError struct {
	result string // "failure" or "auth_failure"
	reason string
	err    error
}

func (e *connectError) Error() string { return e.reason }
func (e *connectError) Unwrap() error { return e.err }

// connect opens a session: HTTP transport, initialize, initialized, and for
// streamable HTTP the standalone GET stream. The attempt is bounded by
// Policy.Timeout; on success the returned session is being watched.
func (p *Prober) connect(ctx context.Context) (*session, error) {
	if p.target.Transport == TransportStdio {
		return p.connectStdio(ctx)
	}
	sctx, stop := context.WithCancel(ctx)
	s := &session{stop: stop, dropped: make(chan struct{})}
	s.calls, s.cancelCalls = context.WithCancel(sctx)
	// The backend's headers, resolved again for every session and every
	// credential.DefaultRecheck (a rotated file is picked up), on a
	// transport whose dials may reach link-local addresses only if the
	// target allows it.
	creds := credential.NewTransport(backendnet.Scope(p.base, p.target.AllowLinkLocal), p.target.Headers,
		&credential.TransportOptions{Backend: p.target.String(), URL: p.target.URL, Now: p.now})
	if err := creds.Err(); err != nil {
		stop()
		if !p.credFailing {
			p.credFailing = true
			p.log.Warn().Err(err).Msg("backend credential unresolved")
		}
		return nil, &connectError{result: resultFailure, reason: err.Error(), err: err}
	}
	if p.credFailing {
		p.credFailing = false
		p.log.Info().Msg("backend credential resolved")
	}
	next, err := p.withProbeToken(sctx, creds) // probeauth.go: a token-exchange backend's probe token
	if err != nil {
		stop()
		return nil, err
	}
	s.wire = &wire{next: next, ctx: sctx, bound: p.policy.Timeout, lists: newCapture(), drop: s.drop,
		limits: mcpwire.Limits{MaxDepth: mcpwire.MaxDepth, MaxMessage: p.maxMessage}}
	hc := &http.Client{Transport: s.wire, CheckRedirect: noRedirects, Jar: p.jar}

	var t mcp.Transport
	if p.target.Transport == TransportSSE {
		// The SSE GET lives on the Connect context, hence sctx, not a
		// context with a deadline.
		t = &mcp.SSEClientTransport{Endpoint: p.target.URL, HTTPClient: hc}
	} else {
		t = &mcp.StreamableClientTransport{Endpoint: p.target.URL, HTTPClient: hc, MaxRetries: -1}
	}
	timedOut := make(chan struct{})
	timer := time.AfterFunc(p.policy.Timeout, func() { close(timedOut); stop() })
	cs, err := p.client.Connect(sctx, t, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	fired := !timer.Stop()
	if err != nil && !fired && p.target.Transport == TransportStreamable && refusedInitialize(err) {
		// A backend of the stateless generation only (stateless.go).
		if serr := p.connectStateless(sctx, s, hc); serr == nil {
			cs, err = s.cs, nil
		} else {
			p.log.Debug().Err(serr).Msg("backend refused initialize and stateless discovery")
		}
	}
	if err == nil && fired {
		_ = cs.Close()
		err = context.DeadlineExceeded
	}
	if err != nil {
		s.wire.closing.Store(true)
		stop()
		if fired {
			<-timedOut
			err = fmt.Errorf("connect %s: timed out after %v: %w", p.target.URL, p.policy.Timeout, context.DeadlineExceeded)
		} else {
			err = fmt.Errorf("connect %s: %w", p.target.URL, err)
		}
		return nil, p.classify(err, s.wire)
	}
	s.cs = cs
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		err := cs.Wait()
		if s.wire.closing.Load() {
			return
		}
		if err == nil {
			err = mcp.ErrConnectionClosed
		}
		s.drop(fmt.Sprintf("session closed: %v", err), false)
	}()
	return s, nil
}

// classify turns an error from a connect or a ping into a connectError
// carrying the observation's result and reason.
func (p *Prober) classify(err error, w *wire) *connectError {
	if code := w.authStatus(); code != 0 {
		p.forgetProbeToken() // probeauth.go
		return &connectError{result: resultAuthFailure, reason: fmt.Sprintf("HTTP %d: %v", code, err), err: err}
	}
	return &connectError{result: resultFailure, reason: err.Error(), err: err}
}

// sessionDead reports whether a failed request means the session is gone
// (as opposed to the backend being slow): anything but a timeout.
func sessionDead(err error) bool {
	return !errors.Is(err, context.DeadlineExceeded)
}
