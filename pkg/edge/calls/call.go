package calls

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	goauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/edge/backend"
	"github.com/fleetgate/fleetgate/pkg/edge/internal/callstages"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/policy"
)

// ErrUnavailable is wrapped by the failures (in the call trail) of calls the
// served view does not hold (the caller gets an isError result).
var ErrUnavailable = errors.New("not available on this edge")

// unavailable is the result of a call to a tool the view does not hold.
func (pl *Plane) unavailable(name string) *mcp.CallToolResult {
	pl.unknownCalls.Inc() // counted, not logged: a client looping on it would flood the log
	pl.o.Log.Debug().Str("tool", name).Msg("call to a tool not in the served view")
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
		Text: fmt.Sprintf("tool %q is not available: no advertisable backend of group %q serves it now (it may have been removed or its backend is unhealthy); list the tools again",
			name, pl.o.Group)}}}
}

// BackendConfig returns the configuration (URL and transport) of an
// advertisable backend.
func (pl *Plane) BackendConfig(name string) (events.BackendConfig, bool) {
	cfg, ok := pl.o.Backend(name)
	return cfg, ok
}

// Route is where a call of one exposed tool goes: the view's entry (the
// owning backend and the tool's own name) and that backend's config. It is
// resolved once per call, and the call and its trail entry both use it.
type Route struct {
	Tool   catalog.ToolEntry
	Config events.BackendConfig
	Gen    uint64 // of the view it was resolved in
	// Revision is the stateless revision the backend speaks ("" for
	// none: view.Served.Revisions).
	Revision string
	// StatelessOnly: the backend speaks only Revision (bridge.go).
	StatelessOnly bool
}

// Resolve routes call c's exposed tool by the current view: an error
// wrapping ErrUnavailable when no advertisable backend serves it, or
// errDenied when the policy hides it from the caller (who is answered as
// for an unknown tool).
func (pl *Plane) Resolve(c Call) (Route, error) {
	name := c.Name
	cur := pl.o.View().Era(c.era()) // era.go
	rt := Route{Gen: pl.o.Generation(cur)}
	entry, ok := cur.Catalog.Tool(name)
	if !ok {
		return rt, fmt.Errorf("tool %q: %w", name, ErrUnavailable)
	}
	rt.Tool = entry
	cfg, ok := pl.BackendConfig(entry.Backend)
	if !ok {
		return rt, fmt.Errorf("tool %q: backend %q: %w", name, entry.Backend, ErrUnavailable)
	}
	rt.Config = cfg
	rt.Revision = revisionOf(cur, entry.Backend, cfg)
	rt.StatelessOnly = rt.Revision != "" && cur.StatelessOnly[entry.Backend]
	if ok, refusal := pl.Allowed(cur, c.TokenInfo, c.Ident, policy.KindTool, name); !ok {
		return rt, refusal
	}
	return rt, nil
}

// Call is one tools/call: who asked (the session, and for a session-less
// call the request's identity), what, and where it went.
type Call struct {
	Session   *session.Session
	Ident     string // of a call without a session record
	Name      string
	Args      json.RawMessage
	Later     *backend.Closings // of a call lane: the backend bodies it closes after answering
	TokenInfo *goauth.TokenInfo // the caller's verified token, nil without bearer auth
	Meta      json.RawMessage   // the call's _meta, passed on (progressToken); nil for none
	Relay     backend.Relay     // the caller's client, for what the backend sends during the call; nil: nobody
	// Stateless is the call of a client of the stateless generation as a
	// backend of the same revision takes it (StatelessOf); nil for a
	// client of the session-based revisions.
	Stateless *backend.Stateless
	// URLElicitation: the client declared URL-mode elicitation (a call
	// before sign-in is answered with URLElicitationRequired).
	URLElicitation bool
}

// Run routes a tools/call once, forwards it, and records it in the
// call trail (when one is kept) with the Route it took. A failure is an
// isError result naming the tool; the trail has the reason.
func (pl *Plane) Run(ctx context.Context, c Call) backend.Reply {
	callstages.Mark(callstages.Started)
	pl.inflight.Add(1)
	defer pl.inflight.Add(-1)
	start := time.Now()
	if reply, ok := pl.signInCall(ctx, pl.o.View(), c, start); ok {
		return reply
	}
	rt, err := pl.Resolve(c)
	if err == nil && rt.Config.Auth.SignIn() && pl.o.SignIns != nil {
		if reply, need := pl.needSignIn(ctx, c, rt.Tool.Backend, rt.Config.URL, rt.Config.Auth, true); need {
			if pl.o.Trail != nil {
				pl.Audit(c, rt, start, &reply, fmt.Errorf("tool %q: backend %q: %w", c.Name, rt.Tool.Backend, errSignInNeeded))
			}
			return reply
		}
	}
	if pl.traced {
		return pl.tracedForward(ctx, c, rt, err, start) // trace.go
	}
	return pl.Forward(ctx, c, rt, err, start)
}

