package dashboard

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/timeline"
)

// A session's class: idle past the bound, whatever its verdict; its
// verdict otherwise.
func TestClass(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		verdict  string
		lastSeen time.Time
		want     string
	}{
		{"converged", now.Add(-time.Minute), "converged"},
		{"stale", now.Add(-9 * time.Minute), "stale"},
		{"stale", now.Add(-10 * time.Minute), "stale"}, // at the bound: not yet
		{"stale", now.Add(-10*time.Minute - time.Second), Idle},
		{"converged", now.Add(-time.Hour), Idle},
		{"incomplete", time.Time{}, "incomplete"}, // never seen: not known to be idle
		{"unverifiable", now.Add(time.Minute), "unverifiable"},
	} {
		if got := Class(c.verdict, c.lastSeen, now, 10*time.Minute); got != c.want {
			t.Errorf("Class(%s, %v ago) = %s, want %s", c.verdict, now.Sub(c.lastSeen), got, c.want)
		}
	}
}

// GET /v1/edges counts sessions by class at the dashboard's clock: a
// session left open is idle, not stale, and filters by class.
func TestEdgesClasses(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	x := newSessionIndex(100)
	for _, s := range []SessionJSON{
		{ID: "a", Edge: "e1", Verdict: "converged", LastSeen: now.Add(-time.Minute)},
		{ID: "b", Edge: "e1", Verdict: "stale", LastSeen: now.Add(-time.Hour)},
		{ID: "c", Edge: "e2", Verdict: "stale", LastSeen: now.Add(-2 * time.Minute)},
		{ID: "d", Edge: "e2", Verdict: "converged", LastSeen: now.Add(-20 * time.Minute)},
	} {
		x.put(s)
	}
	q := sessionQuery{limit: 50, now: now, idleAfter: 10 * time.Minute}
	out := x.edges(q)
	if want := (Counts{"converged": 1, "stale": 1, Idle: 2}); !mapsEqual(out.Classes, want) {
		t.Errorf("classes %v, want %v", out.Classes, want)
	}
	if want := (Counts{"converged": 2, "stale": 2}); !mapsEqual(out.Verdicts, want) {
		t.Errorf("verdicts %v, want %v", out.Verdicts, want)
	}
	if out.IdleAfter != 600000 || len(out.Edges) != 2 || !mapsEqual(out.Edges[0].Classes, Counts{"converged": 1, Idle: 1}) {
		t.Errorf("edges %+v, idle_after_ms %d", out.Edges, out.IdleAfter)
	}
	q.class = Idle
	var ids []string
	for _, s := range x.edges(q).Sessions {
		ids = append(ids, s.ID)
		if s.Class != Idle {
			t.Errorf("session %s class %q", s.ID, s.Class)
		}
	}
	if !slices.Equal(ids, []string{"b", "d"}) {
		t.Errorf("idle sessions %v", ids)
	}
	f, _ := x.take(now, 10*time.Minute)
	for _, s := range f.Changed {
		if want := Class(s.Verdict, s.LastSeen, now, 10*time.Minute); s.Class != want {
			t.Errorf("frame: session %s class %q, want %q", s.ID, s.Class, want)
		}
	}
}

func mapsEqual(a, b Counts) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// GET /v1/timeline: the log's events and the controller's live changes
// merged; a change the log does not carry (unknown to unhealthy,
// degraded to healthy) is drawn; the window begins where the log did.
func TestTimeline(t *testing.T) { synctest.Test(t, testTimeline) }

func testTimeline(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	lg := newFakeLog()
	rec := timeline.NewRecorder(0)
	now := at(100)
	d := mustNew(t, &Options{Reader: lg, Log: lg, Statuses: rec, Now: func() time.Time { return now }})
	state := events.NewState()
	for _, ev := range []events.EventJSON{
		{Generation: 1, Time: at(0), Group: "default", Backend: "search", Kind: "backend_added"},
		{Generation: 2, Time: at(1), Group: "default", Backend: "search", Kind: "health_changed",
			Health: &events.HealthChangeJSON{From: "unknown", To: "healthy", Advertisable: true}},
		{Generation: 3, Time: at(40), Group: "default", Backend: "search", Kind: "health_changed",
			Health: &events.HealthChangeJSON{From: "healthy", To: "unknown", Reason: "probe failed"}},
		{Generation: 4, Time: at(60), Group: "default", Backend: "search", Kind: "health_changed",
			Health: &events.HealthChangeJSON{From: "unknown", To: "degraded", Advertisable: true}},
	} {
		d.history.addEvent(ev)
	}
	d.history.origin = at(0)
	for _, c := range []timeline.Change{
		{At: at(1), From: "", To: "healthy"},
		{At: at(40), From: "healthy", To: "unknown"},
		{At: at(42), From: "unknown", To: "unhealthy", Reason: "2 consecutive probe failures"},
		{At: at(60), From: "unhealthy", To: "degraded"},
		{At: at(61), From: "degraded", To: "healthy"},
	} {
		c.Group, c.Backend = "default", "search"
		rec.Record(c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- d.followStatus(ctx) }()
	defer func() { cancel(); <-done }()
	synctest.Wait() // followStatus took the recorded changes
	if n := len(d.history.changes("default", "search")); n != 9 {
		t.Fatalf("%d changes in the history, want 9", n)
	}
	state.Groups["default"] = &events.Group{Name: "default", Backends: map[string]*events.Backend{
		"search": {Name: "search", Status: "degraded", Advertisable: true}}}
	got := d.timelines(state, time.Hour, now)
	if !got.SinceLogBegan || !got.From.Equal(at(-1)) || !got.To.Equal(now) || len(got.Backends) != 1 {
		t.Fatalf("timeline %+v", got)
	}
	b := got.Backends[0]
	var segs []string
	for _, s := range b.Segments {
		segs = append(segs, s.Status+"@"+s.From.Sub(t0).String())
	}
	want := []string{"absent@-1s", "unknown@0s", "healthy@1s", "unknown@40s", "unhealthy@42s", "degraded@1m0s", "healthy@1m1s"}
	if !slices.Equal(segs, want) || b.Status != "healthy" || !b.LastChange.Equal(at(61)) {
		t.Errorf("search: %v status %s last %v\nwant %v healthy", segs, b.Status, b.LastChange, want)
	}

	// Through the handler: the window is checked.
	for q, code := range map[string]int{"": 200, "?window=15m": 200, "?window=1s": 400, "?window=x": 400, "?window=200h": 400} {
		w := httptest.NewRecorder()
		d.serveTimeline(w, httptest.NewRequest("GET", "/v1/timeline"+q, nil))
		if w.Code != code {
			t.Errorf("GET /v1/timeline%s: %d, want %d", q, w.Code, code)
		}
		if code == 200 {
			var v TimelineJSON
			if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || v.Backends == nil {
				t.Errorf("GET /v1/timeline%s: %s (%v)", q, w.Body, err)
			}
		}
	}
}
