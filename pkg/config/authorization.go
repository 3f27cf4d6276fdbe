package config

import (
	"encoding/json"
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/fleetgate/fleetgate/pkg/policy"
	"github.com/fleetgate/fleetgate/pkg/ratelimit"
)

// ruleKeys are the keys of one authorization rule.
var ruleKeys = []string{"name", "effect", "tools", "prompts", "resources", "when"}

// authorization decodes the authorization section and checks it with
// policy.Compile, so that a rule that does not compile is a config error
// naming the rule, at the line of the offending field. Absent or null is
// nil (everything allowed).
func (d *decoder) authorization(e entry) (*policy.Section, error) {
	if e.val == nil || isNull(e.val) {
		return nil, nil
	}
	m, err := d.mapping(e.val, e.path, "default", "rules", "rate_limits")
	if err != nil {
		return nil, err
	}
	s := &policy.Section{}
	if s.Default, err = d.str(m["default"]); err != nil {
		return nil, err
	}
	re := m["rules"]
	if re.val == nil {
		re = entry{val: &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}, path: join(e.path, "rules")}
	}
	nodes, err := d.sequence(re)
	if err != nil {
		return nil, err
	}
	if len(nodes) > policy.MaxRules {
		return nil, d.errorf(re.line(), re.path, "%d rules, limit %d", len(nodes), policy.MaxRules)
	}
	fields := make([]map[string]entry, len(nodes))
	for i, n := range nodes {
		path := index(re.path, i)
		rm, err := d.mapping(n, path, ruleKeys...)
		if err != nil {
			return nil, err
		}
		fields[i] = rm
		var r policy.Rule
		for _, f := range []struct {
			key string
			dst *string
		}{{"name", &r.Name}, {"effect", &r.Effect}, {"when", &r.When}} {
			if *f.dst, err = d.str(orAt(rm, f.key, n, path)); err != nil {
				return nil, err
			}
		}
		for _, f := range []struct {
			key string
			dst *[]string
		}{{"tools", &r.Tools}, {"prompts", &r.Prompts}, {"resources", &r.Resources}} {
			if *f.dst, err = d.strings(rm, f.key); err != nil {
				return nil, err
			}
		}
		s.Rules = append(s.Rules, r)
	}
	if rl, ok := m["rate_limits"]; ok && !isNull(rl.val) {
		lim, err := rateLimits(rl.val)
		if err != nil {
			return nil, d.errorf(rl.line(), rl.path, "%v", err)
		}
		s.RateLimits = &lim
	}
	if _, err := policy.Compile(s); err != nil {
		return nil, d.policyError(e, m, nodes, fields, err)
	}
	s.Normalize()
	return s, nil
}

// strings reads an optional sequence of strings: absent is nil, and an
// empty sequence is kept empty (policy refuses it).
func (d *decoder) strings(m map[string]entry, key string) ([]string, error) {
	e, ok := m[key]
	if !ok {
		return nil, nil
	}
	return d.stringSeq(e, policy.MaxPatterns, "patterns")
}

// stringSeq decodes e as a sequence of at most max strings (what names
// them in the error): null is nil, an empty sequence empty.
func (d *decoder) stringSeq(e entry, max int, what string) ([]string, error) {
	if e.val == nil || isNull(e.val) {
		return nil, nil
	}
	nodes, err := d.sequence(e)
	if err != nil {
		return nil, err
	}
	if len(nodes) > max {
		return nil, d.errorf(e.line(), e.path, "%d %s, limit %d", len(nodes), what, max)
	}
	out := make([]string, 0, len(nodes))
	for i, n := range nodes {
		s, err := d.str(entry{val: n, path: index(e.path, i)})
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// policyError places a *policy.RuleError at the line of its field.
func (d *decoder) policyError(sec entry, m map[string]entry, nodes []*yaml.Node, fields []map[string]entry, err error) error {
	var re *policy.RuleError
	if !errors.As(err, &re) {
		return &FieldError{File: d.file, Line: sec.line(), Field: sec.path, Msg: err.Error(), Err: err}
	}
	line, field := sec.line(), join(sec.path, re.Field)
	if re.Index < 0 {
		if fe, ok := m[re.Field]; ok {
			line = fe.line()
		}
	} else if re.Index < len(nodes) {
		field = join(index(join(sec.path, "rules"), re.Index), re.Field)
		line = nodes[re.Index].Line
		if fe, ok := fields[re.Index][re.Field]; ok {
			line = fe.line()
		}
	}
	msg := re.Msg
	if re.Name != "" {
		msg = fmt.Sprintf("rule %q: %s", re.Name, re.Msg)
	}
	return &FieldError{File: d.file, Line: line, Field: field, Msg: msg, Err: err}
}

// SetAuthorization replaces the authorization section (PUT
// /v1/authorization; nil removes it) after compiling it. Errors are
// *FieldError on field "authorization" naming the rule, wrapping the
// *policy.RuleError.
func (f *Fleet) SetAuthorization(s *policy.Section) error {
	if _, err := policy.Compile(s); err != nil {
		return &FieldError{Field: "authorization", Msg: err.Error(), Err: err}
	}
	f.Authorization = s.Clone()
	return nil
}

// rateLimits reads the rate_limits subsection: decoded as YAML, then read
// by ratelimit.ParseJSON (unknown keys refused, every value checked).
func rateLimits(n *yaml.Node) (ratelimit.Limits, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return ratelimit.Limits{}, fmt.Errorf("not a mapping: %w", err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ratelimit.Limits{}, fmt.Errorf("not JSON-shaped: %w", err)
	}
	return ratelimit.ParseJSON(b)
}
