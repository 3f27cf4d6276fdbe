package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// randomSources builds a group whose backend and tool names are drawn from
// small alphabets, so that exposed names collide often, with occasional
// duplicate and invalid definitions.
func randomSources(r *rand.Rand) []Source {
	backends := []string{"a", "a_b", "b", "b_c", "x.y", "x", "long" + strings.Repeat("l", 30)}
	names := []string{"c", "b_c", "c_2", "y_c", "b", "p", strings.Repeat("n", 110), strings.Repeat("n", 111)}
	var sources []Source
	for _, b := range backends {
		if r.IntN(4) == 0 {
			continue
		}
		s := Source{Backend: b}
		for _, n := range names {
			for k := r.IntN(3); k > 0; k-- { // 0, 1 or 2 definitions: duplicates happen
				schema := `{"type":"object"}`
				if r.IntN(10) == 0 {
					schema = `{"type":"array"}`
				}
				s.Tools = append(s.Tools, json.RawMessage(fmt.Sprintf(
					`{"name":%q,"description":"d%d","inputSchema":%s}`, n, r.IntN(3), schema)))
			}
			if r.IntN(2) == 0 {
				s.Prompts = append(s.Prompts, json.RawMessage(fmt.Sprintf(`{"name":%q,"description":"d%d"}`, n, r.IntN(2))))
			}
		}
		for u := range 4 {
			if r.IntN(2) == 0 {
				s.Resources = append(s.Resources, json.RawMessage(fmt.Sprintf(`{"uri":"mem://%d","name":"r%d"}`, u, r.IntN(2))))
			}
		}
		sources = append(sources, s)
	}
	return sources
}

// permute returns the same definitions reordered, with some backends split
// over two Sources.
func permute(r *rand.Rand, sources []Source) []Source {
	shuffled := func(in []json.RawMessage) []json.RawMessage {
		out := append([]json.RawMessage(nil), in...)
		r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		return out
	}
	var out []Source
	for _, s := range sources {
		s = Source{Backend: s.Backend, Tools: shuffled(s.Tools), Prompts: shuffled(s.Prompts), Resources: shuffled(s.Resources)}
		if r.IntN(2) == 0 {
			cut := r.IntN(len(s.Tools) + 1)
			out = append(out, Source{Backend: s.Backend, Tools: s.Tools[cut:]})
			s.Tools = s.Tools[:cut]
		}
		out = append(out, s)
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func TestAggregateDeterministicUnderPermutation(t *testing.T) {
	for seed := range uint64(100) {
		r := rand.New(rand.NewPCG(seed, 1))
		sources := randomSources(r)
		want := Aggregate(sources, nil)
		checkView(t, want)
		wantJSON, _ := json.Marshal(want)
		for range 5 {
			got := Aggregate(permute(r, sources), nil)
			gotJSON, _ := json.Marshal(got)
			if !bytes.Equal(gotJSON, wantJSON) {
				t.Fatalf("seed %d: view depends on input order:\n%s\nvs\n%s", seed, gotJSON, wantJSON)
			}
			if d := Diff(want, got); !d.Empty() {
				t.Fatalf("seed %d: Diff of equal views = %+v", seed, d)
			}
		}
	}
}

// TestAggregateCollisionsAccounted checks, on random groups, that every
// valid tool is served exactly once and that every tool not served under
// <backend>_<name> is reported as a collision naming its new name.
func TestAggregateCollisionsAccounted(t *testing.T) {
	for seed := range uint64(100) {
		r := rand.New(rand.NewPCG(seed, 2))
		v := Aggregate(randomSources(r), nil)
		renamed := make(map[[2]string]string)
		for _, c := range v.Collisions {
			if c.Kind == KindTool {
				renamed[[2]string{c.Backend, c.Original}] = c.Exposed
				if c.KeptBy == "" && len(c.Name) <= MaxNameLen {
					t.Errorf("seed %d: collision on %q without keeper", seed, c.Name)
				}
			}
		}
		for _, e := range v.Tools {
			candidate := e.Backend + "_" + e.Original
			exp, wasRenamed := renamed[[2]string{e.Backend, e.Original}]
			switch {
			case wasRenamed && exp != e.Exposed:
				t.Errorf("seed %d: %s/%s served as %q, collision says %q", seed, e.Backend, e.Original, e.Exposed, exp)
			case !wasRenamed && e.Exposed != candidate:
				t.Errorf("seed %d: %s/%s served as %q without a collision", seed, e.Backend, e.Original, e.Exposed)
			}
		}
		if len(renamed) > 0 && len(v.Tools) < len(renamed) {
			t.Errorf("seed %d: %d collisions but %d tools", seed, len(renamed), len(v.Tools))
		}
	}
}

// TestAggregatePreviousDoesNotChangeResult builds each random group from
// scratch and with the View of another random group (sharing many
// definitions) as Previous: the Views must be identical.
func TestAggregatePreviousDoesNotChangeResult(t *testing.T) {
	for seed := range uint64(100) {
		r := rand.New(rand.NewPCG(seed, 3))
		prevSources, sources := randomSources(r), randomSources(r)
		prev := Aggregate(prevSources, nil)
		want, _ := json.Marshal(Aggregate(sources, nil))
		for _, p := range []*View{prev, Aggregate(sources, nil), Aggregate(sources, &AggregateOptions{Previous: prev})} {
			v := Aggregate(permute(r, sources), &AggregateOptions{Previous: p})
			checkView(t, v)
			if got, _ := json.Marshal(v); !bytes.Equal(got, want) {
				t.Fatalf("seed %d: view with Previous differs:\n%s\nvs\n%s", seed, got, want)
			}
		}
	}
}
