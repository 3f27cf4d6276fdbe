package edge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"time"

	goauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/edge/backend"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/policy"
)

// ErrUnavailable is wrapped by the failures (in the call trail) of calls the
// served view does not hold (the caller gets an isError result).
var ErrUnavailable = errors.New("not available on this edge")

// unavailable is the result of a call to a tool the view does not hold.
func (e *Edge) unavailable(name string) *mcp.CallToolResult {
	e.m.unknownCalls.Inc() // counted, not logged: a client looping on it would flood the log
	e.log.Debug().Str("tool", name).Msg("call to a tool not in the served view")
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
		Text: fmt.Sprintf("tool %q is not available: no advertisable backend of group %q serves it now (it may have been removed or its backend is unhealthy); list the tools again",
			name, e.opts.Group)}}}
}

// backendConfig returns the configuration (URL and transport) of an
// advertisable backend.
func (e *Edge) backendConfig(name string) (events.BackendConfig, bool) {
	cfg, ok := (*e.backends.Load())[name]
	return cfg, ok
}

// route is where a call of one exposed tool goes: the view's entry (the
// owning backend and the tool's own name) and that backend's config. It is
// resolved once per call, and the call and its trail entry both use it.
type route struct {
	tool catalog.ToolEntry
	cfg  events.BackendConfig
	gen  uint64 // of the view it was resolved in
}

// resolve routes call c's exposed tool by the current view: an error
// wrapping ErrUnavailable when no advertisable backend serves it, or
// errDenied when the policy hides it from the caller (who is answered as
// for an unknown tool).
func (e *Edge) resolve(c toolCall) (route, error) {
	name := c.name
	cur := e.current()
	rt := route{gen: e.generation(cur)}
	entry, ok := cur.Catalog.Tool(name)
	if !ok {
		return rt, fmt.Errorf("tool %q: %w", name, ErrUnavailable)
	}
	rt.tool = entry
	cfg, ok := e.backendConfig(entry.Backend)
	if !ok {
		return rt, fmt.Errorf("tool %q: backend %q: %w", name, entry.Backend, ErrUnavailable)
	}
	rt.cfg = cfg
	if ok, refusal := e.allowed(cur, c.ti, c.ident, policy.KindTool, name); !ok {
		return rt, refusal
	}
	return rt, nil
}

// toolCall is one tools/call: who asked (the session, and for a session-less
// call the request's identity), what, and where it went.
type toolCall struct {
	s     *session.Session
	ident string // of a call without a session record
	name  string
	args  json.RawMessage
	later *backend.Closings // of a call lane: the backend bodies it closes after answering
	ti    *goauth.TokenInfo // the caller's verified token, nil without bearer auth
	meta  json.RawMessage   // the call's _meta, passed on (progressToken); nil for none
	relay backend.Relay     // the caller's client, for what the backend sends during the call; nil: nobody
}

// runCall routes a tools/call once, forwards it, and records it in the
// call trail (when one is kept) with the route it took. A failure is an
// isError result naming the tool; the trail has the reason.
func (e *Edge) runCall(ctx context.Context, c toolCall) backend.Reply {
	e.inflight.Add(1)
	defer e.inflight.Add(-1)
	start := time.Now()
	rt, err := e.resolve(c)
	if e.traced {
		return e.tracedForward(ctx, c, rt, err, start) // trace.go
	}
	return e.forward(ctx, c, rt, err, start)
}

// forward forwards call c by route rt (resolved at start; err its
// failure) and records it in the call trail when one is kept.
func (e *Edge) forward(ctx context.Context, c toolCall, rt route, err error, start time.Time) backend.Reply {
	var reply backend.Reply
	if err != nil {
		reply = backend.Reply{Res: e.unavailable(c.name)}
	} else if reply, err = e.pool.CallTool(ctx, backend.Call{Backend: rt.tool.Backend, Config: rt.cfg, Tool: rt.tool.Original,
		Args: c.args, Meta: c.meta, Later: c.later, Relay: c.relay}); err != nil {
		// err is a *backend.Error: its text names the backend and the kind
		// of failure only (never the backend's URL or error body).
		e.log.Warn().Str("tool", c.name).Str("backend", rt.tool.Backend).Err(err).Msg("tool call failed")
		reply = backend.Reply{Res: &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
			Text: fmt.Sprintf("tool %q: %v", c.name, err)}}}}
	}
	if e.opts.CallTrail != nil {
		e.audit(c, rt, start, &reply, err)
	}
	return reply
}

