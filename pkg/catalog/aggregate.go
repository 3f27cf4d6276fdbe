package catalog

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/gowebpki/jcs"

	"github.com/fleetgate/fleetgate/pkg/naming"
)

// DefaultSeparator joins a backend's name and a tool's name when
// AggregateOptions.Separator is empty.
const DefaultSeparator = naming.DefaultSeparator

// Source is one backend's catalog, its definitions as the backend returned
// them.
type Source struct {
	Backend   string
	Tools     []json.RawMessage
	Resources []json.RawMessage
	Prompts   []json.RawMessage
	// ResourceTemplates are the backend's resource templates (by
	// uriTemplate, never renamed: a read is routed by matching it).
	ResourceTemplates []json.RawMessage
	// Reserve makes the source's names take part in the naming of the
	// others (collisions are settled as if it were served) without
	// serving its definitions: a backend whose catalog is known but that
	// is not advertisable keeps its names, so that a health change never
	// renames another backend's tools (see package naming).
	Reserve bool
}

// AggregateOptions configure Aggregate. A nil *AggregateOptions means the
// defaults.
type AggregateOptions struct {
	// Separator goes between the backend name and the definition's name
	// in an exposed name. Empty means DefaultSeparator. It should consist
	// of tool-name characters [A-Za-z0-9_.-]; tools whose exposed name
	// would not are rejected.
	Separator string

	// Naming decides the exposed names: strategy, backend order and each
	// backend's rules (package naming). Nil is the prefix strategy with
	// Separator and backends in name order. When set, a non-empty
	// Naming.Separator wins over Separator.
	Naming *naming.Spec

	// Previous is the View of the previous generation, or nil. Tool
	// definitions byte-for-byte equal to ones Previous was built from are
	// not parsed, validated or canonicalized again. The result is the
	// same with or without it; only the cost differs.
	Previous *View
}

// Aggregate builds the View of a group from its backends' catalogs.
//
// Every definition is validated as ValidateTool, ValidatePrompt and
// ValidateResource do; failures are listed in View.Rejected, as are Sources
// whose Backend is not a valid tool name (1 to MaxNameLen bytes of
// [A-Za-z0-9_.-]). Sources naming the same backend are merged (a backend
// is Reserve only when all its sources are). Of several definitions of one
// backend sharing a name (URI for resources), the one whose canonical
// projection (canonical definition for prompts and resources), then raw
// bytes, sort first is kept and the others rejected.
//
// The valid definitions of every source, Reserve ones included, are then
// named by naming.Resolve with AggregateOptions.Naming: what a backend's
// rules filter out, and what a collision withholds, is not served; every
// collision is listed in View.Collisions. A tool whose exposed name is not
// a valid tool name (a bad separator) is rejected. A resource is served
// under its exposed URI; its name is prefixed under the prefix strategy and
// kept otherwise. Definitions of Reserve sources are not served.
//
// The result depends only on the set of definitions and on the options:
// the order of sources and of definitions within them does not matter.
func Aggregate(sources []Source, opts *AggregateOptions) *View {
	a := aggregator{sep: DefaultSeparator, prev: &View{}, view: &View{prepared: make(map[preparedKey]*preparedTool)}}
	var spec naming.Spec
	if opts != nil {
		if opts.Separator != "" {
			a.sep = opts.Separator
		}
		if opts.Previous != nil {
			a.prev = opts.Previous
		}
		if opts.Naming != nil {
			spec = *opts.Naming
		}
	}
	if spec.Separator == "" {
		spec.Separator = a.sep
	}
	a.sep = spec.Separator
	a.prefixResources = spec.Conflicts == "" || spec.Conflicts == naming.Prefix
	a.reserve = map[string]bool{}
	for _, src := range a.merge(sources) {
		a.reserve[src.Backend] = src.Reserve
		a.addTools(src.Backend, src.Tools)
		a.addPrompts(src.Backend, src.Prompts)
		a.addResources(src.Backend, src.Resources)
	}
	var tplCollisions []Collision
	a.view.Templates, tplCollisions = aggregateTemplates(sources)
	a.resolve(&spec)
	a.view.Collisions = append(a.view.Collisions, tplCollisions...)
	a.buildTools()
	a.buildPrompts()
	a.buildResources()
	v := a.view
	slices.SortFunc(v.Collisions, func(x, y Collision) int {
		return cmp.Or(cmp.Compare(x.Kind, y.Kind), cmp.Compare(x.Name, y.Name),
			cmp.Compare(x.Backend, y.Backend), cmp.Compare(x.Original, y.Original))
	})
	slices.SortFunc(v.Rejected, func(x, y Rejection) int {
		return cmp.Or(cmp.Compare(x.Backend, y.Backend), cmp.Compare(x.Kind, y.Kind),
			cmp.Compare(x.Name, y.Name), cmp.Compare(x.Reason, y.Reason))
	})
	v.Rejected = slices.Compact(v.Rejected)
	return v
}

