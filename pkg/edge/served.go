package edge

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

// served is one generation of what the edge serves: a catalog View and the
// go-sdk values built from it. It is built once per view and shared,
// read-only, by every session server; unchanged entries share their
// *mcp.Tool (and prompt, resource) with the previous served value.
type served struct {
	gen     uint64 // generation the view was built at
	view    *catalog.View
	tools   map[string]*mcp.Tool     // by exposed name
	prompts map[string]*mcp.Prompt   // by exposed name
	res     map[string]*mcp.Resource // by URI
	// The same values as lists sorted by name (URI for resources), the
	// order of tools/list, prompts/list and resources/list.
	toolList   []*mcp.Tool
	promptList []*mcp.Prompt
	resList    []*mcp.Resource
	backends   map[string]events.BackendConfig
	// index is the tool search index of an optimizer edge (nil in
	// passthrough mode), built once per view by Edge.indexView.
	index *toolIndex
	// dropped lists definitions the go-sdk would refuse (AddTool panics);
	// catalog validation should make this empty.
	dropped []string
}

// emptyServed is what an edge serves before its first view.
func emptyServed() *served {
	return &served{view: catalog.Aggregate(nil, nil), tools: map[string]*mcp.Tool{},
		prompts: map[string]*mcp.Prompt{}, res: map[string]*mcp.Resource{}, backends: map[string]events.BackendConfig{}}
}

// groupSources returns the catalog sources of the advertisable backends of
// g that have a catalog, and the configs of all of them.
func groupSources(g *events.Group) ([]catalog.Source, map[string]events.BackendConfig) {
	var srcs []catalog.Source
	cfgs := map[string]events.BackendConfig{}
	if g == nil {
		return nil, cfgs
	}
	for _, name := range g.BackendNames() {
		b := g.Backends[name]
		if !b.Advertisable || b.Catalog == nil {
			continue
		}
		cfgs[name] = b.Config
		srcs = append(srcs, catalog.Source{Backend: name, Tools: b.Catalog.Tools,
			Resources: b.Catalog.Resources, Prompts: b.Catalog.Prompts})
	}
	return srcs, cfgs
}

// buildServed aggregates the group's view at gen and builds its go-sdk
// values, reusing those of prev for byte-identical definitions.
func buildServed(gen uint64, g *events.Group, sep string, prev *served) *served {
	srcs, cfgs := groupSources(g)
	v := catalog.Aggregate(srcs, &catalog.AggregateOptions{Separator: sep, Previous: prev.view})
	s := &served{gen: gen, view: v, tools: make(map[string]*mcp.Tool, len(v.Tools)),
		prompts: make(map[string]*mcp.Prompt, len(v.Prompts)), res: make(map[string]*mcp.Resource, len(v.Resources)),
		backends: cfgs}
	probe := mcp.NewServer(&mcp.Implementation{Name: "probe"}, nil)
	for _, te := range v.Tools {
		if old, ok := prev.view.Tool(te.Exposed); ok && bytes.Equal(old.Def, te.Def) && prev.tools[te.Exposed] != nil {
			s.tools[te.Exposed] = prev.tools[te.Exposed]
			continue
		}
		t, err := sdkTool(te.Def)
		if err == nil {
			err = tryAdd(func() { probe.AddTool(t, nil) })
		}
		if err != nil {
			s.dropped = append(s.dropped, fmt.Sprintf("tool %q: %v", te.Exposed, err))
			continue
		}
		s.tools[te.Exposed] = t
	}
	for _, pe := range v.Prompts {
		if old, ok := prev.view.Prompt(pe.Exposed); ok && bytes.Equal(old.Def, pe.Def) && prev.prompts[pe.Exposed] != nil {
			s.prompts[pe.Exposed] = prev.prompts[pe.Exposed]
			continue
		}
		p := &mcp.Prompt{}
		if err := json.Unmarshal(pe.Def, p); err != nil {
			s.dropped = append(s.dropped, fmt.Sprintf("prompt %q: %v", pe.Exposed, err))
			continue
		}
		s.prompts[pe.Exposed] = p
	}
	for _, re := range v.Resources {
		if old, ok := prev.view.Resource(re.URI); ok && bytes.Equal(old.Def, re.Def) && prev.res[re.URI] != nil {
			s.res[re.URI] = prev.res[re.URI]
			continue
		}
		r := &mcp.Resource{}
		err := json.Unmarshal(re.Def, r)
		if err == nil {
			err = tryAdd(func() { probe.AddResource(r, nil) })
		}
		if err != nil {
			s.dropped = append(s.dropped, fmt.Sprintf("resource %q: %v", re.URI, err))
			continue
		}
		s.res[re.URI] = r
	}
	for _, te := range v.Tools {
		if t := s.tools[te.Exposed]; t != nil {
			s.toolList = append(s.toolList, t)
		}
	}
	for _, pe := range v.Prompts {
		if p := s.prompts[pe.Exposed]; p != nil {
			s.promptList = append(s.promptList, p)
		}
	}
	for _, re := range v.Resources {
		if r := s.res[re.URI]; r != nil {
			s.resList = append(s.resList, r)
		}
	}
	return s
}

// sdkTool decodes a tool definition into an mcp.Tool whose schemas stay
// the raw bytes of the definition (no per-server reflection; the go-sdk
// serves them verbatim). Members mcp.Tool does not know are dropped by the
// go-sdk; see the package doc.
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

// change says which lists differ between two served values.
type change struct{ tools, prompts, resources bool }

func (c change) empty() bool { return !c.tools && !c.prompts && !c.resources }

// changeBetween compares two served values; an empty change means no
// session needs telling.
func changeBetween(old, next *served) change {
	d := catalog.Diff(old.view, next.view)
	return change{
		tools:     len(d.Added)+len(d.Removed)+len(d.Changed) > 0 || len(old.toolList) != len(next.toolList),
		prompts:   d.PromptsChanged || len(old.promptList) != len(next.promptList),
		resources: d.ResourcesChanged || len(old.resList) != len(next.resList),
	}
}
