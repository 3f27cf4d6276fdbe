package config

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/fleetgate/fleetgate/pkg/health"
	"github.com/fleetgate/fleetgate/pkg/naming"
)

// fleet decodes the root mapping: groups, health, aggregation,
// authorization.
func (d *decoder) fleet(root *yaml.Node) (*Fleet, error) {
	top, err := d.mapping(root, "", "groups", "health", "aggregation", "authorization")
	if err != nil {
		return nil, err
	}
	f := &Fleet{}
	if f.Groups, err = d.groups(top["groups"]); err != nil {
		return nil, err
	}
	if f.Health, err = d.health(top["health"]); err != nil {
		return nil, err
	}
	if f.Aggregation, err = d.aggregation(top["aggregation"]); err != nil {
		return nil, err
	}
	if f.Authorization, err = d.authorization(top["authorization"]); err != nil {
		return nil, err
	}
	return f, nil
}

// where records the line of a name already taken, and its path.
type where struct {
	line int
	path string
}

func (d *decoder) groups(e entry) ([]Group, error) {
	if e.val == nil {
		return nil, nil
	}
	nodes, err := d.sequence(e)
	if err != nil {
		return nil, err
	}
	groupAt := map[string]where{}
	backendAt := map[string]where{} // unique in the whole fleet
	var out []Group
	for i, n := range nodes {
		path := index("groups", i)
		m, err := d.mapping(n, path, "name", "backends", "pinned_tools")
		if err != nil {
			return nil, err
		}
		g := Group{}
		nameEntry := orAt(m, "name", n, path)
		if g.Name, err = d.name("group", nameEntry, groupAt); err != nil {
			return nil, err
		}
		if g.Backends, err = d.backends(m, path, n, backendAt, groupRenames{}); err != nil {
			return nil, err
		}
		if g.PinnedTools, err = d.pinned(m["pinned_tools"]); err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

func (d *decoder) backends(m map[string]entry, groupPath string, group *yaml.Node, taken map[string]where, renames groupRenames) ([]Backend, error) {
	e, ok := m["backends"]
	if !ok {
		return nil, nil
	}
	nodes, err := d.sequence(e)
	if err != nil {
		return nil, err
	}
	var out []Backend
	for i, n := range nodes {
		path := index(e.path, i)
		bm, err := d.mapping(n, path, "name", "url", "transport", "headers", "allow_link_local", "tools", "prompts", "resources",
			"command", "args", "env", "auth")
		if err != nil {
			return nil, err
		}
		var b Backend
		if b.Name, err = d.name("backend", orAt(bm, "name", n, path), taken); err != nil {
			return nil, err
		}
		te := orAt(bm, "transport", n, path)
		t, err := d.str(te)
		if err != nil {
			return nil, err
		}
		var msg string
		if b.Transport, msg = resolveTransport(t); msg != "" {
			return nil, d.errorf(te.line(), te.path, "%s", msg)
		}
		ue := orAt(bm, "url", n, path)
		if b.URL, err = d.str(ue); err != nil {
			return nil, err
		}
		if b.Headers, err = d.headers(orAt(bm, "headers", n, path)); err != nil {
			return nil, err
		}
		ae := orAt(bm, "allow_link_local", n, path)
		if b.AllowLinkLocal, err = d.boolean(ae); err != nil {
			return nil, err
		}
		if b.Command, err = d.str(orAt(bm, "command", n, path)); err != nil {
			return nil, err
		}
		if b.Args, err = d.stringList(orAt(bm, "args", n, path)); err != nil {
			return nil, err
		}
		if b.Env, err = d.envRefs(orAt(bm, "env", n, path)); err != nil {
			return nil, err
		}
		if field, msg := checkStdio(b); msg != "" {
			fe := orAt(bm, field, n, path)
			return nil, d.errorf(fe.line(), fe.path, "%s", msg)
		}
		if b.Transport != TransportStdio {
			if msg := checkURL(b.URL); msg != "" {
				return nil, d.errorf(ue.line(), ue.path, "%s", msg)
			}
			if msg := checkDestination(b.URL, b.AllowLinkLocal); msg != "" {
				return nil, d.errorf(ue.line(), ue.path, "%s", msg)
			}
		}
		if b.Auth, err = d.auth(orAt(bm, "auth", n, path)); err != nil {
			return nil, err
		}
		if field, msg := checkAuth(b); msg != "" {
			fe := orAt(bm, strings.SplitN(field, ".", 2)[0], n, path)
			return nil, d.errorf(fe.line(), join(path, field), "%s", msg)
		}
		if b.Tools, b.Prompts, b.Resources, err = d.rules(bm, b.Name, renames); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// name reads a group or backend name, checks its pattern and that it is not
// taken yet, and records it in taken.
func (d *decoder) name(kind string, e entry, taken map[string]where) (string, error) {
	s, err := d.str(e)
	if err != nil {
		return "", err
	}
	if msg := checkName(kind, s); msg != "" {
		return "", d.errorf(e.line(), e.path, "%s", msg)
	}
	if prev, dup := taken[s]; dup {
		return "", d.errorf(e.line(), e.path, "%s %q is already defined at line %d (%s)", kind, s, prev.line, prev.path)
	}
	taken[s] = where{line: e.line(), path: e.path}
	return s, nil
}

func (d *decoder) pinned(e entry) ([]string, error) {
	if e.val == nil {
		return nil, nil
	}
	nodes, err := d.sequence(e)
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]int{}
	for i, n := range nodes {
		ne := entry{val: n, path: index(e.path, i)}
		s, err := d.str(ne)
		if err != nil {
			return nil, err
		}
		if msg := checkToolName(s); msg != "" {
			return nil, d.errorf(n.Line, ne.path, "%s", msg)
		}
		if line, dup := seen[s]; dup {
			return nil, d.errorf(n.Line, ne.path, "tool %q is already pinned at line %d", s, line)
		}
		seen[s] = n.Line
		out = append(out, s)
	}
	return out, nil
}

func (d *decoder) health(e entry) (health.Policy, error) {
	var p health.Policy
	if e.val == nil {
		return p.WithDefaults(), nil
	}
	m, err := d.mapping(e.val, e.path, "interval", "timeout", "unhealthy_after", "debounce")
	if err != nil {
		return p, err
	}
	for _, f := range []struct {
		key string
		dst *time.Duration
	}{{"interval", &p.Interval}, {"timeout", &p.Timeout}, {"debounce", &p.Debounce}} {
		if *f.dst, err = d.duration(m[f.key]); err != nil {
			return p, err
		}
	}
	if ue, ok := m["unhealthy_after"]; ok && !isNull(ue.val) {
		if ue.val.Kind != yaml.ScalarNode || ue.val.ShortTag() != "!!int" {
			return p, d.errorf(ue.line(), ue.path, "want an integer, got %s", describe(ue.val))
		}
		if err := ue.val.Decode(&p.UnhealthyAfter); err != nil {
			return p, d.errorf(ue.line(), ue.path, "%q is not an integer in range", ue.val.Value)
		}
	}
	resolved, err := p.Resolve()
	var pe *health.PolicyError
	if errors.As(err, &pe) {
		line := e.line()
		if fe, ok := m[pe.Field]; ok {
			line = fe.line()
		}
		return p, &FieldError{File: d.file, Line: line, Field: join(e.path, pe.Field),
			Msg: fmt.Sprintf("%s (got %s)", pe.Reason, pe.Value), Err: pe}
	}
	if err != nil {
		return p, &FieldError{File: d.file, Line: e.line(), Field: e.path, Msg: err.Error(), Err: err}
	}
	return resolved, nil
}

// duration reads a Go duration; absent or null is zero (the default).
func (d *decoder) duration(e entry) (time.Duration, error) {
	if e.val == nil || isNull(e.val) {
		return 0, nil
	}
	if e.val.Kind != yaml.ScalarNode {
		return 0, d.errorf(e.line(), e.path, "want a duration such as 5s, got %s", kindName(e.val))
	}
	v, err := time.ParseDuration(e.val.Value)
	if err != nil {
		return 0, &FieldError{File: d.file, Line: e.line(), Field: e.path,
			Msg: fmt.Sprintf("%q is not a duration (Go syntax, such as 5s or 1m30s)", e.val.Value), Err: err}
	}
	return v, nil
}

func (d *decoder) aggregation(e entry) (Aggregation, error) {
	a := Aggregation{Separator: DefaultSeparator, Conflicts: naming.Prefix}
	if e.val == nil {
		return a, nil
	}
	m, err := d.mapping(e.val, e.path, "separator", "conflicts")
	if err != nil {
		return a, err
	}
	if a.Conflicts, err = d.conflicts(m["conflicts"]); err != nil {
		return a, err
	}
	se, ok := m["separator"]
	if !ok || isNull(se.val) {
		return a, nil
	}
	if a.Separator, err = d.str(se); err != nil {
		return a, err
	}
	if msg := checkSeparator(a.Separator); msg != "" {
		return a, d.errorf(se.line(), se.path, "%s", msg)
	}
	return a, nil
}

// orAt returns m[key], or, for a missing key, an entry whose value is a
// null placed at the parent node so that "is required" names its line.
func orAt(m map[string]entry, key string, parent *yaml.Node, parentPath string) entry {
	if e, ok := m[key]; ok {
		return e
	}
	return entry{val: &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: parent.Line, Column: parent.Column},
		path: join(parentPath, key)}
}

func describe(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return fmt.Sprintf("%s %q", kindName(n), n.Value)
	}
	return kindName(n)
}