// aggregator carries the state of one Aggregate call.
type aggregator struct {
	sep  string
	prev *View // never nil
	view *View

	reserve         map[string]bool // by backend: Source.Reserve
	prefixResources bool            // resource names get <backend><sep> (prefix strategy)

	tools       []*preparedTool
	toolClaims  []claim
	prompts     []entity
	promptClaim []claim
	resources   []resourceItem
}

type resourceItem struct {
	backend string
	exposed string // URI, set by resolve
	entity
}

// merge groups sources by backend, in backend order, rejecting invalid
// backend names.
func (a *aggregator) merge(sources []Source) []Source {
	byName := make(map[string]int, len(sources))
	merged := make([]Source, 0, len(sources))
	for _, s := range sources {
		if err := ValidateName(s.Backend); err != nil {
			a.reject(s.Backend, KindBackend, "", fmt.Sprintf("backend %v", err))
			continue
		}
		i, ok := byName[s.Backend]
		if !ok {
			byName[s.Backend] = len(merged)
			merged = append(merged, s)
			continue
		}
		// Clip so that appending never writes into the caller's arrays.
		m := &merged[i]
		m.Tools = append(slices.Clip(m.Tools), s.Tools...)
		m.Prompts = append(slices.Clip(m.Prompts), s.Prompts...)
		m.Resources = append(slices.Clip(m.Resources), s.Resources...)
		m.Reserve = m.Reserve && s.Reserve
	}
	slices.SortFunc(merged, func(x, y Source) int { return cmp.Compare(x.Backend, y.Backend) })
	return merged
}

func (a *aggregator) reject(backend string, kind Kind, name, reason string) {
	a.view.Rejected = append(a.view.Rejected, Rejection{Backend: backend, Kind: kind, Name: name, Reason: reason})
}

const dupReason = "duplicate in backend, another definition kept"

func (a *aggregator) addTools(backend string, raws []json.RawMessage) {
	byName := make(map[string]int, len(raws))
	for _, raw := range raws {
		t := a.prepareTool(raw)
		if t.reason != "" {
			a.reject(backend, KindTool, t.proj.name, t.reason)
			continue
		}
		name := t.proj.name
		if i, ok := byName[name]; ok {
			a.reject(backend, KindTool, name, dupReason)
			if compareTools(t, a.tools[i]) < 0 {
				a.tools[i] = t
			}
			continue
		}
		byName[name] = len(a.tools)
		a.toolClaims = append(a.toolClaims, claim{backend: backend, original: name, idx: len(a.tools)})
		a.tools = append(a.tools, t)
	}
}

// compareTools orders two definitions of one tool name by canonical
// projection, then raw bytes.
func compareTools(x, y *preparedTool) int {
	return cmp.Or(bytes.Compare(x.proj.appendCanonical(nil, x.proj.name), y.proj.appendCanonical(nil, y.proj.name)),
		bytes.Compare(x.obj.raw, y.obj.raw))
}

// compareEntities orders two definitions of one prompt or resource by
// canonical form, then raw bytes. Both are known to be canonicalizable.
func compareEntities(x, y entity) int {
	cx, _ := jcs.Transform(x.obj.raw)
	cy, _ := jcs.Transform(y.obj.raw)
	return cmp.Or(bytes.Compare(cx, cy), bytes.Compare(x.obj.raw, y.obj.raw))
}

func (a *aggregator) addPrompts(backend string, raws []json.RawMessage) {
	byName := make(map[string]int, len(raws))
	for _, raw := range raws {
		p, err := parseEntity(raw, "name")
		if err != nil {
			a.reject(backend, KindPrompt, p.key, err.Error())
			continue
		}
		if i, ok := byName[p.key]; ok {
			a.reject(backend, KindPrompt, p.key, dupReason)
			if compareEntities(p, a.prompts[i]) < 0 {
				a.prompts[i] = p
			}
			continue
		}
		byName[p.key] = len(a.prompts)
		a.promptClaim = append(a.promptClaim, claim{backend: backend, original: p.key, idx: len(a.prompts)})
		a.prompts = append(a.prompts, p)
	}
}

