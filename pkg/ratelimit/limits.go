package ratelimit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
)

// Bounds of a Limits value; Validate refuses anything beyond them.
const (
	MaxToolRules     = 64        // entries of Limits.Tools
	MaxGlobsPerRule  = 64        // entries of ToolRule.Tools
	MaxGlobBytes     = 256       // one glob
	MaxRuleNameBytes = 63        // ToolRule.Name
	MaxRate          = 1e6       // requests per second; failed authentications per minute
	MinRate          = 0.001     // requests per second (one per 1000 s)
	MaxBurst         = 1_000_000 // every burst
	MaxConcurrent    = 1_000_000 // IdentityLimits.ConcurrentCalls
	MaxJSONBytes     = 64 << 10  // ParseJSON's input
)

// Limits are the rate limits of a fleet, the rate_limits section of the
// fleet config. The zero value (and every absent section) limits nothing.
type Limits struct {
	// Identity limits each caller identity on its own; absent: none.
	Identity *IdentityLimits `yaml:"identity,omitempty" json:"identity,omitempty"`
	// Tools limit calls of tools by exposed name. The first rule whose
	// globs match a tool's name applies to a call of it (at most one rule
	// per call); a tool no rule matches is not limited by any.
	Tools []ToolRule `yaml:"tools,omitempty" json:"tools,omitempty"`
	// FailedAuth slows failed authentications from one client address;
	// absent: not slowed.
	FailedAuth *FailedAuthLimits `yaml:"failed_auth,omitempty" json:"failed_auth,omitempty"`
}

// IdentityLimits apply to each identity separately: one identity's
// traffic never uses another's budget.
type IdentityLimits struct {
	// RequestsPerSecond is the sustained rate of requests to /mcp of one
	// identity; 0 or absent: unlimited.
	RequestsPerSecond float64 `yaml:"requests_per_second,omitempty" json:"requests_per_second,omitempty"`
	// Burst is how many requests may come at once after a quiet period;
	// 0 or absent: ceil(RequestsPerSecond). Needs RequestsPerSecond.
	Burst int `yaml:"burst,omitempty" json:"burst,omitempty"`
	// ConcurrentCalls bounds the tool calls of one identity in flight at
	// once; 0 or absent: unlimited.
	ConcurrentCalls int `yaml:"concurrent_calls,omitempty" json:"concurrent_calls,omitempty"`
}

// ToolRule limits the calls of the tools whose exposed names match Tools.
type ToolRule struct {
	// Name labels the rule in refusals and the call trail, [a-z0-9-]{1,63},
	// unique; absent: the rule is named by its place, "tools[i]".
	Name string `yaml:"name,omitempty" json:"name,omitempty"`
	// Tools are globs (Go path.Match) on exposed tool names; at least one.
	Tools []string `yaml:"tools" json:"tools"`
	// RequestsPerSecond is the sustained rate of calls; required, > 0.
	RequestsPerSecond float64 `yaml:"requests_per_second" json:"requests_per_second"`
	// Burst: 0 or absent means ceil(RequestsPerSecond).
	Burst int `yaml:"burst,omitempty" json:"burst,omitempty"`
	// PerIdentity gives every identity its own budget; false (absent):
	// one budget shared by every caller of the matching tools.
	PerIdentity bool `yaml:"per_identity,omitempty" json:"per_identity,omitempty"`
}

// FailedAuthLimits bound the failed authentications of one client address.
// A client address whose budget is spent is refused before its token is
// verified, until the budget refills.
type FailedAuthLimits struct {
	// PerAddressPerMinute is the sustained rate of failures; required
	// when the section is present, > 0.
	PerAddressPerMinute int `yaml:"per_address_per_minute" json:"per_address_per_minute"`
	// Burst is how many failures may come at once; 0 or absent:
	// PerAddressPerMinute.
	Burst int `yaml:"burst,omitempty" json:"burst,omitempty"`
}

// ErrInvalidLimits is matched (errors.Is) by every error of Validate and
// ParseJSON.
var ErrInvalidLimits = errors.New("invalid rate limits")

// FieldError names the field of Limits that Validate refused, as a path
// in the config ("tools[2].requests_per_second").
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s: %s: %s", ErrInvalidLimits, e.Field, e.Problem)
}

// Unwrap makes errors.Is(err, ErrInvalidLimits) hold.
func (e *FieldError) Unwrap() error { return ErrInvalidLimits }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// IsZero reports whether l limits nothing.
func (l Limits) IsZero() bool {
	return l.Identity == nil && len(l.Tools) == 0 && l.FailedAuth == nil
}

