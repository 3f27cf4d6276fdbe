package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/config"
)

// Naming strategies the harness can ask the fleet for.
const (
	namingAuto     = "auto"     // priority if the fleet config accepts it, else prefix
	namingPriority = "priority" // aggregation.conflicts: priority, the backend's names unchanged
	namingPrefix   = "prefix"   // today's <backend>_<name>: backend "test" with "test_" trimmed
)

// backendName is the fleet's name of the conformance backend: with the
// prefix strategy "test" + "_" + a trimmed name gives the suite's name.
const (
	backendName = "test"
	trimPrefix  = "test_"
)

// fleetYAML is the fleet config with the backend at url; conflicts adds
// aggregation.conflicts when not empty.
func fleetYAML(url, conflicts string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "groups:\n  - name: default\n    backends:\n      - name: %s\n        url: %s\n", backendName, url)
	sb.WriteString("health:\n  interval: 1s\n  timeout: 500ms\n  unhealthy_after: 2\n  debounce: 200ms\n")
	sb.WriteString("aggregation:\n  separator: \"_\"\n")
	if conflicts != "" {
		fmt.Fprintf(&sb, "  conflicts: %s\n", conflicts)
	}
	return sb.String()
}

// chooseNaming resolves namingAuto: priority when this build's config
// loader accepts aggregation.conflicts: priority. It returns the
// strategy and, for a fallback, why.
func chooseNaming(want, dir string) (string, string, error) {
	if want != namingAuto {
		return want, "", nil
	}
	path := filepath.Join(dir, "probe.yaml")
	if err := os.WriteFile(path, []byte(fleetYAML("http://127.0.0.1:1/mcp", namingPriority)), 0o600); err != nil {
		return "", "", fmt.Errorf("choose naming: %w", err)
	}
	defer os.Remove(path)
	if _, err := config.Load(path); err != nil {
		return namingPrefix, err.Error(), nil
	}
	return namingPriority, "", nil
}

// fleet is a controller (with embedded NATS) and one edge, as processes.
type fleet struct {
	dir   string
	procs []proc
	mcp   string // the edge's MCP URL
}

// proc is a started process and a channel closed once it has exited.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// freeAddr is a loopback address that was free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

type fleetOptions struct {
	bin         string // directory of the controller and edge binaries
	dir         string // work directory: config, data, logs
	backendURL  string
	naming      string // priority or prefix
	callTimeout time.Duration
	wantTools   []string // the tools the edge must list; default the conformance backend's
}

// startFleet starts the controller and the edge and waits until the edge
// serves the backend's tools under the suite's names.
func startFleet(ctx context.Context, o fleetOptions) (*fleet, error) {
	f := &fleet{dir: o.dir}
	conflicts := ""
	if o.naming == namingPriority {
		conflicts = namingPriority
	}
	cfg := filepath.Join(o.dir, "fleet.yaml")
	if err := os.WriteFile(cfg, []byte(fleetYAML(o.backendURL, conflicts)), 0o600); err != nil {
		return nil, fmt.Errorf("start fleet: %w", err)
	}
	var addrs [4]string
	for i := range addrs {
		a, err := freeAddr()
		if err != nil {
			return nil, fmt.Errorf("start fleet: free port: %w", err)
		}
		addrs[i] = a
	}
	natsAddr, ctlAdmin, edgeListen, edgeAdmin := addrs[0], addrs[1], addrs[2], addrs[3]
	data := filepath.Join(o.dir, "controller")
	if err := f.start("controller", filepath.Join(o.bin, "controller"), "--config", cfg, "--data-dir", data,
		"--nats-listen", natsAddr, "--admin-listen", ctlAdmin, "--id", "conformance-controller", "--log-format", "json"); err != nil {
		return f, err
	}
	seed := filepath.Join(data, "nats", "edge.seed")
	if err := waitFor(ctx, 60*time.Second, "the controller's edge seed "+seed, func() bool {
		_, err := os.Stat(seed)
		return err == nil
	}); err != nil {
		return f, err
	}
	if err := f.start("edge", filepath.Join(o.bin, "edge"), "--nats-url", "nats://"+natsAddr, "--nats-nkey-seed", seed,
		"--listen", edgeListen, "--admin-listen", edgeAdmin, "--id", "conformance-edge", "--log-format", "json",
		"--call-timeout", o.callTimeout.String()); err != nil {
		return f, err
	}
	if err := waitFor(ctx, 60*time.Second, "edge /readyz", func() bool { return httpOK("http://" + edgeAdmin + "/readyz") }); err != nil {
		return f, err
	}
	f.mcp = "http://" + edgeListen + "/mcp"
	want, count := []string{"test_simple_text", "test_sampling"}, backendTools
	if o.wantTools != nil {
		want, count = o.wantTools, len(o.wantTools)
	}
	var last []string
	if err := waitFor(ctx, 60*time.Second, fmt.Sprintf("edge tools %v", want), func() bool {
		last = listTools(ctx, f.mcp)
		return len(last) >= count
	}); err != nil {
		return f, fmt.Errorf("%w (edge lists %v)", err, last)
	}
	if slices.ContainsFunc(want, func(n string) bool { return !slices.Contains(last, n) }) {
		return f, fmt.Errorf("%w: want %v among %v", errNames, want, last)
	}
	return f, nil
}

// backendTools is how many tools the conformance backend has.
const backendTools = 14

// errNames is startFleet's error when the edge serves the backend's
// tools under other names than the suite calls.
var errNames = errors.New("the edge's tool names are not the suite's")

func (f *fleet) start(name, path string, args ...string) error {
	logf, err := os.Create(filepath.Join(f.dir, name+".log"))
	if err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s (%s): %w", name, path, err)
	}
	p := proc{cmd: cmd, done: make(chan struct{})}
	go func() { defer close(p.done); _ = cmd.Wait(); logf.Close() }()
	f.procs = append(f.procs, p)
	return nil
}

// stop ends the processes, the edge first, each by its own pid.
func (f *fleet) stop() {
	for i := len(f.procs) - 1; i >= 0; i-- {
		p := f.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
}

func httpOK(url string) bool {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// maxListed bounds the tool names read from the edge.
const maxListed = 1000

// listTools is the tool names a fresh client session sees at url (at
// most maxListed).
func listTools(ctx context.Context, url string) []string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "conformance-harness", Version: "1.0.0"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return nil
	}
	defer cs.Close()
	var names []string
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil || len(names) == maxListed {
			return names
		}
		names = append(names, t.Name)
	}
	return names
}

func waitFor(ctx context.Context, d time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("wait for %s: %w after %s", what, errTimeout, d)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w", what, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

var errTimeout = errors.New("timed out")
