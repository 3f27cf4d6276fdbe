package backend

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/auth"
	"github.com/fleetgate/fleetgate/pkg/events"
)

// The edge subscribes to a backend's resource once per backend session,
// however many of its clients subscribed to it (the edge keeps who did):
// on the shared pooled session, or for a backend with per-caller
// credentials on the caller's own session, since what the resource holds
// and when it changes is that user's (percaller.go). The backend's
// notifications/resources/updated arrive on the session's standalone
// stream and are passed to OnResourceUpdated with the session's caller. A
// new session (the backend restarted, the session was lost) subscribes to
// every resource again; a per-caller session holding subscriptions is not
// closed for being idle, is the last the bound closes, and when it is
// closed all the same (the bound, its backend reconfigured) its
// subscriptions are parked for the caller's next session.

// connName names a backend session: its backend, and its caller's
// identity key (CallerKey) for a per-caller session, "" for the shared one.
type connName struct{ backend, caller string }

// connName is c's name.
func (c *backendConn) connName() connName {
	if c.user != nil {
		return connName{c.name, c.user.identity}
	}
	return connName{backend: c.name}
}

// CallerKey is the key of a caller's per-caller sessions and
// subscriptions: its issuer and subject ("" for nil).
func CallerKey(id *auth.Identity) string {
	if id == nil {
		return ""
	}
	return id.Issuer + " " + id.Subject
}

// statelessRevision is the revision of a stateless-only backend's pooled
// session.
const statelessRevision = "2026-07-28"

// SetStatelessOnly sets what tells the backends that speak only the
// stateless revision (their pooled sessions, made after, are of it: the
// requests that take the pooled session, resource subscriptions among
// them, reach such a backend too). It is set before the pool is used.
func (p *Pool) SetStatelessOnly(f func(backend string) bool) { p.statelessOnly = f }

// OnResourceUpdated sets what hears a backend's
// notifications/resources/updated: the backend's name, the caller of the
// session it came on ("" for the shared session) and the resource's URI.
// It is set before the pool is used.
func (p *Pool) OnResourceUpdated(f func(backend, caller, uri string)) { p.updated = f }

// resourceUpdated is the pooled client's handler of
// notifications/resources/updated.
func (p *Pool) resourceUpdated(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	if p.updated == nil || req.Params == nil || req.Params.URI == "" {
		return
	}
	if n, ok := p.sessionNames.Load(req.Session); ok {
		p.updated(n.(connName).backend, n.(connName).caller, req.Params.URI)
	}
}

// Subscribe subscribes to resource uri of backend on the session calls
// made under ctx go through (the shared one, or ctx's caller's), and on
// every later one, until Unsubscribe.
func (p *Pool) Subscribe(ctx context.Context, backend string, cfg events.BackendConfig, uri string) error {
	c, err := p.connOf(ctx, backend, cfg)
	if err != nil {
		return callError(backend, "resources/subscribe", err)
	}
	_, err = Do(ctx, p, backend, cfg, "resources/subscribe", nil, func(ctx context.Context, cs *mcp.ClientSession) (struct{}, error) {
		// Noted once the session is made (a new one subscribes to what
		// is noted), so that it is not sent twice.
		c.note(uri, true)
		return struct{}{}, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	})
	if err != nil {
		c.note(uri, false)
	}
	return err
}

// note adds uri to c's subscriptions (or removes it).
func (c *backendConn) note(uri string, on bool) {
	c.subsMu.Lock()
	defer c.subsMu.Unlock()
	if !on {
		delete(c.subs, uri)
		return
	}
	if c.subs == nil {
		c.subs = map[string]bool{}
	}
	c.subs[uri] = true
}

// subURIs are c's subscriptions.
func (c *backendConn) subURIs() []string {
	c.subsMu.Lock()
	defer c.subsMu.Unlock()
	out := make([]string, 0, len(c.subs))
	for u := range c.subs {
		out = append(out, u)
	}
	return out
}

// takeSubs are c's subscriptions, taken away (c is closing: they are
// parked for its caller's next session, percaller.go).
func (c *backendConn) takeSubs() map[string]bool {
	c.subsMu.Lock()
	defer c.subsMu.Unlock()
	subs := c.subs
	c.subs = nil
	return subs
}

// giveSubs makes subs c's subscriptions (a new session, not yet used).
func (c *backendConn) giveSubs(subs map[string]bool) {
	c.subsMu.Lock()
	c.subs = subs
	c.subsMu.Unlock()
}

// Unsubscribe ends the subscription to resource uri of backend made for
// caller (a CallerKey; "" for the shared session). A per-caller session
// that is gone took its subscriptions with it: nothing is sent.
func (p *Pool) Unsubscribe(ctx context.Context, backend string, cfg events.BackendConfig, caller, uri string) error {
	if caller == "" {
		c := p.conn(backend, cfg)
		c.note(uri, false)
		_, err := Do(ctx, p, backend, cfg, "resources/unsubscribe", nil, func(ctx context.Context, cs *mcp.ClientSession) (struct{}, error) {
			return struct{}{}, cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
		})
		return err
	}
	k := callerConnKey{backend: backend, identity: caller}
	p.callers.mu.Lock()
	c := p.callers.conns[k]
	if parked := p.callers.parked[k]; parked != nil {
		delete(parked, uri)
	}
	p.callers.mu.Unlock()
	if c == nil {
		return nil
	}
	c.note(uri, false)
	c.mu.Lock()
	cs := c.cs
	c.mu.Unlock()
	if cs == nil {
		return nil // its next session subscribes to what is left
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
		return fmt.Errorf("resources/unsubscribe on backend %q: %w", backend, err)
	}
	return nil
}

// subscribed reports whether c holds resource subscriptions.
func (c *backendConn) subscribed() bool {
	c.subsMu.Lock()
	defer c.subsMu.Unlock()
	return len(c.subs) > 0
}
