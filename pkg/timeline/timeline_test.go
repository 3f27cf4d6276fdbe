package timeline

import (
	"slices"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/events"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func logChange(s int, from, to string) Change {
	return Change{At: at(s), From: from, To: to, Generation: uint64(s + 1000)}
}

func live(s int, from, to string) Change { return Change{At: at(s), From: from, To: to, Live: true} }

type seg struct {
	From, To int
	Status   string
}

func segs(ss []Segment) []seg {
	out := []seg{}
	for _, s := range ss {
		out = append(out, seg{int(s.From.Sub(t0) / time.Second), int(s.To.Sub(t0) / time.Second), s.Status})
	}
	return out
}

// The timeline of one backend from its changes: the cases the page got
// wrong when it drew from the log alone come first.
func TestSegments(t *testing.T) {
	for _, c := range []struct {
		name     string
		changes  []Change
		current  string
		from, to int
		want     []seg
	}{
		{
			name: "an outage the log calls unknown is unhealthy once the controller says so",
			changes: []Change{
				logChange(10, "healthy", "unknown"), live(10, "healthy", "unknown"),
				live(12, "unknown", "unhealthy"),
				live(30, "unhealthy", "degraded"), logChange(30, "unhealthy", "degraded"),
				live(31, "degraded", "healthy"),
			},
			current: "healthy", from: 0, to: 100,
			want: []seg{{0, 10, "healthy"}, {10, 12, "unknown"}, {12, 30, "unhealthy"}, {30, 31, "degraded"}, {31, 100, "healthy"}},
		},
		{
			name:    "a recovered backend is not degraded for the rest of the window",
			changes: []Change{logChange(5, "unknown", "degraded"), live(5, "unknown", "degraded"), live(6, "degraded", "healthy")},
			current: "healthy", from: 0, to: 60,
			want: []seg{{0, 5, "unknown"}, {5, 6, "degraded"}, {6, 60, "healthy"}},
		},
		{
			name: "the log alone (a standby controller) draws what it has", changes: []Change{logChange(40, "healthy", "unknown")},
			current: "unknown", from: 0, to: 100,
			want: []seg{{0, 40, "healthy"}, {40, 100, "unknown"}},
		},
		{name: "no change: the current status", current: "healthy", from: 0, to: 100, want: []seg{{0, 100, "healthy"}}},
		{name: "no change and no status: unknown", from: 0, to: 100, want: []seg{{0, 100, "unknown"}}},
		{
			name:    "a change before the window sets its first status",
			changes: []Change{logChange(-50, "unknown", "healthy"), live(20, "healthy", "unauthenticated")},
			current: "unauthenticated", from: 0, to: 100,
			want: []seg{{0, 20, "healthy"}, {20, 100, "unauthenticated"}},
		},
		{
			name:    "added and removed inside the window",
			changes: []Change{logChange(10, Absent, Unknown), live(11, "", "healthy"), {At: at(70), To: Absent, Generation: 9}},
			current: "healthy", from: 0, to: 100,
			want: []seg{{0, 10, Absent}, {10, 11, Unknown}, {11, 70, "healthy"}, {70, 100, Absent}},
		},
		{
			name:    "a re-add (config change) of a healthy backend does not make it unknown",
			changes: []Change{live(5, "", "healthy"), logChange(20, Absent, Unknown)},
			current: "healthy", from: 0, to: 100,
			want: []seg{{0, 5, "unknown"}, {5, 100, "healthy"}},
		},
		{
			name:    "changes after the window are ignored",
			changes: []Change{live(150, "healthy", "unhealthy")},
			current: "unhealthy", from: 0, to: 100,
			want: []seg{{0, 100, "healthy"}},
		},
		{
			name:    "equal neighbours are one segment; order of input does not matter",
			changes: []Change{live(30, "unknown", "healthy"), live(20, "healthy", "unknown"), logChange(20, "healthy", "unknown"), live(10, "", "healthy")},
			current: "healthy", from: 0, to: 100,
			want: []seg{{0, 10, "unknown"}, {10, 20, "healthy"}, {20, 30, "unknown"}, {30, 100, "healthy"}},
		},
		{name: "an empty window", current: "healthy", from: 50, to: 50, want: []seg{{50, 50, "healthy"}}},
		{name: "a reversed window", current: "healthy", from: 50, to: 40, want: []seg{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := segs(Segments(c.changes, c.current, at(c.from), at(c.to)))
			if !slices.Equal(got, c.want) {
				t.Errorf("Segments = %v\nwant %v", got, c.want)
			}
		})
	}
}

