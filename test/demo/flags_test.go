package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHelp: --help and -h print the usage, naming every port flag, and
// exit 0 at once without starting anything.
func TestHelp(t *testing.T) {
	dir := binaries(t)
	for _, arg := range []string{"--help", "-h"} {
		pidFile := filepath.Join(t.TempDir(), "pids")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cmd := exec.CommandContext(ctx, filepath.Join(dir, "demo"), arg, "--pid-file", pidFile)
		cmd.Env = append(os.Environ(), "FLEETGATE_DEMO_BIN="+dir)
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("demo %s: %v\n%s", arg, err, out)
		}
		for _, want := range []string{"Usage: demo", "-alpha-listen", "-beta-listen", "-nats-listen", "-controller-admin-listen",
			"-edge-listen", "-edge-admin-listen", "-port-offset"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("demo %s does not mention %s:\n%s", arg, want, out)
			}
		}
		if strings.Contains(string(out), "demo is running") {
			t.Fatalf("demo %s started the fleet:\n%s", arg, out)
		}
		if _, err := os.Stat(pidFile); err == nil {
			t.Fatalf("demo %s started processes", arg)
		}
	}
	// A bad flag is an error (exit 2) naming it.
	out, err := exec.Command(filepath.Join(dir, "demo"), "--edge-listen", "8080").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "-edge-listen") {
		t.Fatalf("demo --edge-listen 8080: %v\n%s", err, out)
	}
}

func TestParsePortOffset(t *testing.T) {
	o, err := parseFlags([]string{"--port-offset", "100", "--edge-listen", "127.0.0.1:7000"}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	got := []string{o.alpha, o.beta, o.nats, o.controllerAdmin, o.edge, o.edgeAdmin}
	want := []string{"127.0.0.1:9201", "127.0.0.1:9202", "127.0.0.1:4322", "127.0.0.1:8181", "127.0.0.1:7000", "127.0.0.1:8182"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("addresses %v, want %v", got, want)
	}
	if _, err := parseFlags([]string{"--port-offset", "70000"}, os.Stderr); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Fatalf("offset 70000: %v", err)
	}
}

// TestPortsByFlags: the demo runs on ports given by flags (free ones, so
// it runs beside a demo on the default ports): its backends are probed
// at their addresses, the edge answers on its own, the banner names them,
// and Ctrl-C stops it all.
func TestPortsByFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the demo fleet")
	}
	binaries(t)
	free := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().String()
	}
	alpha, beta, natsAddr, ctlAdmin, edge, edgeAdmin := free(), free(), free(), free(), free(), free()
	config, err := filepath.Abs("fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	pidFile := filepath.Join(t.TempDir(), "pids")
	cmd, out := demoCmd(t, ctx, pidFile)
	cmd.Args = append(cmd.Args, "--alpha-listen", alpha, "--beta-listen", beta, "--nats-listen", natsAddr,
		"--controller-admin-listen", ctlAdmin, "--edge-listen", edge, "--edge-admin-listen", edgeAdmin, "--config", config)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	healthy := func() bool {
		resp, err := http.Get("http://" + ctlAdmin + "/v1/state")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var st struct {
			Groups []struct {
				Backends []struct{ Name, URL, Status string }
			}
		}
		if json.NewDecoder(resp.Body).Decode(&st) != nil || len(st.Groups) != 1 || len(st.Groups[0].Backends) != 3 {
			return false
		}
		for _, b := range st.Groups[0].Backends {
			if b.Status != "healthy" {
				return false
			}
			if b.Name == "notes" { // the stdio backend: no URL
				continue
			}
			want := map[string]string{"alpha": alpha, "beta": beta}[b.Name]
			if b.URL != "http://"+want+"/mcp" {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(60 * time.Second); !healthy() || !ready("http://"+edgeAdmin+"/readyz"); time.Sleep(200 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("demo exited: %v\n%s", err, out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("demo on the flags' ports not healthy and ready\n%s", out)
		}
	}
	// The MCP endpoint answers on -edge-listen (a GET without a session
	// is refused by MCP, not by the network).
	if resp, err := http.Get("http://" + edge + "/mcp"); err != nil {
		t.Fatalf("MCP endpoint on %s: %v", edge, err)
	} else {
		resp.Body.Close()
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "demo is running"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no banner:\n%s", out)
		}
	}
	for _, want := range []string{"http://" + edge + "/mcp", "http://" + ctlAdmin + "/v1/state", alpha, beta} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("banner does not name %s", want)
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("demo after SIGINT: %v\n%s", err, tail(out.String(), 10))
		}
	case <-ctx.Done():
		t.Fatalf("demo did not stop\n%s", out)
	}
	b, _ := os.ReadFile(pidFile)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		name, pid, _ := strings.Cut(line, " ")
		var n int
		if _, err := fmt.Sscan(pid, &n); err == nil {
			if err := syscall.Kill(n, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("%s (pid %d) still exists after the demo stopped", name, n)
			}
		}
	}
}
