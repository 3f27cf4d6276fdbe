package region

import (
	"fmt"
	"time"
)

// Look is what one look at a mirror and its origin found: the mirror in
// the local region's JetStream, the origin read across the region link
// through the origin's JetStream domain.
type Look struct {
	// Missing: the mirror does not exist here.
	Missing bool
	// Head is the mirror's last sequence; Active the time since it last
	// heard from its origin (negative: never since the server started).
	Head   uint64
	Active time.Duration
	// OriginOK: the origin's head was read; OriginHead is that head.
	OriginOK   bool
	OriginHead uint64
}

// NudgePolicy bounds when a mirror is re-created. The zero value means
// defaults.
type NudgePolicy struct {
	// StuckAfter: a mirror that has heard nothing from its origin for
	// longer is stuck (a live one hears a heartbeat every second);
	// default DefaultStuckAfter.
	StuckAfter time.Duration
	// MinGap between two re-creations of one mirror; default
	// DefaultNudgeGap.
	MinGap time.Duration
}

// Defaults of NudgePolicy.
const (
	DefaultStuckAfter = 3 * time.Second
	DefaultNudgeGap   = 5 * time.Second
)

func (p NudgePolicy) withDefaults() NudgePolicy {
	if p.StuckAfter <= 0 {
		p.StuckAfter = DefaultStuckAfter
	}
	if p.MinGap <= 0 {
		p.MinGap = DefaultNudgeGap
	}
	return p
}

// Nudge decides whether a mirror is re-created (recreateMirror), and why
// or why not. sinceLast is the time since its last re-creation (negative:
// none). It is pure; the rules, first match deciding:
//
//  1. the origin cannot be read: no (a new mirror would wait on the same
//     cut link, and nothing says the mirror is behind);
//  2. the mirror is missing: yes;
//  3. the mirror holds the origin's head: no;
//  4. the mirror heard from its origin within StuckAfter: no (it is
//     copying what it lacks);
//  5. re-created within MinGap: no (the new mirror is being set up);
//  6. yes: it is behind a reachable origin and hears nothing from it,
//     which is the server waiting on a retry timer.
func Nudge(l Look, sinceLast time.Duration, p NudgePolicy) (bool, string) {
	p = p.withDefaults()
	switch {
	case !l.OriginOK:
		return false, "origin unreachable"
	case l.Missing:
		return true, "mirror missing"
	case l.OriginHead <= l.Head:
		return false, "mirror at the origin's head"
	case l.Active >= 0 && l.Active <= p.StuckAfter:
		return false, fmt.Sprintf("mirror %d behind, receiving", l.OriginHead-l.Head)
	case sinceLast >= 0 && sinceLast < p.MinGap:
		return false, fmt.Sprintf("mirror %d behind, re-created %v ago", l.OriginHead-l.Head, sinceLast.Round(time.Millisecond))
	}
	if l.Active < 0 {
		return true, fmt.Sprintf("mirror %d behind a reachable origin, never heard from it", l.OriginHead-l.Head)
	}
	return true, fmt.Sprintf("mirror %d behind a reachable origin, silent for %v", l.OriginHead-l.Head, l.Active.Round(time.Millisecond))
}
