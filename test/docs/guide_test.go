package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/config"
)

// block is one fenced code block of a Markdown file.
type block struct {
	lang   string
	line   int // of its first line
	text   string
	indent string // the fence's, taken off every line
}

var fenceRe = regexp.MustCompile("^\\s*```([a-z]*)\\s*$")

func blocks(t *testing.T, path string) []block {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []block
	var cur *block
	for i, line := range strings.Split(string(b), "\n") {
		m := fenceRe.FindStringSubmatch(line)
		switch {
		case m != nil && cur == nil:
			cur = &block{lang: m[1], line: i + 2, indent: line[:len(line)-len(strings.TrimLeft(line, " "))]}
		case m != nil:
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += strings.TrimPrefix(line, cur.indent) + "\n"
		}
	}
	return out
}

// commands are the commands of a shell block: continuation lines joined,
// comments and blank lines dropped.
func commands(text string) []string {
	var out []string
	joined := strings.ReplaceAll(text, "\\\n", " ")
	for _, line := range strings.Split(joined, "\n") {
		if i := strings.Index(line, "  #"); i >= 0 {
			line = line[:i]
		}
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out
}

// offline says why a command of the guide cannot run in a test, by its
// first word(s); a command matching none of these and no runnable binary
// fails the test, so a new command must be classified.
var offline = map[string]string{
	"npx":            "downloads a package from npm (network)",
	"curl":           "talks to a running fleet (make run); the same requests run against a real edge in test/edge_e2e_test.go",
	"SID=":           "part of the curl session above",
	"H=(":            "part of the curl session above (a bash array, continued on the next line)",
	"-H":             "the continuation of the bash array above",
	"export":         "reads a token of the reader's",
	"docker":         "needs a Docker daemon (the compose file is checked by deploy/deploytest's TestComposeFile)",
	"helm":           "needs a Kubernetes cluster (the chart is checked by make chart-test)",
	"kubectl":        "needs a Kubernetes cluster",
	"nk":             "the nk tool is not part of this repository",
	"make run":       "starts a fleet until Ctrl-C (the demo is tested by test/demo)",
	"ss":             "inspects the reader's machine",
	"rm":             "removes the reader's data",
	"go run ./test/": "starts a server until Ctrl-C",
}

// fleetgateBin maps the binary a command names to the package built for it.
var fleetgateBin = map[string]string{
	"bin/controller": "./cmd/controller", "controller": "./cmd/controller",
	"bin/edge": "./cmd/edge", "edge": "./cmd/edge",
	"bin/demo": "./test/demo",
}

// Every command of the guide's shell blocks either runs here or is listed
// in offline with the reason it cannot. A command of fleetgate's own
// binaries runs with its arguments and --help appended: the binary parses
// every flag and value the guide gives it (and exits 0), without starting
// a server on the machine's fixed ports. Every fleet config of the guide
// (a YAML block with groups) loads.
func TestGuideCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries")
	}
	guide := filepath.Join(root, "docs", "guide.md")
	bins := t.TempDir()
	built := map[string]string{}
	build := func(pkg string) string {
		if p, ok := built[pkg]; ok {
			return p
		}
		out := filepath.Join(bins, filepath.Base(pkg))
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
		built[pkg] = out
		return out
	}
	ran, skipped, configs := 0, 0, 0
	for _, b := range blocks(t, guide) {
		switch b.lang {
		case "sh":
			for _, c := range commands(b.text) {
				words := strings.Fields(c)
				if pkg, ok := fleetgateBin[words[0]]; ok {
					if words[0] == "bin/demo" && len(words) > 1 && words[1] == "backend" {
						// A server on a fixed port until Ctrl-C (test/demo
						// runs it): its flags are checked here.
						checkDemoBackendArgs(t, b.line, words[2:])
						skipped++
						continue
					}
					args := append(words[1:], "--help")
					out, err := exec.Command(build(pkg), args...).CombinedOutput()
					if err != nil {
						t.Errorf("guide.md:%d: %s: %v\n%s", b.line, c, err, firstLines(string(out), 4))
					}
					ran++
					continue
				}
				reason := ""
				for prefix, why := range offline {
					if strings.HasPrefix(c, prefix) {
						reason = why
					}
				}
				if reason == "" {
					t.Errorf("guide.md:%d: %q neither runs here nor is listed in offline with a reason", b.line, c)
				}
				skipped++
			}
		case "yaml":
			if !strings.Contains(b.text, "groups:") {
				continue
			}
			if _, err := config.Parse("guide.md", []byte(b.text)); err != nil {
				t.Errorf("guide.md:%d: the fleet config does not load: %v", b.line, err)
			}
			configs++
		}
	}
	t.Logf("%d commands ran, %d listed as offline, %d fleet configs loaded", ran, skipped, configs)
	if ran == 0 || configs == 0 {
		t.Fatal("the guide has no runnable command or no fleet config: is it still docs/guide.md?")
	}
}

// checkDemoBackendArgs: `bin/demo backend` takes --name and --listen.
func checkDemoBackendArgs(t *testing.T, line int, args []string) {
	t.Helper()
	for _, a := range args {
		if strings.HasPrefix(a, "-") && a != "--name" && a != "--listen" {
			t.Errorf("guide.md:%d: demo backend has no flag %s", line, a)
		}
	}
}

func firstLines(s string, n int) string {
	l := strings.SplitN(s, "\n", n+1)
	if len(l) > n {
		l = l[:n]
	}
	return strings.Join(l, "\n")
}
