package suite

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Bounds on the suite's command line output.
const (
	MaxOutput    = 1 << 20 // bytes of a process's output kept
	MaxScenarios = 500     // scenarios in one suite
)

// DefaultTimeout is a scenario's deadline when RunOptions gives none.
const DefaultTimeout = 20 * time.Second

// ErrBadList is wrapped by every ParseScenarioList error.
var ErrBadList = errors.New("bad scenario list")

// CLI is the suite's command line: Node runs Script (the package's
// dist/index.js).
type CLI struct {
	Node   string
	Script string
	// Env is added to the environment of every run.
	Env []string
}

// RunOptions tune one run. A nil *RunOptions means defaults.
type RunOptions struct {
	// Timeout stops the scenario; default DefaultTimeout.
	Timeout time.Duration
	// SpecVersion, when set, runs the scenario at that revision
	// (--spec-version; the suite refuses --scenario with --requirements).
	SpecVersion string
}

var (
	suiteLine    = regexp.MustCompile(`^Running (?:\S+ suite|requirements \S+) \((\d+) scenarios?\) against `)
	requirement  = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	unscoredHead = regexp.MustCompile(`^Not scored for \S+: `)
	unscoredLine = regexp.MustCompile(`^\s+\S+ ([a-z0-9][a-z0-9._-]{0,99}) \(([a-z -]+)\)$`)
	scenarioLine = regexp.MustCompile(`^=== Running scenario: (\S+) ===$`)
	scenarioName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,99}$`)
)

// ParseScenarioList reads the scenario names from the output of a suite
// run (`server --url U [--suite S | --requirements R]`): the header names the count, and
// each scenario starts with "=== Running scenario: NAME ===". The count
// must match, names are unique and of [a-z0-9._-], at most MaxScenarios.
func ParseScenarioList(out []byte) ([]string, error) {
	if len(out) > MaxOutput {
		return nil, fmt.Errorf("%w: %d bytes of output, limit %d", ErrBadList, len(out), MaxOutput)
	}
	want := -1
	var names []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if m := suiteLine.FindStringSubmatch(line); m != nil && want < 0 {
			n, err := strconv.Atoi(m[1])
			if err != nil || n > MaxScenarios {
				return nil, fmt.Errorf("%w: scenario count %q", ErrBadList, m[1])
			}
			want = n
			continue
		}
		m := scenarioLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if !scenarioName.MatchString(m[1]) {
			return nil, fmt.Errorf("%w: scenario name %q", ErrBadList, clip(m[1]))
		}
		if seen[m[1]] {
			return nil, fmt.Errorf("%w: scenario %q twice", ErrBadList, m[1])
		}
		if len(names) == MaxScenarios {
			return nil, fmt.Errorf("%w: more than %d scenarios", ErrBadList, MaxScenarios)
		}
		seen[m[1]] = true
		names = append(names, m[1])
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadList, err)
	}
	switch {
	case want < 0:
		return nil, fmt.Errorf("%w: no suite header line", ErrBadList)
	case want != len(names):
		return nil, fmt.Errorf("%w: header says %d scenarios, %d listed", ErrBadList, want, len(names))
	}
	return names, nil
}

// Scenarios lists the scenarios of suite ("active", "all" or "pending",
// or a requirement set, a revision date such as "2026-07-28") in the
// suite's order. It runs the suite against a local endpoint that
// refuses everything, which costs about a second, and reads the names
// from the output: the suite's `list` command does not tell active from
// pending.
func (c *CLI) Scenarios(ctx context.Context, suite string) ([]string, error) {
	names, _, err := c.ScenarioList(ctx, suite)
	return names, err
}

// ScenarioList is Scenarios with the scenarios a requirement set runs
// but does not score (the suite's "Not scored for R" list: extensions
// and pending scenarios), each with the suite's word for why.
func (c *CLI) ScenarioList(ctx context.Context, suite string) ([]string, map[string]string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, fmt.Errorf("list %s scenarios: %w", suite, err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "conformance scenario listing", http.StatusServiceUnavailable)
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out := &head{max: MaxOutput}
	cmd := c.command(ctx, append([]string{"server", "--url", "http://" + ln.Addr().String() + "/mcp"}, selectArgs(suite)...)...)
	cmd.Stdout, cmd.Stderr = out, out
	_ = cmd.Run() // every scenario fails: a non-zero exit is expected
	names, err := ParseScenarioList(out.Bytes())
	if err != nil {
		return nil, nil, fmt.Errorf("list %s scenarios: %w (output: %s)", suite, err, clip(string(out.Bytes())))
	}
	return names, ParseUnscored(out.Bytes()), nil
}

// ParseUnscored reads the scenarios a requirement-set run lists after
// "Not scored for R: ..." (one a line: a mark, the name, the reason in
// parentheses) from its output; nil when there is no such list.
func ParseUnscored(out []byte) map[string]string {
	var m map[string]string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if unscoredHead.MatchString(line) {
			in, m = true, map[string]string{}
			continue
		}
		if !in {
			continue
		}
		g := unscoredLine.FindStringSubmatch(line)
		if g == nil {
			in = false
			continue
		}
		if len(m) < MaxScenarios {
			m[g[1]] = g[2]
		}
	}
	return m
}

// IsRequirements reports whether suite names a requirement set (a
// revision date) rather than a suite.
func IsRequirements(suite string) bool { return requirement.MatchString(suite) }

// selectArgs are the suite's flags that pick suite's scenarios.
func selectArgs(suite string) []string {
	if IsRequirements(suite) {
		return []string{"--requirements", suite}
	}
	return []string{"--suite", suite}
}

func (c *CLI) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, c.Node, append([]string{c.Script}, args...)...)
	cmd.Env = append(append(os.Environ(), "NO_COLOR=1", "FORCE_COLOR=0"), c.Env...)
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// Run runs one scenario against url in its own process and reads its
// checks. It never returns an error: a failure to run is Result.Err.
func (c *CLI) Run(ctx context.Context, scenario, url string, o *RunOptions) *Result {
	timeout := DefaultTimeout
	if o != nil && o.Timeout > 0 {
		timeout = o.Timeout
	}
	var version []string
	if o != nil && o.SpecVersion != "" {
		version = []string{"--spec-version", o.SpecVersion, "--force"}
	}
	res := &Result{Scenario: scenario, URL: url}
	if !scenarioName.MatchString(scenario) {
		res.Err = fmt.Errorf("run scenario %q: bad name", clip(scenario))
		return res
	}
	dir, err := os.MkdirTemp("", "conformance-"+scenario+"-")
	if err != nil {
		res.Err = fmt.Errorf("run scenario %s: %w", scenario, err)
		return res
	}
	defer os.RemoveAll(dir)
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := &head{max: MaxOutput}
	cmd := c.command(rctx, append([]string{"server", "--url", url, "--scenario", scenario, "-o", dir}, version...)...)
	cmd.Stdout, cmd.Stderr = out, out
	start := time.Now()
	runErr := cmd.Run()
	res.Duration = time.Since(start)
	if rctx.Err() != nil && ctx.Err() == nil {
		res.TimedOut = true
		return res
	}
	files, _ := filepath.Glob(filepath.Join(dir, "server-"+scenario+"-*", "checks.json"))
	if len(files) != 1 {
		res.Err = fmt.Errorf("run scenario %s: %d checks files (exit: %v; output: %s)", scenario, len(files), runErr, clip(string(out.Bytes())))
		return res
	}
	b, err := readBounded(files[0], MaxChecksBytes)
	if err == nil {
		res.Checks, err = ParseChecks(b)
	}
	if err != nil {
		res.Err = fmt.Errorf("run scenario %s: %w", scenario, err)
	}
	return res
}

// readBounded reads at most max bytes of path; a longer file is an error.
func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if n > max {
		return nil, fmt.Errorf("read %s: %w: more than %d bytes", path, ErrBadChecks, max)
	}
	return buf.Bytes(), nil
}

// head keeps the first max bytes written to it (the suite prints its
// header and scenario lines first).
type head struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

func (t *head) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := t.max - t.b.Len(); room > 0 {
		if len(p) > room {
			t.b.Write(p[:room])
		} else {
			t.b.Write(p)
		}
	}
	return len(p), nil
}

func (t *head) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.b.Bytes()...)
}
