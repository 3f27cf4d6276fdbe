package prober

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/catalog"
)

// Errors of a discovery, matched with errors.Is.
var (
	// ErrCursorLoop: a backend returned a nextCursor it had returned before.
	ErrCursorLoop = errors.New("list cursor loop")
	// ErrTooManyPages: a list method exceeded Options.MaxPages pages.
	ErrTooManyPages = errors.New("too many list pages")
	// ErrNotCaptured: the raw bytes of a list result were not seen on the
	// wire (the SDK answered without the backend).
	ErrNotCaptured = errors.New("list result not captured")
)

// Catalog is what a backend offers, as listed in one discovery.
type Catalog struct {
	// At is when the discovery completed.
	At time.Time
	// Tools, Resources and Prompts are the valid definitions, in the
	// backend's order, each in RFC 8785 canonical JSON with every member
	// the backend sent (unknown ones included).
	Tools, Resources, Prompts []json.RawMessage
	// ResourceTemplates are the valid resource templates, likewise.
	ResourceTemplates []json.RawMessage
	// InvalidTools, InvalidResources and InvalidPrompts say why the other
	// definitions were dropped.
	InvalidTools     []catalog.InvalidToolError
	InvalidResources []catalog.InvalidResourceError
	InvalidPrompts   []catalog.InvalidPromptError
	// Digest is catalog.Digest(Tools).
	Digest string
	// Pages is the number of tools/list pages fetched.
	Pages int
	// ProtocolVersion is the stateless revision (2026-07-28 or newer) the
	// backend answered server/discover with; "" for a backend of the
	// session-based revisions only.
	ProtocolVersion string
	// StatelessOnly: the backend refused initialize and speaks only the
	// stateless generation (stateless.go), in ProtocolVersion.
	StatelessOnly bool
	// Stateless are the lists the backend gives clients of
	// ProtocolVersion when it speaks both generations and they differ
	// from the lists above, which are those of the session-based
	// revisions (era.go); nil otherwise.
	Stateless *catalog.EraLists
}

// listPage is one raw list result; only the member of its method is set.
type listPage struct {
	Tools      []json.RawMessage `json:"tools"`
	Resources  []json.RawMessage `json:"resources"`
	Prompts    []json.RawMessage `json:"prompts"`
	Templates  []json.RawMessage `json:"resourceTemplates"`
	NextCursor string            `json:"nextCursor"`
}

// discover lists the backend's catalog and delivers it when it changed. It
// reports whether the listing completed.
func (p *Prober) discover(ctx context.Context, s *session) bool {
	start := time.Now()
	c, err := p.list(s)
	if err == nil {
		if !s.revisionAsked {
			if rev, known := p.revision(s.calls, s); known {
				p.lastRevision, s.revisionAsked = rev, true
			}
		}
		c.ProtocolVersion, c.StatelessOnly = p.lastRevision, s.stateless
		if c.ProtocolVersion != "" && !s.stateless {
			c.Stateless, err = p.listEra(s, c) // era.go
		}
	}
	p.m.discovered(p.target, err == nil, time.Since(start))
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn().Err(err).Msg("backend discovery failed")
		}
		return false
	}
	key := fingerprint(c)
	if key == p.last {
		return true
	}
	p.last = key
	p.log.Info().Str("digest", c.Digest).Int("tools", len(c.Tools)).Int("invalid_tools", len(c.InvalidTools)).
		Int("resources", len(c.Resources)).Int("prompts", len(c.Prompts)).Msg("backend catalog changed")
	if p.sink.Catalog != nil {
		p.sink.Catalog(p.target, c)
	}
	return true
}

func (p *Prober) list(s *session) (Catalog, error) {
	ctx, cancel := context.WithTimeout(s.calls, p.discoveryTimeout)
	defer cancel()
	cs, release, err := p.listSession(ctx, s)
	if err != nil {
		return Catalog{}, fmt.Errorf("discover %s: %w", p.target, err)
	}
	defer release()
	return p.listOver(ctx, s, cs)
}

