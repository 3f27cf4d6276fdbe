package calls

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/edge/backend"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/policy"
)

// GetPrompt routes prompts/get to the owning backend.
func (pl *Plane) GetPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	pl.inflight.Add(1)
	defer pl.inflight.Add(-1)
	name := req.Params.Name
	cur := pl.o.View().Era(metaRevision(req.Params.Meta)) // era.go
	entry, ok := cur.Catalog.Prompt(name)
	cfg, ok := pl.Reachable(cur, entry.Backend, ok, req.GetExtra(), policy.KindPrompt, name)
	if !ok {
		// As a go-sdk server answers an unknown prompt: invalid params.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("prompt %q: %v", name, ErrUnavailable)}
	}
	it := item{method: "prompts/get", name: name, ident: pl.IdentityOf(req.GetExtra()), meta: req.Params.Meta,
		responses: req.Params.InputResponses, state: req.Params.RequestState, extra: req.GetExtra()}
	rev := revisionOf(cur, entry.Backend, cfg)
	if st, bridged, err := pl.statelessOf(cur, it, entry.Backend, rev); err != nil {
		return nil, err
	} else if st != nil {
		p := map[string]any{"name": entry.Original}
		if req.Params.Arguments != nil {
			p["arguments"] = req.Params.Arguments
		}
		st.AddTo(p)
		raw, err := pl.o.Pool.Stateless(ctx, backend.Request{Backend: entry.Backend, Config: cfg, Revision: st.Revision,
			Method: "prompts/get", Name: entry.Original, Params: p, ParamHeaders: st.ParamHeaders})
		if err != nil {
			return nil, err
		}
		var res mcp.GetPromptResult
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, fmt.Errorf("prompt %q: decode result: %w", name, err)
		}
		if bridged {
			if res.NeedsInput() {
				return nil, fmt.Errorf("prompt %q: %w", name, inputAsked(entry.Backend, res.InputRequests))
			}
			return &mcp.GetPromptResult{Meta: withoutServerInfo(res.Meta), Description: res.Description, Messages: res.Messages}, nil
		}
		if err := pl.sealItem(it, entry.Backend, &res.RequestState, res.Meta, time.Now()); err != nil {
			return nil, err
		}
		return &res, nil
	}
	params := &mcp.GetPromptParams{Name: entry.Original, Arguments: req.Params.Arguments}
	return backend.Do(ctx, pl.o.Pool, entry.Backend, cfg, "prompts/get", nil, func(ctx context.Context, cs *mcp.ClientSession) (*mcp.GetPromptResult, error) {
		return cs.GetPrompt(ctx, params)
	})
}

// ReadResource routes resources/read to the backend owning the URI.
func (pl *Plane) ReadResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	pl.inflight.Add(1)
	defer pl.inflight.Add(-1)
	uri := req.Params.URI
	rev := metaRevision(req.Params.Meta) // era.go
	cur := pl.o.View().Era(rev)
	entry, ok := cur.Catalog.Resource(uri)
	if !ok {
		// An expansion of a resource template is read at the template's
		// backend, under the URI as sent.
		if t, tok := pl.Template(uri, rev); tok {
			entry, ok = catalog.ResourceEntry{URI: uri, Backend: t.Backend, OriginalURI: uri}, true
		}
	}
	cfg, ok := pl.Reachable(cur, entry.Backend, ok, req.GetExtra(), policy.KindResource, uri)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	own := entry.OriginalURI // a renamed resource is read by the backend's own URI
	if own == "" {
		own = uri
	}
	it := item{method: "resources/read", name: uri, ident: pl.IdentityOf(req.GetExtra()), meta: req.Params.Meta,
		responses: req.Params.InputResponses, state: req.Params.RequestState, extra: req.GetExtra()}
	rev = revisionOf(cur, entry.Backend, cfg)
	if st, bridged, err := pl.statelessOf(cur, it, entry.Backend, rev); err != nil {
		return nil, err
	} else if st != nil {
		p := map[string]any{"uri": own}
		st.AddTo(p)
		raw, err := pl.o.Pool.Stateless(ctx, backend.Request{Backend: entry.Backend, Config: cfg, Revision: st.Revision,
			Method: "resources/read", Name: own, Params: p, ParamHeaders: st.ParamHeaders})
		if err != nil {
			return nil, err
		}
		var res mcp.ReadResourceResult
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, fmt.Errorf("resource %q: decode result: %w", uri, err)
		}
		if bridged {
			if res.NeedsInput() {
				return nil, fmt.Errorf("resource %q: %w", uri, inputAsked(entry.Backend, res.InputRequests))
			}
			out := &mcp.ReadResourceResult{Meta: withoutServerInfo(res.Meta), Contents: res.Contents}
			renamed(out, own, uri)
			return out, nil
		}
		if err := pl.sealItem(it, entry.Backend, &res.RequestState, res.Meta, time.Now()); err != nil {
			return nil, err
		}
		renamed(&res, own, uri)
		return &res, nil
	}
	res, err := backend.Do(ctx, pl.o.Pool, entry.Backend, cfg, "resources/read", nil, func(ctx context.Context, cs *mcp.ClientSession) (*mcp.ReadResourceResult, error) {
		return cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: own})
	})
	if err == nil {
		renamed(res, own, uri)
	}
	return res, err
}

