package region

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/convergence"
	"github.com/fleetgate/fleetgate/pkg/events"
)

func TestRegionCheckNameAndParseList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		ok   bool
	}{
		{"", "[]", true},
		{"a", "[a]", true},
		{"us-east,eu-west", "[eu-west us-east]", true},
		{" b , a ", "[a b]", true},
		{"a,a", "", false},
		{"A", "", false},
		{"-a", "", false},
		{"a.b", "", false},
		{"a,", "", false},
		{"a>", "", false},
		{strings.Repeat("x", MaxName+1), "", false},
		{strings.Repeat("r,", MaxRegions) + "z", "", false},
	} {
		got, err := ParseList(tc.in)
		if tc.ok != (err == nil) || tc.ok && fmt.Sprint(got) != tc.want {
			t.Errorf("ParseList(%q) = %v, %v; want %s ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrName) {
			t.Errorf("ParseList(%q): %v is not ErrName", tc.in, err)
		}
	}
}

func TestRegionNames(t *testing.T) {
	if LogOptions("", 0) != nil {
		t.Fatal("the empty region must keep the single-region defaults")
	}
	if o := LogOptions("", 3); o.Stream != "" || o.Replicas != 3 {
		t.Fatalf("empty region with replicas: %+v", o)
	}
	o := LogOptions("us-east", 3)
	if o.Stream != "FLEETGATE_EVENTS_US-EAST" || o.SubjectPrefix != "fleetgate.us-east.events" ||
		o.SnapshotBucket != "fleetgate_snapshots_us-east" || o.Replicas != 3 {
		t.Fatalf("LogOptions = %+v", o)
	}
	l := EdgeLogs([]string{"a"})
	if len(l) != 1 || l[0].Stream != StreamName("a") || l[0].SnapshotBucket != SnapshotBucket("a") {
		t.Fatalf("EdgeLogs = %+v", l)
	}
}

func TestRegionVector(t *testing.T) {
	for _, tc := range []struct {
		v, w   Vector
		covers bool
	}{
		{Vector{"a": 2, "b": 3}, Vector{"a": 2, "b": 3}, true},
		{Vector{"a": 3, "b": 3}, Vector{"a": 2, "b": 3}, true},
		{Vector{"a": 3, "b": 2}, Vector{"a": 2, "b": 3}, false},
		{Vector{"a": 3}, Vector{"a": 2, "b": 1}, false},
		{Vector{"a": 3}, Vector{"a": 2, "b": 0}, true},
		{Vector{}, Vector{}, true},
	} {
		if got := tc.v.Covers(tc.w); got != tc.covers {
			t.Errorf("%s covers %s = %v, want %v", tc.v, tc.w, got, tc.covers)
		}
	}
	if s := (Vector{"b": 7, "a": 12}).String(); s != "a=12,b=7" {
		t.Fatalf("String = %q", s)
	}
	if (Vector{"b": 7, "a": 12}).Sum() != 19 {
		t.Fatal("Sum")
	}
}

// TestRegionSpanningVerdict: a session of a region-spanning group is
// converged only when its view reflects both regional generations.
func TestRegionSpanningVerdict(t *testing.T) {
	target := Vector{"a": 5, "b": 9}
	for _, tc := range []struct {
		session   convergence.Status
		reflected Vector
		want      convergence.Status
	}{
		{convergence.Converged, Vector{"a": 5, "b": 9}, convergence.Converged},
		{convergence.Converged, Vector{"a": 6, "b": 9}, convergence.Converged},
		{convergence.Converged, Vector{"a": 5, "b": 8}, convergence.Stale},
		{convergence.Converged, Vector{"a": 4, "b": 9}, convergence.Stale},
		{convergence.Converged, Vector{"a": 5}, convergence.Stale},
		{convergence.Stale, Vector{"a": 5, "b": 9}, convergence.Stale},
		{convergence.Unverifiable, Vector{"a": 5, "b": 9}, convergence.Unverifiable},
		{convergence.Incomplete, Vector{"a": 1}, convergence.Incomplete},
	} {
		got, reason := Verdict(tc.session, "session reason", tc.reflected, target, liveMirrors(target))
		if got != tc.want {
			t.Errorf("Verdict(%s, %s) = %s (%s), want %s", tc.session, tc.reflected, got, reason, tc.want)
		}
		if got == convergence.Stale && tc.session == convergence.Converged && !strings.Contains(reason, tc.reflected.String()) {
			t.Errorf("reason %q does not name the vector", reason)
		}
	}
}

func TestRegionMerge(t *testing.T) {
	now := time.Unix(1700000000, 0)
	st := func(evs ...func(*events.State) *events.State) *events.State {
		s := events.NewState()
		for _, f := range evs {
			s = f(s)
		}
		return s
	}
	add := func(group, backend string) func(*events.State) *events.State {
		return func(s *events.State) *events.State {
			ev := events.NewBackendAdded(now, group, backend, cfg(backend))
			ev.Generation = s.Generation + 1
			n, err := events.Apply(s, ev)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	a := st(add("shared", "alpha"), add("only-a", "x"))
	b := st(add("shared", "beta"), add("shared", "alpha"), add("shared", "gamma"))
	m, v, conflicts := Merge(map[string]*events.State{"a": a, "b": b, "c": nil})
	if v.String() != "a=2,b=3,c=0" || m.Generation != 5 {
		t.Fatalf("vector %s, generation %d", v, m.Generation)
	}
	if got := fmt.Sprint(m.Group("shared").BackendNames()); got != "[alpha beta gamma]" {
		t.Fatalf("shared = %s", got)
	}
	if m.Backend("shared", "alpha").Generation != 1 || m.Backend("shared", "gamma").Generation != 3 {
		t.Fatal("backend generations must stay their own region's")
	}
	if m.Group("only-a") == nil {
		t.Fatal("a group of one region is in the view")
	}
	if len(conflicts) != 1 || conflicts[0] != (Conflict{Kind: "backend", Group: "shared", Backend: "alpha", Kept: "a", Dropped: "b"}) {
		t.Fatalf("conflicts = %v", conflicts)
	}
	// The inputs are untouched.
	if len(a.Group("shared").Backends) != 1 || len(b.Group("shared").Backends) != 3 {
		t.Fatal("Merge changed an input state")
	}
	// The merged state names its vector; a group of one region is that
	// region's group itself (an edge finds it unchanged by pointer).
	if fmt.Sprint(m.Regions) != "map[a:2 b:3 c:0]" {
		t.Fatalf("regions = %v", m.Regions)
	}
	if m.Group("only-a") != a.Group("only-a") {
		t.Fatal("a group of one region is copied")
	}
	if again, _, _ := Merge(map[string]*events.State{"a": a, "b": b}); again.Group("only-a") != m.Group("only-a") {
		t.Fatal("successive merges of an unchanged group differ by pointer")
	}
}

func FuzzParseList(f *testing.F) {
	for _, s := range []string{"", "a", "a,b", "us-east, eu-west", "a,a", "-", strings.Repeat("z", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseList(s)
		if err != nil {
			return
		}
		if len(got) > MaxRegions {
			t.Fatalf("%d regions", len(got))
		}
		for _, r := range got {
			if CheckName(r) != nil || strings.ContainsAny(r, ".*> ") {
				t.Fatalf("accepted %q", r)
			}
		}
	})
}
