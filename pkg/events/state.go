package events

import (
	"encoding/json"
	"maps"
	"slices"
)

// State is the fleet state folded from the event log up to Generation.
//
// A State is immutable: Apply returns a new State that shares every group
// and backend the event did not touch, so readers may hold and share a State
// without locks while the fold moves on.
type State struct {
	Generation uint64            `json:"generation"`
	Groups     map[string]*Group `json:"groups"`
}

// Group is one backend group of the fleet.
type Group struct {
	Name     string              `json:"name"`
	Backends map[string]*Backend `json:"backends"`
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

// BackendConfig is a backend's configuration without secrets.
type BackendConfig struct {
	URL       string `json:"url"`
	Transport string `json:"transport"`
}

// Catalog is a backend's tool, resource and prompt definitions as the
// backend returned them (canonical JSON), plus the catalog digest of its
// tools.
type Catalog struct {
	Tools        []json.RawMessage `json:"tools"`
	Resources    []json.RawMessage `json:"resources,omitempty"`
	Prompts      []json.RawMessage `json:"prompts,omitempty"`
	Digest       string            `json:"digest"`
	InvalidTools []InvalidTool     `json:"invalid_tools,omitempty"`
	Generation   uint64            `json:"generation"`
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
	return &State{Generation: gen, Groups: s.Groups}
}

// withBackend returns a copy of s in which group/backend is b (nil removes
// it; a group left empty is removed too). Untouched groups are shared.
func (s *State) withBackend(gen uint64, group, name string, b *Backend) *State {
	next := &State{Generation: gen, Groups: maps.Clone(s.Groups)}
	if next.Groups == nil {
		next.Groups = map[string]*Group{}
	}
	old := next.Groups[group]
	g := &Group{Name: group, Backends: map[string]*Backend{}}
	if old != nil {
		g.Backends = maps.Clone(old.Backends)
	}
	if b == nil {
		delete(g.Backends, name)
	} else {
		g.Backends[name] = b
	}
	if len(g.Backends) == 0 {
		delete(next.Groups, group)
	} else {
		next.Groups[group] = g
	}
	return next
}