// Forward forwards call c by Route rt (resolved at start; err its
// failure) and records it in the call trail when one is kept (a held
// call once, at its end: held.go).
func (pl *Plane) Forward(ctx context.Context, c Call, rt Route, err error, start time.Time) backend.Reply {
	var reply backend.Reply
	if err != nil {
		reply = backend.Reply{Res: pl.unavailable(c.Name)}
	} else {
		var final bool
		if reply, final, err = pl.forward(ctx, &c, rt, start); !final {
			return reply // an input round of a held call
		}
	}
	callstages.Mark(callstages.Forwarded)
	if pl.record != nil {
		pl.auditAfter(c, rt, start, &reply, err) // on a call lane, queued after the response
	}
	callstages.Mark(callstages.Recorded)
	return reply
}

// forward runs c by rt. final is false for a reply that is an input round
// of a held call (held.go), which goes on.
func (pl *Plane) forward(ctx context.Context, c *Call, rt Route, start time.Time) (reply backend.Reply, final bool, err error) {
	if st := c.Stateless; st != nil && rt.Revision == "" {
		// A client of the stateless generation, a backend of the
		// session-based revisions: its requests to the client are held.
		switch {
		case st.RequestState != "":
			inner, oerr := pl.sealer.Open(heldBinding(*c, rt), st.RequestState, start)
			if oerr == nil && !strings.HasPrefix(inner, heldPrefix) {
				oerr = errors.New("requestState names no call held open")
			}
			if oerr != nil {
				je := stateRefused(c.Name, oerr)
				return errorReply(je), true, je
			}
			reply, final, je := pl.continueHeld(ctx, *c, rt, inner, start)
			if je != nil {
				return errorReply(je), true, je
			}
			return reply, final, nil
		case len(st.InputResponses) > 0:
			je := stateRefused(c.Name, errors.New("input responses without a requestState"))
			return errorReply(je), true, je
		case capsOf(st.Meta).any():
			if h := pl.startHeld(*c, rt, start); h != nil {
				reply, final := pl.await(ctx, *c, rt, h, start)
				return reply, final, nil
			}
		}
		c.Stateless = nil // nothing to hold: the call as any other, its requests refused
	} else if je := pl.openState(c, rt, start); je != nil {
		return errorReply(je), true, je
	}
	if c.Stateless == nil && rt.StatelessOnly { // a backend of the stateless generation only
		reply, err = pl.bridge(ctx, *c, rt) // bridge.go
	} else if reply, err = pl.callBackend(ctx, *c, rt); err == nil && reply.Stateless {
		err = pl.sealState(*c, rt, &reply, time.Now())
	}
	if err != nil && reply.Res == nil {
		reply = pl.failed(*c, rt, err)
	}
	return reply, true, err
}

// callBackend sends call c to its backend by rt.
func (pl *Plane) callBackend(ctx context.Context, c Call, rt Route) (backend.Reply, error) {
	return pl.o.Pool.CallTool(backend.WithCaller(ctx, TokenIdentity(c.TokenInfo)), backend.Call{Backend: rt.Tool.Backend, Config: rt.Config, Tool: rt.Tool.Original,
		Args: c.Args, Meta: c.Meta, Later: c.Later, Relay: c.Relay, Stateless: c.Stateless})
}

// failed is the reply of call c whose backend call failed with err (a
// *backend.Error: its text names the backend and the kind of failure only,
// never the backend's URL or error body).
func (pl *Plane) failed(c Call, rt Route, err error) backend.Reply {
	pl.o.Log.Warn().Str("tool", c.Name).Str("backend", rt.Tool.Backend).Err(err).Msg("tool call failed")
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("tool %q: %v", c.Name, err)}}}
	res.SetError(err) // isError, and the failure kept for ClientError
	return backend.Reply{Res: res}
}

// ClientError is the backend's JSON-RPC error a tools/call failed with
// (reply is Run's) when the 2026-07-28 revision has the server answer it
// to its client as that error: -32021, a client capability the request
// needs and the client did not declare (MissingRequiredClientCapabilityError).
// A caller of that revision passes it on, code, message and data, instead
// of the isError result a caller of an older one gets; nil for any other
// reply.
func ClientError(reply backend.Reply) *jsonrpc.Error {
	if reply.Res == nil {
		return nil
	}
	return ClientErrorOf(reply.Res.GetError())
}

// ClientErrorOf is ClientError of err, the failure of a backend request
// (prompts/get, resources/read, completion/complete): the backend's -32021
// as it sent it, nil for any other error.
func ClientErrorOf(err error) *jsonrpc.Error {
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) && (rpc.Code == mcp.CodeMissingRequiredClientCapabilities || rpc.Code == jsonrpc.CodeInvalidParams) {
		return &jsonrpc.Error{Code: rpc.Code, Message: rpc.Message, Data: rpc.Data}
	}
	return nil
}
