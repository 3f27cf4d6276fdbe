package search

import (
	"slices"
	"testing"
)

func TestTokenize(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"getHTTPResponse2", []string{"get", "http", "respons", "2"}},
		{"github_create_issue", []string{"github", "creat", "issu"}},
		{"k8s-list.pods/all", []string{"kubernet", "list", "pod"}},
		{"repoName", []string{"repository", "nam"}},
		{"review the PR in my repos", []string{"review", "pull", "request", "repository"}},
		{"listPRs db_cfg", []string{"list", "pull", "request", "databas", "configuration"}},
		{"she wrote and sent it", []string{"writ", "send"}},
		{"PascalCaseName", []string{"pascal", "cas", "nam"}},
		{"parseJSONToXML", []string{"pars", "json", "xml"}},
		{"ec2 S3Bucket", []string{"ec", "2", "3", "bucket"}},
		{"the issues of a repository", []string{"issu", "repository"}},
		{"Send a message to the team channel", []string{"send", "messag", "team", "channel"}},
		{"the customer's last charge", []string{"customer", "last", "charg"}},
		{"won’t schedule, isn't running", []string{"schedul", "run"}},
		{"  \t\n", nil},
		{"", nil},
		{"a I e.g.", nil},
		{"Größe überprüfen", []string{"größ", "überprüfen"}},
		{"ÜberCool", []string{"über", "cool"}},
		{"v1.4.0 404", []string{"1", "4", "0", "404"}},
	}
	for _, tt := range tests {
		if got := Tokenize(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("Tokenize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestAbbreviations(t *testing.T) {
	for k, v := range abbreviations {
		if k != lowerASCIIFast(k) || len(Tokenize(v)) == 0 {
			t.Errorf("abbreviation %q → %q: keys are lower case, long forms have terms", k, v)
		}
	}
}

func TestStem(t *testing.T) {
	tests := []struct{ in, want string }{
		// plurals
		{"queries", "query"}, {"policies", "policy"}, {"branches", "branch"},
		{"boxes", "box"}, {"addresses", "address"}, {"pods", "pod"},
		{"status", "status"}, {"analysis", "analysis"}, {"process", "process"},
		{"statuses", "status"}, {"databases", "databas"}, {"database", "databas"},
		// verb endings
		{"creating", "creat"}, {"created", "creat"}, {"creates", "creat"}, {"create", "creat"},
		{"running", "run"}, {"stopped", "stop"}, {"adding", "add"}, {"added", "add"},
		{"billing", "bill"}, {"applied", "apply"}, {"settings", "set"},
		{"string", "string"}, {"need", "need"}, {"speed", "speed"}, {"used", "used"},
		// silent e
		{"free", "free"}, {"file", "fil"}, {"files", "fil"},
		// short words and words with digits
		{"aws", "aws"}, {"use", "use"}, {"s3s", "s3s"}, {"v2ing", "v2ing"},
	}
	for _, tt := range tests {
		if got := Stem(tt.in); got != tt.want {
			t.Errorf("Stem(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestStemConflates checks the property the stemmer exists for: the
// inflections of one word meet on one term.
func TestStemConflates(t *testing.T) {
	groups := [][]string{
		{"update", "updates", "updated", "updating"},
		{"delete", "deletes", "deleted", "deleting"},
		{"message", "messages"},
		{"charge", "charges", "charged", "charging"},
		{"close", "closes", "closed", "closing"},
		{"commit", "commits", "committed", "committing"},
		{"entry", "entries"},
	}
	for _, g := range groups {
		want := Stem(g[0])
		for _, w := range g[1:] {
			if got := Stem(w); got != want {
				t.Errorf("Stem(%q) = %q, want %q like Stem(%q)", w, got, want, g[0])
			}
		}
	}
}

func TestIsStopWord(t *testing.T) {
	for _, w := range []string{"the", "a", "of", "dont", "whats"} {
		if !IsStopWord(w) {
			t.Errorf("IsStopWord(%q) = false, want true", w)
		}
	}
	for _, w := range []string{"list", "get", "create", "delete", "send", "not"} {
		if IsStopWord(w) {
			t.Errorf("IsStopWord(%q) = true, want false", w)
		}
	}
}
