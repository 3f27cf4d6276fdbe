package convergence

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// Hand-built records exercising each precedence rule of Explain.
func TestExplainPrecedence(t *testing.T) {
	const d1, d2 = "sha256:1111111111111111", "sha256:2222222222222222"
	complete := func(startSeq, gen uint64, digest string) Traversal {
		return Traversal{StartSeq: startSeq, StartedAt: base, CompletedAt: base, Generation: gen,
			Cursors: []string{""}, Final: true, Pages: 1, Tools: 1, Digest: digest}
	}
	inProgress := func(startSeq, gen uint64) Traversal {
		return Traversal{StartSeq: startSeq, StartedAt: base, Generation: gen, Cursors: []string{""}, NextCursor: "n", Pages: 1, Tools: 1}
	}
	signal := func(seq, gen uint64) ChangeSignal { return ChangeSignal{At: base, Generation: gen, Seq: seq} }
	both := func(r Record) Record { r.ClientListChanged, r.ServerListChanged = true, true; return r }

	tests := []struct {
		name   string
		rec    Record
		want   Status
		reason string
	}{
		{"zero record", Record{}, Unverifiable, "no tools/list traversal observed"},
		{"signal but no traversal", both(Record{LastSignal: signal(1, 2)}), Unverifiable, "no tools/list traversal observed (change signal for generation 2 sent)"},
		{"break beats stale", both(Record{LastSignal: signal(5, 2), Traversal: func() Traversal {
			tr := complete(1, 1, "")
			tr.Break = BreakCursor
			tr.Cursors = []string{"q"}
			return tr
		}(), CurrentDigest: d1, CurrentGeneration: 2}), Unverifiable, `traversal began at cursor "q"`},
		{"break beats incomplete", both(Record{LastSignal: signal(1, 2), Traversal: func() Traversal {
			tr := inProgress(2, 2)
			tr.Break = BreakPagesLost
			return tr
		}(), CurrentDigest: d1}), Unverifiable, "earlier pages lost"},
		{"in progress since before the signal, negotiated", both(Record{LastSignal: signal(3, 2), Traversal: inProgress(2, 1), CurrentDigest: d2, CurrentGeneration: 2}),
			Stale, "no traversal since the change signal for generation 2"},
		{"in progress since before the signal, server did not advertise", Record{ClientListChanged: true, LastSignal: signal(3, 2), Traversal: inProgress(2, 1), CurrentDigest: d2, CurrentGeneration: 2},
			Unverifiable, "server did not advertise tools.listChanged), and no traversal since the change signal"},
		{"in progress after the signal", both(Record{LastSignal: signal(3, 2), Traversal: inProgress(4, 2), CurrentDigest: d2, CurrentGeneration: 2}),
			Incomplete, `nextCursor "n" outstanding`},
		{"in progress after the signal, not negotiated", Record{LastSignal: signal(3, 2), Traversal: inProgress(4, 2), CurrentDigest: d2, CurrentGeneration: 2},
			Incomplete, "traversal in progress"},
		{"in progress, no signal, old generation", both(Record{Traversal: inProgress(1, 1), CurrentDigest: d2, CurrentGeneration: 2}),
			Incomplete, "traversal in progress"},
		{"complete before the signal with the current digest", both(Record{LastSignal: signal(2, 2), Traversal: complete(1, 1, d1), CurrentDigest: d1, CurrentGeneration: 2}),
			Stale, "no traversal since the change signal"},
		{"complete before the signal, client did not declare", Record{ServerListChanged: true, LastSignal: signal(2, 2), Traversal: complete(1, 1, d1), CurrentDigest: d2, CurrentGeneration: 2},
			Unverifiable, "client did not declare listChanged"},
		{"neither side negotiated", Record{LastSignal: signal(2, 2), Traversal: complete(1, 1, d1), CurrentDigest: d2, CurrentGeneration: 2},
			Unverifiable, "(client did not declare listChanged; server did not advertise tools.listChanged)"},
		{"no current digest", both(Record{Traversal: complete(1, 0, d1)}), Unverifiable, "current digest unknown"},
		{"converged after the signal", both(Record{LastSignal: signal(1, 2), Traversal: complete(2, 2, d2), CurrentDigest: d2, CurrentGeneration: 2}),
			Converged, "served the current digest sha256:222222222222 (generation 2)"},
		{"converged without listChanged when the view did not change", Record{Traversal: complete(1, 1, d1), CurrentDigest: d1, CurrentGeneration: 9},
			Converged, "(generation 9)"},
		{"changed since, not negotiated", Record{ClientListChanged: true, Traversal: complete(1, 1, d1), CurrentDigest: d2, CurrentGeneration: 2},
			Unverifiable, "no traversal since generation 2 (last traversal started at generation 1)"},
		{"served wrong digest at the current generation, not negotiated", Record{Traversal: complete(1, 2, d1), CurrentDigest: d2, CurrentGeneration: 2},
			Stale, "served digest sha256:111111111111 differs from the current digest sha256:222222222222 (generation 2)"},
		{"changed since, negotiated, no signal yet", both(Record{Traversal: complete(1, 1, d1), CurrentDigest: d2, CurrentGeneration: 2}),
			Stale, "differs from the current digest"},
		// Records without sequence numbers fall back on times.
		{"no seq: signal after the traversal", both(Record{LastSignal: ChangeSignal{At: base.Add(time.Second), Generation: 2},
			Traversal: complete(0, 2, d2), CurrentDigest: d2, CurrentGeneration: 2}), Stale, "no traversal since"},
		{"no seq: signal before the traversal", both(Record{LastSignal: ChangeSignal{At: base.Add(-time.Second), Generation: 2},
			Traversal: complete(0, 2, d2), CurrentDigest: d2, CurrentGeneration: 2}), Converged, "served the current digest"},
		{"no seq: same instant is not after", both(Record{LastSignal: ChangeSignal{At: base, Generation: 2},
			Traversal: complete(0, 2, d2), CurrentDigest: d2, CurrentGeneration: 2}), Stale, "no traversal since"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := Explain(tt.rec)
			if got != tt.want || !strings.Contains(reason, tt.reason) {
				t.Errorf("Explain = %s, %q; want %s containing %q", got, reason, tt.want, tt.reason)
			}
			if v := Verdict(tt.rec); v != got {
				t.Errorf("Verdict = %s, Explain = %s", v, got)
			}
		})
	}
}

