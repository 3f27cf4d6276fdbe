package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseFlags(t *testing.T) {
	env := map[string]string{"FLEETGATE_ADMIN_LISTEN": "127.0.0.1:9999", "FLEETGATE_CONFIG": "/etc/fleet.yaml"}
	o, err := parse([]string{"--id", "c7"}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if o.adminListen != "127.0.0.1:9999" || o.configPath != "/etc/fleet.yaml" || o.id != "c7" || o.natsListen != "127.0.0.1:4222" {
		t.Fatalf("options %+v", o)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "-config is required"},
		{[]string{"--config", "x", "--replicas", "9"}, "-replicas"},
		{[]string{"--config", "x", "--log-format", "xml"}, "-log-format"},
		{[]string{"--config", "x", "--lease-ttl", "soon"}, "-lease-ttl"},
	} {
		if _, err := parse(c.args, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want it to name %q", c.args, err, c.want)
		}
	}
}

// The binary exits non-zero with one line on stderr naming the field of a
// bad config.
func TestBadConfigExits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "controller")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cfg := filepath.Join(t.TempDir(), "fleet.yaml")
	bad := "groups:\n  - name: default\n    backends:\n      - name: alpha\n        url: http://127.0.0.1:9101/mcp\n        colour: red\n"
	if err := os.WriteFile(cfg, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", cfg, "--data-dir", t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil || cmd.ProcessState.ExitCode() != 2 {
		t.Fatalf("exit %v, want 2", err)
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "fleet.yaml:6") || !strings.Contains(lines[0], "colour") {
		t.Fatalf("stderr %q: want one line naming the file, line 6 and the key", stderr.String())
	}
}
