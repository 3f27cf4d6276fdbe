package suite

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// SuiteOptions tune RunSuite. A nil *SuiteOptions means defaults.
type SuiteOptions struct {
	// Timeout is the longest one scenario may run; default
	// DefaultTimeout.
	Timeout time.Duration
	// Parallel is how many scenarios left over from the suite process
	// run at once, each in its own process; default 4.
	Parallel int
	// Progress, when set, is called for each scenario result, one call
	// at a time.
	Progress func(*Result)
}

// RunSuite runs the scenarios of suite against url: first all in one
// process (one Node start, the suite's order, a second or two for a
// healthy server), then each scenario that process did not reach in a
// process of its own, Parallel at a time. The suite process is stopped
// when a scenario runs longer than Timeout; that scenario counts as timed
// out. names are the suite's scenarios (from Scenarios); the result has
// one entry for each. An empty suite skips the suite process: each
// scenario runs on its own (for a chosen few).
func (c *CLI) RunSuite(ctx context.Context, suite string, names []string, url string, o *SuiteOptions) map[string]*Result {
	opts := SuiteOptions{Timeout: DefaultTimeout, Parallel: 4}
	if o != nil {
		if o.Timeout > 0 {
			opts.Timeout = o.Timeout
		}
		if o.Parallel > 0 {
			opts.Parallel = o.Parallel
		}
		opts.Progress = o.Progress
	}
	out := map[string]*Result{}
	var mu sync.Mutex
	put := func(r *Result) {
		mu.Lock()
		defer mu.Unlock()
		out[r.Scenario] = r
		if opts.Progress != nil {
			opts.Progress(r)
		}
	}
	if suite != "" {
		c.runOnce(ctx, suite, names, url, opts.Timeout, put)
	}
	var rest []string
	for _, n := range names {
		if out[n] == nil {
			rest = append(rest, n)
		}
	}
	sem := make(chan struct{}, opts.Parallel)
	var wg sync.WaitGroup
	for _, n := range rest {
		if ctx.Err() != nil {
			put(&Result{Scenario: n, URL: url, Err: fmt.Errorf("run scenario %s: %w", n, ctx.Err())})
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			ro := &RunOptions{Timeout: opts.Timeout}
			if IsRequirements(suite) {
				ro.SpecVersion = suite
			}
			put(c.Run(ctx, n, url, ro))
		}()
	}
	wg.Wait()
	return out
}

// runOnce is the suite process: every scenario it finished is put, and
// the one it stalled on is put as timed out.
func (c *CLI) runOnce(ctx context.Context, suite string, names []string, url string, timeout time.Duration, put func(*Result)) {
	dir, err := os.MkdirTemp("", "conformance-suite-")
	if err != nil {
		return // each scenario runs on its own then
	}
	defer os.RemoveAll(dir)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := &watch{head: head{max: MaxOutput}, started: make(chan string, MaxScenarios)}
	cmd := c.command(rctx, append([]string{"server", "--url", url, "-o", dir}, selectArgs(suite)...)...)
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		return
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = cmd.Wait() }()
	var current string
	var since time.Time
	stalled := ""
	timer := time.NewTimer(timeout)
	defer timer.Stop()
wait:
	for {
		select {
		case <-done:
			break wait
		case s := <-w.started:
			current, since = s, time.Now()
			timer.Reset(timeout)
		case <-timer.C:
			stalled = current
			cancel()
			<-done
			break wait
		}
	}
	for _, n := range names {
		if n == stalled {
			put(&Result{Scenario: n, URL: url, TimedOut: true, Duration: time.Since(since)})
			continue
		}
		files, _ := filepath.Glob(filepath.Join(dir, "server-"+n+"-[0-9][0-9][0-9][0-9]-*", "checks.json"))
		if len(files) != 1 {
			continue
		}
		b, err := readBounded(files[0], MaxChecksBytes)
		if err != nil {
			continue
		}
		checks, err := ParseChecks(b)
		if err != nil {
			continue
		}
		put(&Result{Scenario: n, URL: url, Checks: checks})
	}
}

// watch is a head that also reports each "=== Running scenario: X ==="
// line as it is written.
type watch struct {
	head
	mu      sync.Mutex
	line    bytes.Buffer
	started chan string
}

func (w *watch) Write(p []byte) (int, error) {
	_, _ = w.head.Write(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range p {
		if c != '\n' {
			if w.line.Len() < 4096 {
				w.line.WriteByte(c)
			}
			continue
		}
		if m := scenarioLine.FindSubmatch(bytes.TrimRight(w.line.Bytes(), "\r")); m != nil {
			select {
			case w.started <- string(m[1]):
			default:
			}
		}
		w.line.Reset()
	}
	return len(p), nil
}
