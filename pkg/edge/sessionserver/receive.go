package sessionserver

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/admission"
	"github.com/fleetgate/fleetgate/pkg/edge/calls"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
)

// receiving answers a session's lists from its applied served value and
// routes its calls by the edge's current view; it records the negotiated
// protocol version. Everything else goes to the go-sdk.
func (sv *Servers) receiving(s *session.Session) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
			if sv.o.Spans.On() && method != "tools/call" && !strings.HasPrefix(method, "notifications/") {
				var end func(error)
				ctx, end = sv.o.Spans.Request(ctx, s, method, req)
				defer func() { end(err) }()
			}
			if res, handled, err := sv.o.Calls.Optimizer(ctx, s, req, revision(s)); handled {
				return res, err
			}
			switch req.(type) {
			case *mcp.ListToolsRequest, *mcp.ListPromptsRequest, *mcp.ListResourcesRequest:
				// Who last listed: a policy change is compared for it.
				s.SetSubject(sv.o.Calls.Subject(calls.TokenInfoOf(req.GetExtra()), sv.o.Calls.IdentityOf(req.GetExtra())))
			}
			switch r := req.(type) {
			case *mcp.ListToolsRequest:
				return sv.cached(view.ListTools(sv.o.Calls.VisibleTo(s.Served().Era(revision(s)), r.GetExtra()), r, revision(s)))
			case *mcp.ListPromptsRequest:
				return sv.cached(view.ListPrompts(sv.o.Calls.VisibleTo(s.Served().Era(revision(s)), r.GetExtra()), r, revision(s)))
			case *mcp.ListResourcesRequest:
				return sv.cached(view.ListResources(sv.o.Calls.VisibleTo(s.Served().Era(revision(s)), r.GetExtra()), r, revision(s)))
			case *mcp.CallToolRequest:
				// The call holds its request's slots while it runs, and
				// ends if its client leaves first (package callslot).
				var end func()
				ctx, end = sv.o.Slots.Begin(ctx, headerOf(r.GetExtra()))
				defer end()
				c := calls.Call{Session: s, Ident: sv.o.Calls.IdentityOf(r.GetExtra()), TokenInfo: calls.TokenInfoOf(r.GetExtra()),
					Name: r.Params.Name, Args: r.Params.Arguments, Meta: callMeta(r.Params.Meta),
					Relay: sv.o.Calls.RelayFor(ctx, s, r.Session, r.Params.GetProgressToken()), URLElicitation: urlElicitation(r.Session)}
				if s.Kind() != session.KindSession { // a client of the stateless generation
					if c.Stateless, err = calls.StatelessOf(r); err != nil {
						return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
					}
				}
				reply := sv.o.Calls.Run(ctx, c)
				if je := calls.SignInError(reply); je != nil {
					return nil, je // a client taking URL elicitations is asked to sign in
				}
				if je := calls.ClientError(reply); je != nil && s.Kind() != session.KindSession {
					return nil, je // a 2026-07-28 caller gets the backend's -32021 as it is
				}
				return reply.Decoded(), nil
			case *mcp.GetPromptRequest:
				res, err := sv.o.Calls.GetPrompt(ctx, r)
				return result(res, clientError(s, err))
			case *mcp.ReadResourceRequest:
				res, err := sv.o.Calls.ReadResource(ctx, r)
				if err != nil {
					return nil, clientError(s, err)
				}
				return sv.cached(res, nil)
			case *mcp.ListResourceTemplatesRequest:
				return sv.cached(view.ListTemplates(sv.o.Calls.Templates(revision(s)), revision(s)), nil)
			case *mcp.CompleteRequest:
				res, err := sv.o.Calls.Complete(ctx, r)
				return result(res, clientError(s, err))
			}
			res, err = next(ctx, method, req)
			if ir, ok := res.(*mcp.InitializeResult); ok && err == nil {
				s.SetProtocolVersion(ir.ProtocolVersion)
				if r, ok := req.(*mcp.ServerRequest[*mcp.InitializeParams]); ok && r.Params != nil && r.Params.Capabilities != nil &&
					(r.Params.Capabilities.Sampling != nil || r.Params.Capabilities.Elicitation != nil) {
					s.SetFlags(session.FlagAsks) // its calls are the go-sdk's, which can ask it on their streams
				}
			}
			if r, ok := req.(*mcp.ServerRequest[*mcp.SetLoggingLevelParams]); ok && err == nil && r.Params != nil {
				sv.o.Evidence.LevelSet(s, string(r.Params.Level))
			}
			if method == "notifications/initialized" && err == nil {
				s.SetFlags(session.FlagInitialized) // calls may be answered without the go-sdk now (package direct)
			}
			return res, err
		}
	}
}