func TestGenerationLag(t *testing.T) {
	tr := func(gen uint64, digest string) Traversal {
		return Traversal{StartSeq: 2, Generation: gen, Cursors: []string{""}, Final: true, Pages: 1, Digest: digest}
	}
	tests := []struct {
		name string
		rec  Record
		want uint64
	}{
		{"zero record", Record{}, 0},
		{"no traversal", Record{CurrentGeneration: 5}, 5},
		{"no traversal, signal ahead of current", Record{CurrentGeneration: 5, LastSignal: ChangeSignal{Seq: 1, Generation: 6}}, 6},
		{"converged at an older generation", Record{Traversal: tr(1, "d"), CurrentDigest: "d", CurrentGeneration: 3}, 0},
		{"stale three behind", Record{Traversal: tr(2, "d"), CurrentDigest: "e", CurrentGeneration: 5}, 3},
		{"signalled generation not yet current", Record{Traversal: tr(2, "d"), CurrentDigest: "d", CurrentGeneration: 2,
			LastSignal: ChangeSignal{Seq: 3, Generation: 4}}, 2},
		{"traversal ahead of current", Record{Traversal: tr(7, "d"), CurrentDigest: "e", CurrentGeneration: 5}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := GenerationLag(tt.rec); got != tt.want {
				t.Errorf("GenerationLag = %d, want %d (verdict %s)", got, tt.want, Verdict(tt.rec))
			}
		})
	}
}

