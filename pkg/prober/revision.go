package prober

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// statelessRevision is the revision of the stateless protocol generation
// the prober asks each backend for.
const statelessRevision = "2026-07-28"

// revision asks the backend of session s whether it speaks the stateless
// protocol generation: a client of that revision connects, which starts
// with server/discover. It returns the revision negotiated when it is of
// that generation, "" otherwise (a backend that does not know
// server/discover answers an error, and the go-sdk falls back to an
// initialize of the session-based generation: that session is closed at
// once), and known false when no answer came (the connect failed: a
// backend going down meanwhile is no news about its revision, which stays
// what it was, so that a flapping backend's catalog does not flap). Only streamable HTTP backends are asked. The attempt is bounded
// by Policy.Timeout and reads through a wire of its own, with the same
// credentials and limits as the session's.
func (p *Prober) revision(ctx context.Context, s *session) (rev string, known bool) {
	if p.target.Transport != TransportStreamable && p.target.Transport != "" {
		return "", true
	}
	ctx, cancel := context.WithTimeout(ctx, p.policy.Timeout)
	defer cancel()
	w := &wire{next: s.wire.next, ctx: ctx, bound: p.policy.Timeout, lists: newCapture(),
		drop: func(string, bool) {}, limits: s.wire.limits}
	hc := &http.Client{Transport: w, CheckRedirect: noRedirects, Jar: p.jar}
	client := mcp.NewClient(&mcp.Implementation{Name: "fleetgate-prober", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.target.URL, HTTPClient: hc, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: statelessRevision})
	if err != nil {
		p.log.Debug().Err(err).Msg("backend revision not discovered")
		return "", false
	}
	defer cs.Close()
	ir := cs.InitializeResult()
	if ir == nil || ir.ProtocolVersion < statelessRevision || len(ir.ProtocolVersion) != len(statelessRevision) {
		return "", true
	}
	return ir.ProtocolVersion, true
}
