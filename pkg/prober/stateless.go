package prober

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A backend of the stateless generation only answers server/discover but
// refuses initialize (a JSON-RPC error). The prober then watches it in
// that generation: its session is a go-sdk client session of revision
// statelessRevision (it opens subscriptions/listen when the backend
// offers list changes), a probe is a server/discover (ping is not a
// method of that generation), and every listing takes a session of its
// own, so that the go-sdk's list cache (ttlMs) never answers for the
// backend. Its catalog says so (Catalog.StatelessOnly): the edge speaks
// that revision to it for clients of every revision.

// refusedInitialize reports whether err, of a connect in the session-based
// generation, is the backend's JSON-RPC answer (not a transport failure):
// only such a backend is asked for the stateless generation.
func refusedInitialize(err error) bool {
	var je *jsonrpc.Error
	return errors.As(err, &je)
}

// dialStateless connects a session of the stateless generation through
// hc with client c, bounded by Policy.Timeout. It fails when the backend
// does not answer server/discover with a revision of that generation.
func (p *Prober) dialStateless(ctx context.Context, c *mcp.Client, hc *http.Client) (*mcp.ClientSession, error) {
	ctx, cancel := context.WithTimeout(ctx, p.policy.Timeout)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.target.URL, HTTPClient: hc, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: statelessRevision})
	if err != nil {
		return nil, fmt.Errorf("discover %s: %w", p.target.URL, err)
	}
	if !statelessResult(cs.InitializeResult()) {
		_ = cs.Close()
		return nil, fmt.Errorf("discover %s: %w", p.target.URL, errNotStateless)
	}
	return cs, nil
}

// errNotStateless: the backend answered in the session-based generation.
var errNotStateless = errors.New("backend does not speak the stateless generation")

// statelessResult reports whether ir negotiated a revision of the
// stateless generation.
func statelessResult(ir *mcp.InitializeResult) bool {
	return ir != nil && len(ir.ProtocolVersion) == len(statelessRevision) && ir.ProtocolVersion >= statelessRevision
}

// connectStateless replaces a refused initialize on session s (its wire
// through hc): s becomes a session of the stateless generation, or the
// attempt fails.
func (p *Prober) connectStateless(ctx context.Context, s *session, hc *http.Client) error {
	cs, err := p.dialStateless(ctx, p.client, hc)
	if err != nil {
		return err
	}
	s.cs, s.stateless, s.hc = cs, true, hc
	s.revisionAsked, p.lastRevision = true, cs.InitializeResult().ProtocolVersion
	return nil
}

// discoverProbe is the probe of a session of the stateless generation: a
// server/discover on a session of its own, closed at once.
func (p *Prober) discoverProbe(ctx context.Context, s *session) error {
	cs, err := p.dialStateless(ctx, p.plain, s.hc)
	if err != nil {
		return err
	}
	return cs.Close()
}

// listSession is the session a listing of s goes over, and its release:
// s's own, or for the stateless generation a fresh one (no cached list).
func (p *Prober) listSession(ctx context.Context, s *session) (*mcp.ClientSession, func(), error) {
	if !s.stateless {
		return s.cs, func() {}, nil
	}
	cs, err := p.dialStateless(ctx, p.plain, s.hc)
	if err != nil {
		return nil, nil, err
	}
	return cs, func() { _ = cs.Close() }, nil
}
