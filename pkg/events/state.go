package events

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/credential"
)

// State is the fleet state folded from the event log up to Generation.
//
// A State is immutable: Apply returns a new State that shares every group
// and backend the event did not touch, so readers may hold and share a State
// without locks while the fold moves on.
type State struct {
	Generation uint64            `json:"generation"`
	Groups     map[string]*Group `json:"groups"`
	// Authorization is the fleet's tool policy as of the last
	// policy_changed event; nil before the first one (no section:
	// everything allowed).
	Authorization *Authorization `json:"authorization,omitempty"`
	// Regions is, for a state merged from several regional logs, the
	// generation of each region's log it reflects (region.Merge; its
	// Generation is then their sum, an order, not a log position); nil for
	// the state of one log.
	Regions map[string]uint64 `json:"regions,omitempty"`
}

// Group is one backend group of the fleet.
type Group struct {
	Name     string              `json:"name"`
	Backends map[string]*Backend `json:"backends"`
	// Naming decides the group's exposed names, as of its last
	// naming_changed event; nil before the first. A group with a naming
	// stays in the state when its last backend leaves.
	Naming *Naming `json:"naming,omitempty"`
}

// Backend is one backend's folded state.
type Backend struct {
	Name   string        `json:"name"`
	Group  string        `json:"group"`
	Config BackendConfig `json:"config"`
	// Status is the health status name (see package health).
	Status       string `json:"status"`
	Advertisable bool   `json:"advertisable"`
	Reason       string `json:"reason,omitempty"`
	// Catalog is nil until the first catalog event for this backend.
	Catalog *Catalog `json:"catalog,omitempty"`
	// Generation is the last event that changed this backend.
	Generation uint64 `json:"generation"`
}

// BackendConfig is a backend's configuration without secrets: its headers
// Transports a backend may use (BackendConfig.Transport; "" is the
// streamable HTTP transport).
const (
	TransportStreamableHTTP = "streamable-http"
	TransportSSE            = "sse"
	// TransportStdio: a command of the host's allow-list (package stdio).
	TransportStdio = "stdio"
)

// are references (credential.Ref), which each reader resolves itself.
type BackendConfig struct {
	URL       string             `json:"url"`
	Transport string             `json:"transport"`
	Headers   credential.Headers `json:"headers,omitempty"`
	// AllowLinkLocal lets URL reach link-local and metadata addresses.
	AllowLinkLocal bool `json:"allow_link_local,omitempty"`
	// Command, Args and Env are a stdio backend's: an entry name of each
	// host's allow-list, arguments appended to its argv, and variables
	// set from references.
	Command string                    `json:"command,omitempty"`
	Args    []string                  `json:"args,omitempty"`
	Env     map[string]credential.Ref `json:"env,omitempty"`
	// Auth is the backend's per-caller credentials (references only);
	// nil: none.
	Auth *credential.Auth `json:"auth,omitempty"`
}

// Equal reports whether c and o are the same configuration (nil and empty
// headers are the same).
func (c BackendConfig) Equal(o BackendConfig) bool {
	return c.URL == o.URL && c.Transport == o.Transport && c.Headers.Equal(o.Headers) && c.AllowLinkLocal == o.AllowLinkLocal &&
		c.Command == o.Command && slices.Equal(c.Args, o.Args) && maps.Equal(c.Env, o.Env) && c.Auth.Equal(o.Auth)
}

// Catalog is a backend's tool, resource and prompt definitions as the
// backend returned them (canonical JSON), plus the catalog digest of its
// tools.
type Catalog struct {
	Tools     []json.RawMessage `json:"tools"`
	Resources []json.RawMessage `json:"resources,omitempty"`
	Prompts   []json.RawMessage `json:"prompts,omitempty"`
	// ResourceTemplates are the backend's resource templates.
	ResourceTemplates []json.RawMessage `json:"resource_templates,omitempty"`
	Digest            string            `json:"digest"`
	InvalidTools      []InvalidTool     `json:"invalid_tools,omitempty"`
	// ProtocolVersion is the stateless revision (2026-07-28 or newer) the
	// backend answered server/discover with; "" for a backend of the
	// session-based revisions only.
	ProtocolVersion string `json:"protocol_version,omitempty"`
	// StatelessOnly: the backend refused initialize and speaks only the
	// stateless generation, in ProtocolVersion.
	StatelessOnly bool `json:"stateless_only,omitempty"`
	// Stateless are the lists the backend gives clients of
	// ProtocolVersion when it speaks both generations and they differ
	// from the lists above (those of the session-based revisions); nil
	// otherwise.
	Stateless  *catalog.EraLists `json:"stateless_lists,omitempty"`
	Generation uint64            `json:"generation"`
}

// InvalidTool is a backend tool that validation dropped.
type InvalidTool struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// NewState returns the empty state at generation 0.
func NewState() *State { return &State{Groups: map[string]*Group{}} }

// Group returns the named group or nil.
func (s *State) Group(name string) *Group {
	if s == nil {
		return nil
	}
	return s.Groups[name]
}

// Backend returns the named backend of a group or nil.
func (s *State) Backend(group, name string) *Backend {
	g := s.Group(group)
	if g == nil {
		return nil
	}
	return g.Backends[name]
}

// GroupNames returns the group names in sorted order.
func (s *State) GroupNames() []string {
	return slices.Sorted(maps.Keys(s.Groups))
}

// BackendNames returns the group's backend names in sorted order.
func (g *Group) BackendNames() []string {
	if g == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(g.Backends))
}

// ToolNames returns the backend's own tool names in catalog order.
func (c *Catalog) ToolNames() []string {
	if c == nil {
		return nil
	}
	names := make([]string, 0, len(c.Tools))
	for _, t := range c.Tools {
		var head struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(t, &head) == nil {
			names = append(names, head.Name)
		}
	}
	return names
}

// withGeneration returns a shallow copy of s at generation gen.
func (s *State) withGeneration(gen uint64) *State {
	return &State{Generation: gen, Groups: s.Groups, Authorization: s.Authorization}
}

// withBackend returns a copy of s in which group/backend is b (nil removes
// it; a group left empty is removed too). Untouched groups are shared.
func (s *State) withBackend(gen uint64, group, name string, b *Backend) *State {
	next := &State{Generation: gen, Groups: cloneGroups(s.Groups), Authorization: s.Authorization}
	old := next.Groups[group]
	g := &Group{Name: group, Backends: map[string]*Backend{}}
	if old != nil {
		g.Backends = maps.Clone(old.Backends)
		g.Naming = old.Naming
	}
	if b == nil {
		delete(g.Backends, name)
	} else {
		g.Backends[name] = b
	}
	if len(g.Backends) == 0 && g.Naming == nil {
		delete(next.Groups, group)
	} else {
		next.Groups[group] = g
	}
	return next
}

// cloneGroups returns a shallow copy of the group map (never nil).
func cloneGroups(groups map[string]*Group) map[string]*Group {
	out := maps.Clone(groups)
	if out == nil {
		out = map[string]*Group{}
	}
	return out
}

func sortStrings(s []string) { slices.Sort(s) }
