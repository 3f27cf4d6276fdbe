package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/fleetgate/fleetgate/pkg/ratelimit"
)

// Effects and defaults.
const (
	Allow = "allow"
	Deny  = "deny"
)

// Bounds on a section. They keep compiling a hostile section well under a
// second and one decision cheap.
const (
	// MaxSectionBytes bounds the JSON form ParseJSON reads.
	MaxSectionBytes = 256 << 10
	// MaxRules bounds the rules of a section.
	MaxRules = 128
	// MaxPatterns bounds the globs of one kind in one rule.
	MaxPatterns = 256
	// MaxPatternBytes bounds one glob.
	MaxPatternBytes = 512
	// MaxWhenBytes bounds one rule's CEL expression.
	MaxWhenBytes = 1024
)

// Section is the authorization section of the fleet config, and the body
// of PUT /v1/authorization. The zero Section (default allow, no rules)
// allows everything; so does an absent section (a nil *Section).
type Section struct {
	// Default is Allow or Deny: the decision when no rule matches. Empty
	// reads as Allow.
	Default string `json:"default" yaml:"default,omitempty"`
	Rules   []Rule `json:"rules" yaml:"rules,omitempty"`
	// RateLimits are the edge's rate limits (package ratelimit), part of
	// the policy so that every edge enforces the same ones at the same
	// generation; nil: none.
	RateLimits *ratelimit.Limits `json:"rate_limits,omitempty" yaml:"rate_limits,omitempty"`
}

// Rule is one rule of a section.
type Rule struct {
	// Name matches [a-z0-9-]{1,63} and is unique in the section.
	Name string `json:"name" yaml:"name"`
	// Effect is Allow or Deny. A matching deny wins over every allow.
	Effect string `json:"effect" yaml:"effect"`
	// Tools, Prompts and Resources are globs (Go path.Match) over exposed
	// tool names, prompt names and resource URIs. A rule applies to the
	// kinds it names; a rule that names none applies to every item. A
	// named kind with an empty list is an error (leave the key out).
	Tools     []string `json:"tools,omitempty" yaml:"tools,omitempty"`
	Prompts   []string `json:"prompts,omitempty" yaml:"prompts,omitempty"`
	Resources []string `json:"resources,omitempty" yaml:"resources,omitempty"`
	// When is a CEL expression of type bool; empty means true.
	When string `json:"when,omitempty" yaml:"when,omitempty"`
}

// RuleError is a problem with one rule (Index >= 0, Name possibly empty
// when the name itself is the problem) or with the section (Index -1).
// Field names the rule's key: "name", "effect", "tools", "prompts",
// "resources", "when", or "default"/"rules" for the section.
type RuleError struct {
	Index int
	Name  string
	Field string
	Msg   string
	Err   error
}

// ErrInvalid is matched (errors.Is) by every *RuleError.
var ErrInvalid = errors.New("invalid authorization section")

func (e *RuleError) Error() string {
	switch {
	case e.Index < 0:
		return fmt.Sprintf("authorization: %s: %s", e.Field, e.Msg)
	case e.Name != "":
		return fmt.Sprintf("authorization: rule %q: %s: %s", e.Name, e.Field, e.Msg)
	default:
		return fmt.Sprintf("authorization: rules[%d]: %s: %s", e.Index, e.Field, e.Msg)
	}
}

// Unwrap returns ErrInvalid and the cause, if any.
func (e *RuleError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInvalid, e.Err}
	}
	return []error{ErrInvalid}
}

var namePattern = regexp.MustCompile(`^[a-z0-9-]{1,63}$`)

// Validate checks everything but the CEL expressions (Compile checks
// those too). It returns the first problem as a *RuleError.
func (s *Section) Validate() error {
	if s == nil {
		return nil
	}
	switch s.Default {
	case "", Allow, Deny:
	default:
		return &RuleError{Index: -1, Field: "default", Msg: fmt.Sprintf("%q is not allow or deny", clip(s.Default))}
	}
	if len(s.Rules) > MaxRules {
		return &RuleError{Index: -1, Field: "rules", Msg: fmt.Sprintf("%d rules, limit %d", len(s.Rules), MaxRules)}
	}
	if s.RateLimits != nil {
		if err := s.RateLimits.Validate(); err != nil {
			return &RuleError{Index: -1, Field: "rate_limits", Msg: clip(err.Error()), Err: err}
		}
	}
	seen := make(map[string]int, len(s.Rules))
	for i, r := range s.Rules {
		if !namePattern.MatchString(r.Name) {
			return &RuleError{Index: i, Field: "name", Msg: fmt.Sprintf("%q does not match [a-z0-9-]{1,63}", clip(r.Name))}
		}
		if j, dup := seen[r.Name]; dup {
			return &RuleError{Index: i, Name: r.Name, Field: "name", Msg: fmt.Sprintf("already used by rules[%d]", j)}
		}
		seen[r.Name] = i
		if r.Effect != Allow && r.Effect != Deny {
			return &RuleError{Index: i, Name: r.Name, Field: "effect", Msg: fmt.Sprintf("%q is not allow or deny", clip(r.Effect))}
		}
		for _, k := range []struct {
			field string
			globs []string
		}{{"tools", r.Tools}, {"prompts", r.Prompts}, {"resources", r.Resources}} {
			if msg := checkGlobs(k.globs); msg != "" {
				return &RuleError{Index: i, Name: r.Name, Field: k.field, Msg: msg}
			}
		}
		if len(r.When) > MaxWhenBytes {
			return &RuleError{Index: i, Name: r.Name, Field: "when", Msg: fmt.Sprintf("%d bytes, limit %d", len(r.When), MaxWhenBytes)}
		}
		if !utf8.ValidString(r.When) {
			return &RuleError{Index: i, Name: r.Name, Field: "when", Msg: "not valid UTF-8"}
		}
	}
	return nil
}

