package search

import (
	"encoding/json"
	"math"
	"slices"
	"testing"
)

// Postings are grouped by term and ascending by document; each holds a
// finite, positive weight; group postings name existing groups.
func TestBuildPostings(t *testing.T) {
	docs := catalogDocs(t)
	ix := Build(docs, nil)
	if ix.groups < 2 {
		t.Fatalf("%d groups in the catalog", ix.groups)
	}
	for term, e := range ix.terms {
		ps := ix.postings[e.lo:e.hi]
		if !slices.IsSortedFunc(ps, func(a, b posting) int { return int(a.doc&^inName) - int(b.doc&^inName) }) {
			t.Fatalf("postings of %q out of order", term)
		}
		for _, p := range ps {
			if d := p.doc &^ inName; int(d) >= len(docs) || !(p.sat > 0) || math.IsInf(float64(p.sat), 0) {
				t.Fatalf("posting %+v of %q", p, term)
			}
		}
		for _, g := range ix.gpostings[e.glo:e.ghi] {
			if int(g.group) >= ix.groups || !(g.sat > 0) {
				t.Fatalf("group posting %+v of %q", g, term)
			}
		}
	}
}

// Any documents build an index that searches without failing.
func FuzzBuild(f *testing.F) {
	f.Add("github_create_issue", "Create issue", "Open a new issue", `{"properties":{"repo":{"description":"Repository"}}}`, "open an issue")
	f.Add("", "", "", "", "")
	f.Add("a.b/c", "ÜberCool's", "\xff\xfe", `[`, "PR k8s")
	f.Fuzz(func(t *testing.T, name, title, desc, schema, query string) {
		docs := []Doc{
			{Name: name, Title: title, Description: desc, InputSchema: json.RawMessage(schema)},
			{Name: "x_" + name, Description: desc + " " + title, Group: title},
			{Name: "y_other", Description: query, InputSchema: json.RawMessage(schema)},
		}
		ix := Build(docs, nil)
		for _, h := range ix.Search(query, 5) {
			if h.Doc < 0 || h.Doc >= len(docs) || !(h.Score > 0) || math.IsInf(h.Score, 0) {
				t.Fatalf("hit %+v", h)
			}
		}
	})
}
