package search

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestStripWrapper(t *testing.T) {
	tests := []struct{ in, want string }{
		{"I need a tool to open a PR", "open a PR "},
		{"help me find the budget spreadsheet", "find the budget spreadsheet "},
		{"Can you please list the pods", "list the pods "},
		{"is there a tool that restarts deployments", "restarts deployments "},
		{"find me a tool for sending sms", "find me a for sending sms "}, // stop words go later
		{"publish a help center article", "publish a help center article"},
		{"use the tool to list pods", "list pods "},
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
