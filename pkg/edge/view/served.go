package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/catalog/fromstate"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/mcpwire"
	"github.com/fleetgate/fleetgate/pkg/policy"
	"github.com/fleetgate/fleetgate/pkg/policy/fromview"
)

// Served is one generation of what the edge serves: a catalog View and the
// go-sdk values built from it. It is built once per view and shared,
// read-only, by every session server; unchanged entries share their
// *mcp.Tool (and prompt, resource) with the previous Served value.
type Served struct {
	Gen uint64 // generation the view was built at
	// Regions is, for a view merged from regional logs, the generation of
	// each region's log the view was built at (events.State.Regions; nil on
	// one log). Set once, before the view is served.
	Regions   map[string]uint64
	Catalog   *catalog.View
	Tools     map[string]*mcp.Tool     // by exposed name
	Prompts   map[string]*mcp.Prompt   // by exposed name
	Resources map[string]*mcp.Resource // by URI
	// The same values as lists sorted by name (URI for resources), the
	// order of tools/list, prompts/list and resources/list.
	ToolList     []*mcp.Tool
	PromptList   []*mcp.Prompt
	ResourceList []*mcp.Resource
	Backends     map[string]events.BackendConfig
	// Revisions holds, for each served backend that speaks the stateless
	// protocol generation, the revision it was discovered in (its
	// catalog's ProtocolVersion): the edge speaks it to that backend for
	// clients of that revision.
	Revisions map[string]string
	// StatelessOnly holds the served backends of Revisions that refused
	// initialize (their catalog's StatelessOnly): the edge speaks their
	// revision to them for clients of every revision.
	StatelessOnly map[string]bool
	// Index is the tool search Index of an optimizer edge (nil in
	// passthrough mode), built once per view by Edge.indexView.
	Index *Index
	// Dropped lists definitions the go-sdk would refuse (AddTool panics);
	// catalog validation should make this empty.
	Dropped []string
	// Stateless is what clients of the stateless generation are served
	// when some backend lists them other definitions (era.go); nil when
	// they are served s itself. Era picks.
	Stateless *Served

	// items are the view's items as the tool policy decides over them,
	// built on first use (Items): only an edge with a policy needs them.
	itemsOnce sync.Once
	items     *policy.ItemSet
	exec      executionsOnce // ToolExecutions
	defs      toolDefsOnce   // ToolDefs
}

// Items is the view's tools, prompts and resources as the tool policy
// decides over them (generation: the view's).
func (s *Served) Items() *policy.ItemSet {
	s.itemsOnce.Do(func() { s.items = fromview.Items(s.Gen, s.Catalog) })
	return s.items
}

// Filter is s as a caller who may use only what allowed allows sees it:
// the lists and maps hold the allowed items only, and the optimizer's
// index finds and advertises only allowed tools. Routing (Catalog) is
// unchanged: a call is checked against the caller's visible set itself.
func (s *Served) Filter(allowed func(k policy.Kind, name string) bool) *Served {
	f := &Served{Gen: s.Gen, Catalog: s.Catalog, Backends: s.Backends, Revisions: s.Revisions, StatelessOnly: s.StatelessOnly, Dropped: s.Dropped,
		Tools: map[string]*mcp.Tool{}, Prompts: map[string]*mcp.Prompt{}, Resources: map[string]*mcp.Resource{}}
	if s.Stateless != nil {
		f.Stateless = s.Stateless.Filter(allowed) // callers filter Era's value; this only keeps the eras apart
	}
	for _, t := range s.ToolList {
		if allowed(policy.KindTool, t.Name) {
			f.ToolList = append(f.ToolList, t)
			f.Tools[t.Name] = t
		}
	}
	for _, p := range s.PromptList {
		if allowed(policy.KindPrompt, p.Name) {
			f.PromptList = append(f.PromptList, p)
			f.Prompts[p.Name] = p
		}
	}
	for _, r := range s.ResourceList {
		if allowed(policy.KindResource, r.URI) {
			f.ResourceList = append(f.ResourceList, r)
			f.Resources[r.URI] = r
		}
	}
	f.items = s.Items()
	f.itemsOnce.Do(func() {})
	if s.Index != nil {
		ix := *s.Index
		ix.visible = func(name string) bool { return allowed(policy.KindTool, name) }
		ix.Advertised = nil
		for _, t := range s.Index.Advertised {
			if t.Name == FindToolName || t.Name == CallToolName || allowed(policy.KindTool, t.Name) {
				ix.Advertised = append(ix.Advertised, t)
			}
		}
		f.Index = &ix
	}
	return f
}

