package region

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/convergence"
)

var t0 = time.Unix(1_800_000_000, 0)

// liveMirrors is a Mirrors at t0 in which every region of v was read just
// now: a the local log, the others mirrors that heard from their origin a
// second ago.
func liveMirrors(v Vector) Mirrors {
	m := Mirrors{States: map[string]MirrorState{}, Now: t0}
	for r := range v {
		m.States[r] = MirrorState{Read: true, ReadAt: t0, Local: r == "a", SilentSince: t0.Add(-time.Second)}
	}
	return m
}

// TestRegionVerdictMirrors: a converged session whose view covers the
// target is stale for a region whose mirror has been silent past the
// bound, naming it; unverifiable when its status is unknown; converged
// again once the mirror hears from its origin.
func TestRegionVerdictMirrors(t *testing.T) {
	target := Vector{"a": 5, "b": 9}
	s := time.Second
	with := func(f func(m *Mirrors)) Mirrors {
		m := liveMirrors(target)
		f(&m)
		return m
	}
	set := func(r string, f func(st *MirrorState)) func(*Mirrors) {
		return func(m *Mirrors) { st := m.States[r]; f(&st); m.States[r] = st }
	}
	for _, tc := range []struct {
		name    string
		session convergence.Status
		m       Mirrors
		want    convergence.Status
		names   string // the reason names it
	}{
		{"every log live", convergence.Converged, liveMirrors(target), convergence.Converged, "every region's log live"},
		{"b silent within the bound", convergence.Converged, with(set("b", func(st *MirrorState) { st.SilentSince = t0.Add(-5 * s) })), convergence.Converged, "b"},
		{"b silent past the bound", convergence.Converged, with(set("b", func(st *MirrorState) { st.SilentSince = t0.Add(-5*s - 1) })), convergence.Stale, "region b: its mirror has heard nothing"},
		{"b silent, a longer bound", convergence.Converged, with(func(m *Mirrors) {
			m.StaleAfter = 30 * s
			set("b", func(st *MirrorState) { st.SilentSince = t0.Add(-20 * s) })(m)
		}), convergence.Converged, "b"},
		{"b silent 40 s, session stale anyway", convergence.Stale, with(set("b", func(st *MirrorState) { st.SilentSince = t0.Add(-40 * s) })), convergence.Stale, "session reason"},
		{"b never read", convergence.Converged, with(set("b", func(st *MirrorState) { *st = MirrorState{Err: "no responders"} })), convergence.Unverifiable, "region b: its log's status was never read (no responders)"},
		{"b missing from the states", convergence.Converged, with(func(m *Mirrors) { delete(m.States, "b") }), convergence.Unverifiable, "region b"},
		{"b read too long ago", convergence.Converged, with(set("b", func(st *MirrorState) { st.ReadAt, st.Err = t0.Add(-6*s), "timeout" })), convergence.Unverifiable, "last read 6s ago (timeout)"},
		{"b read too long ago, its last read live", convergence.Converged, with(set("b", func(st *MirrorState) { st.ReadAt, st.SilentSince = t0.Add(-6*s), t0.Add(-6*s) })), convergence.Unverifiable, "region b"},
		{"a's own log, never silent", convergence.Converged, with(set("a", func(st *MirrorState) { st.SilentSince = t0.Add(-time.Hour) })), convergence.Converged, ""},
		{"a unknown and b stale: stale first", convergence.Converged, with(func(m *Mirrors) {
			delete(m.States, "a")
			set("b", func(st *MirrorState) { st.SilentSince = t0.Add(-time.Minute) })(m)
		}), convergence.Stale, "region b"},
		{"nothing known at all", convergence.Converged, Mirrors{}, convergence.Unverifiable, "region a: its log's status was never read; region b"},
	} {
		got, reason := Verdict(tc.session, "session reason", Vector{"a": 5, "b": 9}, target, tc.m)
		if got != tc.want || !strings.Contains(reason, tc.names) {
			t.Errorf("%s: Verdict = %s (%s), want %s naming %q", tc.name, got, reason, tc.want, tc.names)
		}
	}
}

// TestRegionMirrorsJudge: the per-region reports an edge's admin API
// shows, with how long each mirror has been silent.
func TestRegionMirrorsJudge(t *testing.T) {
	m := Mirrors{Now: t0, States: map[string]MirrorState{
		"a": {Read: true, ReadAt: t0, Local: true},
		"b": {Read: true, ReadAt: t0.Add(-time.Second), SilentSince: t0.Add(-42 * time.Second)},
		"c": {Read: true, ReadAt: t0, SilentSince: t0.Add(-300 * time.Millisecond)},
	}}
	got := m.Judge([]string{"d", "c", "b", "a"})
	want := []struct {
		region   string
		status   convergence.Status
		inactive time.Duration
	}{
		{"a", convergence.Converged, 0}, {"b", convergence.Stale, 42 * time.Second},
		{"c", convergence.Converged, 300 * time.Millisecond}, {"d", convergence.Unverifiable, 0},
	}
	if len(got) != len(want) {
		t.Fatalf("Judge: %+v", got)
	}
	for i, w := range want {
		if got[i].Region != w.region || got[i].Status != w.status || got[i].Inactive != w.inactive || got[i].Reason == "" {
			t.Errorf("report %d: %+v, want %s %s inactive %v", i, got[i], w.region, w.status, w.inactive)
		}
	}
}

// TestRegionObserve: what one read of a log's info makes of its state.
func TestRegionObserve(t *testing.T) {
	s := time.Second
	mirror := func(active time.Duration) *jetstream.StreamInfo {
		return &jetstream.StreamInfo{Mirror: &jetstream.StreamSourceInfo{Active: active}}
	}
	live := MirrorState{Read: true, ReadAt: t0, SilentSince: t0.Add(-s)}
	never := MirrorState{Read: true, ReadAt: t0, SilentSince: t0.Add(-3 * s), Never: true}
	for _, tc := range []struct {
		name string
		prev MirrorState
		info *jetstream.StreamInfo
		err  error
		want MirrorState
	}{
		{"own log", MirrorState{}, &jetstream.StreamInfo{}, nil, MirrorState{Read: true, ReadAt: t0.Add(s), Local: true}},
		{"mirror heard 200ms ago", MirrorState{}, mirror(200 * time.Millisecond), nil, MirrorState{Read: true, ReadAt: t0.Add(s), SilentSince: t0.Add(800 * time.Millisecond)}},
		{"mirror never heard, first read", MirrorState{}, mirror(-1), nil, MirrorState{Read: true, ReadAt: t0.Add(s), SilentSince: t0.Add(s), Never: true}},
		{"mirror never heard, again", never, mirror(-1), nil, MirrorState{Read: true, ReadAt: t0.Add(s), SilentSince: t0.Add(-3 * s), Never: true}},
		{"mirror never heard after it had", live, mirror(-1), nil, MirrorState{Read: true, ReadAt: t0.Add(s), SilentSince: t0.Add(s), Never: true}},
		{"read failed: the last read stays, with why", live, nil, errors.New("timeout"), MirrorState{Read: true, ReadAt: t0, SilentSince: t0.Add(-s), Err: "timeout"}},
		{"read failed, never read", MirrorState{}, nil, errors.New("no responders"), MirrorState{Err: "no responders"}},
	} {
		if got := observe(tc.prev, tc.info, tc.err, t0.Add(s)); got != tc.want {
			t.Errorf("%s: observe = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
