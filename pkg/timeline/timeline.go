// Package timeline is a backend's status over time as the controller's
// dashboard draws it: the changes the event log records (health events,
// additions and removals) and the changes of the status the leading
// controller reports (its probes' verdict, live), merged by time and cut
// into runs of one status.
//
// Why both: the log records a health event only when a backend's
// advertisability changes (a change between two advertised statuses,
// degraded to healthy, or between two withdrawn ones, unknown to
// unhealthy, is no event), so a timeline drawn from the log alone shows a
// recovered backend degraded, or an outage unknown, for as long as
// nothing else happens. The live changes fill those in; the log covers
// what happened before this controller led (or while another one did).
// Each source tells the status true at its own time (a health event
// carries the status at the moment it was decided), so interleaving them
// by time needs no other rule.
//
//	segs := timeline.Segments(changes, current, now.Add(-time.Hour), now)
//
// Segments, FromEvent and Merge are pure; Recorder is the controller's
// bounded, concurrency-safe record of live changes.
package timeline

import (
	"cmp"
	"slices"
	"time"

	"github.com/fleetgate/fleetgate/pkg/events"
)

// Absent is the status of a backend before it is added and after it is
// removed.
const Absent = "absent"

// Unknown is the status of a backend just added (nothing probed yet).
const Unknown = "unknown"

// Change is one change of one backend's status.
type Change struct {
	At      time.Time
	Group   string
	Backend string
	From    string // "" when not known
	To      string
	Reason  string
	// Live: the controller's probes (Recorder), not an event of the log.
	Live bool
	// Generation is the event's, for a change of the log.
	Generation uint64
}

// Segment is a run of one status, [From, To).
type Segment struct {
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
	Status string    `json:"status"`
}

// FromEvent is the change an event of the log makes to its backend's
// status: health_changed (to its status), backend_added (to unknown),
// backend_removed (to absent). Other events change no status (ok false).
func FromEvent(ev events.EventJSON) (Change, bool) {
	c := Change{At: ev.Time, Group: ev.Group, Backend: ev.Backend, Generation: ev.Generation}
	switch ev.Kind {
	case "health_changed":
		if ev.Health == nil {
			return Change{}, false
		}
		c.From, c.To, c.Reason = ev.Health.From, cmp.Or(ev.Health.To, Unknown), ev.Health.Reason
	case "backend_added":
		// A re-add (a config change) keeps the status; only an addition
		// from nothing starts unknown. The event does not say which:
		// Merge drops an addition that follows a known status.
		c.From, c.To = Absent, Unknown
	case "backend_removed":
		c.To = Absent
	default:
		return Change{}, false
	}
	if ev.Backend == "" || ev.Time.IsZero() {
		return Change{}, false
	}
	return c, true
}

// Merge orders one backend's changes by time (stable: equal times keep
// their order) and drops the additions of a backend that already has a
// status other than absent (a backend_added event for a config change).
func Merge(changes []Change) []Change {
	out := slices.Clone(changes)
	slices.SortStableFunc(out, func(a, b Change) int { return a.At.Compare(b.At) })
	status := ""
	n := 0
	for _, c := range out {
		if c.From == Absent && c.To == Unknown && c.Generation != 0 && status != "" && status != Absent {
			continue
		}
		status = c.To
		out[n] = c
		n++
	}
	return out[:n]
}

// Segments cuts [from, to] into runs of one status from one backend's
// changes (any order: they are merged first). The status at from is that
// of the last change at or before it; with none, the status the first
// change after it left (its From, unknown when not known), and with no
// change at all, current. Adjacent runs of one status are one segment; empty ones are
// dropped. to before from is an empty timeline.
func Segments(changes []Change, current string, from, to time.Time) []Segment {
	if to.Before(from) {
		return nil
	}
	merged := Merge(changes)
	status := ""
	i := 0
	for ; i < len(merged) && !merged[i].At.After(from); i++ {
		status = merged[i].To
	}
	later := merged[i:] // changes after from
	inside := later
	for len(inside) > 0 && inside[len(inside)-1].At.After(to) {
		inside = inside[:len(inside)-1]
	}
	if status == "" {
		switch {
		case len(later) > 0 && later[0].From != "":
			status = later[0].From
		case len(later) > 0:
			status = Unknown
		default:
			status = cmp.Or(current, Unknown)
		}
	}
	var out []Segment
	start := from
	push := func(end time.Time, s string) {
		if !end.After(start) {
			return
		}
		if n := len(out); n > 0 && out[n-1].Status == s && out[n-1].To.Equal(start) {
			out[n-1].To = end
		} else {
			out = append(out, Segment{From: start, To: end, Status: s})
		}
		start = end
	}
	for _, c := range inside {
		push(c.At, status)
		status = c.To
	}
	push(to, status)
	if len(out) == 0 { // from == to
		out = append(out, Segment{From: from, To: to, Status: status})
	}
	return out
}

// Last is the time of the last change of a status among changes (merged),
// zero with none.
func Last(changes []Change) time.Time {
	merged := Merge(changes)
	for i := len(merged) - 1; i > 0; i-- {
		if merged[i].To != merged[i-1].To {
			return merged[i].At
		}
	}
	if len(merged) > 0 {
		return merged[0].At
	}
	return time.Time{}
}