// Validate checks l against the bounds above; its error is a *FieldError
// naming the first bad field.
func (l Limits) Validate() error {
	if id := l.Identity; id != nil {
		if err := checkRate("identity", id.RequestsPerSecond, true); err != nil {
			return err
		}
		if err := checkBurst("identity", id.Burst, id.RequestsPerSecond > 0); err != nil {
			return err
		}
		if id.ConcurrentCalls < 0 || id.ConcurrentCalls > MaxConcurrent {
			return fieldErr("identity.concurrent_calls", "must be between 0 (unlimited) and %d, got %d", MaxConcurrent, id.ConcurrentCalls)
		}
	}
	if len(l.Tools) > MaxToolRules {
		return fieldErr("tools", "at most %d rules, got %d", MaxToolRules, len(l.Tools))
	}
	names := map[string]int{}
	for i, r := range l.Tools {
		at := fmt.Sprintf("tools[%d]", i)
		if r.Name != "" {
			if !validName(r.Name) {
				return fieldErr(at+".name", "must match [a-z0-9-]{1,%d}", MaxRuleNameBytes)
			}
			if j, dup := names[r.Name]; dup {
				return fieldErr(at+".name", "%q is also the name of tools[%d]", r.Name, j)
			}
			names[r.Name] = i
		}
		if len(r.Tools) == 0 {
			return fieldErr(at+".tools", "at least one glob is required")
		}
		if len(r.Tools) > MaxGlobsPerRule {
			return fieldErr(at+".tools", "at most %d globs, got %d", MaxGlobsPerRule, len(r.Tools))
		}
		for j, g := range r.Tools {
			gat := fmt.Sprintf("%s.tools[%d]", at, j)
			if g == "" || len(g) > MaxGlobBytes {
				return fieldErr(gat, "a glob has 1 to %d bytes, got %d", MaxGlobBytes, len(g))
			}
			if _, err := path.Match(g, ""); err != nil {
				return fieldErr(gat, "not a glob (Go path.Match): %v", err)
			}
		}
		if err := checkRate(at, r.RequestsPerSecond, false); err != nil {
			return err
		}
		if err := checkBurst(at, r.Burst, true); err != nil {
			return err
		}
	}
	if fa := l.FailedAuth; fa != nil {
		if fa.PerAddressPerMinute < 1 || fa.PerAddressPerMinute > MaxRate {
			return fieldErr("failed_auth.per_address_per_minute", "must be between 1 and %d, got %d", int(MaxRate), fa.PerAddressPerMinute)
		}
		if fa.Burst < 0 || fa.Burst > MaxBurst {
			return fieldErr("failed_auth.burst", "must be between 0 (default) and %d, got %d", MaxBurst, fa.Burst)
		}
	}
	return nil
}

// checkRate: 0 is allowed (unlimited) only where optional is true.
func checkRate(at string, rps float64, optional bool) error {
	f := at + ".requests_per_second"
	if math.IsNaN(rps) || math.IsInf(rps, 0) {
		return fieldErr(f, "must be a finite number")
	}
	if rps == 0 && optional {
		return nil
	}
	if rps < MinRate || rps > MaxRate {
		return fieldErr(f, "must be between %g and %g, got %g", MinRate, MaxRate, rps)
	}
	return nil
}

func checkBurst(at string, burst int, hasRate bool) error {
	f := at + ".burst"
	if burst < 0 || burst > MaxBurst {
		return fieldErr(f, "must be between 0 (default) and %d, got %d", MaxBurst, burst)
	}
	if burst > 0 && !hasRate {
		return fieldErr(f, "needs requests_per_second")
	}
	return nil
}

func validName(s string) bool {
	if s == "" || len(s) > MaxRuleNameBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// ParseJSON decodes and validates the JSON form of Limits (as an admin
// API or an event carries it): at most MaxJSONBytes, one object, no
// unknown fields.
func ParseJSON(data []byte) (Limits, error) {
	var l Limits
	if len(data) > MaxJSONBytes {
		return l, fmt.Errorf("parse rate limits: %w: over %d bytes", ErrInvalidLimits, MaxJSONBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return Limits{}, fmt.Errorf("parse rate limits: %w: %w", ErrInvalidLimits, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Limits{}, fmt.Errorf("parse rate limits: %w: data after the object", ErrInvalidLimits)
	}
	if err := l.Validate(); err != nil {
		return Limits{}, fmt.Errorf("parse rate limits: %w", err)
	}
	return l, nil
}

// burstOf is a rate's burst: the one given, else ceil(rate), at least 1.
func burstOf(burst int, rate float64) int {
	if burst > 0 {
		return burst
	}
	b := int(math.Ceil(rate))
	return max(b, 1)
}