// getPrompt routes prompts/get to the owning backend.
func (e *Edge) getPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	e.inflight.Add(1)
	defer e.inflight.Add(-1)
	name := req.Params.Name
	cur := e.current()
	entry, ok := cur.Catalog.Prompt(name)
	cfg, ok := e.reachable(cur, entry.Backend, ok, req.GetExtra(), policy.KindPrompt, name)
	if !ok {
		// As a go-sdk server answers an unknown prompt: invalid params.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("prompt %q: %v", name, ErrUnavailable)}
	}
	params := &mcp.GetPromptParams{Name: entry.Original, Arguments: req.Params.Arguments}
	return backend.Do(ctx, e.pool, entry.Backend, cfg, "prompts/get", nil, func(ctx context.Context, cs *mcp.ClientSession) (*mcp.GetPromptResult, error) {
		return cs.GetPrompt(ctx, params)
	})
}

// readResource routes resources/read to the backend owning the URI.
func (e *Edge) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	e.inflight.Add(1)
	defer e.inflight.Add(-1)
	uri := req.Params.URI
	cur := e.current()
	entry, ok := cur.Catalog.Resource(uri)
	if !ok {
		// An expansion of a resource template is read at the template's
		// backend, under the URI as sent.
		if t, tok := e.template(uri); tok {
			entry, ok = catalog.ResourceEntry{URI: uri, Backend: t.Backend, OriginalURI: uri}, true
		}
	}
	cfg, ok := e.reachable(cur, entry.Backend, ok, req.GetExtra(), policy.KindResource, uri)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	own := entry.OriginalURI // a renamed resource is read by the backend's own URI
	if own == "" {
		own = uri
	}
	res, err := backend.Do(ctx, e.pool, entry.Backend, cfg, "resources/read", nil, func(ctx context.Context, cs *mcp.ClientSession) (*mcp.ReadResourceResult, error) {
		return cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: own})
	})
	if err == nil && own != uri {
		for _, c := range res.Contents {
			if c != nil && c.URI == own {
				c.URI = uri // as the client knows it
			}
		}
	}
	return res, err
}

// reachable is the config of backend, owner of the item of kind k named
// name that the view holds (found), when the backend is advertisable and
// the caller of a request (x) may use the item; not ok otherwise (counted
// as a request for an unknown item: it is answered as one).
func (e *Edge) reachable(cur *view.Served, backend string, found bool, x *mcp.RequestExtra, k policy.Kind, name string) (events.BackendConfig, bool) {
	cfg, ok := e.backendConfig(backend)
	if found && ok {
		ok, _ = e.allowed(cur, tokenInfoOf(x), e.identityOf(x), k, name)
	}
	if !found || !ok {
		e.m.unknownCalls.Inc()
		return events.BackendConfig{}, false
	}
	return cfg, true
}

// complete routes completion/complete by its reference: a prompt's to the
// backend owning the prompt, under the prompt's own name; a resource's to
// the backend owning the resource URI. A reference the caller cannot see
// is answered as the go-sdk answers an unknown one: invalid params.
func (e *Edge) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	e.inflight.Add(1)
	defer e.inflight.Add(-1)
	ref := req.Params.Ref
	if ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion: no ref"}
	}
	cur := e.current()
	var (
		owner, name string
		kind        policy.Kind
		own         = *ref
		ok          bool
	)
	switch ref.Type {
	case "ref/prompt":
		var entry catalog.PromptEntry
		entry, ok = cur.Catalog.Prompt(ref.Name)
		owner, kind, name, own.Name = entry.Backend, policy.KindPrompt, ref.Name, entry.Original
	case "ref/resource":
		var entry catalog.ResourceEntry
		entry, ok = cur.Catalog.Resource(ref.URI)
		owner, kind, name = entry.Backend, policy.KindResource, ref.URI
		if entry.OriginalURI != "" {
			own.URI = entry.OriginalURI
		}
		if !ok { // a resource template's completion: by its uriTemplate
			for _, t := range e.templates() {
				if t.URITemplate == ref.URI {
					owner, ok = t.Backend, true
					break
				}
			}
		}
	}
	cfg, ok := e.reachable(cur, owner, ok, req.GetExtra(), kind, name)
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("completion: %s %q: %v", ref.Type, name, ErrUnavailable)}
	}
	params := &mcp.CompleteParams{Ref: &own, Argument: req.Params.Argument, Context: req.Params.Context}
	return backend.Do(ctx, e.pool, owner, cfg, "completion/complete", nil, func(ctx context.Context, cs *mcp.ClientSession) (*mcp.CompleteResult, error) {
		return cs.Complete(ctx, params)
	})
}

// templates are the resource templates the edge serves: the view's,
// without a policy. The tool policy has no rules for templates yet, so
// an edge with a policy serves none (fails closed): a read of an
// expansion is then refused as an unknown resource.
func (e *Edge) templates() []catalog.TemplateEntry {
	if e.pol.Load() != nil {
		return nil
	}
	return e.current().Catalog.Templates
}

// template is the served resource template uri is an expansion of.
func (e *Edge) template(uri string) (catalog.TemplateEntry, bool) {
	if e.pol.Load() != nil {
		return catalog.TemplateEntry{}, false
	}
	return e.current().Catalog.Template(uri)
}
