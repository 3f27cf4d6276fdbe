package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/fleetgate/fleetgate/test/conformance"
	"github.com/fleetgate/fleetgate/test/conformance/suite"
)

// The servers a requirement set is measured against.
const (
	serverFleetgate = "fleetgate" // test/conformance's backend
	serverGoSDK     = "go-sdk"    // go-sdk's conformance/everything-server
)

// goSDKModule is the go-sdk whose everything-server is measured: the one
// go.mod requires.
const goSDKModule = "github.com/modelcontextprotocol/go-sdk@v1.8.0"

// statelessFrom is the first revision served statelessly: a set from it
// on is measured against stateless servers (as go-sdk's CI runs its
// everything-server for it), older sets against stateful ones.
const statelessFrom = "2026-07-28"

// target is one MCP server process or in-process backend.
type target interface {
	URL() string
	Stop()
}

// cell is one requirement set against one server.
type cell struct {
	set, server string
}

func (c cell) String() string { return c.set + " " + c.server }

// cellResult is a cell's measurement.
type cellResult struct {
	cell
	rep      *report
	unscored map[string]string
	err      error
}

// runMatrix measures every requirement set of o.requirements against
// every server of o.servers, directly and through an edge, one cell after
// the other; it fails a cell when a scenario passes directly and fails
// through the edge without being listed in the cell's section of the
// expected-failures file (a scenario the server itself fails is
// reported, not held against the edge).
func runMatrix(ctx context.Context, o *options, stdout, stderr io.Writer) (bool, error) {
	bases := map[string]suite.Baseline{}
	if o.expected != "" {
		b, err := os.ReadFile(o.expected)
		if err != nil {
			return false, fmt.Errorf("expected failures: %w", err)
		}
		if bases, err = suite.ParseBaselines(b); err != nil {
			return false, fmt.Errorf("expected failures %s: %w", o.expected, err)
		}
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
	if naming != namingPriority {
		return false, fmt.Errorf("requirement sets need naming priority (the go-sdk server's names cannot be trimmed): %s", why)
	}
	servers := splitList(o.servers)
	gosdk := o.gosdk
	if gosdk == "" && slices.Contains(servers, serverGoSDK) {
		if gosdk, err = buildEverythingServer(ctx, dir); err != nil {
			return false, err
		}
	}
	cli := &suite.CLI{Node: o.node, Script: o.script}
	var results []*cellResult
	ok := true
	for _, set := range splitList(o.requirements) {
		names, unscored, err := cli.ScenarioList(ctx, set)
		if err != nil {
			return false, err
		}
		names = slices.DeleteFunc(names, func(n string) bool { _, u := unscored[n]; return u })
		if o.only != "" {
			names = slices.DeleteFunc(names, func(n string) bool { return !slices.Contains(splitList(o.only), n) })
		}
		for _, server := range servers {
			c := cell{set: set, server: server}
			res := &cellResult{cell: c, unscored: unscored}
			res.rep, res.err = measureCell(ctx, o, cli, c, names, bases[suite.SectionKey(set, server)], gosdk, dir, stderr)
			if res.err != nil {
				fmt.Fprintf(stdout, "\n== %s: could not measure: %v\n", c, res.err)
				ok = false
			} else {
				fmt.Fprintf(stdout, "\n== requirements %s, server %s (%d scored scenarios; not scored, not run here: %d)\n", set, server, len(names), len(unscored))
				res.rep.text(stdout)
				ok = ok && res.rep.verdict.GatewayOK()
			}
			results = append(results, res)
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
		}
	}
	fmt.Fprintf(stdout, "\n%-12s %-10s %-8s %-8s\n", "requirements", "server", "direct", "edge")
	for _, r := range results {
		if r.err != nil {
			fmt.Fprintf(stdout, "%-12s %-10s %s\n", r.set, r.server, "not measured")
			continue
		}
		n := len(r.rep.names)
		fmt.Fprintf(stdout, "%-12s %-10s %-8s %-8s\n", r.set, r.server,
			fmt.Sprintf("%d/%d", r.rep.passed(r.rep.direct), n), fmt.Sprintf("%d/%d", r.rep.passed(r.rep.edge), n))
	}
	if o.markdown != "" {
		var sb strings.Builder
		for _, r := range results {
			if r.err == nil {
				fmt.Fprintf(&sb, "### requirements %s, server %s\n\n", r.set, r.server)
				r.rep.markdownTable(&sb)
				sb.WriteString("\n")
			}
		}
		if err := os.WriteFile(o.markdown, []byte(sb.String()), 0o644); err != nil {
			return false, fmt.Errorf("write %s: %w", o.markdown, err)
		}
	}
	return ok, ctx.Err()
}

// measureCell runs one cell's scenarios against a server directly and
// through a fleet in front of another instance of it.
func measureCell(ctx context.Context, o *options, cli *suite.CLI, c cell, names []string, base suite.Baseline, gosdk, dir string, log io.Writer) (*report, error) {
	stateless := c.set >= statelessFrom
	start := time.Now()
	newTarget := func() (target, error) {
		if c.server == serverGoSDK {
			return startEverythingServer(ctx, gosdk, stateless, dir)
		}
		b := conformance.New(&conformance.Options{Stateless: stateless})
		if err := b.Start("127.0.0.1:0"); err != nil {
			return nil, err
		}
		return b, nil
	}
	direct, err := newTarget()
	if err != nil {
		return nil, err
	}
	defer direct.Stop()
	behind, err := newTarget()
	if err != nil {
		return nil, err
	}
	defer behind.Stop()
	want := listTools(ctx, direct.URL())
	if len(want) == 0 {
		return nil, fmt.Errorf("%s: the server lists no tools at %s", c, direct.URL())
	}
	sub, err := os.MkdirTemp(dir, strings.ReplaceAll(c.String(), " ", "-")+"-")
	if err != nil {
		return nil, err
	}
	f, err := startFleet(ctx, fleetOptions{bin: o.bin, dir: sub, backendURL: behind.URL(), naming: namingPriority,
		callTimeout: o.callTimeout, wantTools: want})
	if err != nil {
		if f != nil {
			f.stop()
		}
		return nil, fmt.Errorf("%w (logs in %s; rerun with -keep to keep them)", err, sub)
	}
	defer f.stop()
	fmt.Fprintf(log, "%s: fleet up in %s: edge %s; running %d scenarios directly and through the edge\n",
		c, time.Since(start).Round(time.Millisecond), f.mcp, len(names))
	set := c.set
	if o.only != "" {
		set = "" // a chosen few: each on its own
	}
	dres, eres := runAllSet(ctx, cli, set, c.set, names, direct.URL(), f.mcp, o, log)
	v := suite.Judge(names, dres, eres, base, o.require)
	return &report{names: names, direct: dres, edge: eres, base: base, verdict: v, naming: namingPriority,
		require: o.require, details: o.details, took: time.Since(start), lenient: true}, nil
}

// runAllSet is runAll for a requirement set: a chosen few (suiteName
// empty) run each on its own at the set's revision.
func runAllSet(ctx context.Context, cli *suite.CLI, suiteName, set string, names []string, directURL, edgeURL string, o *options, log io.Writer) (direct, edge map[string]*suite.Result) {
	if suiteName != "" {
		return runAll(ctx, cli, suiteName, names, directURL, edgeURL, o, log)
	}
	direct, edge = map[string]*suite.Result{}, map[string]*suite.Result{}
	for _, n := range names {
		ro := &suite.RunOptions{Timeout: o.timeout, SpecVersion: set}
		direct[n] = cli.Run(ctx, n, directURL, ro)
		edge[n] = cli.Run(ctx, n, edgeURL, ro)
		fmt.Fprintf(log, "  %-32s direct %-4s edge %-4s\n", n, passWord(direct[n]), passWord(edge[n]))
	}
	return direct, edge
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// buildEverythingServer builds go-sdk's conformance/everything-server
// from the module cache (downloading the module if it is not there) into
// dir, and returns the binary's path.
func buildEverythingServer(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "mod", "download", "-json", goSDKModule).Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w", goSDKModule, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return "", fmt.Errorf("go mod download %s: no module directory (%v)", goSDKModule, err)
	}
	bin := filepath.Join(dir, "everything-server")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./conformance/everything-server")
	cmd.Dir = mod.Dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s conformance/everything-server: %w: %s", goSDKModule, err, b)
	}
	return bin, nil
}

// process is a server process on a loopback port.
type process struct {
	url  string
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *process) URL() string { return p.url }

func (p *process) Stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// startEverythingServer runs the everything-server binary on a free
// loopback port and waits until it accepts connections.
func startEverythingServer(ctx context.Context, bin string, stateless bool, dir string) (*process, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logf, err := os.CreateTemp(dir, "everything-server-*.log")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-http", addr, fmt.Sprintf("-stateless=%t", stateless))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start everything-server: %w", err)
	}
	p := &process{url: "http://" + addr + "/mcp", cmd: cmd, done: make(chan struct{})}
	go func() { defer close(p.done); _ = cmd.Wait(); logf.Close() }()
	if err := waitFor(ctx, 20*time.Second, "everything-server on "+addr, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}); err != nil {
		p.Stop()
		return nil, errors.Join(err, fmt.Errorf("log in %s", logf.Name()))
	}
	return p, nil
}