// renamed gives the contents of res, read as own, the URI the client knows.
func renamed(res *mcp.ReadResourceResult, own, uri string) {
	if own == uri {
		return
	}
	for _, c := range res.Contents {
		if c != nil && c.URI == own {
			c.URI = uri // as the client knows it
		}
	}
}

// Reachable is the config of backend, owner of the item of kind k named
// name that the view holds (found), when the backend is advertisable and
// the caller of a request (x) may use the item; not ok otherwise (counted
// as a request for an unknown item: it is answered as one).
func (pl *Plane) Reachable(cur *view.Served, backend string, found bool, x *mcp.RequestExtra, k policy.Kind, name string) (events.BackendConfig, bool) {
	cfg, ok := pl.BackendConfig(backend)
	if found && ok {
		ok, _ = pl.Allowed(cur, TokenInfoOf(x), pl.IdentityOf(x), k, name)
	}
	if !found || !ok {
		pl.unknownCalls.Inc()
		return events.BackendConfig{}, false
	}
	return cfg, true
}

// Complete routes completion/complete by its reference: a prompt's to the
// backend owning the prompt, under the prompt's own name; a resource's to
// the backend owning the resource URI. A reference the caller cannot see
// is answered as the go-sdk answers an unknown one: invalid params.
func (pl *Plane) Complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	pl.inflight.Add(1)
	defer pl.inflight.Add(-1)
	ref := req.Params.Ref
	if ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion: no ref"}
	}
	rev := metaRevision(req.Params.Meta) // era.go
	cur := pl.o.View().Era(rev)
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
			for _, t := range pl.Templates(rev) {
				if t.URITemplate == ref.URI {
					owner, ok = t.Backend, true
					break
				}
			}
		}
	}
	cfg, ok := pl.Reachable(cur, owner, ok, req.GetExtra(), kind, name)
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("completion: %s %q: %v", ref.Type, name, ErrUnavailable)}
	}
	it := item{method: "completion/complete", name: name, ident: pl.IdentityOf(req.GetExtra()), meta: req.Params.Meta, extra: req.GetExtra()}
	if st, bridged, err := pl.statelessOf(cur, it, owner, revisionOf(cur, owner, cfg)); err != nil {
		return nil, err
	} else if st != nil { // in the backend's stateless revision, as prompts/get
		return pl.completeStateless(ctx, owner, cfg, st, bridged, &own, req.Params)
	}
	params := &mcp.CompleteParams{Ref: &own, Argument: req.Params.Argument, Context: req.Params.Context}
	return backend.Do(ctx, pl.o.Pool, owner, cfg, "completion/complete", nil, func(ctx context.Context, cs *mcp.ClientSession) (*mcp.CompleteResult, error) {
		return cs.Complete(ctx, params)
	})
}

// completeStateless sends a completion of ref (the backend's own) to
// backend b as a request of the stateless revision st: a client's of that
// revision, or bridged for a client of the session-based ones (the
// result then without the members of the later revision).
func (pl *Plane) completeStateless(ctx context.Context, b string, cfg events.BackendConfig, st *backend.Stateless, bridged bool,
	ref *mcp.CompleteReference, in *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	p := map[string]any{"ref": ref, "argument": in.Argument}
	if in.Context != nil {
		p["context"] = in.Context
	}
	st.AddTo(p)
	raw, err := pl.o.Pool.Stateless(ctx, backend.Request{Backend: b, Config: cfg, Revision: st.Revision,
		Method: "completion/complete", Params: p, ParamHeaders: st.ParamHeaders})
	if err != nil {
		return nil, err
	}
	var res mcp.CompleteResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("completion: decode result: %w", err)
	}
	if bridged {
		return &mcp.CompleteResult{Meta: withoutServerInfo(res.Meta), Completion: res.Completion}, nil
	}
	return &res, nil
}

// Templates are the resource templates the edge serves a client of
// revision rev: the view's of its era, without a policy. The tool policy
// has no rules for templates yet, so an edge with a policy serves none
// (fails closed): a read of an expansion is then refused as an unknown
// resource.
func (pl *Plane) Templates(rev string) []catalog.TemplateEntry {
	if pl.pol.Load() != nil {
		return nil
	}
	return pl.o.View().Era(rev).Catalog.Templates
}

// Template is the resource template served to a client of revision rev
// that uri is an expansion of.
func (pl *Plane) Template(uri, rev string) (catalog.TemplateEntry, bool) {
	if pl.pol.Load() != nil {
		return catalog.TemplateEntry{}, false
	}
	return pl.o.View().Era(rev).Catalog.Template(uri)
}

// statelessOf is the stateless request of item it to backend b (at
// revision rev, in the view cur): that of a client of the stateless
// generation, or, for a backend of the stateless generation only, one
// the edge makes for a client of the session-based revisions (bridge.go);
// nil for a request that takes the backend's pooled session. bridged
// reports the second case.
func (pl *Plane) statelessOf(cur *view.Served, it item, b, rev string) (st *backend.Stateless, bridged bool, err error) {
	st, je := pl.itemStateless(it, b, rev, time.Now())
	switch {
	case je != nil:
		return nil, false, je
	case st != nil || rev == "" || !cur.StatelessOnly[b]:
		return st, false, nil
	}
	if st, err = bridgeOf(it.meta, rev, nil); err != nil {
		return nil, false, fmt.Errorf("%s %q: %w", it.method, it.name, err)
	}
	return st, true, nil
}
