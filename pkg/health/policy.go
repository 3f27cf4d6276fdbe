package health

import (
	"errors"
	"fmt"
	"time"
)

// Default policy values, used for zero fields of a Policy (and for a nil
// *Policy).
const (
	DefaultInterval       = 5 * time.Second
	DefaultTimeout        = 2 * time.Second
	DefaultUnhealthyAfter = 2
)

// Policy is the health section of the fleet configuration. A zero field means
// "use the default"; a nil *Policy means all defaults.
//
// The field names follow the YAML keys interval, timeout, unhealthy_after and
// debounce; errors from Validate name the field by its YAML key.
type Policy struct {
	// Interval is the probe period per backend (default 5s). It is also the
	// length of the degraded stage a recovering backend passes through.
	Interval time.Duration
	// Timeout is one probe's deadline (default 2s). A successful probe whose
	// latency exceeds Timeout/2 is "slow" and makes the backend degraded.
	Timeout time.Duration
	// UnhealthyAfter is the number of consecutive failed probes after which
	// a backend is unhealthy (default 2). Failures below the threshold make
	// it unknown, which is already unadvertisable.
	UnhealthyAfter int
	// Debounce is the change-event coalescing window, the window of the
	// Coalescer that publishes advertisability changes (default Interval).
	Debounce time.Duration
}

// ErrInvalidPolicy is wrapped by every *PolicyError.
var ErrInvalidPolicy = errors.New("invalid health policy")

// PolicyError reports a Policy field with a value that cannot be used.
// errors.Is(err, ErrInvalidPolicy) holds for it.
type PolicyError struct {
	// Field is the YAML key of the offending field, e.g. "unhealthy_after".
	Field string
	// Value is the offending value, formatted.
	Value string
	// Reason says what is wrong with it.
	Reason string
}

func (e *PolicyError) Error() string {
	return fmt.Sprintf("health policy: %s: %s (got %s)", e.Field, e.Reason, e.Value)
}

// Unwrap returns ErrInvalidPolicy.
func (e *PolicyError) Unwrap() error { return ErrInvalidPolicy }

// Validate checks the policy as written: no field may be negative (zero means
// the default). It reports the first bad field, in declaration order, as a
// *PolicyError. A nil *Policy is valid.
//
// Validate does not require Timeout to be below Interval: whether probes of
// one backend may overlap is the prober's business, not the state machine's.
func (p *Policy) Validate() error {
	if p == nil {
		return nil
	}
	if p.Interval < 0 {
		return &PolicyError{Field: "interval", Value: p.Interval.String(), Reason: "must not be negative"}
	}
	if p.Timeout < 0 {
		return &PolicyError{Field: "timeout", Value: p.Timeout.String(), Reason: "must not be negative"}
	}
	if p.UnhealthyAfter < 0 {
		return &PolicyError{Field: "unhealthy_after", Value: fmt.Sprint(p.UnhealthyAfter), Reason: "must not be negative"}
	}
	if p.Debounce < 0 {
		return &PolicyError{Field: "debounce", Value: p.Debounce.String(), Reason: "must not be negative"}
	}
	return nil
}

// WithDefaults returns a copy of the policy with every zero field replaced by
// its default: interval 5s, timeout 2s, unhealthy_after 2, debounce = the
// resulting interval. It may be called on a nil *Policy. Negative fields are
// kept as they are; call Validate first.
func (p *Policy) WithDefaults() Policy {
	var out Policy
	if p != nil {
		out = *p
	}
	if out.Interval == 0 {
		out.Interval = DefaultInterval
	}
	if out.Timeout == 0 {
		out.Timeout = DefaultTimeout
	}
	if out.UnhealthyAfter == 0 {
		out.UnhealthyAfter = DefaultUnhealthyAfter
	}
	if out.Debounce == 0 {
		out.Debounce = out.Interval
	}
	return out
}

// Resolve validates the policy and returns it with defaults applied. It is
// the one call a configuration loader needs; a nil *Policy resolves to the
// defaults.
func (p *Policy) Resolve() (Policy, error) {
	if err := p.Validate(); err != nil {
		return Policy{}, err
	}
	return p.WithDefaults(), nil
}

// slowAfter is the latency above which a successful probe counts as slow.
func (p Policy) slowAfter() time.Duration { return p.Timeout / 2 }
