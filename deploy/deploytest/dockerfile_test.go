package deploytest

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// repoRoot is the repository, relative to this package.
const repoRoot = "../.."

// instruction is one Dockerfile instruction: its keyword (upper case), the
// rest of its logical line, and the line it starts on.
type instruction struct {
	cmd, args string
	line      int
}

// parseDockerfile splits a Dockerfile into instructions: parser directives
// and comments dropped, continuation lines (the escape character at the end
// of a line, backslash unless an escape directive says otherwise) joined,
// comment lines inside a continuation skipped, as the Dockerfile reference
// describes. Heredocs are not supported (the project's Dockerfile has none).
func parseDockerfile(src string) ([]instruction, error) {
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	escape := `\`
	directives := true
	var out []instruction
	var cur *instruction
	for i, raw := range lines {
		l := strings.TrimSpace(raw)
		if directives {
			if m := regexp.MustCompile(`^#\s*([a-zA-Z]+)\s*=\s*(\S+)\s*$`).FindStringSubmatch(l); m != nil {
				if strings.EqualFold(m[1], "escape") {
					if m[2] != `\` && m[2] != "`" {
						return nil, fmt.Errorf("line %d: escape %q: want \\ or `", i+1, m[2])
					}
					escape = m[2]
				}
				continue
			}
			directives = false
		}
		if strings.HasPrefix(l, "#") || (l == "" && cur == nil) {
			continue
		}
		cont := strings.HasSuffix(l, escape)
		if cont {
			l = strings.TrimSpace(strings.TrimSuffix(l, escape))
		}
		if cur == nil {
			kw, rest, _ := strings.Cut(l, " ")
			if !regexp.MustCompile(`^[A-Za-z]+$`).MatchString(kw) {
				return nil, fmt.Errorf("line %d: %q is not an instruction", i+1, kw)
			}
			cur = &instruction{cmd: strings.ToUpper(kw), args: strings.TrimSpace(rest), line: i + 1}
		} else if l != "" {
			cur.args = strings.TrimSpace(cur.args + " " + l)
		}
		if !cont {
			out = append(out, *cur)
			cur = nil
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("line %d: the file ends inside a continued %s", cur.line, cur.cmd)
	}
	return out, nil
}

// stage is one FROM ... [AS name] block of a Dockerfile.
type stage struct {
	image, name string
	body        []instruction
}

// stages resolves the ARGs declared before the first FROM (their
// defaults) in each FROM and groups the instructions by stage.
func stages(ins []instruction) ([]stage, error) {
	args := map[string]string{}
	var out []stage
	for _, in := range ins {
		switch {
		case in.cmd == "ARG" && len(out) == 0:
			k, v, _ := strings.Cut(in.args, "=")
			args[k] = strings.Trim(v, `"`)
		case in.cmd == "FROM":
			f := strings.Fields(in.args)
			for len(f) > 0 && strings.HasPrefix(f[0], "--") {
				f = f[1:]
			}
			if len(f) != 1 && (len(f) != 3 || !strings.EqualFold(f[1], "AS")) {
				return nil, fmt.Errorf("line %d: FROM %s", in.line, in.args)
			}
			img := os.Expand(f[0], func(k string) string { return args[k] })
			s := stage{image: img}
			if len(f) == 3 {
				s.name = f[2]
			}
			out = append(out, s)
		case len(out) == 0:
			return nil, fmt.Errorf("line %d: %s before the first FROM", in.line, in.cmd)
		default:
			out[len(out)-1].body = append(out[len(out)-1].body, in)
		}
	}
	return out, nil
}

func readDockerfile(t *testing.T) []stage {
	t.Helper()
	b, err := os.ReadFile(repoRoot + "/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	ins, err := parseDockerfile(string(b))
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	st, err := stages(ins)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	return st
}

// goBuild is the RUN instruction of the build stage that runs go build.
func goBuild(t *testing.T, st []stage) string {
	t.Helper()
	for _, in := range st[0].body {
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			return in.args
		}
	}
	t.Fatal("no RUN ... go build in the build stage")
	return ""
}

