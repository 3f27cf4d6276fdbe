package search

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestCatalogShape guards the fixture itself: the relevance test is only
// meaningful on a catalog of realistic size and breadth.
func TestCatalogShape(t *testing.T) {
	docs := catalogDocs(t)
	if len(docs) < 200 {
		t.Errorf("tools.json has %d tools, want at least 200", len(docs))
	}
	backends := map[string]bool{}
	names := map[string]bool{}
	for _, d := range docs {
		if names[d.Name] {
			t.Errorf("duplicate tool name %q", d.Name)
		}
		names[d.Name] = true
		backend, _, _ := strings.Cut(d.Name, "_")
		backends[backend] = true
		if d.Description == "" || len(d.InputSchema) == 0 {
			t.Errorf("tool %q lacks a description or input schema", d.Name)
		}
	}
	if len(backends) < 20 {
		t.Errorf("tools.json spans %d backends, want at least 20", len(backends))
	}
	qs := catalogQueries(t)
	if len(qs) < 60 {
		t.Errorf("queries.json has %d queries, want at least 60", len(qs))
	}
	for _, q := range qs {
		if !names[q.Expect] {
			t.Errorf("query %q expects unknown tool %q", q.Query, q.Expect)
		}
	}
}

// TestCatalogRelevance: for at least 90% of the natural-language queries in
// testdata/queries.json, the expected tool is among the top 3 hits with the
// default options. Misses are logged, as is the rate without synonym
// expansion, for comparison only.
func TestCatalogRelevance(t *testing.T) {
	const wantRatio = 0.90
	docs := catalogDocs(t)
	qs := catalogQueries(t)
	found, misses := topNRate(Build(docs, nil), qs, 3)
	for _, m := range misses {
		t.Log(m)
	}
	ratio := float64(found) / float64(len(qs))
	t.Logf("top-3 hit rate: %d/%d = %.1f%%", found, len(qs), 100*ratio)
	if ratio < wantRatio {
		t.Errorf("top-3 hit rate %.1f%%, want at least %.0f%%", 100*ratio, 100*wantRatio)
	}
	plain, _ := topNRate(Build(docs, &Options{Synonyms: [][]string{}}), qs, 3)
	t.Logf("top-3 hit rate without synonym expansion: %d/%d", plain, len(qs))
}

// topNRate counts the queries whose expected tool is in the top n hits and
// describes the others.
func topNRate(ix *Index, qs []catalogQuery, n int) (found int, misses []string) {
	for _, q := range qs {
		all := ix.Search(q.Query, MaxLimit)
		rank := slices.IndexFunc(all, func(h Hit) bool { return h.Name == q.Expect })
		if rank >= 0 && rank < n {
			found++
			continue
		}
		var top []string
		for _, h := range all[:min(n, len(all))] {
			top = append(top, h.Name)
		}
		misses = append(misses, fmt.Sprintf("miss: %q want %s (rank %d of %d hits, 0 = absent), got %v",
			q.Query, q.Expect, rank+1, len(all), top))
	}
	return found, misses
}

// TestCorpusModelledShape guards the tuning and evaluation corpora: at
// least 250 tools each, every one naming the public server it is modelled
// on, at least 120 queries whose tool exists, and no server in both.
func TestCorpusModelledShape(t *testing.T) {
	servers := map[string]string{}
	for _, c := range []corpus{tuneCorpus, evalCorpus} {
		var tools []catalogTool
		readJSON(t, c.tools, &tools)
		_, qs := loadCorpus(t, c)
		if len(tools) < 250 || len(qs) < 120 {
			t.Errorf("%s: %d tools and %d queries, want at least 250 and 120", c.name, len(tools), len(qs))
		}
		names := map[string]bool{}
		for _, tool := range tools {
			if names[tool.Name] {
				t.Errorf("%s: duplicate tool %q", c.name, tool.Name)
			}
			names[tool.Name] = true
			if tool.Server == "" || tool.Description == "" || len(tool.InputSchema) == 0 {
				t.Errorf("%s: tool %q lacks its server, description or input schema", c.name, tool.Name)
			}
			if other, ok := servers[tool.Server]; ok && other != c.name {
				t.Errorf("server %q is in both %s and %s", tool.Server, other, c.name)
			}
			servers[tool.Server] = c.name
		}
		for _, q := range qs {
			if !names[q.Expect] {
				t.Errorf("%s: query %q expects unknown tool %q", c.name, q.Query, q.Expect)
			}
		}
	}
}
