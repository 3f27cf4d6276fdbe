package config

import (
	"fmt"
	"maps"
	"slices"

	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/health"
	"github.com/fleetgate/fleetgate/pkg/naming"
	"github.com/fleetgate/fleetgate/pkg/policy"
)

// Fleet is a validated fleet configuration with every default applied.
type Fleet struct {
	// Groups in configuration order; names are unique.
	Groups []Group
	// Health is the resolved health policy (no zero fields).
	Health health.Policy
	// Aggregation controls how exposed names are built.
	Aggregation Aggregation
	// Authorization is the tool policy section, validated and compiled
	// once; nil when the config has none (everything is allowed).
	Authorization *policy.Section
}

// Group is a named set of backends served together by the edges of that
// group.
type Group struct {
	Name string
	// Backends in configuration order; names are unique in the whole fleet.
	Backends []Backend
	// PinnedTools are exposed tool names an optimizer-mode edge always
	// lists (extension; empty by default).
	PinnedTools []string
}

// Backend is one MCP server behind the gateway.
type Backend struct {
	Name string
	// URL is the backend's MCP endpoint, an absolute http(s) URL.
	URL string
	// Transport is TransportStreamableHTTP or TransportSSE.
	Transport string
	// Headers are set on every request to the backend, from references
	// (credentials.go); nil when none.
	Headers credential.Headers
	// AllowLinkLocal lets URL reach link-local and cloud metadata
	// addresses (package backendnet), refused by default.
	AllowLinkLocal bool
	// Command, Args and Env are a stdio backend's (Transport
	// TransportStdio, URL empty): an entry name of each host's allow-list
	// (checked by the controller, not here), arguments appended to its
	// argv, and variables set from references.
	Command string
	Args    []string
	Env     map[string]credential.Ref
	// Auth is the backend's per-caller credentials (auth.go); nil: none.
	Auth *credential.Auth
	// Tools, Prompts and Resources filter and rename the backend's
	// definitions (package naming); zero: all, under the strategy's names.
	Tools, Prompts, Resources naming.Rules
}

// Equal reports whether b and o are the same backend connection: name,
// URL, transport, headers and allow_link_local. Naming rules are not
// compared (they need no new probe); NamingEqual does.
func (b Backend) Equal(o Backend) bool {
	return b.Name == o.Name && b.URL == o.URL && b.Transport == o.Transport &&
		b.Headers.Equal(o.Headers) && b.AllowLinkLocal == o.AllowLinkLocal &&
		b.Command == o.Command && slices.Equal(b.Args, o.Args) && maps.Equal(b.Env, o.Env) && b.Auth.Equal(o.Auth)
}

// NamingEqual reports whether b and o have the same naming rules.
func (b Backend) NamingEqual(o Backend) bool {
	return b.Tools.Equal(o.Tools) && b.Prompts.Equal(o.Prompts) && b.Resources.Equal(o.Resources)
}

// Aggregation is the aggregation section of the config.
type Aggregation struct {
	// Separator joins backend and tool: <backend><Separator><tool>.
	Separator string
	// Conflicts is the naming strategy (aggregation.conflicts):
	// naming.Prefix (the default), naming.Priority or naming.Manual.
	Conflicts naming.Strategy
}

// Group returns the named group.
func (f *Fleet) Group(name string) (Group, bool) {
	if i := f.groupIndex(name); i >= 0 {
		return f.Groups[i], true
	}
	return Group{}, false
}

// Backend returns the named backend of the named group.
func (f *Fleet) Backend(group, name string) (Backend, bool) {
	gi := f.groupIndex(group)
	if gi < 0 {
		return Backend{}, false
	}
	if bi := f.Groups[gi].backendIndex(name); bi >= 0 {
		return f.Groups[gi].Backends[bi], true
	}
	return Backend{}, false
}

// Clone returns a deep copy of the fleet; changing one does not change the
// other. Clone of a nil *Fleet is nil.
func (f *Fleet) Clone() *Fleet {
	if f == nil {
		return nil
	}
	out := *f
	out.Groups = make([]Group, len(f.Groups))
	for i, g := range f.Groups {
		g.Backends = slices.Clone(g.Backends)
		for j := range g.Backends {
			b := &g.Backends[j]
			b.Headers = b.Headers.Clone()
			b.Args, b.Env = slices.Clone(b.Args), maps.Clone(b.Env)
			b.Auth = b.Auth.Clone()
			b.Tools, b.Prompts, b.Resources = b.Tools.Clone(), b.Prompts.Clone(), b.Resources.Clone()
		}
		g.PinnedTools = slices.Clone(g.PinnedTools)
		out.Groups[i] = g
	}
	out.Authorization = f.Authorization.Clone()
	return &out
}

