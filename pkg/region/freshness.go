package region

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fleetgate/fleetgate/pkg/convergence"
)

// DefaultStaleAfter is how long a mirror may hear nothing from its origin
// before the part of a view that comes from it is judged stale: a live
// mirror hears a heartbeat every second, and a follower reads the mirror's
// info every DefaultMirrorPoll.
const DefaultStaleAfter = 5 * time.Second

// MirrorState is what a follower last read of one regional log in its
// NATS: the region's own log (Local) or the mirror of another region's.
type MirrorState struct {
	// Read: the log's info was read at least once; ReadAt is the last
	// successful read and Err why the last read failed, if it did.
	Read   bool
	ReadAt time.Time
	Err    string
	// Local: the log is the region's own (not a mirror): nothing can stop
	// it moving but its own controller.
	Local bool
	// SilentSince is when the mirror last heard from its origin (as of
	// ReadAt); Never: it had not heard from it since its server started,
	// and SilentSince is then the first read that found so.
	SilentSince time.Time
	Never       bool
}

// Mirrors is what a follower knows of each region's log at Now, and the
// bound past which a silent mirror makes a view stale.
type Mirrors struct {
	States     map[string]MirrorState
	Now        time.Time
	StaleAfter time.Duration
}

// MirrorReport is the judgement of one region's log in a Mirrors: fresh
// (Converged), Stale or Unverifiable, and why. Inactive is how long the
// mirror has heard nothing from its origin (as far as known).
type MirrorReport struct {
	Region   string             `json:"region"`
	Status   convergence.Status `json:"status"`
	Reason   string             `json:"reason"`
	Inactive time.Duration      `json:"inactive_ns,omitempty"`
}

// Judge judges each region of regions (sorted) in m. It is pure; per
// region, the first rule that matches decides:
//
//  1. nothing was ever read of its log: Unverifiable;
//  2. the last successful read is older than StaleAfter: Unverifiable
//     (what the mirror does now is unknown, and unknown is never fresh);
//  3. the region's own log: Converged;
//  4. the mirror has heard nothing from its origin for longer than
//     StaleAfter: Stale;
//  5. Converged.
func (m Mirrors) Judge(regions []string) []MirrorReport {
	bound := m.StaleAfter
	if bound <= 0 {
		bound = DefaultStaleAfter
	}
	out := make([]MirrorReport, 0, len(regions))
	for _, r := range slices.Sorted(slices.Values(regions)) {
		s, ok := m.States[r]
		rep := MirrorReport{Region: r, Status: convergence.Converged}
		switch age := m.Now.Sub(s.ReadAt); {
		case !ok || !s.Read:
			rep.Status, rep.Reason = convergence.Unverifiable, fmt.Sprintf("region %s: its log's status was never read%s", r, because(s.Err))
		case age > bound:
			rep.Status, rep.Reason = convergence.Unverifiable, fmt.Sprintf("region %s: its log's status was last read %v ago%s", r, age.Round(time.Millisecond), because(s.Err))
		case s.Local:
			rep.Reason = fmt.Sprintf("region %s: the region's own log", r)
		default:
			rep.Inactive = max(m.Now.Sub(s.SilentSince), 0)
			if rep.Inactive > bound {
				rep.Status, rep.Reason = convergence.Stale, fmt.Sprintf("region %s: its mirror has heard nothing from its origin for %v (bound %v): what the view holds of region %s may be stale",
					r, rep.Inactive.Round(time.Millisecond), bound, r)
			} else {
				rep.Reason = fmt.Sprintf("region %s: its mirror heard from its origin %v ago", r, rep.Inactive.Round(time.Millisecond))
			}
		}
		out = append(out, rep)
	}
	return out
}

func because(err string) string {
	if err == "" {
		return ""
	}
	return " (" + err + ")"
}

// worst is the verdict of a view over reports: Stale naming every stale
// region if any is, else Unverifiable naming every unverifiable one if
// any is, else Converged.
func worst(reports []MirrorReport) (convergence.Status, string) {
	for _, s := range []convergence.Status{convergence.Stale, convergence.Unverifiable} {
		var reasons []string
		for _, r := range reports {
			if r.Status == s {
				reasons = append(reasons, r.Reason)
			}
		}
		if len(reasons) > 0 {
			return s, strings.Join(reasons, "; ")
		}
	}
	return convergence.Converged, ""
}
