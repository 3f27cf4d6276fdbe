package health

import (
	"errors"
	"fmt"
)

// Status is the health of one backend as the controller sees it. Its string
// form is the wire form used in the admin API, the event log and metrics.
type Status string

// The five statuses. The zero Status ("") is not one of them; a Tracker never
// reports it.
const (
	// Healthy: the last probe succeeded quickly and the backend is not
	// recovering from a failure.
	Healthy Status = "healthy"
	// Degraded: the backend answers, but either the last probe was slow
	// (latency over half the probe timeout) or it is recovering and has not
	// yet succeeded for a full probe interval.
	Degraded Status = "degraded"
	// Unhealthy: the last Policy.UnhealthyAfter probes (at least) all failed.
	Unhealthy Status = "unhealthy"
	// Unknown: the backend has never been probed, or its last probe failed
	// but fewer than Policy.UnhealthyAfter probes in a row have failed.
	Unknown Status = "unknown"
	// Unauthenticated: the backend rejected the gateway's credentials
	// (HTTP 401 or 403 on the last probe).
	Unauthenticated Status = "unauthenticated"
)

// ErrInvalidStatus is wrapped by ParseStatus when its input names no status.
var ErrInvalidStatus = errors.New("invalid health status")

// statuses lists every status in a fixed order (best first).
var statuses = [...]Status{Healthy, Degraded, Unknown, Unhealthy, Unauthenticated}

// Statuses returns every status in a fixed order, best first: healthy,
// degraded, unknown, unhealthy, unauthenticated. It is meant for metric label
// sets and documentation; the returned slice is a fresh copy.
func Statuses() []Status {
	out := make([]Status, len(statuses))
	copy(out, statuses[:])
	return out
}

// ParseStatus returns the Status whose wire form is s. The match is exact
// (lower case, no surrounding space). Any other input yields an error that
// wraps ErrInvalidStatus and quotes the input.
func ParseStatus(s string) (Status, error) {
	for _, st := range statuses {
		if string(st) == s {
			return st, nil
		}
	}
	return "", fmt.Errorf("parse health status %q: %w (want healthy, degraded, unhealthy, unknown or unauthenticated)", s, ErrInvalidStatus)
}

// Advertisable reports whether a backend in status s may have its tools,
// resources and prompts advertised to clients: true for Healthy and Degraded,
// false for every other status (including invalid ones).
//
// This is the one predicate that decides advertisability in fleetgate; every
// package that needs the decision calls it rather than comparing statuses.
func Advertisable(s Status) bool {
	return s == Healthy || s == Degraded
}