// Empty is what an edge serves before its first view.
func Empty() *Served {
	return &Served{Catalog: catalog.Aggregate(nil, nil), Tools: map[string]*mcp.Tool{},
		Prompts: map[string]*mcp.Prompt{}, Resources: map[string]*mcp.Resource{}, Backends: map[string]events.BackendConfig{}}
}

// advertised returns the configs of the advertisable backends of g that
// have a catalog: those the view serves.
func advertised(g *events.Group) map[string]events.BackendConfig {
	cfgs := map[string]events.BackendConfig{}
	if g == nil {
		return cfgs
	}
	for name, b := range g.Backends {
		if b.Advertisable && b.Catalog != nil {
			cfgs[name] = b.Config
		}
	}
	return cfgs
}

// revisions returns the stateless revisions of the served backends of g
// (those in cfgs) that speak one; nil for none.
func revisions(g *events.Group, cfgs map[string]events.BackendConfig) map[string]string {
	var out map[string]string
	for name := range cfgs {
		if pv := g.Backends[name].Catalog.ProtocolVersion; pv != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[name] = pv
		}
	}
	return out
}

// statelessOnly is Served.StatelessOnly of group g's backends cfgs.
func statelessOnly(g *events.Group, cfgs map[string]events.BackendConfig) map[string]bool {
	var out map[string]bool
	for name := range cfgs {
		if c := g.Backends[name].Catalog; c != nil && c.StatelessOnly && c.ProtocolVersion != "" {
			if out == nil {
				out = map[string]bool{}
			}
			out[name] = true
		}
	}
	return out
}

// Build aggregates the group's view at gen and builds its go-sdk
// values, reusing those of prev for byte-identical definitions. The
// exposed names are the group's naming in the state (fromstate.View, the
// very function the controller's view uses); sep is only the fallback
// separator for a log without a naming event for the group.
func Build(gen uint64, g *events.Group, sep string, prev *Served) *Served {
	cfgs := advertised(g)
	s := build(gen, fromstate.View(g, sep, prev.Catalog), prev)
	s.Backends, s.Revisions, s.StatelessOnly = cfgs, revisions(g, cfgs), statelessOnly(g, cfgs)
	s.Stateless = buildStateless(g, sep, s, prev) // era.go
	return s
}

// build is the Served value of view v at gen, sharing the go-sdk values
// of prev's byte-identical definitions.
func build(gen uint64, v *catalog.View, prev *Served) *Served {
	s := &Served{Gen: gen, Catalog: v, Tools: make(map[string]*mcp.Tool, len(v.Tools)),
		Prompts: make(map[string]*mcp.Prompt, len(v.Prompts)), Resources: make(map[string]*mcp.Resource, len(v.Resources))}
	probe := mcp.NewServer(&mcp.Implementation{Name: "probe"}, nil)
	for _, te := range v.Tools {
		if old, ok := prev.Catalog.Tool(te.Exposed); ok && bytes.Equal(old.Def, te.Def) && prev.Tools[te.Exposed] != nil {
			s.Tools[te.Exposed] = prev.Tools[te.Exposed]
			continue
		}
		t, err := sdkTool(te.Def)
		if err == nil {
			err = tryAdd(func() { probe.AddTool(t, nil) })
		}
		if err != nil {
			s.Dropped = append(s.Dropped, fmt.Sprintf("tool %q: %v", te.Exposed, err))
			continue
		}
		s.Tools[te.Exposed] = t
	}
	for _, pe := range v.Prompts {
		if old, ok := prev.Catalog.Prompt(pe.Exposed); ok && bytes.Equal(old.Def, pe.Def) && prev.Prompts[pe.Exposed] != nil {
			s.Prompts[pe.Exposed] = prev.Prompts[pe.Exposed]
			continue
		}
		p := &mcp.Prompt{}
		if err := json.Unmarshal(pe.Def, p); err != nil {
			s.Dropped = append(s.Dropped, fmt.Sprintf("prompt %q: %v", pe.Exposed, err))
			continue
		}
		s.Prompts[pe.Exposed] = p
	}
	for _, re := range v.Resources {
		if old, ok := prev.Catalog.Resource(re.URI); ok && bytes.Equal(old.Def, re.Def) && prev.Resources[re.URI] != nil {
			s.Resources[re.URI] = prev.Resources[re.URI]
			continue
		}
		r := &mcp.Resource{}
		err := json.Unmarshal(re.Def, r)
		if err == nil {
			err = tryAdd(func() { probe.AddResource(r, nil) })
		}
		if err != nil {
			s.Dropped = append(s.Dropped, fmt.Sprintf("resource %q: %v", re.URI, err))
			continue
		}
		s.Resources[re.URI] = r
	}
	for _, te := range v.Tools {
		if t := s.Tools[te.Exposed]; t != nil {
			s.ToolList = append(s.ToolList, t)
		}
	}
	for _, pe := range v.Prompts {
		if p := s.Prompts[pe.Exposed]; p != nil {
			s.PromptList = append(s.PromptList, p)
		}
	}
	for _, re := range v.Resources {
		if r := s.Resources[re.URI]; r != nil {
			s.ResourceList = append(s.ResourceList, r)
		}
	}
	return s
}

