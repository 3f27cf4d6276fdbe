package test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/controller"
	"github.com/fleetgate/fleetgate/pkg/stdio"
)

// stdioFleet writes the allow-list (the demo backend run as a stdio
// command: entry "demo") and a fleet config of the stdio backends named,
// each running that entry, and returns their paths.
func stdioFleet(t testing.TB, backends ...string) (commands, fleet string) {
	t.Helper()
	dir := t.TempDir()
	demo := binaryOf(t, "demo", "./demo")
	commands = filepath.Join(dir, "commands.yaml")
	if err := os.WriteFile(commands, []byte(fmt.Sprintf("demo: [%q, backend, --name, files, --stdio]\n", demo)), 0o644); err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	sb.WriteString("groups:\n  - name: default\n    backends:\n")
	for _, b := range backends {
		fmt.Fprintf(&sb, "      - name: %s\n        transport: stdio\n        command: demo\n", b)
	}
	sb.WriteString("health:\n  interval: 1s\n  timeout: 5s\n  debounce: 100ms\n")
	fleet = filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(fleet, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return commands, fleet
}

// stdioStatus is an edge's GET /v1/sessions/stdio.
func stdioStatus(t *testing.T, admin string) map[string]stdio.Status {
	t.Helper()
	var body struct {
		Instances []stdio.Status `json:"instances"`
	}
	if err := json.Unmarshal([]byte(get(t, "http://"+admin+"/v1/sessions/stdio")), &body); err != nil {
		t.Fatal(err)
	}
	out := map[string]stdio.Status{}
	for _, s := range body.Instances {
		out[s.Backend] = s
	}
	return out
}

func alive(pid int) bool { return pid > 0 && !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }

// TestStdioBackendTwoEdges: the demo backend run as a stdio command, with
// the controller probing its own instance and two edges each running
// their own: calls through both edges reach it; its process killed on one
// edge, that edge restarts it (counted in its metrics) while the other's
// keeps its process and answers throughout; an admin PUT naming a command
// outside the controller's allow-list is refused with 400 naming it, and
// so is a config (the controller exits naming it); an edge SIGKILLed
// leaves no orphan; and an edge whose process cap is reached runs no
// more, saying so.
func TestStdioBackendTwoEdges(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	commands, fleet := stdioFleet(t, "files", "files2")
	node := startNATS(t)
	admin := freeAddr(t)
	startLoggedProc(t, "controller", nil, "--config", fleet, "--nats-url", node.ClientURL(), "--id", "stdio-ctl",
		"--admin-listen", admin, "--data-dir", t.TempDir(), "--lease-ttl", "1s", "--log-format", "json", "--stdio-commands", commands)
	ctlAdmin := "http://" + admin
	eventually(t, 30*time.Second, "both stdio backends advertised", func() bool {
		var st controller.StateJSON
		resp, err := http.Get(ctlAdmin + "/v1/state")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		if decodeJSON(resp, &st) != nil || len(st.Groups) != 1 || len(st.Groups[0].Backends) != 2 {
			return false
		}
		return st.Groups[0].Backends[0].Advertisable && st.Groups[0].Backends[1].Advertisable
	})

	type edgeProc struct {
		p            *loggedProc
		mcp, admin   string
		client       *mcpClient
		filesPID     int
		files2Status stdio.Status
	}
	startEdge := func(id string, extra ...string) *edgeProc {
		listen, eadmin := freeAddr(t), freeAddr(t)
		args := append([]string{"--nats-url", node.ClientURL(), "--listen", listen, "--admin-listen", eadmin, "--id", id,
			"--log-format", "json", "--call-timeout", "5s", "--stdio-commands", commands}, extra...)
		e := &edgeProc{p: startLoggedProc(t, "edge", nil, args...), mcp: "http://" + listen + "/mcp", admin: eadmin}
		waitEdgeReady(t, eadmin)
		e.client = connectMCP(t, e.mcp, "")
		eventually(t, 20*time.Second, id+" serves files_echo", func() bool {
			res, err := e.client.call("files_echo", map[string]any{"text": "up"})
			return err == nil && !res.IsError
		})
		e.filesPID = stdioStatus(t, eadmin)["files"].PID
		return e
	}
	a, b := startEdge("stdio-a"), startEdge("stdio-b")
	if !alive(a.filesPID) || !alive(b.filesPID) || a.filesPID == b.filesPID {
		t.Fatalf("each edge runs its own instance: pids %d and %d", a.filesPID, b.filesPID)
	}

	// Kill edge a's process: a restarts it; b's is untouched and answers.
	if err := syscall.Kill(a.filesPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		res, err := b.client.call("files_echo", map[string]any{"text": fmt.Sprint("b ", i)})
		if err != nil || res.IsError || text(res) != fmt.Sprint("files: b ", i) {
			t.Fatalf("edge b while a's instance is down: %v %q", err, text(res))
		}
	}
	res, err := a.client.call("files_echo", map[string]any{"text": "a"})
	if err == nil && res.IsError && !strings.Contains(text(res), `backend "files"`) {
		t.Fatalf("edge a, instance down: the error does not name the backend: %q", text(res))
	}
	eventually(t, 20*time.Second, "edge a restarted its instance", func() bool {
		st := stdioStatus(t, a.admin)["files"]
		if st.PID == 0 || st.PID == a.filesPID || st.Restarts < 1 {
			return false
		}
		res, err := a.client.call("files_echo", map[string]any{"text": "again"})
		return err == nil && !res.IsError && text(res) == "files: again"
	})
	if st := stdioStatus(t, b.admin)["files"]; st.PID != b.filesPID || st.Restarts != 0 {
		t.Fatalf("edge b's instance was disturbed: %+v", st)
	}
	if m := get(t, "http://"+a.admin+"/metrics"); !strings.Contains(m, `fleetgate_stdio_restarts_total{backend="files"} 1`) {
		t.Errorf("edge a's metrics do not count the restart")
	}
	if m := get(t, "http://"+b.admin+"/metrics"); strings.Contains(m, `fleetgate_stdio_restarts_total{backend="files"}`) ||
		!strings.Contains(m, `fleetgate_stdio_up{backend="files"} 1`) {
		t.Errorf("edge b's metrics count a restart, or its instance down")
	}

	// An admin PUT naming a command outside the allow-list: 400 naming it.
	var errBody map[string]any
	if code := httpJSON(t, http.MethodPut, ctlAdmin+"/v1/groups/default/backends/evil", `{"transport":"stdio","command":"sh"}`, &errBody); code != http.StatusBadRequest ||
		!strings.Contains(fmt.Sprint(errBody), `"sh"`) {
		t.Fatalf("PUT of a command outside the allow-list: %d %v", code, errBody)
	}
	// A config naming one: the controller exits non-zero naming it.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	_ = os.WriteFile(bad, []byte("groups:\n  - name: default\n    backends:\n      - name: evil\n        transport: stdio\n        command: sh\n"), 0o644)
	out, err := exec.Command(binary(t, "controller"), "--config", bad, "--nats-url", node.ClientURL(), "--data-dir", t.TempDir(),
		"--admin-listen", freeAddr(t), "--stdio-commands", commands).CombinedOutput()
	if err == nil || !strings.Contains(string(out), `"sh"`) {
		t.Fatalf("a config naming a command outside the allow-list: %v\n%s", err, out)
	}

	// Edge b SIGKILLed: its processes do not outlive it.
	pids := []int{b.filesPID, stdioStatus(t, b.admin)["files2"].PID}
	if err := b.p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = b.p.cmd.Wait()
	eventually(t, 10*time.Second, "edge b's stdio processes gone", func() bool { return !alive(pids[0]) && !alive(pids[1]) })

	// An edge allowed one process: the second backend is refused by the cap.
	c := &edgeProc{}
	listen, cadmin := freeAddr(t), freeAddr(t)
	c.p = startLoggedProc(t, "edge", nil, "--nats-url", node.ClientURL(), "--listen", listen, "--admin-listen", cadmin, "--id", "stdio-c",
		"--log-format", "json", "--call-timeout", "5s", "--stdio-commands", commands, "--stdio-max-processes", "1")
	waitEdgeReady(t, cadmin)
	eventually(t, 20*time.Second, "edge c: one instance up, the other held by the cap", func() bool {
		st := stdioStatus(t, cadmin)
		up, capped := 0, 0
		for _, s := range st {
			if s.PID != 0 && alive(s.PID) {
				up++
			}
			if strings.Contains(s.LastError, stdio.ErrProcessCap.Error()) {
				capped++
			}
		}
		return len(st) == 2 && up == 1 && capped == 1
	})
}