func TestFromEvent(t *testing.T) {
	for _, c := range []struct {
		ev   events.EventJSON
		want Change
		ok   bool
	}{
		{events.EventJSON{Generation: 7, Time: at(1), Group: "g", Backend: "b", Kind: "health_changed",
			Health: &events.HealthChangeJSON{From: "healthy", To: "unknown", Reason: "probe failed"}},
			Change{At: at(1), Group: "g", Backend: "b", From: "healthy", To: "unknown", Reason: "probe failed", Generation: 7}, true},
		{events.EventJSON{Generation: 8, Time: at(2), Group: "g", Backend: "b", Kind: "health_changed", Health: &events.HealthChangeJSON{}},
			Change{At: at(2), Group: "g", Backend: "b", To: Unknown, Generation: 8}, true},
		{events.EventJSON{Generation: 9, Time: at(3), Group: "g", Backend: "b", Kind: "backend_added"},
			Change{At: at(3), Group: "g", Backend: "b", From: Absent, To: Unknown, Generation: 9}, true},
		{events.EventJSON{Generation: 10, Time: at(4), Group: "g", Backend: "b", Kind: "backend_removed"},
			Change{At: at(4), Group: "g", Backend: "b", To: Absent, Generation: 10}, true},
		{events.EventJSON{Generation: 11, Time: at(5), Group: "g", Backend: "b", Kind: "catalog_changed"}, Change{}, false},
		{events.EventJSON{Generation: 12, Time: at(5), Group: "g", Backend: "b", Kind: "health_changed"}, Change{}, false},
		{events.EventJSON{Generation: 13, Time: at(5), Kind: "policy_changed"}, Change{}, false},
		{events.EventJSON{Generation: 14, Group: "g", Backend: "b", Kind: "backend_removed"}, Change{}, false}, // no time: undecodable
	} {
		got, ok := FromEvent(c.ev)
		if got != c.want || ok != c.ok {
			t.Errorf("FromEvent(%d %s) = %+v, %v; want %+v, %v", c.ev.Generation, c.ev.Kind, got, ok, c.want, c.ok)
		}
	}
}

func TestLast(t *testing.T) {
	for _, c := range []struct {
		changes []Change
		want    time.Time
	}{
		{nil, time.Time{}},
		{[]Change{live(3, "", "healthy")}, at(3)},
		{[]Change{live(3, "", "healthy"), logChange(9, "healthy", "unknown"), live(8, "healthy", "unknown")}, at(8)},
	} {
		if got := Last(c.changes); !got.Equal(c.want) {
			t.Errorf("Last(%v) = %v, want %v", c.changes, got, c.want)
		}
	}
}

func TestRecorder(t *testing.T) {
	r := NewRecorder(3)
	if got, last := r.Since(0); len(got) != 0 || last != 0 {
		t.Fatalf("empty recorder: %v, %d", got, last)
	}
	changed, stop := r.Watch()
	defer stop()
	for i := range 5 {
		r.Record(Change{At: at(i), Backend: "b", To: "healthy"})
	}
	select {
	case <-changed:
	default:
		t.Fatal("no signal after Record")
	}
	got, last := r.Since(0)
	if last != 5 || len(got) != 3 || !got[0].At.Equal(at(2)) || !got[2].At.Equal(at(4)) || !got[0].Live {
		t.Fatalf("Since(0) = %v, %d: want the last 3 of 5, live", got, last)
	}
	if got, last := r.Since(3); last != 5 || len(got) != 2 || !got[0].At.Equal(at(3)) {
		t.Fatalf("Since(3) = %v, %d", got, last)
	}
	if got, last := r.Since(5); last != 5 || len(got) != 0 {
		t.Fatalf("Since(5) = %v, %d", got, last)
	}
	if got, _ := r.Since(1); len(got) != 3 { // 2 was dropped: what is kept
		t.Fatalf("Since(1) = %v", got)
	}
}
