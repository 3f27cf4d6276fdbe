package deploytest

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// binaries builds controller and edge with the Dockerfile's own go build
// command (its environment assignments and flags, the output directory
// replaced) once per test binary, and returns their directory.
func binaries(t *testing.T) string {
	t.Helper()
	run := goBuild(t, readDockerfile(t))
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "fleetgate-deploytest-")
		if buildErr != nil {
			return
		}
		buildErr = dockerBuild(run, buildDir)
	})
	if buildErr != nil {
		t.Fatalf("build as the Dockerfile does: %v", buildErr)
	}
	return buildDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	if code == 0 {
		// k8s.io's packages may start klog's flush daemon, which runs for
		// the process's life.
		if err := goleak.Find(goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1")); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// dockerBuild runs a Dockerfile RUN line of the form
// "[--mount=...] VAR=value ... go build FLAGS -o DIR/ PKGS" in the
// repository, with TARGETOS=linux and TARGETARCH of this machine and the
// binaries written to out.
func dockerBuild(run, out string) error {
	words, err := shellWords(run)
	if err != nil {
		return err
	}
	for len(words) > 0 && strings.HasPrefix(words[0], "--mount=") {
		words = words[1:]
	}
	vars := map[string]string{"TARGETOS": "linux", "TARGETARCH": runtime.GOARCH}
	env := os.Environ()
	for len(words) > 0 && regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`).MatchString(words[0]) {
		env = append(env, os.Expand(words[0], func(k string) string { return vars[k] }))
		words = words[1:]
	}
	if len(words) < 2 || words[0] != "go" || words[1] != "build" {
		return errors.New("the RUN line is not VAR=... go build ...: " + run)
	}
	args := words[1:]
	for i := range args {
		if args[i] == "-o" && i+1 < len(args) {
			args[i+1] = out + string(filepath.Separator)
		}
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = repoRoot
	cmd.Env = env
	if b, err := cmd.CombinedOutput(); err != nil {
		return errors.New("go " + strings.Join(args, " ") + ": " + err.Error() + "\n" + string(b))
	}
	return nil
}

// shellWords splits a command as sh does for plain words, single and double
// quotes and backslash escapes; nothing else (no expansions, no operators).
func shellWords(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case quote == '"':
			if c == '"' {
				quote = 0
			} else if c == '\\' && i+1 < len(s) && strings.IndexByte(`"\$`+"`", s[i+1]) >= 0 {
				i++
				cur.WriteByte(s[i])
			} else {
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		case strings.IndexByte(";&|<>()", c) >= 0:
			return nil, errors.New("shell operator in " + s)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, errors.New("unterminated quote in " + s)
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

// The image's binaries are static: no program interpreter, no dynamic
// section, so they run on distroless/static or scratch.
func TestStaticBinaries(t *testing.T) {
	dir := binaries(t)
	for _, name := range []string{"controller", "edge"} {
		f, err := elf.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
				t.Errorf("%s: program header %v: dynamically linked", name, p.Type)
			}
		}
		if s := f.Section(".dynamic"); s != nil {
			t.Errorf("%s: has a .dynamic section", name)
		}
		if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
			t.Errorf("%s: needs %v", name, libs)
		}
		f.Close()
		// -trimpath: no path of this machine's module directory inside.
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		abs, _ := filepath.Abs(repoRoot)
		if strings.Contains(string(b), abs+"/pkg/") {
			t.Errorf("%s: contains the build path %s (no -trimpath?)", name, abs)
		}
	}
}

// flagNames are the flags a binary prints in its --help.
func flagNames(t *testing.T, bin string) map[string]bool {
	t.Helper()
	out, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --help: %v\n%s", bin, err, out)
	}
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(string(out), -1) {
		names[m[1]] = true
	}
	if len(names) < 10 {
		t.Fatalf("%s --help lists %d flags:\n%s", bin, len(names), out)
	}
	return names
}

// Every rendered argument and FLEETGATE_ variable is a flag of the binary
// the container runs, and the binary parses them all: each variant's
// command line, with the variables as flags, plus --help, exits 0.
func TestRenderedFlagsAccepted(t *testing.T) {
	dir := binaries(t)
	flags := map[string]map[string]bool{}
	for _, b := range []string{"controller", "edge"} {
		flags[b] = flagNames(t, filepath.Join(dir, b))
	}
	for name, v := range variants(t, newCreds(t)) {
		t.Run(name, func(t *testing.T) {
			o := mustRender(t, v)
			for wl, p := range o.podSpecs() {
				for _, c := range p.Spec.Containers {
					checkCommandLine(t, wl, c, dir, flags)
				}
			}
		})
	}
}

func checkCommandLine(t *testing.T, wl string, c corev1.Container, dir string, flags map[string]map[string]bool) {
	t.Helper()
	if len(c.Command) != 1 || !strings.HasPrefix(c.Command[0], "/usr/local/bin/") {
		t.Fatalf("%s: command %v, want one binary of the image", wl, c.Command)
	}
	bin := strings.TrimPrefix(c.Command[0], "/usr/local/bin/")
	known, ok := flags[bin]
	if !ok {
		t.Fatalf("%s: runs %s, which the image lacks", wl, bin)
	}
	args := append([]string(nil), c.Args...)
	for _, a := range c.Args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || !known[name] {
			t.Errorf("%s: argument %q: %s has no such flag", wl, a, bin)
		}
	}
	// As the kubelet would: fieldRefs and $(VAR) references resolved.
	resolved := map[string]string{}
	for _, e := range c.Env {
		val := e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			val = map[string]string{"metadata.name": "fg-fleetgate-controller-0", "status.podIP": "10.1.2.3"}[e.ValueFrom.FieldRef.FieldPath]
		}
		if e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.Resource == "limits.memory" {
			val = strconv.FormatInt(c.Resources.Limits.Memory().Value(), 10) // bytes, as the kubelet gives it
		}
		val = regexp.MustCompile(`\$\(([A-Z_]+)\)`).ReplaceAllStringFunc(val, func(m string) string { return resolved[m[2:len(m)-1]] })
		resolved[e.Name] = val
		if !strings.HasPrefix(e.Name, "FLEETGATE_") {
			if e.Name != "POD_IP" {
				t.Errorf("%s: env %s is neither a FLEETGATE_ flag nor POD_IP", wl, e.Name)
			}
			continue
		}
		flag := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(e.Name, "FLEETGATE_")), "_", "-")
		if !known[flag] {
			t.Errorf("%s: env %s: %s has no flag -%s", wl, e.Name, bin, flag)
		}
		args = append(args, "--"+flag+"="+val)
	}
	out, err := exec.Command(filepath.Join(dir, bin), append(args, "--help")...).CombinedOutput()
	if err != nil {
		t.Errorf("%s: %s %s --help: %v\n%s", wl, bin, strings.Join(args, " "), err, firstLines(string(out), 3))
	}
}

func firstLines(s string, n int) string {
	l := strings.SplitN(s, "\n", n+1)
	if len(l) > n {
		l = l[:n]
	}
	return strings.Join(l, "\n")
}