// revision is the protocol revision s is served at: the negotiated one
// of a session-based session, 2026-07-28 otherwise. Lists give each
// revision the members of definitions it defines (view.Project).
func revision(s *session.Session) string {
	if s.Kind() == session.KindSession {
		return s.ProtocolVersion()
	}
	return admission.FirstNewProtocol
}

// callMeta is the _meta of a call to pass on to its backend: the client's
// (the go-sdk decoded it into a map; its progressToken among it) without
// the members of the protocol's own namespace, which belong to the
// client's hop (its protocol version, capabilities and client info on
// 2026-07-28); nil for none.
func callMeta(m mcp.Meta) json.RawMessage {
	fwd := make(map[string]any, len(m))
	for k, v := range m {
		if !strings.HasPrefix(k, "io.modelcontextprotocol/") {
			fwd[k] = v
		}
	}
	if len(fwd) == 0 {
		return nil
	}
	b, err := json.Marshal(fwd)
	if err != nil {
		return nil
	}
	return b
}

// cached settles the cache fields of a list or read result as the go-sdk
// server does for its own (the edge answers these itself): a result the
// policy filtered for its caller is "private", any other keeps the scope
// it has ("public" when unset); ttlMs stays as it is (0 for the edge's
// lists, which change with every generation).
func (sv *Servers) cached(res mcp.Result, err error) (mcp.Result, error) {
	if err != nil {
		return nil, err
	}
	var c *mcp.Cacheable
	switch r := res.(type) {
	case *view.ListToolsResult:
		c = &r.Cacheable
	case *view.ListPromptsResult:
		c = &r.Cacheable
	case *view.ListResourcesResult:
		c = &r.Cacheable
	case *view.ListResourceTemplatesResult:
		c = &r.Cacheable
	case *mcp.ReadResourceResult:
		c = &r.Cacheable
	}
	if c != nil {
		switch {
		case sv.o.Calls.Policy() != nil || sv.o.Calls.PerCallerLists():
			c.CacheScope = "private"
		case c.CacheScope == "":
			c.CacheScope = "public"
		}
	}
	return res, nil
}

// headerOf is the HTTP header of the request extra came with (nil for
// none).
func headerOf(extra *mcp.RequestExtra) http.Header {
	if extra == nil {
		return nil
	}
	return extra.Header
}

// clientError is err, the failure of a backend request of session s, as
// its client gets it: a 2026-07-28 caller gets a backend's -32021
// (missing client capability) as the backend sent it, code and data
// (calls.ClientErrorOf); anything else is err.
func clientError(s *session.Session, err error) error {
	if err != nil && s.Kind() != session.KindSession {
		if je := calls.ClientErrorOf(err); je != nil {
			return je
		}
	}
	return err
}

// result turns a typed result into an mcp.Result that is nil on error.
func result[R mcp.Result](res R, err error) (mcp.Result, error) {
	if err != nil {
		return nil, err
	}
	return res, nil
}

// urlElicitation reports whether the client of ss declared URL-mode
// elicitation.
func urlElicitation(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil && p.Capabilities.Elicitation.URL != nil
}
