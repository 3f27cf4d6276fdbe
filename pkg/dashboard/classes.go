package dashboard

import "time"

// Idle is the class of a session without a request for longer than
// Options.IdleAfter, whatever its verdict: a client that left its session
// open (most clients exit without deleting theirs; the edge ends it after
// its --session-idle-timeout). Its verdict says how far its view of the
// catalog got before it went quiet, not that anything is wrong now.
const Idle = "idle"

// Classes are the classes of sessions the page counts, in its order: the
// convergence verdicts of the sessions in use, then idle.
var Classes = []string{"converged", "incomplete", "stale", "unverifiable", Idle}

// Class is a session's class at now: Idle when its last request is more
// than idleAfter old (a zero lastSeen is unknown: not idle), its verdict
// otherwise. The share of sessions converged that the page shows is
// converged among those that are not idle.
func Class(verdict string, lastSeen, now time.Time, idleAfter time.Duration) string {
	if !lastSeen.IsZero() && now.Sub(lastSeen) > idleAfter {
		return Idle
	}
	return verdict
}
