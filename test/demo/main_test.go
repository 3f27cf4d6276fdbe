package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// binaries builds the demo, the controller and the edge once per test
// binary into a temporary directory.
func binaries(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "fleetgate-demo-test-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", buildDir+string(os.PathSeparator), "../../cmd/controller", "../../cmd/edge", ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// checkPorts checks the demo's default ports.
func checkPorts() error {
	o, err := parseFlags(nil, io.Discard)
	if err != nil {
		return err
	}
	return o.checkPorts()
}

func demoCmd(t *testing.T, ctx context.Context, pidFile string) (*exec.Cmd, *lockedBuffer) {
	dir := binaries(t)
	config, err := filepath.Abs("fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "demo"))
	cmd.Env = append(os.Environ(), "FLEETGATE_DEMO_BIN="+dir, "FLEETGATE_DEMO_CONFIG="+config, "FLEETGATE_DEMO_PIDFILE="+pidFile)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	return cmd, out
}

// lockedBuffer is the demo's output: written by the command's copier
// while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestPortTaken: with one of the demo's ports held, the demo exits
// non-zero at once, naming the port, and starts nothing.
func TestPortTaken(t *testing.T) {
	const addr = "127.0.0.1:8082"
	if ln, err := net.Listen("tcp", addr); err == nil {
		defer ln.Close()
	} // else someone else holds it, which must fail the demo just the same
	binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pidFile := filepath.Join(t.TempDir(), "pids")
	cmd, out := demoCmd(t, ctx, pidFile)
	startAt := time.Now()
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("demo with %s taken: err %v, want a non-zero exit; output:\n%s", addr, err, out)
	}
	if !strings.Contains(out.String(), addr) || !strings.Contains(out.String(), "in use") {
		t.Fatalf("output does not name %s as in use:\n%s", addr, out)
	}
	if strings.Contains(out.String(), "demo is running") {
		t.Fatalf("demo claims to be running:\n%s", out)
	}
	if _, err := os.Stat(pidFile); err == nil {
		t.Fatal("demo started processes despite the taken port")
	}
	t.Logf("failed in %v: %s", time.Since(startAt), strings.TrimSpace(out.String()))
}

// TestInterruptStopsEverything: SIGINT to a running demo ends it with
// exit 0 and leaves none of its children alive.
func TestInterruptStopsEverything(t *testing.T) {
	if err := checkPorts(); err != nil {
		t.Skipf("demo ports busy on this machine: %v", err)
	}
	binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd, out, done, pids := startDemo(t, ctx)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("demo after SIGINT: %v\n%s", err, out)
		}
	case <-ctx.Done():
		t.Fatalf("demo did not stop after SIGINT\n%s", out)
	}
	t.Logf("stopped %v; output tail:\n%s", pids, tail(out.String(), 6))
	for name, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s (pid %d) still exists after the demo stopped: %v", name, pid, err)
		}
	}
	if err := checkPorts(); err != nil {
		t.Errorf("ports still held after the demo stopped: %v", err)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// startDemo starts the demo and returns once every child runs, with
// their PIDs by name (alpha, beta, controller, edge).
func startDemo(t *testing.T, ctx context.Context) (*exec.Cmd, *lockedBuffer, chan error, map[string]int) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pids")
	cmd, out := demoCmd(t, ctx, pidFile)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var pids map[string]int
	for pids == nil {
		select {
		case err := <-done:
			t.Fatalf("demo exited before it was running: %v\n%s", err, out)
		case <-time.After(100 * time.Millisecond):
		}
		b, err := os.ReadFile(pidFile)
		if err != nil || !bytes.HasSuffix(b, []byte("\n")) {
			continue
		}
		pids = map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			name, pid, _ := strings.Cut(line, " ")
			n, err := strconv.Atoi(pid)
			if err != nil {
				t.Fatalf("pid file line %q: %v", line, err)
			}
			pids[name] = n
		}
	}
	for _, name := range []string{"alpha", "beta", "controller", "edge"} {
		if pids[name] == 0 {
			t.Fatalf("pid file lacks %s: %v", name, pids)
		}
		if err := syscall.Kill(pids[name], 0); err != nil {
			t.Fatalf("%s (pid %d) not alive while the demo runs: %v", name, pids[name], err)
		}
	}
	return cmd, out, done, pids
}

// TestChildExitStopsEverything: when the edge dies, the demo stops the
// rest and exits non-zero naming it.
func TestChildExitStopsEverything(t *testing.T) {
	if err := checkPorts(); err != nil {
		t.Skipf("demo ports busy on this machine: %v", err)
	}
	binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, out, done, pids := startDemo(t, ctx)
	if err := syscall.Kill(pids["edge"], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Fatalf("demo after its edge died: %v, want a non-zero exit\n%s", err, out)
		}
	case <-ctx.Done():
		t.Fatalf("demo kept running after its edge died\n%s", out)
	}
	if !strings.Contains(out.String(), "edge (pid") || !strings.Contains(out.String(), "stopping everything") {
		t.Fatalf("output does not say the edge exited:\n%s", out)
	}
	for name, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s (pid %d) still exists after the demo stopped: %v", name, pid, err)
		}
	}
}