func checkGlobs(globs []string) string {
	if globs == nil {
		return ""
	}
	if len(globs) == 0 {
		return "empty list (leave the key out for a rule that applies to every kind)"
	}
	if len(globs) > MaxPatterns {
		return fmt.Sprintf("%d patterns, limit %d", len(globs), MaxPatterns)
	}
	for _, g := range globs {
		if g == "" {
			return "empty pattern"
		}
		if len(g) > MaxPatternBytes {
			return fmt.Sprintf("pattern of %d bytes, limit %d", len(g), MaxPatternBytes)
		}
		if !validGlob(g) {
			return fmt.Sprintf("%q is not a valid pattern (Go path.Match syntax)", clip(g))
		}
	}
	return ""
}

// validGlob reports whether path.Match accepts the pattern: Match checks
// the whole pattern even when the name does not match, so matching
// against "" finds every syntax error.
func validGlob(g string) bool {
	if !utf8.ValidString(g) {
		return false
	}
	_, err := path.Match(g, "")
	return err == nil
}

// Clone returns a deep copy; Clone of nil is nil.
func (s *Section) Clone() *Section {
	if s == nil {
		return nil
	}
	out := &Section{Default: s.Default}
	if s.RateLimits != nil {
		rl := *s.RateLimits
		if rl.Identity != nil {
			id := *rl.Identity
			rl.Identity = &id
		}
		if rl.FailedAuth != nil {
			fa := *rl.FailedAuth
			rl.FailedAuth = &fa
		}
		rl.Tools = slices.Clone(rl.Tools)
		for i := range rl.Tools {
			rl.Tools[i].Tools = slices.Clone(rl.Tools[i].Tools)
		}
		out.RateLimits = &rl
	}
	if s.Rules != nil {
		out.Rules = make([]Rule, len(s.Rules))
	}
	for i, r := range s.Rules {
		r.Tools, r.Prompts, r.Resources = slices.Clone(r.Tools), slices.Clone(r.Prompts), slices.Clone(r.Resources)
		out.Rules[i] = r
	}
	return out
}

// Canonical returns the section's canonical JSON: the default written out,
// rules in order, fields in a fixed order. Two sections with the same
// canonical JSON decide alike. Canonical of nil is nil.
func (s *Section) Canonical() []byte {
	if s == nil {
		return nil
	}
	c := s.Clone()
	c.Normalize()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(c) // strings and slices only: cannot fail
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// Digest is "sha256:" and the hex SHA-256 of Canonical; "" for nil.
func (s *Section) Digest() string {
	if s == nil {
		return ""
	}
	sum := sha256.Sum256(s.Canonical())
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ParseJSON reads a section from JSON (the PUT /v1/authorization body and
// the PolicyChanged event): at most MaxSectionBytes, unknown keys an
// error, then Validate. It does not compile the expressions.
func ParseJSON(data []byte) (*Section, error) {
	if len(data) > MaxSectionBytes {
		return nil, &RuleError{Index: -1, Field: "section", Msg: fmt.Sprintf("%d bytes, limit %d", len(data), MaxSectionBytes)}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Section
	if err := dec.Decode(&s); err != nil {
		return nil, &RuleError{Index: -1, Field: "section", Msg: "not a valid section: " + clip(err.Error()), Err: err}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &RuleError{Index: -1, Field: "section", Msg: "trailing data after the section"}
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	s.Normalize()
	return &s, nil
}

// Normalize writes the default out (Allow for empty) and makes nil rules
// an empty list, so that a section reads back as it is shown.
func (s *Section) Normalize() {
	if s == nil {
		return
	}
	if s.Default == "" {
		s.Default = Allow
	}
	if s.Rules == nil {
		s.Rules = []Rule{}
	}
}

// clip shortens hostile input quoted in error texts.
func clip(s string) string {
	const limit = 80
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// hasMeta reports whether a glob has path.Match's special characters.
func hasMeta(g string) bool { return strings.ContainsAny(g, `*?[\`) }
