package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// helpFlag matches a flag line of Go's flag package usage output.
var helpFlag = regexp.MustCompile(`(?m)^  -([a-zA-Z0-9][a-zA-Z0-9-]*)`)

// TestReferenceListsEveryFlag fails when a flag of either binary, or of
// their subcommands, is missing from docs/reference.md.
func TestReferenceListsEveryFlag(t *testing.T) {
	dir := binaries(t)
	ref, err := os.ReadFile(filepath.Join("..", "..", "docs", "reference.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(ref)
	for _, c := range []struct {
		bin  string
		args []string
	}{
		{"controller", []string{"--help"}},
		{"controller", []string{"audit", "state", "--help"}},
		{"controller", []string{"audit", "history", "--help"}},
		{"controller", []string{"audit", "export", "--help"}},
		{"controller", []string{"events", "tail", "--help"}},
		{"edge", []string{"--help"}},
		{"edge", []string{"verify", "--help"}},
	} {
		out, _ := exec.Command(filepath.Join(dir, c.bin), c.args...).CombinedOutput() // --help exits 0 or 2
		flags := helpFlag.FindAllStringSubmatch(string(out), -1)
		if len(flags) == 0 {
			t.Fatalf("%s %s: no flags in the output:\n%s", c.bin, strings.Join(c.args, " "), out)
		}
		for _, f := range flags {
			if !regexp.MustCompile(`(?m)(^|[\s\x60(])--?` + regexp.QuoteMeta(f[1]) + `([^a-zA-Z0-9-]|$)`).MatchString(doc) {
				t.Errorf("%s %s: flag -%s is not in docs/reference.md", c.bin, strings.Join(c.args, " "), f[1])
			}
		}
	}
}
