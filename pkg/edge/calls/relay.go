package calls

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/backend"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
)

// Per-client state towards backends is kept at the edge, not in backend
// sessions: every client's calls share the edge's one pooled session per
// backend, and what a backend sends on a call's stream (backend.Relay) is
// passed to the client that made the call, filtered by that client's own
// state (its log level, its capabilities). The pooled session is asked to
// log at every level (backend.Pool); the go-sdk server session of each
// client then applies the level the client set, which is also kept in
// the session record, so that a session rebuilt on another edge keeps it.
//
// A call of a client that can be asked something (sampling, elicitation)
// or that set a log level is served by the go-sdk server, whose request
// context ties what the edge sends the client to the call's own stream;
// the fast paths serve the rest, whose clients can be asked nothing on a
// call's stream: a backend's roots/list is answered at once with an error
// there (the session's standalone stream is the edge's own, not the
// go-sdk's), and progress needs a token, which takes a call off the fast
// path.

// clientRelay is a backend.Relay to the client session ss.
type clientRelay struct {
	// ctx is the context the go-sdk server gave the request (it relates
	// what is sent with it to the request's stream), or the fast path's
	// own context.
	ctx   context.Context
	ss    *mcp.ServerSession
	token any  // the call's progress token; nil for none
	asks  bool // the client may be asked: a session-based protocol
}

// RelayFor is the relay of a call of session ss with the request context
// ctx and progress token token; nil when there is no one to relay to.
func (pl *Plane) RelayFor(ctx context.Context, s *session.Session, ss *mcp.ServerSession, token any) backend.Relay {
	if ss == nil {
		return nil
	}
	return &clientRelay{ctx: ctx, ss: ss, token: token, asks: s != nil && s.Kind() == session.KindSession}
}

// Notify passes on a progress notification (under the client's own token)
// or a log message (which the go-sdk filters by the client's level).
func (r *clientRelay) Notify(method string, params json.RawMessage) {
	switch method {
	case "notifications/progress":
		var p mcp.ProgressNotificationParams
		if r.token == nil || json.Unmarshal(params, &p) != nil {
			return
		}
		p.ProgressToken = r.token
		_ = r.ss.NotifyProgress(r.ctx, &p)
	case "notifications/message":
		var p mcp.LoggingMessageParams
		if json.Unmarshal(params, &p) != nil {
			return
		}
		_ = r.ss.Log(r.ctx, &p)
	}
}

// Ask passes a backend's request on to the client, when the client
// declared the capability it needs; otherwise it answers at once.
func (r *clientRelay) Ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if !r.asks {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: fmt.Sprintf("%s: a client of protocol 2026-07-28 is not asked during a call by this edge", method)}
	}
	var caps *mcp.ClientCapabilities
	if ip := r.ss.InitializeParams(); ip != nil {
		caps = ip.Capabilities
	}
	if caps == nil {
		caps = &mcp.ClientCapabilities{}
	}
	// The request's context, so that the go-sdk sends the question on the
	// call's stream, ending when the call (ctx) ends.
	ask, cancel := context.WithCancel(r.ctx)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	var res any
	var err error
	switch method {
	case "sampling/createMessage":
		if caps.Sampling == nil {
			return nil, lacks(method, "sampling")
		}
		var p mcp.CreateMessageWithToolsParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, badParams(method, err)
		}
		res, err = r.ss.CreateMessageWithTools(ask, &p)
	case "elicitation/create":
		if caps.Elicitation == nil {
			return nil, lacks(method, "elicitation")
		}
		var p mcp.ElicitParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, badParams(method, err)
		}
		res, err = r.ss.Elicit(ask, &p)
	case "roots/list":
		if caps.RootsV2 == nil && !caps.Roots.ListChanged {
			return nil, lacks(method, "roots")
		}
		var p mcp.ListRootsParams
		if len(params) > 0 {
			if err := json.Unmarshal(params, &p); err != nil {
				return nil, badParams(method, err)
			}
		}
		res, err = r.ss.ListRoots(ask, &p)
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method " + method + " is not relayed"}
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

// lacks is the answer to a backend asking a client for what it did not
// declare.
func lacks(method, capability string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
		Message: fmt.Sprintf("%s: the client did not declare the %s capability", method, capability)}
}

// badParams is the answer to a backend's request the edge cannot decode.
func badParams(method string, err error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: params: %v", method, err)}
}
