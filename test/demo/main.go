// Command demo starts a working fleet on this machine: two demo MCP
// backends (alpha on :9101, beta on :9102, each its own process), a
// controller with embedded NATS, and one edge; it prints the MCP URL and
// stops everything on Ctrl-C.
//
//	go run ./test/demo            # what `make run` does (after building bin/)
//	go run ./test/demo backend --name alpha --listen 127.0.0.1:9101
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
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

func fleet() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
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

	var procs []*exec.Cmd
	start := func(name string, path string, args ...string) (*exec.Cmd, error) {
		cmd := exec.Command(path, args...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("start %s: %w", name, err)
		}
		procs = append(procs, cmd)
		return cmd, nil
	}
	defer func() {
		for i := len(procs) - 1; i >= 0; i-- {
			_ = procs[i].Process.Signal(syscall.SIGTERM)
			_ = procs[i].Wait()
		}
	}()
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
	if _, err := start("edge", filepath.Join(bin, "edge"), "--log-format", "console"); err != nil {
		return err
	}
	if err := waitReady(ctx, "http://127.0.0.1:8082/readyz", 30*time.Second); err != nil {
		return fmt.Errorf("edge not ready: %w", err)
	}
	fmt.Printf(`
fleetgate demo is running.

  MCP URL:          http://127.0.0.1:8080/mcp
  controller admin: http://127.0.0.1:8081/v1/state
  edge admin:       http://127.0.0.1:8082/v1/sessions

  Demo backends: alpha (pid %d, :9101), beta (pid %d, :9102).
  Kill one (kill %d) and watch its tools disappear from a connected client;
  restart it with: go run ./test/demo backend --name alpha --listen 127.0.0.1:9101

Ctrl-C stops everything.
`, alpha.Process.Pid, beta.Process.Pid, alpha.Process.Pid)
	<-ctx.Done()
	return nil
}

func waitReady(ctx context.Context, url string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
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
