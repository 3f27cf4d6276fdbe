package stdio

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fleetgate/fleetgate/pkg/credential"
)

// runInstance runs inst until the test ends and checks Run returned.
func runInstance(t *testing.T, inst *Instance) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inst.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("Run did not return")
		}
	}
	t.Cleanup(stop)
	return stop
}

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command in parentheses; Z is a zombie.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func waitFor(t *testing.T, what string, d time.Duration, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestInstanceRestart: a real stdio server, killed, is started again; its
// environment is the clean one plus the entry's and the backend's
// variables; a call while it is down gets an error naming the backend.
func TestInstanceRestart(t *testing.T) {
	t.Setenv("FG_PARENT_ONLY", "must-not-leak")
	t.Setenv("FG_STDIO_TOKEN", "tok-123")
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	h := NewHost(helperCommands(), HostOptions{Logger: testLogger(t), Metrics: m,
		Policy: Policy{MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}})
	inst, err := h.Instance(Spec{Backend: "files", Command: "helper", Args: []string{"--extra", "x y"},
		Env: map[string]credential.Ref{"TOKEN": {Env: "FG_STDIO_TOKEN"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	runInstance(t, inst)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := inst.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	callJSON(t, ctx, cs, "pid", &pid)
	if st := inst.Status(); st.PID != pid || st.State != "up" {
		t.Fatalf("status %+v, process %d", st, pid)
	}
	var env, args []string
	callJSON(t, ctx, cs, "env", &env)
	if hasPrefix(env, "FG_PARENT_ONLY=") || !hasPrefix(env, "TOKEN=tok-123") || !hasPrefix(env, "FLEETGATE_STDIO_HELPER=server") || !hasPrefix(env, "PATH=") {
		t.Fatalf("environment %q", env)
	}
	callJSON(t, ctx, cs, "args", &args)
	if len(args) != 3 || args[1] != "--extra" || args[2] != "x y" {
		t.Fatalf("args %q", args)
	}
	if v := testutil.ToFloat64(m.up.WithLabelValues("files")); v != 1 {
		t.Fatalf("fleetgate_stdio_up %v", v)
	}

	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Down for a moment: a call then fails naming the backend (it may
	// also find the new process up already).
	waitFor(t, "the exit seen", 10*time.Second, func() bool { return inst.Status().State != "up" || inst.Status().PID != pid })
	if _, err := inst.Session(context.Background()); err != nil {
		if !errors.Is(err, ErrDown) || !strings.Contains(err.Error(), `"files"`) {
			t.Fatalf("call while down: %v", err)
		}
	}
	var pid2 int
	waitFor(t, "the restart", 10*time.Second, func() bool {
		cs, err := inst.Session(ctx)
		if err != nil {
			return false
		}
		callJSON(t, ctx, cs, "pid", &pid2)
		return true
	})
	if pid2 == pid || alive(pid) {
		t.Fatalf("pid %d then %d (old alive %v)", pid, pid2, alive(pid))
	}
	if st := inst.Status(); st.Restarts != 1 || !strings.Contains(st.LastError, "killed") {
		t.Fatalf("status after restart %+v", st)
	}
	if v := testutil.ToFloat64(m.restarts.WithLabelValues("files")); v != 1 {
		t.Fatalf("fleetgate_stdio_restarts_total %v", v)
	}
}

// TestInstanceStopGrace: a process that ignores the end of its stdin and
// SIGTERM is killed after the grace, and Run returns once it is gone.
func TestInstanceStopGrace(t *testing.T) {
	grace := 300 * time.Millisecond
	h := NewHost(helperCommands(), HostOptions{Logger: testLogger(t), Policy: Policy{Grace: grace}})
	inst, err := h.Instance(Spec{Backend: "stubborn", Command: "stubborn"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	stop := runInstance(t, inst)
	if _, err := inst.Session(context.Background()); err != nil {
		t.Fatal(err)
	}
	pid := inst.Status().PID
	start := time.Now()
	stop()
	if d := time.Since(start); d < grace {
		t.Fatalf("stopped in %v, before the grace", d)
	}
	if alive(pid) {
		t.Fatalf("process %d alive after Run returned", pid)
	}
	if h.Running() != 0 {
		t.Fatalf("%d processes counted", h.Running())
	}
}

// TestProcessCap: past the host's cap a start fails (and is retried).
func TestProcessCap(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := NewHost(helperCommands(), HostOptions{MaxProcesses: 1, Logger: testLogger(t), Metrics: NewMetrics(reg)})
	a, _ := h.Instance(Spec{Backend: "a", Command: "helper"}, nil)
	b, _ := h.Instance(Spec{Backend: "b", Command: "helper"}, nil)
	runInstance(t, a)
	if _, err := a.Session(context.Background()); err != nil {
		t.Fatal(err)
	}
	runInstance(t, b)
	waitFor(t, "b refused", 10*time.Second, func() bool { return strings.Contains(b.Status().LastError, "cap") })
	_, err := b.Session(context.Background())
	if !errors.Is(err, ErrDown) || !strings.Contains(err.Error(), "process cap") {
		t.Fatalf("b: %v", err)
	}
	if h.Running() != 1 {
		t.Fatalf("%d running", h.Running())
	}
}

// TestNotAllowed: only entries of the allow-list make an instance.
func TestNotAllowed(t *testing.T) {
	h := NewHost(helperCommands(), HostOptions{})
	for _, c := range []string{"/bin/sh", "sh", "nope", ""} {
		if _, err := h.Instance(Spec{Backend: "x", Command: c}, nil); err == nil {
			t.Fatalf("command %q made an instance", c)
		}
	}
}

// TestStartFailure: a program that exits at once is backed off and
// reported with its reason.
func TestStartFailure(t *testing.T) {
	h := NewHost(helperCommands(), HostOptions{Logger: testLogger(t), Policy: Policy{MinBackoff: 20 * time.Millisecond}})
	inst, _ := h.Instance(Spec{Backend: "f", Command: "false"}, nil)
	runInstance(t, inst)
	waitFor(t, "two failed starts", 10*time.Second, func() bool { return inst.Status().Restarts >= 2 })
	if _, err := inst.Session(context.Background()); !errors.Is(err, ErrDown) || !strings.Contains(err.Error(), "initialize") {
		t.Fatalf("Session: %v", err)
	}
}

// TestNoOrphan: when the host process is SIGKILLed, its stdio process
// dies with it (Pdeathsig), even one that ignores the end of its stdin and
// SIGTERM.
func TestNoOrphan(t *testing.T) {
	self, _ := os.Executable()
	host := exec.Command(self, "-test.run=^$")
	host.Env = append(os.Environ(), "FLEETGATE_STDIO_HELPER=host")
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = host.Process.Kill()
		t.Fatalf("host: %v", err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || !alive(child) {
		_ = host.Process.Kill()
		t.Fatalf("host said %q", line)
	}
	_ = host.Process.Kill()
	_ = host.Wait()
	waitFor(t, "the stdio process to die with its host", 10*time.Second, func() bool { return !alive(child) })
}