// sdkTool decodes a tool definition into an mcp.Tool whose schemas stay
// the raw bytes of the definition (no per-server reflection; the go-sdk
// serves them verbatim). The value names the tool and feeds the search
// index; lists serve the definition itself (defs.go).
func sdkTool(def json.RawMessage) (*mcp.Tool, error) {
	// The definition came from the bus: bounded before it is decoded.
	if err := mcpwire.Check(def, mcpwire.MaxDepth); err != nil {
		return nil, fmt.Errorf("decode tool: %w", err)
	}
	var raw struct {
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
	}
	if err := json.Unmarshal(def, &raw); err != nil {
		return nil, fmt.Errorf("decode tool: %w", err)
	}
	t := &mcp.Tool{}
	if err := json.Unmarshal(def, t); err != nil {
		return nil, fmt.Errorf("decode tool: %w", err)
	}
	t.InputSchema = raw.InputSchema
	t.OutputSchema = nil
	if len(raw.OutputSchema) > 0 && string(raw.OutputSchema) != "null" {
		t.OutputSchema = raw.OutputSchema
	}
	return t, nil
}

// tryAdd runs a go-sdk registration that panics on bad input and returns
// the panic as an error.
func tryAdd(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("rejected by go-sdk: %v", r)
		}
	}()
	f()
	return nil
}

// Change says which lists differ between two served values: those the
// session-based revisions are served, and, when either value serves the
// eras differently (Eras), those the stateless generation is served (the
// Stateless members; era.go). Era picks a client's.
type Change struct {
	Tools, Prompts, Resources                            bool
	Eras                                                 bool
	StatelessTools, StatelessPrompts, StatelessResources bool
}

func (c Change) None() bool {
	return !c.Tools && !c.Prompts && !c.Resources && !c.StatelessTools && !c.StatelessPrompts && !c.StatelessResources
}

// List kinds as bits: of a change (Bits), of the list_changed
// notifications a session is owed, and of a listen request's
// subscriptions.
const (
	BitTools uint8 = 1 << iota
	BitPrompts
	BitResources
)

// Bits is the change as list kind bits.
func (c Change) Bits() uint8 {
	var b uint8
	if c.Tools {
		b |= BitTools
	}
	if c.Prompts {
		b |= BitPrompts
	}
	if c.Resources {
		b |= BitResources
	}
	return b
}

// Between compares two served values; an empty change means no
// session needs telling.
func Between(old, next *Served) Change {
	c := between(old, next)
	if old.Stateless != nil || next.Stateless != nil {
		st := between(old.Era(FirstStateless), next.Era(FirstStateless))
		c.Eras, c.StatelessTools, c.StatelessPrompts, c.StatelessResources = true, st.Tools, st.Prompts, st.Resources
	}
	return c
}

// between is Between of one era's values.
func between(old, next *Served) Change {
	d := catalog.Diff(old.Catalog, next.Catalog)
	return Change{
		Tools:     len(d.Added)+len(d.Removed)+len(d.Changed) > 0 || len(old.ToolList) != len(next.ToolList),
		Prompts:   d.PromptsChanged || len(old.PromptList) != len(next.PromptList),
		Resources: d.ResourcesChanged || len(old.ResourceList) != len(next.ResourceList),
	}
}

// toolDefsOnce holds the served tool definitions of a Served value and
// their catalog digest, made on first use (ToolDefs).
type toolDefsOnce struct {
	once   sync.Once
	digest string
	raws   []json.RawMessage
}

// ToolDefs are the definitions of s's tools as s serves them, in served
// order, and their catalog digest: what a complete tools/list traversal
// of s yields (the convergence evidence's current digest). Computed once
// per served value, on first use; safe for concurrent use.
func (s *Served) ToolDefs() (digest string, raws []json.RawMessage) {
	d := &s.defs
	d.once.Do(func() {
		d.raws = make([]json.RawMessage, 0, len(s.ToolList))
		for _, t := range s.ToolList {
			if b := s.ToolDef(t); b != nil {
				d.raws = append(d.raws, b)
			}
		}
		d.digest, _ = catalog.Digest(d.raws)
	})
	return d.digest, d.raws
}
