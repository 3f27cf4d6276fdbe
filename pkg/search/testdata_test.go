package search

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// catalogTool is one entry of testdata/tools.json.
type catalogTool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title"`
	Server      string          `json:"server"` // the public MCP server the tool is modelled on
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// catalogQuery is one entry of testdata/queries.json.
type catalogQuery struct {
	Query  string `json:"query"`
	Expect string `json:"expect"`
}

func readJSON(tb testing.TB, name string, v any) {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatalf("read %s: %v", name, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		tb.Fatalf("decode %s: %v", name, err)
	}
}

// corpus names the tool and query files of one test corpus in testdata.
type corpus struct {
	name           string
	tools, queries string
}

// The test corpora (see the README's section on them): the project's own
// catalog, whose queries the package was first written against; the
// tuning corpus, the only one options are chosen on; and the evaluation
// corpus, held out: other servers, other wording, never tuned on.
var (
	projectCorpus = corpus{name: "project", tools: "tools.json", queries: "queries.json"}
	tuneCorpus    = corpus{name: "tune", tools: "tune/tools.json", queries: "tune/queries.json"}
	evalCorpus    = corpus{name: "eval", tools: "eval/tools.json", queries: "eval/queries.json"}
	corpora       = []corpus{projectCorpus, tuneCorpus, evalCorpus}
)

// loadCorpus reads one corpus as index documents and queries.
func loadCorpus(tb testing.TB, c corpus) ([]Doc, []catalogQuery) {
	tb.Helper()
	var tools []catalogTool
	readJSON(tb, c.tools, &tools)
	docs := make([]Doc, len(tools))
	for i, t := range tools {
		docs[i] = Doc{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema}
	}
	var qs []catalogQuery
	readJSON(tb, c.queries, &qs)
	return docs, qs
}

// catalogDocs loads testdata/tools.json as index documents.
func catalogDocs(tb testing.TB) []Doc {
	tb.Helper()
	docs, _ := loadCorpus(tb, projectCorpus)
	return docs
}

func catalogQueries(tb testing.TB) []catalogQuery {
	tb.Helper()
	var qs []catalogQuery
	readJSON(tb, "queries.json", &qs)
	return qs
}
