package catalog

import (
	"crypto/sha256"
	"encoding/json"
)

// Kind names the sort of definition an entry, collision or rejection is
// about.
type Kind string

// The kinds of definition.
const (
	KindTool     Kind = "tool"
	KindPrompt   Kind = "prompt"
	KindResource Kind = "resource"
	KindBackend  Kind = "backend" // a whole Source
)

// ToolEntry is one tool of a View.
type ToolEntry struct {
	Exposed  string          `json:"exposed"`  // name served to clients
	Backend  string          `json:"backend"`  // owning backend
	Original string          `json:"original"` // name to call the backend with
	Def      json.RawMessage `json:"def"`      // backend definition, name replaced by Exposed
}

// PromptEntry is one prompt of a View.
type PromptEntry struct {
	Exposed  string          `json:"exposed"`
	Backend  string          `json:"backend"`
	Original string          `json:"original"`
	Def      json.RawMessage `json:"def"` // name replaced by Exposed
}

// ResourceEntry is one resource of a View. A resource is identified by its
// URI, which is never prefixed (a rename may change it); its name is
// prefixed under the prefix strategy.
type ResourceEntry struct {
	URI string `json:"uri"` // exposed URI, what clients read
	// OriginalURI is the backend's URI for it, to read it with; equal to
	// URI unless a rename changed it.
	OriginalURI string          `json:"original_uri"`
	Exposed     string          `json:"exposed"`  // exposed name
	Backend     string          `json:"backend"`  // owning backend
	Original    string          `json:"original"` // the backend's name for it
	Def         json.RawMessage `json:"def"`      // name replaced by Exposed
}

// Collision reports a definition that did not get the exposed name (tools,
// prompts) or URI (resources) it asked for.
type Collision struct {
	Kind Kind `json:"kind"`
	// Name is the contested exposed name, or URI for a resource.
	Name string `json:"name"`
	// Backend and Original identify the definition that lost Name: its
	// backend and own name (URI for a resource).
	Backend  string `json:"backend"`
	Original string `json:"original"`
	// KeptBy is the backend that kept Name; empty when Name was longer
	// than MaxNameLen and so given to nobody.
	KeptBy string `json:"kept_by,omitempty"`
	// Exposed is the name the loser is served under instead; empty when
	// it is withheld (a resource, whose URI has no fallback, or under the
	// manual strategy).
	Exposed string `json:"exposed,omitempty"`
	// Resolution is what became of the loser: "prefixed", "suffixed" or
	// "withheld" (naming.Resolution).
	Resolution string `json:"resolution"`
}

// Rejection reports a definition, or a whole Source, left out of a View.
type Rejection struct {
	Backend string `json:"backend"`
	Kind    Kind   `json:"kind"`
	Name    string `json:"name"` // name, URI for a resource, empty for a backend
	Reason  string `json:"reason"`
}

// View is what a passthrough edge of a group serves: the tools, prompts and
// resources of the group's backends under their exposed names, with the
// registry digest of the tools.
//
// A View is built by Aggregate and never changes afterwards: its slices,
// their Defs and its lookup tables are shared by every session that serves
// it, and callers must not modify them. All methods are safe for
// concurrent use. A nil *View is an empty view.
type View struct {
	Tools     []ToolEntry     `json:"tools"`     // sorted by Exposed
	Prompts   []PromptEntry   `json:"prompts"`   // sorted by Exposed
	Resources []ResourceEntry `json:"resources"` // sorted by URI
	// Templates are the resource templates, in source order (template.go).
	Templates []TemplateEntry `json:"resource_templates,omitempty"`
	// Digest is the catalog digest (see Digest) of the Tools' Defs.
	Digest     string      `json:"digest"`
	Collisions []Collision `json:"collisions"` // sorted by Kind, Name, Backend, Original
	Rejected   []Rejection `json:"rejected"`   // sorted by Backend, Kind, Name, Reason

	tools     map[string]int
	prompts   map[string]int
	resources map[string]int
	toolPrep  []*preparedTool               // prepared definition per Tools entry
	promptSum [sha256.Size]byte             // over the canonical Prompts defs
	resSum    [sha256.Size]byte             // over the canonical Resources defs
	prepared  map[preparedKey]*preparedTool // every tool definition seen, see prepare.go
}

