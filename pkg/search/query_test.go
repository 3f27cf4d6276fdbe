package search

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestStripWrapper(t *testing.T) {
	tests := []struct{ in, want string }{
		{"I need a tool to open a PR", "open a PR"},
		{"help me find the budget spreadsheet", "find the budget spreadsheet"},
		{"Can you please list the pods", "list the pods"},
		{"is there a tool that restarts deployments", "restarts deployments"},
		{"find me a tool for sending sms", "find me a for sending sms"}, // stop words go later
		{"publish a help center article", "publish a help center article"},
		{"use the tool to list pods", "list pods"},
		{"when was report.pdf last changed", "report.pdf last changed"}, // the rest as it is,
		{"list pods", "list pods"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := stripWrapper(tt.in); got != tt.want {
			t.Errorf("stripWrapper(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// Framing words change nothing in the ranking.
	docs := catalogDocs(t)
	ix := Build(docs, nil)
	plain, wrapped := ix.Search("send a message to the team channel", 5), ix.Search("I need a tool to send a message to the team channel", 5)
	if !reflect.DeepEqual(plain, wrapped) {
		t.Errorf("wrapped query ranks %v, plain %v", wrapped, plain)
	}
}

func FuzzSearchQuery(f *testing.F) {
	for _, q := range []string{"I need a tool to open a PR", "a tool that", "k8s PRs", "ÜberCool's", "\xff\xfe tool to"} {
		f.Add(q)
	}
	ix := Build(catalogDocs(f), nil)
	f.Fuzz(func(t *testing.T, q string) {
		s := stripWrapper(q)
		if len(s) > maxQueryBytes+len(q) {
			t.Fatalf("stripWrapper grew %d bytes to %d", len(q), len(s))
		}
		if utf8.ValidString(q) && !utf8.ValidString(strings.TrimSpace(s)) && len(q) <= maxQueryBytes {
			t.Fatalf("stripWrapper(%q) = %q is not valid UTF-8", q, s)
		}
		hits := ix.Search(q, 10)
		if len(hits) > 10 {
			t.Fatalf("%d hits", len(hits))
		}
	})
}

func TestIsLiteral(t *testing.T) {
	tests := []struct {
		chunk string
		want  bool
	}{
		{"/var/log/app.log", true},
		{"report.pdf", true},
		{"PROJ-77", true},
		{"ENG-5", true},
		{"http_requests_total", true},
		{`up{job="api"}`, true},
		{"finance@corp.com", true},
		{"session:42", true},
		{"count(*)", true},
		{"repo.", false},      // a sentence's full stop
		{"(optional)", false}, // parentheses around a word
		{"user:", false},
		{"to-do", false}, // a hyphenated word
		{"k8s", false},
		{"pods", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := isLiteral(tt.chunk); got != tt.want {
			t.Errorf("isLiteral(%q) = %v, want %v", tt.chunk, got, tt.want)
		}
	}
}

// TestLiteralWeight: the terms of a literal weigh Options.LiteralWeight,
// with their expansions, unless the query also has them as words.
func TestLiteralWeight(t *testing.T) {
	x := resolve(nil).expansion
	weights := func(query string) map[string]float64 {
		tokens, _, lit := appendQueryTokens(nil, nil, nil, stripWrapper(query))
		m := map[string]float64{}
		for _, qt := range x.expandQuery(nil, tokens, lit, false) {
			if !qt.added {
				m[qt.term] = qt.weight
			}
		}
		return m
	}
	got := weights("I need to read /var/log/app.log")
	if got["read"] != 1 || got["log"] != DefaultLiteralWeight || got[Stem("variable")] != DefaultLiteralWeight {
		t.Errorf("read /var/log/app.log: weights %v, want read 1, log and variable %v", got, DefaultLiteralWeight)
	}
	if got := weights("read the log at /var/log/app.log"); got["log"] != 1 {
		t.Errorf("a word also in a literal weighs %v, want 1", got["log"])
	}
	for _, qt := range x.expandQuery(nil, []string{"show"}, []bool{true}, false) {
		if qt.weight > DefaultLiteralWeight {
			t.Errorf("term %q of a literal's expansion weighs %v, more than the literal", qt.term, qt.weight)
		}
	}
}
