package region

import (
	"fmt"

	"github.com/fleetgate/fleetgate/pkg/convergence"
)

// Verdict judges a session of a region-spanning group against target, the
// vector a verdict is asked at (the regional log heads an audit reads).
// session is the session's own verdict for the view it was served from
// (convergence.Explain on its record), reflected the vector of that view.
// It is Converged only when the session is converged for its view and the
// view reflects every region's target generation; a view behind in any
// region makes a converged session Stale. Other verdicts pass through.
func Verdict(session convergence.Status, reason string, reflected, target Vector) (convergence.Status, string) {
	if session != convergence.Converged {
		return session, reason
	}
	if !reflected.Covers(target) {
		return convergence.Stale, fmt.Sprintf("the view reflects %s, behind the target %s", reflected, target)
	}
	return convergence.Converged, fmt.Sprintf("%s; the view reflects %s, covering the target %s", reason, reflected, target)
}
