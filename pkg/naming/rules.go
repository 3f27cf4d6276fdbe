package naming

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strconv"
)

// Bounds of one Rules value; a longer list or pattern is an error.
const (
	MaxPatterns   = 64   // per include or exclude list
	MaxPatternLen = 256  // bytes per pattern
	MaxRenames    = 256  // entries per rename map
	MaxRenameLen  = 1024 // bytes per rename key or value (URIs may be long)
)

// MaxNameLen is the longest exposed tool or prompt name, in bytes (MCP's
// limit for tool names).
const MaxNameLen = 128

// ErrInvalidRules is matched (errors.Is) by every *RuleError.
var ErrInvalidRules = errors.New("invalid naming rules")

// RuleError is a problem with one field of a Rules value or a Spec.
// Field is the path inside it, such as "include[2]" or "rename.search".
type RuleError struct {
	Field string
	Msg   string
}

func (e *RuleError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

// Is reports whether target is ErrInvalidRules.
func (e *RuleError) Is(target error) bool { return target == ErrInvalidRules }

// Rules filter and rename one kind of definition (tools, prompts or
// resources) of one backend. Names are the backend's own: tool and prompt
// names, resource URIs.
//
// A definition is exposed when Include is empty or one of its patterns
// matches the own name, and no pattern of Exclude matches it. Patterns are
// path.Match globs (so '*' does not cross '/', which matters for URIs).
// Rename maps an own name to the exposed one; it applies to the
// definitions the filter keeps and wins over the conflict strategy.
type Rules struct {
	Include []string          `json:"include,omitempty"`
	Exclude []string          `json:"exclude,omitempty"`
	Rename  map[string]string `json:"rename,omitempty"`
}

// IsZero reports whether r filters and renames nothing.
func (r Rules) IsZero() bool { return len(r.Include) == 0 && len(r.Exclude) == 0 && len(r.Rename) == 0 }

// Allows reports whether the own name passes Include and Exclude. A
// malformed pattern (which Check refuses) matches nothing.
func (r Rules) Allows(own string) bool {
	if len(r.Include) > 0 && !matchAny(r.Include, own) {
		return false
	}
	return !matchAny(r.Exclude, own)
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, err := path.Match(p, name); err == nil && ok {
			return true
		}
	}
	return false
}

// Equal reports whether r and o are the same rules (nil and empty lists
// are the same).
func (r Rules) Equal(o Rules) bool {
	if !slices.Equal(r.Include, o.Include) || !slices.Equal(r.Exclude, o.Exclude) || len(r.Rename) != len(o.Rename) {
		return false
	}
	for k, v := range r.Rename {
		if w, ok := o.Rename[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Clone returns a deep copy of r.
func (r Rules) Clone() Rules {
	out := Rules{Include: slices.Clone(r.Include), Exclude: slices.Clone(r.Exclude)}
	if r.Rename != nil {
		out.Rename = make(map[string]string, len(r.Rename))
		for k, v := range r.Rename {
			out.Rename[k] = v
		}
	}
	return out
}

// CheckPattern checks one include or exclude glob: at most MaxPatternLen
// bytes, non-empty, and well formed for path.Match.
func CheckPattern(p string) error {
	switch {
	case p == "":
		return errors.New("pattern is empty")
	case len(p) > MaxPatternLen:
		return fmt.Errorf("pattern is %d bytes, limit %d", len(p), MaxPatternLen)
	}
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Errorf("pattern %q: %w", p, err)
	}
	return nil
}

// Check validates r for definitions of kind k: the bounds, every pattern,
// and every rename (own names non-empty; exposed names valid tool names
// for tools and prompts, absolute URIs for resources; no two own names
// renamed to one exposed name). Errors are *RuleError.
func (r Rules) Check(k Kind) error {
	for _, l := range []struct {
		field    string
		patterns []string
	}{{"include", r.Include}, {"exclude", r.Exclude}} {
		if len(l.patterns) > MaxPatterns {
			return &RuleError{Field: l.field, Msg: fmt.Sprintf("%d patterns, limit %d", len(l.patterns), MaxPatterns)}
		}
		for i, p := range l.patterns {
			if err := CheckPattern(p); err != nil {
				return &RuleError{Field: l.field + "[" + strconv.Itoa(i) + "]", Msg: err.Error()}
			}
		}
	}
	if len(r.Rename) > MaxRenames {
		return &RuleError{Field: "rename", Msg: fmt.Sprintf("%d entries, limit %d", len(r.Rename), MaxRenames)}
	}
	by := map[string]string{}
	for _, own := range sortedKeys(r.Rename) {
		exp := r.Rename[own]
		field := "rename." + quoteKey(own)
		if own == "" || len(own) > MaxRenameLen {
			return &RuleError{Field: "rename", Msg: fmt.Sprintf("own name of %d bytes, want 1 to %d", len(own), MaxRenameLen)}
		}
		if err := CheckExposed(k, exp); err != nil {
			return &RuleError{Field: field, Msg: err.Error()}
		}
		if prev, dup := by[exp]; dup {
			return &RuleError{Field: field, Msg: fmt.Sprintf("%q and %q are both renamed to %q", prev, own, exp)}
		}
		by[exp] = own
	}
	return nil
}

// CheckExposed checks an exposed name given by a rename: for tools and
// prompts a valid tool name (CheckName), for resources an absolute URI of
// at most MaxRenameLen bytes.
func CheckExposed(k Kind, name string) error {
	if k != Resource {
		return CheckName(name)
	}
	if name == "" || len(name) > MaxRenameLen {
		return fmt.Errorf("uri of %d bytes, want 1 to %d", len(name), MaxRenameLen)
	}
	u, err := url.Parse(name)
	if err != nil {
		return fmt.Errorf("uri: %w", err)
	}
	if u.Scheme == "" {
		return fmt.Errorf("uri %q has no scheme", name)
	}
	return nil
}

// CheckName reports whether name is a valid MCP tool name: 1 to
// MaxNameLen bytes of [A-Za-z0-9_.-].
func CheckName(name string) error {
	if name == "" {
		return errors.New("name is empty")
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("name is %d bytes, limit %d", len(name), MaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		if !nameByte(name[i]) {
			return fmt.Errorf("name has %q at byte %d, want [A-Za-z0-9_.-]", name[i], i)
		}
	}
	return nil
}

func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '-' || c == '.'
}

// quoteKey writes a rename key into a field path: bare when it is a plain
// name, quoted otherwise.
func quoteKey(k string) string {
	if CheckName(k) == nil {
		return k
	}
	return strconv.Quote(k)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
