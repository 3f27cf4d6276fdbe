package search

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"
)

func manyDocs(n int) []Doc {
	docs := make([]Doc, n)
	for i := range docs {
		docs[i] = Doc{Name: fmt.Sprintf("svc_list_widgets_%03d", i), Description: "List widgets."}
	}
	return docs
}

func TestSearchLimit(t *testing.T) {
	ix := Build(manyDocs(80), nil)
	tests := []struct{ limit, want int }{
		{-1, DefaultLimit}, {0, DefaultLimit}, {1, 1}, {3, 3}, {50, 50}, {51, MaxLimit}, {1000, MaxLimit},
	}
	for _, tt := range tests {
		if got := len(ix.Search("widgets", tt.limit)); got != tt.want {
			t.Errorf("Search(limit=%d) returned %d hits, want %d", tt.limit, got, tt.want)
		}
	}
	if got := len(Build(manyDocs(5), nil).Search("widgets", 0)); got != 5 {
		t.Errorf("Search over 5 matching docs returned %d hits, want 5", got)
	}
}

// TestSearchTieBreak: equal scores are ordered by name, then by position,
// whatever the order of the documents.
func TestSearchTieBreak(t *testing.T) {
	docs := []Doc{
		{Name: "charlie", Description: "rotate the keys"},
		{Name: "alpha", Description: "rotate the keys"},
		{Name: "bravo", Description: "rotate the keys"},
		{Name: "alpha", Description: "rotate the keys"},
	}
	hits := Build(docs, nil).Search("rotate keys", 10)
	var got []string
	for _, h := range hits {
		got = append(got, fmt.Sprintf("%s#%d", h.Name, h.Doc))
	}
	want := []string{"alpha#1", "alpha#3", "bravo#2", "charlie#0"}
	if !slices.Equal(got, want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
	for _, h := range hits[1:] {
		if h.Score != hits[0].Score {
			t.Fatalf("scores differ: %+v", hits)
		}
	}
}

func TestSearchNoHits(t *testing.T) {
	ix := Build(catalogDocs(t), nil)
	for _, q := range []string{"", "   ", "the of and", "zzyzx qwerty"} {
		if hits := ix.Search(q, 5); len(hits) != 0 {
			t.Errorf("Search(%q) = %v, want no hits", q, hits)
		}
	}
	empty := Build(nil, nil)
	if empty.Len() != 0 || empty.Search("anything", 5) != nil {
		t.Errorf("empty index: Len=%d, Search=%v", empty.Len(), empty.Search("anything", 5))
	}
}

// TestSearchScore checks the BM25F formula on a corpus small enough to
// compute by hand.
func TestSearchScore(t *testing.T) {
	docs := []Doc{
		{Name: "deploy", Description: "roll out a build"},                // name len 1, desc len 3
		{Name: "status", Description: "deploy status of the deploy job"}, // name len 1, desc len 4
		{Name: "noise", Description: "nothing relevant here"},            // desc len 3
	}
	opts := &Options{Weights: Weights{Name: 3, Title: 2, Description: 1, ParamName: -1, ParamDescription: -1},
		K1: 1.2, B: 0.75, Synonyms: [][]string{}, LexiconWeight: -1, DerivationWeight: -1,
		CoverageWeight: -1, NameCoverageWeight: -1, GroupWeight: -1}
	hits := Build(docs, opts).Search("deploy", 10)

	const k1, b, n, df = 1.2, 0.75, 3.0, 2.0
	idf := math.Log(1 + (n-df+0.5)/(df+0.5))
	avgName, avgDesc := 1.0, 10.0/3
	norm := func(l, avg float64) float64 { return 1 - b + b*l/avg }
	sat := func(x float64) float64 { return x * (k1 + 1) / (k1 + x) }
	want := map[string]float64{
		"deploy": idf * sat(3*1/norm(1, avgName)),
		"status": idf * sat(1*2/norm(4, avgDesc)),
	}
	if len(hits) != 2 {
		t.Fatalf("hits = %+v, want deploy and status", hits)
	}
	for _, h := range hits {
		// Postings hold the saturated weight as a float32.
		if math.Abs(h.Score-want[h.Name]) > 1e-6*want[h.Name] {
			t.Errorf("score(%s) = %.12f, want %.12f", h.Name, h.Score, want[h.Name])
		}
	}
	if hits[0].Name != "deploy" {
		t.Errorf("name match should rank first, got %+v", hits)
	}
}

func TestFieldWeights(t *testing.T) {
	docs := []Doc{
		{Name: "invoice_create", Description: "Bill a customer."},
		{Name: "customer_get", Description: "Look up who received an invoice."},
		{Name: "charge_list", InputSchema: json.RawMessage(`{"properties":{"invoice":{"description":"Filter"}}}`)},
	}
	names := func(hits []Hit) []string {
		var out []string
		for _, h := range hits {
			out = append(out, h.Name)
		}
		return out
	}
	q := "invoice"
	// By default property names are not indexed (DefaultWeights.ParamName).
	// (Expansion off: "invoice" as a verb is a kind of "charge".)
	noExpand := &Options{LexiconWeight: -1, DerivationWeight: -1, GlossWeight: -1, HypernymWeight: -1}
	if got := names(Build(docs, noExpand).Search(q, 10)); !slices.Equal(got, []string{"invoice_create", "customer_get"}) {
		t.Errorf("default weights: %v, want invoice_create first, then customer_get", got)
	}
	withNames := &Options{Weights: Weights{ParamName: 1}}
	if got := names(Build(docs, withNames).Search(q, 10)); len(got) != 3 || got[0] != "invoice_create" {
		t.Errorf("property names indexed: %v, want invoice_create first and all three", got)
	}
	// Raising the description weight far above the name's flips the order.
	heavyDesc := &Options{Weights: Weights{Name: 0.1, Description: 20}, Synonyms: [][]string{}}
	if got := names(Build(docs, heavyDesc).Search(q, 10)); len(got) == 0 || got[0] != "customer_get" {
		t.Errorf("description-heavy weights: %v, want customer_get first", got)
	}
	// A negative weight removes the field from the index.
	noParams := &Options{Weights: Weights{ParamName: -1, ParamDescription: -1}, Synonyms: [][]string{},
		LexiconWeight: -1, DerivationWeight: -1, GlossWeight: -1, HypernymWeight: -1}
	if got := names(Build(docs, noParams).Search(q, 10)); slices.Contains(got, "charge_list") {
		t.Errorf("parameter fields disabled, yet charge_list matched: %v", got)
	}
}

func TestSynonymExpansion(t *testing.T) {
	docs := []Doc{
		{Name: "fs_list_directory", Description: "List the entries of a directory."},
		{Name: "fs_read_file", Description: "Read a file."},
	}
	if hits := Build(docs, nil).Search("folder contents", 5); len(hits) == 0 || hits[0].Name != "fs_list_directory" {
		t.Errorf("default synonyms: hits = %+v, want fs_list_directory first", hits)
	}
	for _, opts := range []*Options{{Synonyms: [][]string{}}, {SynonymWeight: -1}} {
		if hits := Build(docs, opts).Search("folder contents", 5); len(hits) != 0 {
			t.Errorf("expansion disabled (%+v): hits = %+v, want none", opts, hits)
		}
	}
	custom := &Options{Synonyms: [][]string{{"Folders", "directories"}}}
	if hits := Build(docs, custom).Search("folder", 5); len(hits) != 1 {
		t.Errorf("custom synonyms: hits = %+v, want fs_list_directory", hits)
	}
	// An expanded term counts less than the word itself.
	both := Build(docs, nil)
	direct, viaSyn := both.Search("directory", 1), both.Search("folder", 1)
	if len(direct) != 1 || len(viaSyn) != 1 || !(viaSyn[0].Score < direct[0].Score) {
		t.Errorf("direct %+v, via synonym %+v: want a lower score via synonym", direct, viaSyn)
	}
}

func TestQuestionIntent(t *testing.T) {
	tests := []struct {
		q    string
		want bool
	}{
		{"which pods are crashing", true}, {"What's running?", true}, {"how many users", true},
		{"list pods", false}, {"somewhat broken", false}, {"", false},
		{"when was the file changed", true}, {"Is the pipeline green?", true}, {"did it pass", true},
		{"is there a tool to create a ticket", false}, {"Are there tools for pods", false},
		{"this is it", false}, {"is", false}, {"why is it slow", false},
	}
	for _, tt := range tests {
		if got := isQuestion(tt.q); got != tt.want {
			t.Errorf("isQuestion(%q) = %v, want %v", tt.q, got, tt.want)
		}
	}
	docs := []Doc{
		{Name: "docker_run_container", Description: "Run a new container."},
		{Name: "docker_list_containers", Description: "List containers, running ones by default."},
	}
	if hits := Build(docs, nil).Search("which containers are running", 2); len(hits) != 2 || hits[0].Name != "docker_list_containers" {
		t.Errorf("question: hits = %+v, want docker_list_containers first", hits)
	}
}

// TestSearchDeterministic: two builds of one catalog give identical results,
// though Go map order differs between them.
func TestSearchDeterministic(t *testing.T) {
	docs := catalogDocs(t)
	a, b := Build(docs, nil), Build(docs, nil)
	for _, q := range catalogQueries(t) {
		if ha, hb := a.Search(q.Query, 20), b.Search(q.Query, 20); !reflect.DeepEqual(ha, hb) {
			t.Errorf("query %q: %v vs %v", q.Query, ha, hb)
		}
	}
	if a.Len() != len(docs) {
		t.Errorf("Len = %d, want %d", a.Len(), len(docs))
	}
}

// TestHitsWellFormed: hits are sorted, positive and point at their docs.
func TestHitsWellFormed(t *testing.T) {
	docs := catalogDocs(t)
	ix := Build(docs, nil)
	for _, q := range catalogQueries(t) {
		checkHits(t, q.Query, ix.Search(q.Query, MaxLimit), docs)
	}
}

func checkHits(t *testing.T, q string, hits []Hit, docs []Doc) {
	t.Helper()
	for i, h := range hits {
		if h.Doc < 0 || h.Doc >= len(docs) || docs[h.Doc].Name != h.Name || !(h.Score > 0) {
			t.Fatalf("query %q: bad hit %+v", q, h)
		}
		if i > 0 {
			p := hits[i-1]
			if p.Score < h.Score || (p.Score == h.Score && p.Name > h.Name) {
				t.Fatalf("query %q: hits out of order at %d: %+v then %+v", q, i, p, h)
			}
		}
	}
}

// Each hit names the query words it matched, as the query spelled them,
// in query order: directly or through a word expansion added for them;
// framing and stop words are not query words.
func TestHitMatched(t *testing.T) {
	docs := []Doc{
		{Name: "github_create_pull_request", Description: "Open a pull request from a branch."},
		{Name: "github_list_issues", Description: "List the issues of a repository."},
		{Name: "files_search", Description: "Search files by name."},
	}
	ix := Build(docs, nil)
	got := map[string][]string{}
	for _, h := range ix.Search("I need a tool to open a PR or find issues in my Repo", 5) {
		got[h.Name] = h.Matched
	}
	want := map[string][]string{
		"github_create_pull_request": {"open", "PR"},
		"github_list_issues":         {"issues", "Repo"},
		"files_search":               {"find"}, // through its synonym "search"
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("matched = %q, want %q", got, want)
	}
}

// TestAddedIDFCap: a term expansion adds counts with at most AddedIDFCap
// times the idf of the query word it stands for, however rare it is.
func TestAddedIDFCap(t *testing.T) {
	docs := []Doc{{Name: "archive_dossier", Description: "Open a dossier."}}
	for i := range 20 {
		docs = append(docs, Doc{Name: fmt.Sprintf("store%d_get_file", i), Description: "Get a file."})
	}
	score := func(o Options) float64 {
		o.Synonyms = [][]string{{"file", "dossier"}}
		for _, h := range Build(docs, &o).Search("file", MaxLimit) {
			if h.Name == "archive_dossier" {
				return h.Score
			}
		}
		t.Fatal("archive_dossier not found")
		return 0
	}
	capped, uncapped := score(Options{}), score(Options{AddedIDFCap: -1})
	if capped >= uncapped {
		t.Errorf("score through a rare synonym: %v capped, %v not, want less", capped, uncapped)
	}
	if twice := score(Options{AddedIDFCap: 2}); twice <= capped || twice > uncapped {
		t.Errorf("cap 2 gives %v, want between %v and %v", twice, capped, uncapped)
	}
}
