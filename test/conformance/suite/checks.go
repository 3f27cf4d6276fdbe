package suite

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Check statuses the suite reports. Only FAILURE fails a scenario.
const (
	StatusSuccess = "SUCCESS"
	StatusFailure = "FAILURE"
	StatusWarning = "WARNING"
	StatusInfo    = "INFO"
)

// Bounds on what is read from the suite.
const (
	MaxChecksBytes = 4 << 20 // one scenario's checks.json
	MaxChecks      = 1000    // checks in one scenario
	MaxText        = 2000    // bytes kept of one id, name, description or error message
)

// ErrBadChecks is wrapped by every ParseChecks error.
var ErrBadChecks = errors.New("bad checks file")

// Check is one conformance check of a scenario, as the suite reports it.
type Check struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Description  string `json:"description"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage,omitempty"`
	// Details is the check's details object as compact JSON, cut to
	// MaxText bytes (then no longer valid JSON).
	Details string `json:"-"`
}

// wireCheck is a check as the suite writes it.
type wireCheck struct {
	Check
	Details json.RawMessage `json:"details"`
}

// ParseChecks reads a scenario's checks.json: a JSON array of checks,
// at most MaxChecksBytes and MaxChecks, texts cut to MaxText bytes.
func ParseChecks(b []byte) ([]Check, error) {
	if len(b) > MaxChecksBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrBadChecks, len(b), MaxChecksBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadChecks, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, fmt.Errorf("%w: want a JSON array", ErrBadChecks)
	}
	var out []Check
	for dec.More() {
		if len(out) == MaxChecks {
			return nil, fmt.Errorf("%w: more than %d checks", ErrBadChecks, MaxChecks)
		}
		var w wireCheck
		if err := dec.Decode(&w); err != nil {
			return nil, fmt.Errorf("%w: check %d: %v", ErrBadChecks, len(out), err)
		}
		c := w.Check
		c.ID, c.Name, c.Description = clip(c.ID), clip(c.Name), clip(c.Description)
		c.Status, c.ErrorMessage = clip(c.Status), clip(c.ErrorMessage)
		if len(w.Details) > 0 {
			var buf bytes.Buffer
			if json.Compact(&buf, w.Details) == nil {
				c.Details = clip(buf.String())
			}
		}
		out = append(out, c)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadChecks, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the array", ErrBadChecks)
	}
	return out, nil
}

// clip cuts s to MaxText bytes on a rune boundary and flattens newlines.
func clip(s string) string {
	if len(s) > MaxText {
		cut := MaxText
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return strings.Join(strings.Fields(s), " ")
}

// Result is one scenario run against one URL.
type Result struct {
	Scenario string
	URL      string
	Checks   []Check
	// TimedOut is set when the scenario was stopped at its deadline.
	TimedOut bool
	// Err is why the run gave no checks (the process failed to start,
	// wrote no checks file, or an unreadable one); nil otherwise.
	Err      error
	Duration time.Duration
}

// Passed reports whether the scenario ran to the end, reported at least
// one check, and no check failed.
func (r *Result) Passed() bool {
	if r.TimedOut || r.Err != nil || len(r.Checks) == 0 {
		return false
	}
	for _, c := range r.Checks {
		if c.Status == StatusFailure {
			return false
		}
	}
	return true
}

// Counts are the checks by status.
func (r *Result) Counts() (success, failure, other int) {
	for _, c := range r.Checks {
		switch c.Status {
		case StatusSuccess:
			success++
		case StatusFailure:
			failure++
		default:
			other++
		}
	}
	return success, failure, other
}

// Reason says in one line why the scenario did not pass: the timeout,
// the run error, or the failed checks with their messages. Empty when it
// passed.
func (r *Result) Reason() string {
	switch {
	case r.Passed():
		return ""
	case r.TimedOut:
		return fmt.Sprintf("timed out after %s (a request got no answer)", r.Duration.Round(time.Second))
	case r.Err != nil:
		return clip(r.Err.Error())
	case len(r.Checks) == 0:
		return "no checks reported"
	}
	var parts []string
	for _, c := range r.Checks {
		if c.Status != StatusFailure {
			continue
		}
		msg := c.Name
		if c.ErrorMessage != "" {
			msg += ": " + c.ErrorMessage
		}
		parts = append(parts, msg)
	}
	return clip(strings.Join(parts, "; "))
}
