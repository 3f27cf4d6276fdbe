package search

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// syntheticDocs generates n varied tool documents from the vocabulary of the
// testdata catalog with a seeded RNG, so benchmarks run on a catalog far
// larger than the fixture but with realistic term statistics. The same seed
// always gives the same documents.
func syntheticDocs(tb testing.TB, n int, seed uint64) []Doc {
	tb.Helper()
	var tools []catalogTool
	readJSON(tb, "tools.json", &tools)

	var backends, verbs, nouns, words []string
	type prop struct {
		name string
		raw  json.RawMessage
	}
	var props []prop
	for _, t := range tools {
		parts := strings.Split(t.Name, "_")
		backends = append(backends, parts[0])
		verbs = append(verbs, parts[1])
		nouns = append(nouns, parts[2:]...)
		words = append(words, strings.Fields(t.Description)...)
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(t.InputSchema, &s); err != nil {
			tb.Fatalf("schema of %s: %v", t.Name, err)
		}
		for name, raw := range s.Properties {
			props = append(props, prop{name, raw})
		}
	}
	// Map iteration above is random; sort so the seed alone decides.
	slices.SortFunc(props, func(a, b prop) int {
		return strings.Compare(a.name+string(a.raw), b.name+string(b.raw))
	})

	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	pick := func(list []string) string { return list[r.IntN(len(list))] }
	docs := make([]Doc, n)
	for i := range docs {
		base := tools[r.IntN(len(tools))]
		// Backends are multiplied into tenants ("github7") so names stay
		// realistic yet the catalog has hundreds of distinct servers.
		backend := fmt.Sprintf("%s%d", pick(backends), r.IntN(40))
		noun := pick(nouns)
		if r.IntN(3) == 0 {
			noun += "_" + pick(nouns)
		}
		name := fmt.Sprintf("%s_%s_%s_%d", backend, pick(verbs), noun, i)

		// Description: a real one with about a third of its words swapped
		// for words from elsewhere in the catalog, plus a random tail.
		desc := strings.Fields(base.Description)
		for j := range desc {
			if r.IntN(3) == 0 {
				desc[j] = pick(words)
			}
		}
		for range r.IntN(12) {
			desc = append(desc, pick(words))
		}

		schema := map[string]json.RawMessage{}
		for range 1 + r.IntN(6) {
			p := props[r.IntN(len(props))]
			schema[p.name] = p.raw
		}
		raw, err := json.Marshal(map[string]any{"type": "object", "properties": schema})
		if err != nil {
			tb.Fatal(err)
		}
		docs[i] = Doc{Name: name, Title: base.Title, Description: strings.Join(desc, " "), InputSchema: raw}
	}
	return docs
}

func TestSyntheticDocs(t *testing.T) {
	a, b := syntheticDocs(t, 500, 1), syntheticDocs(t, 500, 1)
	names := map[string]bool{}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Description != b[i].Description || string(a[i].InputSchema) != string(b[i].InputSchema) {
			t.Fatalf("doc %d differs between runs with one seed", i)
		}
		if names[a[i].Name] {
			t.Fatalf("duplicate name %q", a[i].Name)
		}
		names[a[i].Name] = true
	}
	if c := syntheticDocs(t, 500, 2); c[0].Name == a[0].Name && c[1].Name == a[1].Name {
		t.Error("different seeds gave the same documents")
	}
	// The generated catalog is searchable and well-formed.
	ix := Build(a, nil)
	for _, q := range catalogQueries(t) {
		checkHits(t, q.Query, ix.Search(q.Query, 10), a)
	}
}
