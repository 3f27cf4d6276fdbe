package chaos

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/events"
)

// The audit check finds what it is meant to find: a lost transition, a
// duplicated status, a reused or skipped generation, an unscripted flip,
// a missing tool change.
func TestCheckAudit(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	health := func(gen uint64, s float64, b, to string, adv bool) events.EventJSON {
		return events.EventJSON{Generation: gen, Time: at(s), Backend: b, Kind: "health_changed",
			Health: &events.HealthChangeJSON{To: to, Advertisable: adv}}
	}
	catalog := func(gen uint64, s float64, b string, tools ...string) events.EventJSON {
		return events.EventJSON{Generation: gen, Time: at(s), Backend: b, Kind: "catalog_changed", Catalog: &events.CatalogJSON{Tools: tools}}
	}
	base := func() []events.EventJSON {
		return []events.EventJSON{
			health(1, 0, "b0", "healthy", true), health(2, 0, "b1", "healthy", true), health(3, 0, "b2", "healthy", true),
			health(4, 2, "b0", "unhealthy", false), health(5, 5, "b0", "healthy", true),
			catalog(6, 7, "b1", "echo", "add", "extra1"),
		}
	}
	gt := &groundTruth{trans: []transition{
		{at: at(1), backend: "b0", kind: "down"}, {at: at(4), backend: "b0", kind: "up"},
		{at: at(6.5), backend: "b1", kind: "tools", tool: "extra1", added: true},
	}}
	for _, tc := range []struct {
		name   string
		edit   func([]events.EventJSON) []events.EventJSON
		want   auditReport
		errors bool
	}{
		{"clean", func(e []events.EventJSON) []events.EventJSON { return e }, auditReport{injected: 3, matched: 3, generations: 6}, false},
		{"lost down and up", func(e []events.EventJSON) []events.EventJSON { return append(e[:3:3], e[5]) }, auditReport{injected: 3, matched: 1, lost: 2, generations: 4, gaps: 1}, true},
		{"duplicated", func(e []events.EventJSON) []events.EventJSON {
			return append(e, health(7, 8, "b0", "healthy", true))
		}, auditReport{injected: 3, matched: 3, duplicated: 1, generations: 7}, true},
		{"reused generation", func(e []events.EventJSON) []events.EventJSON {
			e[5].Generation = 5
			return e
		}, auditReport{injected: 3, matched: 3, generations: 6, reused: 1, gaps: 1}, true},
		{"unscripted flip", func(e []events.EventJSON) []events.EventJSON {
			return append(e, health(7, 9, "b2", "unhealthy", false))
		}, auditReport{injected: 3, matched: 3, extra: 1, generations: 7}, false},
		{"tool change missing", func(e []events.EventJSON) []events.EventJSON { return e[:5] }, auditReport{injected: 3, matched: 2, lost: 1, generations: 5}, true},
		{"event before its cause", func(e []events.EventJSON) []events.EventJSON {
			e[3].Time = at(0.5)
			return e
		}, auditReport{injected: 3, matched: 2, lost: 1, extra: 1, generations: 6}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			got := checkAudit(rec, gt, tc.edit(base()))
			got.delays = nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("report %+v, want %+v", got, tc.want)
			}
			if (len(rec.errors) > 0) != tc.errors {
				t.Errorf("errors %q, want some: %v", rec.errors, tc.errors)
			}
		})
	}
}

// A missed transition is reported as itself: the later ones still match
// their own events (a matcher taking the first later flip of the right
// value would pair the lost down at 1 s with the down at 8.5 s and report
// the later pair as lost instead).
func TestCheckAuditNamesTheMissedTransition(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	health := func(gen uint64, s float64, b, to string, adv bool) events.EventJSON {
		return events.EventJSON{Generation: gen, Time: at(s), Backend: b, Kind: "health_changed",
			Health: &events.HealthChangeJSON{To: to, Advertisable: adv}}
	}
	gt := &groundTruth{trans: []transition{
		{at: at(1), backend: "b0", kind: "down", how: "kill"}, {at: at(4), backend: "b0", kind: "up", how: "restart"},
		{at: at(8), backend: "b0", kind: "down", how: "hang"}, {at: at(12), backend: "b0", kind: "up", how: "unhang"},
	}}
	evs := []events.EventJSON{
		health(1, 0, "b0", "healthy", true), health(2, 0, "b1", "healthy", true), health(3, 0, "b2", "healthy", true),
		health(4, 8.5, "b0", "unhealthy", false), health(5, 12.5, "b0", "healthy", true),
	}
	rec := &recorder{}
	got := checkAudit(rec, gt, evs)
	if got.matched != 2 || got.lost != 2 || got.extra != 0 {
		t.Errorf("report %+v, want 2 matched, 2 lost, 0 extra", got)
	}
	if len(got.delays) != 2 || got.delays[0] != 500*time.Millisecond || got.delays[1] != 500*time.Millisecond {
		t.Errorf("delays %v, want the 8.5 s and 12.5 s events matched to 8 s and 12 s", got.delays)
	}
	want := []string{
		"b0: down at " + at(1).Format(time.StampMilli) + " (kill) is not in the audit",
		"b0: up at " + at(4).Format(time.StampMilli) + " (restart) is not in the audit",
	}
	if !reflect.DeepEqual(rec.errors, want) {
		t.Errorf("errors %q, want %q", rec.errors, want)
	}
}

type recorder struct{ errors []string }

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Logf(string, ...any) {}
