package direct

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/fleetgate/fleetgate/pkg/edge/calls"
	"github.com/fleetgate/fleetgate/pkg/edge/lane"
	"github.com/fleetgate/fleetgate/pkg/edge/session"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/backend"
)

// SessionCall answers a plain tools/call POST of an initialized session
// without the go-sdk server: the go-sdk decodes each message several times
// with a decoder that allocates tens of KB per value, which made up most
// of the edge's cost of a call. The call runs exactly what the session's
// middleware would run for it (the call trail, calls.Plane.Run), and the
// response is one application/json JSON-RPC response (a streamable HTTP
// server may answer a POST with JSON or an event stream).
//
// Anything else is left to the go-sdk, which then gets r unchanged (its
// body readable again) and SessionCall reports false: other methods, batches,
// requests with _meta (progress tokens), sessions whose client may be
// asked something during a call or set a log level (package calls relays), members
// the go-sdk would reject,
// headers it would refuse, an optimizer edge (its meta-tools), and edges
// with Options.SessionTimeout (the go-sdk's idle timer is renewed only by
// requests it serves). A notifications/cancelled naming a call answered
// here cancels it and still goes on to the go-sdk, which ignores it.
// ident is the caller's identity as the admission gate decided it (the
// call's policy subject and call trail read it; it is not worked out
// again).
//
// r was routed dispatch.Call or dispatch.Cancel (the one route of the
// server's handler and of call lanes), which decided on its headers
// (fastpath.SessionPostHeaders, in dispatch.Facts.FastSession): they are
// not read again here. The session's state, which another request may
// change meanwhile, is checked again.
func (a *Answers) SessionCall(w http.ResponseWriter, r *http.Request, s *session.Session, ident string) bool {
	if !a.o.Passthrough || a.o.SessionTimeout != 0 || s.Kind() != session.KindSession ||
		s.Flags() != session.FlagBound|session.FlagInitialized {
		return false
	}
	wb, ok := r.Body.(Body) // read whole and parsed by the gate
	if !ok {
		return false
	}
	msg, ok := wb.Message()
	if !ok || !msg.Plain {
		return false
	}
	restore := func() bool {
		r.Body = wb.Again() // unread, whole: the go-sdk reads it next
		return false
	}
	if msg.Method == "notifications/cancelled" {
		s.CancelCall(string(msg.CancelID))
		return restore()
	}
	if msg.Method != "tools/call" {
		return false
	}
	var ss *mcp.ServerSession
	for x := range s.Server().Sessions() {
		ss = x
	}
	if ss == nil { // ended: the go-sdk answers 404
		return restore()
	}
	// The call is cancellable (notifications/cancelled): on a lane, its
	// request's context is the call's own already (the lane ends it after
	// the response); elsewhere a context of its own is derived.
	ctx, cancel, own := r.Context(), lane.CallCancel(w), false
	if cancel == nil {
		ctx, cancel = context.WithCancel(ctx)
		own = true
	}
	id := string(msg.ID)          // the call's key while it runs
	if !s.StartCall(id, cancel) { // an id still in flight
		if own {
			cancel()
		}
		return restore()
	}
	defer func() {
		s.EndCall(id)
		if own {
			cancel()
		}
	}()
	reply, err := a.answerCall(ctx, calls.Call{Session: s, Ident: ident, TokenInfo: auth.TokenInfoFromContext(r.Context()),
		Name: msg.Tool, Args: msg.Args, Later: lane.Closings(w)}, ss)
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(http.StatusOK)
	if err == nil && reply.Raw != nil {
		// The backend's result as it came (validated when it arrived).
		body := make([]byte, 0, len(`{"jsonrpc":"2.0","id":,"result":}`)+len(msg.ID)+len(reply.Raw))
		body = append(body, `{"jsonrpc":"2.0","id":`...)
		body = append(body, msg.ID...)
		body = append(body, `,"result":`...)
		body = append(body, reply.Raw...)
		_, _ = w.Write(append(body, '}'))
		return true
	}
	var res mcp.Result
	if err == nil {
		res = reply.Decoded()
	}
	out := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  mcp.Result      `json:"result,omitempty"`
		Error   *jsonrpc.Error  `json:"error,omitempty"`
	}{JSONRPC: "2.0", ID: msg.ID, Result: res}
	if err != nil {
		out.Result = nil
		if !errors.As(err, &out.Error) {
			out.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
	}
	body, err := json.Marshal(out)
	if err != nil {
		body, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": msg.ID,
			"error": &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encode result: " + err.Error()}})
	}
	_, _ = w.Write(body)
	return true
}

// answerCall runs tools/call c as the session's middleware chain runs a
// CallToolRequest (package sessionserver), what the backend sends during
// it relayed to the client of ss (nil: none). c.Ident is the gate's
// identity of the caller: the same as calls.Plane.IdentityOf of the
// request's Extra, which an admitted request's token or identity header
// decides. c.Later is where a call lane takes the backend bodies it
// closes after answering (nil elsewhere).
func (a *Answers) answerCall(ctx context.Context, c calls.Call, ss *mcp.ServerSession) (backend.Reply, error) {
	c.Relay = a.o.Calls.RelayFor(ctx, c.Session, ss, nil)
	return a.o.Calls.Run(ctx, c), nil
}
