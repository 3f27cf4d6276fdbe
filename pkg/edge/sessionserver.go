package edge

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/session"
)

// newSession makes a session of kind and the go-sdk server that serves
// only it (see package session), with the edge's middleware: receiving
// (lists and calls from the served view, lists.go), evidence (records and
// convergence, convergence.go) and the Mcp-Param-* check. It is not yet
// registered: see Registry.Open.
func (e *Edge) newSession(id, kind, protocol, ident string) *session.Session {
	s := e.reg.New(id, kind, protocol, ident)
	so := &mcp.ServerOptions{
		// R1: the session server's ID is fixed, so that a later
		// rehydration from a stored session record can rebuild the very
		// same session on another edge.
		GetSessionID: func() string { return id },
		Capabilities: e.caps, // shared: the go-sdk clones it
		Logger:       e.slog,
	}
	if kind == session.KindSession || kind == session.KindListen { // resource subscriptions (package calls)
		so.SubscribeHandler = func(ctx context.Context, r *mcp.SubscribeRequest) error { return e.calls.Subscribe(ctx, s, r) }
		so.UnsubscribeHandler = func(ctx context.Context, r *mcp.UnsubscribeRequest) error { return e.calls.Unsubscribe(ctx, s, r) }
	}
	srv := mcp.NewServer(e.impl, so) // e.impl shared: the go-sdk only reads it
	srv.AddReceivingMiddleware(e.receiving(s))
	srv.AddReceivingMiddleware(e.evidence(s)) // outside receiving: sees its results
	srv.AddReceivingMiddleware(e.checkingParamHeaders)
	srv.AddReceivingMiddleware(e.taskFields(s)) // outermost: adds what the go-sdk's types cannot carry
	s.Bind(srv)
	return s
}
