// Command demo starts a working fleet on this machine: two demo MCP
// backends (alpha on :9101, beta on :9102, each its own process), a
// controller with embedded NATS, and one edge; it prints the MCP URL and
// stops everything on Ctrl-C (or SIGTERM), waiting for every child.
// It refuses to start when any port it listens on is taken, and stops
// the fleet with an error when the controller or the edge exits early.
//
//	go run ./test/demo            # what `make run` does (after building bin/)
//	go run ./test/demo backend --name alpha --listen 127.0.0.1:9101
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "backend" {
		if err := backend(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "demo backend:", err)
			os.Exit(1)
		}
		return
	}
	if err := fleet(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func backend(args []string) error {
	fs := flag.NewFlagSet("backend", flag.ContinueOnError)
	name := fs.String("name", "alpha", "backend name")
	listen := fs.String("listen", "127.0.0.1:9101", "listen address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	b := demobackend.New(*name, nil)
	if err := b.Start(*listen); err != nil {
		return err
	}
	defer b.Stop()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return nil
}

// listenAddrs are every address the demo fleet listens on, checked
// before anything starts: the two backends, the embedded NATS, the
// controller's admin API, the edge's MCP endpoint and its admin API.
var listenAddrs = []struct{ addr, who string }{
	{"127.0.0.1:9101", "demo backend alpha"},
	{"127.0.0.1:9102", "demo backend beta"},
	{"127.0.0.1:4222", "controller embedded NATS (--nats-listen)"},
	{"127.0.0.1:8081", "controller admin API (--admin-listen)"},
	{"127.0.0.1:8080", "edge MCP endpoint (--listen)"},
	{"127.0.0.1:8082", "edge admin API (--admin-listen)"},
}

// errPortTaken reports a listen address another process holds.
var errPortTaken = errors.New("port already in use")

// checkPorts binds and releases every listen address, so a second
// `make run` fails before it starts anything.
func checkPorts() error {
	var errs []error
	for _, l := range listenAddrs {
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s for the %s: %w (%v)", l.addr, l.who, errPortTaken, err))
			continue
		}
		ln.Close()
	}
	return errors.Join(errs...)
}

// child is one process of the fleet; done closes when it has exited.
type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func fleet() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := checkPorts(); err != nil {
		return fmt.Errorf("cannot start, stop whatever holds these ports (a demo already running?):\n%w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	bin := envOr("FLEETGATE_DEMO_BIN", "bin")
	dataDir, err := os.MkdirTemp("", "fleetgate-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dataDir)
	config := envOr("FLEETGATE_DEMO_CONFIG", filepath.Join("test", "demo", "fleet.yaml"))

	var procs []*child
	exited := make(chan *child, 8)
	start := func(name string, path string, args ...string) (*exec.Cmd, error) {
		cmd := exec.Command(path, args...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		// Its own process group: a terminal's Ctrl-C reaches the demo
		// only, which stops the children in order and waits for them.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("start %s: %w", name, err)
		}
		c := &child{name: name, cmd: cmd, done: make(chan struct{})}
		procs = append(procs, c)
		go func() {
			c.err = cmd.Wait()
			close(c.done)
			exited <- c
		}()
		return cmd, nil
	}
	defer func() { stopAll(procs) }()
	// early returns an error when a child has exited or ctx is done.
	early := func() error {
		select {
		case c := <-exited:
			return fmt.Errorf("%s (pid %d) exited early: %v", c.name, c.cmd.Process.Pid, exitText(c.err))
		default:
			return ctx.Err()
		}
	}
	alpha, err := start("alpha", self, "backend", "--name", "alpha", "--listen", "127.0.0.1:9101")
	if err != nil {
		return err
	}
	beta, err := start("beta", self, "backend", "--name", "beta", "--listen", "127.0.0.1:9102")
	if err != nil {
		return err
	}
	if _, err := start("controller", filepath.Join(bin, "controller"), "--config", config, "--data-dir", filepath.Join(dataDir, "controller"),
		"--log-format", "console"); err != nil {
		return err
	}
	// The embedded NATS refuses unauthenticated clients: the edge uses
	// the seed the controller writes on its first start.
	seed := filepath.Join(dataDir, "controller", "nats", "edge.seed")
	if err := waitFor(ctx, early, 30*time.Second, func() bool { _, err := os.Stat(seed); return err == nil }); err != nil {
		return fmt.Errorf("controller wrote no edge seed %s: %w", seed, err)
	}
	if _, err := start("edge", filepath.Join(bin, "edge"), "--log-format", "console", "--nats-nkey-seed", seed); err != nil {
		return err
	}
	if err := waitFor(ctx, early, 30*time.Second, func() bool { return ready("http://127.0.0.1:8082/readyz") }); err != nil {
		return fmt.Errorf("edge not ready: %w", err)
	}
	if f := os.Getenv("FLEETGATE_DEMO_PIDFILE"); f != "" {
		var b strings.Builder
		for _, c := range procs {
			fmt.Fprintf(&b, "%s %d\n", c.name, c.cmd.Process.Pid)
		}
		if err := os.WriteFile(f, []byte(b.String()), 0o600); err != nil {
			return fmt.Errorf("write pid file: %w", err)
		}
	}
	fmt.Printf(`
fleetgate demo is running.

  MCP URL:          http://127.0.0.1:8080/mcp
  controller admin: http://127.0.0.1:8081/v1/state
  edge admin:       http://127.0.0.1:8082/v1/sessions

  Demo backends: alpha (pid %d, :9101), beta (pid %d, :9102).
  Kill one (kill %d) and watch its tools disappear from a connected client;
  restart it with: go run ./test/demo backend --name alpha --listen 127.0.0.1:9101
  (the demo itself stops only if the controller or the edge exits).

Ctrl-C stops everything.
`, alpha.Process.Pid, beta.Process.Pid, alpha.Process.Pid)
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(os.Stderr, "demo: stopping")
			return nil
		case c := <-exited:
			if c.name == "alpha" || c.name == "beta" {
				// The point of the demo: a backend going away is shown
				// to clients, the fleet keeps running.
				fmt.Fprintf(os.Stderr, "demo: backend %s (pid %d) exited: %v\n", c.name, c.cmd.Process.Pid, exitText(c.err))
				continue
			}
			return fmt.Errorf("%s (pid %d) exited: %v; stopping everything", c.name, c.cmd.Process.Pid, exitText(c.err))
		}
	}
}

// stopAll sends SIGTERM to every running child, newest first, waits up
// to 15 s for each, then kills its process group.
func stopAll(procs []*child) {
	for i := len(procs) - 1; i >= 0; i-- {
		c := procs[i]
		select {
		case <-c.done:
			continue
		default:
		}
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(15 * time.Second):
			fmt.Fprintf(os.Stderr, "demo: %s (pid %d) did not stop in 15s, killing it\n", c.name, c.cmd.Process.Pid)
			_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			<-c.done
		}
	}
	// Anything a child left in its group goes too.
	for _, c := range procs {
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	}
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

func ready(url string) bool {
	cl := http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// waitFor polls cond until it holds, d passes, or early reports a child
// gone or ctx done.
func waitFor(ctx context.Context, early func() error, d time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return nil
		}
		if err := early(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return errors.New("timed out")
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