func TestDockerfile(t *testing.T) {
	st := readDockerfile(t)
	if len(st) < 2 {
		t.Fatalf("%d stages, want a build stage and a final one", len(st))
	}
	build, final := st[0], st[len(st)-1]
	if !regexp.MustCompile(`^golang:1\.26([.-]|$)`).MatchString(build.image) || build.name == "" {
		t.Errorf("build stage FROM %s AS %q, want golang:1.26 with a name", build.image, build.name)
	}
	named := map[string]bool{}
	for _, s := range st {
		ref := s.image
		if !named[ref] && ref != "scratch" {
			_, tag, _ := strings.Cut(ref[strings.LastIndex(ref, "/")+1:], ":")
			if tag == "" && !strings.Contains(ref, "@sha256:") || tag == "latest" {
				t.Errorf("FROM %s: pin a tag other than latest (or a digest)", ref)
			}
		}
		named[s.name] = true
	}
	if final.image != "scratch" && !strings.HasPrefix(final.image, "gcr.io/distroless/static") {
		t.Errorf("final stage FROM %s, want distroless/static or scratch", final.image)
	}
	var user string
	copied := false
	for _, in := range final.body {
		switch in.cmd {
		case "USER":
			user = in.args
		case "COPY":
			copied = copied || strings.Contains(in.args, "--from="+build.name)
		case "RUN":
			t.Errorf("line %d: RUN in the final stage (it has no shell)", in.line)
		}
	}
	if !regexp.MustCompile(`^[1-9][0-9]*(:[1-9][0-9]*)?$`).MatchString(user) {
		t.Errorf("final USER %q, want a numeric non-root uid[:gid]", user)
	}
	if !copied {
		t.Error("the final stage copies nothing from the build stage")
	}
	run := goBuild(t, st)
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "./cmd/controller", "./cmd/edge"} {
		if !strings.Contains(run, want) {
			t.Errorf("go build %q lacks %s", run, want)
		}
	}
}

// The build context leaves out nothing the binaries are built from.
func TestDockerignore(t *testing.T) {
	b, err := os.ReadFile(repoRoot + "/.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Split(string(b), "\n") {
		p = strings.TrimSpace(p)
		if p == "" || strings.HasPrefix(p, "#") {
			continue
		}
		if strings.HasPrefix(p, "!") {
			t.Errorf(".dockerignore exception %q: keep the file a plain list", p)
		}
		for _, needed := range []string{"go.mod", "go.sum", "cmd", "pkg", "proto", "pkg/edge/edge.go", "cmd/edge/main.go"} {
			if ignores(p, needed) {
				t.Errorf(".dockerignore %q leaves %s out of the build", p, needed)
			}
		}
	}
}

// ignores reports whether a .dockerignore pattern (no exceptions) matches
// the path or one of its parents, with ** matching any number of
// directories.
func ignores(pattern, p string) bool {
	re := regexp.QuoteMeta(strings.TrimPrefix(pattern, "/"))
	re = strings.ReplaceAll(re, `\*\*/`, `(.*/)?`)
	re = strings.ReplaceAll(re, `\*`, `[^/]*`)
	re = strings.ReplaceAll(re, `\?`, `[^/]`)
	return regexp.MustCompile(`^` + re + `(/.*)?$`).MatchString(p)
}

func TestParseDockerfile(t *testing.T) {
	ins, err := parseDockerfile("# syntax=docker/dockerfile:1\n# escape=`\nFROM a AS b\n# c\nRUN x `\n  # inside\n  y\n\nUSER 1\n")
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(ins)
	if want := "[{FROM a AS b 3} {RUN x y 5} {USER 1 9}]"; got != want {
		t.Errorf("instructions %s, want %s", got, want)
	}
	for _, bad := range []string{"FROM a\nRUN x \\", "not-an instruction\n", "# escape=x\nFROM a\n"} {
		if _, err := parseDockerfile(bad); err == nil {
			t.Errorf("parseDockerfile(%q) accepted", bad)
		}
	}
	if !ignores("**/testdata", "pkg/x/testdata/a") || ignores("test", "testdata") || !ignores("bin", "bin/edge") {
		t.Error("ignores")
	}
}

func FuzzParseDockerfile(f *testing.F) {
	b, _ := os.ReadFile(repoRoot + "/Dockerfile")
	f.Add(string(b))
	f.Add("FROM a\\\n")
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 1<<16 {
			return
		}
		ins, err := parseDockerfile(src)
		if err == nil && len(ins) > strings.Count(src, "\n")+1 {
			t.Fatalf("%d instructions from %d lines", len(ins), strings.Count(src, "\n")+1)
		}
	})
}