func (a *aggregator) addResources(backend string, raws []json.RawMessage) {
	byURI := make(map[string]int, len(raws))
	for _, raw := range raws {
		r, err := parseResource(raw)
		if err != nil {
			a.reject(backend, KindResource, r.key, err.(*InvalidResourceError).Reason)
			continue
		}
		if i, ok := byURI[r.key]; ok {
			a.reject(backend, KindResource, r.key, dupReason)
			if compareEntities(r, a.resources[i].entity) < 0 {
				a.resources[i].entity = r
			}
			continue
		}
		byURI[r.key] = len(a.resources)
		a.resources = append(a.resources, resourceItem{backend: backend, entity: r})
	}
}

func (a *aggregator) buildTools() {
	v := a.view
	slices.SortFunc(a.toolClaims, func(x, y claim) int { return cmp.Compare(x.exposed, y.exposed) })
	v.Tools = make([]ToolEntry, len(a.toolClaims))
	v.toolPrep = make([]*preparedTool, len(a.toolClaims))
	v.tools = make(map[string]int, len(a.toolClaims))
	d := newDigester()
	var buf []byte
	for i, c := range a.toolClaims {
		t := a.tools[c.idx]
		buf = t.proj.appendCanonical(buf[:0], c.exposed)
		d.add(buf)
		v.Tools[i] = ToolEntry{Exposed: c.exposed, Backend: c.backend, Original: c.original, Def: a.renamedTool(t, c.exposed)}
		v.toolPrep[i] = t
		v.tools[c.exposed] = i
	}
	v.Digest = d.sum()
}

// renamedTool returns t's definition under the exposed name, the very
// bytes of the Previous View when it served t under that name.
func (a *aggregator) renamedTool(t *preparedTool, exposed string) json.RawMessage {
	if j, ok := a.prev.tools[exposed]; ok && a.prev.toolPrep[j] == t {
		return a.prev.Tools[j].Def
	}
	def, _ := t.obj.withString("name", exposed) // parseTool rejected duplicate names
	return def
}

func (a *aggregator) buildPrompts() {
	v := a.view
	slices.SortFunc(a.promptClaim, func(x, y claim) int { return cmp.Compare(x.exposed, y.exposed) })
	v.Prompts = make([]PromptEntry, len(a.promptClaim))
	v.prompts = make(map[string]int, len(a.promptClaim))
	d := newDigester()
	for i, c := range a.promptClaim {
		def := renamedCanonical(a.prompts[c.idx].obj, c.exposed, d)
		v.Prompts[i] = PromptEntry{Exposed: c.exposed, Backend: c.backend, Original: c.original, Def: def}
		v.prompts[c.exposed] = i
	}
	v.promptSum = d.sumArray()
}

func (a *aggregator) buildResources() {
	v := a.view
	slices.SortFunc(a.resources, func(x, y resourceItem) int { return cmp.Compare(x.exposed, y.exposed) })
	v.Resources = make([]ResourceEntry, 0, len(a.resources))
	v.resources = make(map[string]int, len(a.resources))
	d := newDigester()
	for _, r := range a.resources {
		name := r.name
		if a.prefixResources {
			name = r.backend + a.sep + r.name
		}
		def, _ := r.obj.withString("name", name)
		if r.exposed != r.key {
			if o, err := parseObject(def); err == nil {
				def, _ = o.withString("uri", r.exposed)
			}
		}
		canon, _ := jcs.Transform(def)
		d.add(canon)
		v.resources[r.exposed] = len(v.Resources)
		v.Resources = append(v.Resources, ResourceEntry{URI: r.exposed, OriginalURI: r.key, Exposed: name,
			Backend: r.backend, Original: r.name, Def: def})
	}
	v.resSum = d.sumArray()
}

// renamedCanonical returns obj's definition renamed to name and adds its
// canonical form to d. The definition was validated, so neither step fails.
func renamedCanonical(obj object, name string, d *digester) json.RawMessage {
	def, _ := obj.withString("name", name)
	canon, _ := jcs.Transform(def)
	d.add(canon)
	return def
}