// Tool returns the tool served under the exposed name.
func (v *View) Tool(exposed string) (ToolEntry, bool) {
	if v == nil {
		return ToolEntry{}, false
	}
	i, ok := v.tools[exposed]
	if !ok {
		return ToolEntry{}, false
	}
	return v.Tools[i], true
}

// ToolBindings returns the header bindings (x-mcp-header) of the tool
// served under the exposed name; nil when it has none or is not served.
func (v *View) ToolBindings(exposed string) []ParamBinding {
	if v == nil {
		return nil
	}
	i, ok := v.tools[exposed]
	if !ok || i >= len(v.toolPrep) || v.toolPrep[i] == nil {
		return nil
	}
	return v.toolPrep[i].bindings
}

// Prompt returns the prompt served under the exposed name.
func (v *View) Prompt(exposed string) (PromptEntry, bool) {
	if v == nil {
		return PromptEntry{}, false
	}
	i, ok := v.prompts[exposed]
	if !ok {
		return PromptEntry{}, false
	}
	return v.Prompts[i], true
}

// Resource returns the resource served under the exposed uri.
func (v *View) Resource(uri string) (ResourceEntry, bool) {
	if v == nil {
		return ResourceEntry{}, false
	}
	i, ok := v.resources[uri]
	if !ok {
		return ResourceEntry{}, false
	}
	return v.Resources[i], true
}

// Delta is the difference between two Views, as an edge needs it to update
// its sessions: which tools to add, remove or replace, and whether the
// resource and prompt lists changed.
type Delta struct {
	Added   []string `json:"added"`   // exposed tool names only in the new View
	Removed []string `json:"removed"` // exposed tool names only in the old View
	// Changed are exposed tool names in both Views whose projection (see
	// Digest) differs.
	Changed          []string `json:"changed"`
	PromptsChanged   bool     `json:"prompts_changed"`
	ResourcesChanged bool     `json:"resources_changed"`
}

// Empty reports whether the Delta records no change at all.
func (d Delta) Empty() bool {
	return len(d.Added) == 0 && len(d.Removed) == 0 && len(d.Changed) == 0 &&
		!d.PromptsChanged && !d.ResourcesChanged
}

// Diff returns what changed from old to new. Either may be nil, standing
// for an empty View. The name lists are sorted. Prompts and resources
// count as changed when any of their definitions changed in any member.
func Diff(old, new *View) Delta {
	var d Delta
	var ot, nt []ToolEntry
	var op, np []*preparedTool
	if old != nil {
		ot, op = old.Tools, old.toolPrep
	}
	if new != nil {
		nt, np = new.Tools, new.toolPrep
	}
	i, j := 0, 0
	for i < len(ot) || j < len(nt) {
		switch {
		case j == len(nt) || i < len(ot) && ot[i].Exposed < nt[j].Exposed:
			d.Removed = append(d.Removed, ot[i].Exposed)
			i++
		case i == len(ot) || nt[j].Exposed < ot[i].Exposed:
			d.Added = append(d.Added, nt[j].Exposed)
			j++
		default:
			if op[i] != np[j] && op[i].projSum != np[j].projSum {
				d.Changed = append(d.Changed, nt[j].Exposed)
			}
			i++
			j++
		}
	}
	d.PromptsChanged = old.promptsSum() != new.promptsSum()
	d.ResourcesChanged = old.resourcesSum() != new.resourcesSum()
	return d
}

// emptySum is the hash of an empty canonical list, the sum of a nil View.
var emptySum = sha256.Sum256([]byte("[]"))

func (v *View) promptsSum() [sha256.Size]byte {
	if v == nil {
		return emptySum
	}
	return v.promptSum
}

func (v *View) resourcesSum() [sha256.Size]byte {
	if v == nil {
		return emptySum
	}
	return v.resSum
}
