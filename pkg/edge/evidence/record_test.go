package evidence

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/convergence"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func digestOf(tools []json.RawMessage) (string, error) {
	d := "d"
	for _, t := range tools {
		d += ":" + string(t)
	}
	return d, nil
}

func created() *Record {
	var r Record
	r.Create(sessionstore.Record{ID: "s1", Owner: "o", CreatedAt: t0, LastSeen: t0,
		Convergence: convergence.Record{ServerListChanged: true}}, t0)
	return &r
}

// The write protocol: what is due, and what each outcome leaves due.
func TestRecordWrites(t *testing.T) {
	cases := []struct {
		name     string
		steps    func(r *Record)
		wantKind string // "" nothing due
		wantRev  uint64
	}{
		{"new record is created", func(r *Record) {}, WriteCreate, 0},
		{"not live: nothing", func(r *Record) { r.End() }, "", 0},
		{"written, unchanged, not seen since: nothing", func(r *Record) {
			w, _ := r.Due("e1")
			r.Wrote(7, &w.Rec)
		}, "", 0},
		{"written then seen later: touch", func(r *Record) {
			w, _ := r.Due("e1")
			r.Wrote(7, &w.Rec)
			r.Touch(t0.Add(time.Minute))
		}, WriteTouch, 7},
		{"written then changed: update", func(r *Record) {
			w, _ := r.Due("e1")
			r.Wrote(7, &w.Rec)
			r.SetLogLevel("debug")
		}, WriteUpdate, 7},
		{"same level again: no change", func(r *Record) {
			r.SetLogLevel("info")
			w, _ := r.Due("e1")
			r.Wrote(7, &w.Rec)
			if r.SetLogLevel("info") {
				panic("unchanged level reported changed")
			}
		}, "", 0},
		{"failed create is owed again", func(r *Record) {
			w, _ := r.Due("e1")
			r.Failed(&w)
		}, WriteCreate, 0},
		{"failed update is owed again", func(r *Record) {
			w, _ := r.Due("e1")
			r.Wrote(7, &w.Rec)
			r.SetSubscriptions([]string{"a"})
			w, _ = r.Due("e1")
			r.Failed(&w)
		}, WriteUpdate, 7},
		{"conflict: update over the other writer's revision", func(r *Record) {
			w, _ := r.Due("e1")
			r.Wrote(7, &w.Rec)
			r.Conflicted(9)
		}, WriteUpdate, 9},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := created()
			c.steps(r)
			w, ok := r.Due("e1")
			if c.wantKind == "" {
				if ok {
					t.Fatalf("due %+v, want nothing", w)
				}
				return
			}
			if !ok || w.Kind != c.wantKind || w.Rev != c.wantRev || w.Rec.Edge != "e1" {
				t.Fatalf("due %v %q rev %d edge %q, want %q rev %d edge e1", ok, w.Kind, w.Rev, w.Rec.Edge, c.wantKind, c.wantRev)
			}
			if _, again := r.Due("e1"); again && c.wantKind == WriteUpdate {
				t.Fatal("a change is due twice without a failure")
			}
		})
	}
}

// An update carries the last request time; a touch leaves that to the
// store.
func TestRecordLastSeen(t *testing.T) {
	r := created()
	w, _ := r.Due("e1")
	r.Wrote(1, &w.Rec)
	r.Touch(t0.Add(time.Hour))
	r.SetLogLevel("debug")
	w, _ = r.Due("e1")
	if w.Kind != WriteUpdate || !w.Rec.LastSeen.Equal(t0.Add(time.Hour)) || !w.Seen.Equal(t0.Add(time.Hour)) {
		t.Fatalf("update %q LastSeen %v seen %v, want the request at +1h", w.Kind, w.Rec.LastSeen, w.Seen)
	}
}

// Evidence: a signal, undone when its write fails; a traversal that finds
// the current list holds it, and its signal-to-converged is observed once.
func TestRecordEvidence(t *testing.T) {
	r := created()
	if !r.StreamAttached() || r.StreamAttached() {
		t.Fatal("stream attached: want changed once")
	}
	tools := []json.RawMessage{json.RawMessage(`"a"`)}
	current, _ := digestOf(tools)
	undo := r.Signalling(current, 3, nil, t0.Add(time.Second))
	if got := r.Convergence().LastSignal; got.Generation != 3 {
		t.Fatalf("signal %+v, want generation 3", got)
	}
	undo()
	if got := r.Convergence().LastSignal; got != (convergence.ChangeSignal{}) {
		t.Fatalf("undone signal %+v, want none", got)
	}
	r.Signalling(current, 3, nil, t0.Add(time.Second))
	holds, d, observed, err := r.Listed(t0.Add(2*time.Second), "", tools, "", digestOf)
	if err != nil || !holds || !observed || d != time.Second {
		t.Fatalf("listed: holds %v, to converged %v observed %v, err %v; want holds, 1s observed", holds, d, observed, err)
	}
	if v := convergence.Verdict(r.Convergence()); v != convergence.Converged {
		t.Fatalf("verdict %s, want converged", v)
	}
	if _, _, observed, _ = r.Listed(t0.Add(3*time.Second), "", tools, "", digestOf); observed {
		t.Fatal("signal-to-converged observed twice for one signal")
	}
	if lag := r.ViewApplied("other", 5, map[string]uint64{"a": 5}); lag == 0 {
		t.Fatal("a new view: no generation lag")
	}
	if v := convergence.Verdict(r.Convergence()); v != convergence.Stale {
		t.Fatalf("verdict after a new view %s, want stale", v)
	}
}

// A rebuilt session adopts its stored record; a digest other than the
// current one owes its client a tools list_changed.
func TestRecordAdopt(t *testing.T) {
	stored := &sessionstore.Record{ID: "s1", Owner: "o", Edge: "e0", RegistryDigest: "old"}
	for _, c := range []struct {
		digest string
		owes   bool
	}{{"old", false}, {"new", true}} {
		var r Record
		if owes := r.Adopt(stored, 4, t0, "e1", c.digest, 2, nil); owes != c.owes {
			t.Fatalf("digest %q: owes %v, want %v", c.digest, owes, c.owes)
		}
		if r.Phase() != PhaseLive || r.Owner() != "o" {
			t.Fatalf("adopted: phase %d owner %q", r.Phase(), r.Owner())
		}
		w, ok := r.Due("e1")
		if !ok || w.Kind != WriteUpdate || w.Rev != 4 || w.Rec.Edge != "e1" {
			t.Fatalf("adopted record due %v %+v: want an update at rev 4 as e1", ok, w)
		}
	}
}