// Put adds backend b to the group, or replaces the backend of that name in
// the group, after checking it by the rules of the config file (the
// transport defaults to streamable-http). A group that does not exist is
// created at the end. A backend name already used in another group is
// refused: names are unique in the fleet. Errors are *FieldError naming the
// admin API field: "group", "name", "url", "transport", "headers",
// "headers.<Name>", or a field of the naming rules such as
// "tools.include[0]" or "tools.rename.<own>" (a bad glob or exposed name, or
// a rename to a name another backend of the group renames to). A URL with user info is refused, and one whose host is
// link-local or a cloud metadata service unless b.AllowLinkLocal.
//
// Put changes f in place; a caller that needs the previous fleet (to Diff)
// clones it first.
func (f *Fleet) Put(group string, b Backend) error {
	if msg := checkName("group", group); msg != "" {
		return putError(group, b.Name, "group", msg)
	}
	if msg := checkName("backend", b.Name); msg != "" {
		return putError(group, b.Name, "name", msg)
	}
	t, msg := resolveTransport(b.Transport)
	if msg != "" {
		return putError(group, b.Name, "transport", msg)
	}
	b.Transport = t
	if field, msg := checkStdio(b); msg != "" {
		return putError(group, b.Name, field, msg)
	}
	if t != TransportStdio {
		if msg := checkURL(b.URL); msg != "" {
			return putError(group, b.Name, "url", msg)
		}
		if msg := checkDestination(b.URL, b.AllowLinkLocal); msg != "" {
			return putError(group, b.Name, "url", msg)
		}
	}
	b.Args, b.Env = slices.Clone(b.Args), maps.Clone(b.Env)
	if field, msg := checkHeaders(b.Headers); msg != "" {
		return putError(group, b.Name, field, msg)
	}
	b.Headers = b.Headers.Clone()
	if field, msg := checkAuth(b); msg != "" {
		return putError(group, b.Name, field, msg)
	}
	b.Auth = b.Auth.Clone()
	var peers []Backend
	if gi := f.groupIndex(group); gi >= 0 {
		peers = f.Groups[gi].Backends
	}
	if field, msg := checkRules(b, peers); msg != "" {
		return putError(group, b.Name, field, msg)
	}
	b.Tools, b.Prompts, b.Resources = b.Tools.Clone(), b.Prompts.Clone(), b.Resources.Clone()
	for _, g := range f.Groups {
		if g.Name != group && g.backendIndex(b.Name) >= 0 {
			return putError(group, b.Name, "name",
				fmt.Sprintf("backend %q already exists in group %q", b.Name, g.Name))
		}
	}
	gi := f.groupIndex(group)
	if gi < 0 {
		f.Groups = append(f.Groups, Group{Name: group})
		gi = len(f.Groups) - 1
	}
	g := &f.Groups[gi]
	if bi := g.backendIndex(b.Name); bi >= 0 {
		g.Backends[bi] = b
	} else {
		g.Backends = append(g.Backends, b)
	}
	return nil
}

// Delete removes the named backend from the group. The group stays, even
// when it becomes empty. It returns an error wrapping ErrNotFound when there
// is no such group or backend.
func (f *Fleet) Delete(group, name string) error {
	gi := f.groupIndex(group)
	if gi < 0 {
		return fmt.Errorf("delete backend %q from group %q: group %w", name, group, ErrNotFound)
	}
	g := &f.Groups[gi]
	bi := g.backendIndex(name)
	if bi < 0 {
		return fmt.Errorf("delete backend %q from group %q: backend %w", name, group, ErrNotFound)
	}
	g.Backends = slices.Delete(g.Backends, bi, bi+1)
	return nil
}

func putError(group, name, field, msg string) error {
	return &FieldError{Field: field, Msg: msg + fmt.Sprintf(" (put backend %q into group %q)", name, group)}
}

func (f *Fleet) groupIndex(name string) int {
	if f == nil {
		return -1
	}
	return slices.IndexFunc(f.Groups, func(g Group) bool { return g.Name == name })
}

func (g *Group) backendIndex(name string) int {
	return slices.IndexFunc(g.Backends, func(b Backend) bool { return b.Name == name })
}
