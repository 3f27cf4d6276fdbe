package region

import (
	"fmt"
	"maps"
	"slices"

	"github.com/fleetgate/fleetgate/pkg/convergence"
)

// Verdict judges a session of a region-spanning group against target, the
// vector a verdict is asked at (the regional log heads an audit reads, or
// the edge's confirmed vector), and m, what the edge knows of each region's
// log (its mirror's activity). session is the session's own verdict for
// the view it was served from (convergence.Explain on its record),
// reflected the vector of that view. It is pure; the first rule that
// matches decides:
//
//  1. the session is not converged for its view: its verdict, unchanged;
//  2. the view is behind target in any region: Stale, naming both vectors;
//  3. a region of target whose mirror has been silent longer than
//     m.StaleAfter: Stale, naming the region (what the view holds of it
//     may be behind its origin, however current it is against target);
//  4. a region of target whose log's status is unknown: Unverifiable,
//     naming it (missing information is never converged);
//  5. Converged.
//
// A zero m (no States) knows nothing of any region: rule 4 for every
// region of target.
func Verdict(session convergence.Status, reason string, reflected, target Vector, m Mirrors) (convergence.Status, string) {
	if session != convergence.Converged {
		return session, reason
	}
	if !reflected.Covers(target) {
		return convergence.Stale, fmt.Sprintf("the view reflects %s, behind the target %s", reflected, target)
	}
	if s, why := worst(m.Judge(slices.Collect(maps.Keys(target)))); s != convergence.Converged {
		return s, fmt.Sprintf("the view reflects %s, covering the target %s, but %s", reflected, target, why)
	}
	return convergence.Converged, fmt.Sprintf("%s; the view reflects %s, covering the target %s, every region's log live", reason, reflected, target)
}
