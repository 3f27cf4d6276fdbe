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

// catalogDocs loads testdata/tools.json as index documents.
func catalogDocs(tb testing.TB) []Doc {
	tb.Helper()
	var tools []catalogTool
	readJSON(tb, "tools.json", &tools)
	docs := make([]Doc, len(tools))
	for i, t := range tools {
		docs[i] = Doc{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema}
	}
	return docs
}

func catalogQueries(tb testing.TB) []catalogQuery {
	tb.Helper()
	var qs []catalogQuery
	readJSON(tb, "queries.json", &qs)
	return qs
}
