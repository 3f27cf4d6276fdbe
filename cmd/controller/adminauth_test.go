package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// A controller process started with --admin-token-file and
// --admin-allowed-hosts: 401 without the token, 403 for a foreign Host,
// 200 with both, /healthz open.
func TestAdminAuthProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "controller")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cfg := filepath.Join(dir, "fleet.yaml")
	tokenFile := filepath.Join(dir, "admin.token")
	for p, c := range map[string]string{
		cfg:       "groups:\n  - name: default\n    backends:\n      - name: alpha\n        url: http://127.0.0.1:9/mcp\n",
		tokenFile: "c0ntroller-t0ken\n",
	} {
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "--config", cfg, "--data-dir", filepath.Join(dir, "data"), "--nats-listen", "127.0.0.1:0",
		"--admin-listen", "127.0.0.1:0", "--log-format", "json", "--admin-allowed-hosts", "admin.test")
	cmd.Env = append(os.Environ(), "FLEETGATE_ADMIN_TOKEN_FILE="+tokenFile)
	logw := &logWriter{admin: make(chan string, 1)}
	cmd.Stderr = logw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	admin := logw.admin
	var base string
	select {
	case base = <-admin:
	case <-time.After(60 * time.Second):
		t.Fatal("the controller did not log its admin address")
	}
	port := base[strings.LastIndex(base, ":")+1:]
	get := func(path, host, token string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		if host != "" {
			req.Host = host
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), "c0ntroller-t0ken") {
			t.Errorf("%s: the answer carries the token", path)
		}
		return resp.StatusCode
	}
	for _, c := range []struct {
		path, host, token string
		want              int
	}{
		{"/v1/state", "", "", 401},
		{"/v1/state", "", "wrong", 401},
		{"/metrics", "", "", 401},
		{"/v1/state", "rebind.example:" + port, "c0ntroller-t0ken", 403},
		{"/v1/state", "localhost:1", "c0ntroller-t0ken", 403},
		{"/v1/state", "", "c0ntroller-t0ken", 200},
		{"/v1/state", "localhost:" + port, "c0ntroller-t0ken", 200},
		{"/v1/state", "admin.test:" + port, "c0ntroller-t0ken", 200},
		{"/v1/groups/default/view", "", "c0ntroller-t0ken", 200},
		{"/healthz", "", "", 200},
		{"/healthz", "rebind.example", "", 200},
		// The dashboard: its shell without the token, its data with it.
		{"/ui/", "", "", 200},
		{"/ui/js/app.js", "", "", 200},
		{"/ui/", "rebind.example:" + port, "", 403},
		{"/v1/edges", "", "", 401},
		{"/v1/events/recent", "", "", 401},
		{"/v1/stream", "", "", 401},
		{"/v1/edges", "", "c0ntroller-t0ken", 200},
		{"/v1/events/recent", "", "c0ntroller-t0ken", 200},
	} {
		if got := get(c.path, c.host, c.token); got != c.want {
			t.Errorf("GET %s Host %q token %q: %d, want %d", c.path, c.host, c.token, got, c.want)
		}
	}
	if strings.Contains(logw.String(), "c0ntroller-t0ken") {
		t.Error("the log carries the token")
	}
}

// logWriter keeps a process's stderr and sends the first admin address
// it logs.
type logWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	admin chan string
	sent  bool
}

func (l *logWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if !l.sent {
		for _, ln := range strings.Split(l.buf.String(), "\n") {
			var line struct{ Admin string }
			if json.Unmarshal([]byte(ln), &line) == nil && line.Admin != "" {
				l.admin <- line.Admin
				l.sent = true
				break
			}
		}
	}
	return len(p), nil
}

func (l *logWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func TestAdminFlags(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	_ = os.WriteFile(empty, []byte("\n"), 0o600)
	good := filepath.Join(dir, "good")
	_ = os.WriteFile(good, []byte("tok\n"), 0o600)
	none := func(string) string { return "" }
	o, err := parse([]string{"--config", "x", "--admin-token-file", good, "--admin-allowed-hosts", "a.example,b:1"}, none)
	if err != nil || string(o.adminToken) != "tok" || strings.Join(o.adminHosts, ",") != "a.example,b:1" {
		t.Fatalf("%+v %v", o, err)
	}
	for _, args := range [][]string{
		{"--config", "x", "--admin-token-file", empty},
		{"--config", "x", "--admin-token-file", filepath.Join(dir, "missing")},
		{"--config", "x", "--admin-allowed-hosts", "http://x"},
	} {
		if _, err := parse(args, none); err == nil || !strings.Contains(err.Error(), "-admin-") {
			t.Errorf("%v: err = %v, want it to name the flag", args, err)
		}
	}
}
