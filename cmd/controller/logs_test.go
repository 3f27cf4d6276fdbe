package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The controller process's log: at the default level (info) no debug
// line, a backend that goes down is one warn line naming it with the old
// and new status and the reason, and a clean stop (SIGTERM) adds no
// warning; at --log-level debug the probe failures appear, their retry
// delay with a unit.
func TestLogsProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "controller")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cfg := filepath.Join(dir, "fleet.yaml")
	fleet := "groups:\n  - name: default\n    backends:\n      - name: alpha\n        url: http://127.0.0.1:9/mcp\n" +
		"health:\n  interval: 200ms\n  timeout: 100ms\n  unhealthy_after: 2\n  debounce: 100ms\n"
	if err := os.WriteFile(cfg, []byte(fleet), 0o600); err != nil {
		t.Fatal(err)
	}
	type line map[string]any
	run := func(t *testing.T, data string, extra ...string) []line {
		args := append([]string{"--config", cfg, "--data-dir", filepath.Join(dir, data), "--nats-listen", "127.0.0.1:0",
			"--admin-listen", "127.0.0.1:0", "--log-format", "json"}, extra...)
		cmd := exec.Command(bin, args...)
		logw := &logWriter{admin: make(chan string, 1)}
		cmd.Stderr = logw
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		parse := func() []line {
			var out []line
			for _, s := range strings.Split(logw.String(), "\n") {
				var l line
				if json.Unmarshal([]byte(s), &l) == nil {
					out = append(out, l)
				}
			}
			return out
		}
		unhealthy := func() bool {
			for _, l := range parse() {
				if l["message"] == "backend status changed" && l["to"] == "unhealthy" {
					return true
				}
			}
			return false
		}
		for deadline := time.Now().Add(60 * time.Second); !unhealthy(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatalf("no status change to unhealthy logged:\n%s", logw.String())
			}
		}
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("controller after SIGINT: %v\n%s", err, logw.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("controller did not stop\n%s", logw.String())
		}
		return parse()
	}

	t.Run("default", func(t *testing.T) {
		lines := run(t, "info")
		var changes int
		for _, l := range lines {
			switch {
			case l["message"] == "backend status changed":
				changes++
				if l["backend"] != "default/alpha" || l["from"] == nil || l["to"] == nil || !strings.Contains(l["reason"].(string), "connection refused") {
					t.Errorf("status line %v", l)
				}
				if l["to"] == "unhealthy" && l["level"] != "warn" {
					t.Errorf("a backend becoming unhealthy logged at %v", l["level"])
				}
			case l["level"] == "debug":
				t.Errorf("debug line at the default level: %v", l)
			case l["level"] != "info":
				t.Errorf("%v line on a clean run and stop: %v", l["level"], l)
			}
		}
		if changes == 0 {
			t.Fatal("no status change line")
		}
	})
	t.Run("debug", func(t *testing.T) {
		var retry string
		for _, l := range run(t, "debug", "--log-level", "debug") {
			if l["message"] == "backend connect failed" {
				retry, _ = l["retry_in"].(string)
			}
		}
		if _, err := time.ParseDuration(retry); err != nil {
			t.Fatalf("at debug, the probe failure's retry_in is %q, want a duration with its unit", retry)
		}
	})
}