// listOver lists the catalog over cs, a session whose wire is s's (the
// raw list results are captured there).
func (p *Prober) listOver(ctx context.Context, s *session, cs *mcp.ClientSession) (Catalog, error) {
	s.wire.lists.reset()
	var c Catalog
	caps := &mcp.ServerCapabilities{}
	if ir := cs.InitializeResult(); ir != nil && ir.Capabilities != nil {
		caps = ir.Capabilities
	}
	tools, pages, err := p.listAll(ctx, s, methodTools, func(ctx context.Context, cur string) (string, error) {
		r, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cur})
		if err != nil {
			return "", err
		}
		return r.NextCursor, nil
	})
	if err != nil {
		return c, err
	}
	c.Pages = pages
	var resources, templates, prompts []json.RawMessage
	if caps.Resources != nil {
		resources, _, err = p.listAll(ctx, s, methodResources, func(ctx context.Context, cur string) (string, error) {
			r, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cur})
			if err != nil {
				return "", err
			}
			return r.NextCursor, nil
		})
		if err != nil && !methodNotFound(err) {
			return c, err
		}
		templates, _, err = p.listAll(ctx, s, methodTemplates, func(ctx context.Context, cur string) (string, error) {
			r, err := cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cur})
			if err != nil {
				return "", err
			}
			return r.NextCursor, nil
		})
		if err != nil && !methodNotFound(err) {
			return c, err
		}
	}
	if caps.Prompts != nil {
		prompts, _, err = p.listAll(ctx, s, methodPrompts, func(ctx context.Context, cur string) (string, error) {
			r, err := cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cur})
			if err != nil {
				return "", err
			}
			return r.NextCursor, nil
		})
		if err != nil && !methodNotFound(err) {
			return c, err
		}
	}

	valid, invalid := catalog.FilterTools(tools)
	c.InvalidTools = invalid
	for _, raw := range valid {
		canon, err := catalog.Canonical(raw)
		if err != nil { // FilterTools canonicalizes too; kept for safety
			c.InvalidTools = append(c.InvalidTools, catalog.InvalidToolError{Reason: err.Error()})
			continue
		}
		c.Tools = append(c.Tools, canon)
	}
	validR, invalidR := catalog.FilterResources(resources)
	c.InvalidResources = invalidR
	c.Resources = canonicalAll(validR)
	validT, invalidT := catalog.FilterResourceTemplates(templates)
	c.InvalidResources = append(c.InvalidResources, invalidT...)
	c.ResourceTemplates = canonicalAll(validT)
	validP, invalidP := catalog.FilterPrompts(prompts)
	c.InvalidPrompts = invalidP
	c.Prompts = canonicalAll(validP)
	if c.Digest, err = catalog.Digest(c.Tools); err != nil {
		return c, fmt.Errorf("discover %s: %w", p.target, err)
	}
	c.At = p.now()
	return c, nil
}

// listAll follows nextCursor through every page of method, returning the
// raw items captured from the wire.
func (p *Prober) listAll(ctx context.Context, s *session, method string,
	call func(ctx context.Context, cursor string) (next string, err error)) ([]json.RawMessage, int, error) {
	var items []json.RawMessage
	seen := map[string]bool{}
	cursor := ""
	for pages := 0; ; {
		if pages >= p.maxPages {
			return nil, pages, fmt.Errorf("discover %s: %s: %w (limit %d)", p.target, method, ErrTooManyPages, p.maxPages)
		}
		pctx, cancel := context.WithTimeout(ctx, p.policy.Timeout)
		next, err := call(pctx, cursor)
		cancel()
		if err != nil {
			return nil, pages, fmt.Errorf("discover %s: %s cursor %q: %w", p.target, method, cursor, err)
		}
		pages++
		raw, ok := s.wire.lists.take(listKey{method, cursor})
		if !ok {
			return nil, pages, fmt.Errorf("discover %s: %s cursor %q: %w", p.target, method, cursor, ErrNotCaptured)
		}
		var page listPage
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, pages, fmt.Errorf("discover %s: %s cursor %q: decode result: %w", p.target, method, cursor, err)
		}
		if page.NextCursor != next {
			return nil, pages, fmt.Errorf("discover %s: %s cursor %q: %w (captured nextCursor %q, SDK saw %q)",
				p.target, method, cursor, ErrNotCaptured, page.NextCursor, next)
		}
		switch method {
		case methodTools:
			items = append(items, page.Tools...)
		case methodResources:
			items = append(items, page.Resources...)
		case methodTemplates:
			items = append(items, page.Templates...)
		default:
			items = append(items, page.Prompts...)
		}
		if next == "" {
			return items, pages, nil
		}
		if seen[next] {
			return nil, pages, fmt.Errorf("discover %s: %s cursor %q: %w", p.target, method, next, ErrCursorLoop)
		}
		seen[next] = true
		cursor = next
	}
}

func methodNotFound(err error) bool {
	var we *jsonrpc.Error
	return errors.As(err, &we) && we.Code == jsonrpc.CodeMethodNotFound
}

// canonicalAll canonicalizes definitions that the catalog filters already
// accepted (and therefore canonicalized once); a failure drops the item.
func canonicalAll(raws []json.RawMessage) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(raws))
	for _, r := range raws {
		if c, err := catalog.Canonical(r); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// fingerprint identifies what a Catalog delivery carries: the tools digest
// and the canonical resources and prompts.
func fingerprint(c Catalog) string {
	h := sha256.New()
	for _, list := range [][]json.RawMessage{c.Resources, c.Prompts, c.ResourceTemplates} {
		for _, item := range list {
			h.Write(item)
			h.Write([]byte{'\n'})
		}
		h.Write([]byte{0})
	}
	if e := c.Stateless; e != nil {
		h.Write([]byte(e.Digest))
		for _, list := range [][]json.RawMessage{e.Resources, e.Prompts, e.ResourceTemplates} {
			for _, item := range list {
				h.Write(item)
				h.Write([]byte{'\n'})
			}
			h.Write([]byte{0})
		}
	}
	return c.Digest + "|" + c.ProtocolVersion + "|" + fmt.Sprint(c.StatelessOnly) + "|" + hex.EncodeToString(h.Sum(nil))
}