func TestSignalToConverged(t *testing.T) {
	converged := func(sigAt, doneAt time.Time, sigSeq uint64) Record {
		return Record{
			LastSignal:    ChangeSignal{At: sigAt, Generation: 2, Seq: sigSeq},
			Traversal:     Traversal{StartSeq: 2, StartedAt: doneAt, CompletedAt: doneAt, Generation: 2, Cursors: []string{""}, Final: true, Pages: 1, Digest: "d"},
			CurrentDigest: "d", CurrentGeneration: 2,
		}
	}
	tests := []struct {
		name   string
		rec    Record
		want   time.Duration
		wantOK bool
	}{
		{"converged after signal", converged(base, base.Add(1500*time.Millisecond), 1), 1500 * time.Millisecond, true},
		{"clock skew between edges", converged(base, base.Add(-time.Second), 1), 0, true},
		{"signal without a time", converged(time.Time{}, base, 1), 0, false},
		{"no signal", converged(time.Time{}, base, 0), 0, false},
		{"not converged", func() Record { r := converged(base, base.Add(time.Second), 1); r.CurrentDigest = "e"; return r }(), 0, false},
		{"signal after the traversal", converged(base, base.Add(time.Second), 3), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := SignalToConverged(tt.rec)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("SignalToConverged = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// TestVerdictAgainstModel drives random observation sequences and checks
// Converged and Incomplete against an independent reading of the history:
// the last pages must form an unbroken chain from cursor "" (with no reload
// in between) that began after the last signal; Converged further needs the
// chain complete and the digest of all its tools equal to the current one.
func TestVerdictAgainstModel(t *testing.T) {
	type op struct {
		kind         string // page, signal, current, handoff
		cursor, next string
		tools        []string
		digest       string
	}
	names := []string{"a", "b", "c", "d"}
	cursors := []string{"", "c1", "c2", "c3"}
	rng := rand.New(rand.NewPCG(1, 2))
	counts := map[Status]int{}

	for iter := range 3000 {
		var r Record
		r.ClientListChanged, r.ServerListChanged = rng.IntN(2) == 0, rng.IntN(3) != 0
		var hist []op
		lastNext := ""
		for range 1 + rng.IntN(12) {
			var o op
			switch k := rng.IntN(10); {
			case k < 6:
				o.kind = "page"
				if lastNext != "" && rng.IntN(4) != 0 {
					o.cursor = lastNext
				} else {
					o.cursor = cursors[rng.IntN(len(cursors))]
				}
				if rng.IntN(2) == 0 {
					o.next = cursors[1+rng.IntN(len(cursors)-1)]
				}
				for range rng.IntN(3) {
					o.tools = append(o.tools, names[rng.IntN(len(names))])
				}
				lastNext = o.next
				raw := make([]json.RawMessage, len(o.tools))
				for i, n := range o.tools {
					raw[i] = tool(n)
				}
				if err := r.ListPage(base, o.cursor, raw, o.next, testDigest); err != nil {
					t.Fatal(err)
				}
			case k < 7:
				o.kind = "signal"
				r.Signal(base, uint64(len(hist)))
			case k < 9:
				o.kind = "current"
				var ts []string
				for range 1 + rng.IntN(3) {
					ts = append(ts, names[rng.IntN(len(names))])
				}
				o.digest = digestOf(t, ts...)
				r.SetCurrent(o.digest, uint64(len(hist)))
			default:
				o.kind = "handoff"
				b, err := json.Marshal(r)
				if err != nil {
					t.Fatal(err)
				}
				r = Record{}
				if err := json.Unmarshal(b, &r); err != nil {
					t.Fatal(err)
				}
			}
			hist = append(hist, o)
		}

		// The model.
		current, lastSignal, lastPage := "", -1, -1
		for i, o := range hist {
			switch o.kind {
			case "current":
				current = o.digest
			case "signal":
				lastSignal = i
			case "page":
				lastPage = i
			}
		}
		validChain, start := false, -1
		if lastPage >= 0 {
			j := lastPage
			for {
				if hist[j].cursor == "" {
					validChain, start = true, j
					break
				}
				k, reloaded := j-1, false
				for ; k >= 0 && hist[k].kind != "page"; k-- {
					reloaded = reloaded || hist[k].kind == "handoff"
				}
				if k < 0 || reloaded || hist[k].next == "" || hist[k].next != hist[j].cursor {
					break
				}
				j = k
			}
		}
		afterSignal := validChain && start > lastSignal
		var served []string
		if validChain {
			for _, o := range hist[start : lastPage+1] {
				if o.kind == "page" {
					served = append(served, o.tools...)
				}
			}
		}
		complete := lastPage >= 0 && hist[lastPage].next == ""
		wantConverged := afterSignal && complete && current != "" && digestOf(t, served...) == current
		wantIncomplete := afterSignal && !complete

		got, reason := Explain(r)
		counts[got]++
		if (got == Converged) != wantConverged || (got == Incomplete) != wantIncomplete {
			t.Fatalf("iteration %d: Explain = %s (%q); model converged=%v incomplete=%v\nhistory %+v\nrecord %+v",
				iter, got, reason, wantConverged, wantIncomplete, hist, r)
		}
	}
	for _, s := range []Status{Converged, Stale, Incomplete, Unverifiable} {
		if counts[s] == 0 {
			t.Errorf("the random sequences never produced %s: %v", s, counts)
		}
	}
}
