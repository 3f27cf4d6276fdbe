package test

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/controller"
)

// TestControllerSIGHUPReloadsPolicy: the controller binary, started with a
// config file whose authorization section hides one tool, re-reads the
// file on SIGHUP: GET /v1/state and GET /v1/authorization show the new
// section at a new generation, the process keeps running and leading,
// and a live session on an edge of its NATS gets tools list_changed and
// the tools the new section allows.
func TestControllerSIGHUPReloadsPolicy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the controller binary")
	}
	node := startNATS(t)
	alpha := startBackend(t, "alpha", nil)
	base := fleetYAML(200*time.Millisecond, 100*time.Millisecond, alpha)
	withPolicy := func(rule, tool string) []byte {
		return []byte(base + "authorization:\n  default: allow\n  rules:\n    - name: " + rule +
			"\n      effect: deny\n      tools: [\"" + tool + "\"]\n")
	}
	cfg := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(cfg, withPolicy("hide-add", "alpha_add"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startControllerProc(t, node.ClientURL(), "ctl-hup", cfg)
	eventually(t, 30*time.Second, "the controller leads", p.leading)

	state := func() (controller.StateJSON, bool) {
		var st controller.StateJSON
		resp, err := http.Get(p.admin + "/v1/state")
		if err != nil {
			return st, false
		}
		defer resp.Body.Close()
		return st, resp.StatusCode == 200 && decodeJSON(resp, &st) == nil
	}
	ruleOf := func(a controller.AuthorizationJSON) string {
		if a.Section == nil || len(a.Section.Rules) != 1 {
			return ""
		}
		return a.Section.Rules[0].Name
	}
	var st controller.StateJSON
	eventually(t, 20*time.Second, "state shows the config's policy", func() bool {
		var ok bool
		st, ok = state()
		return ok && ruleOf(st.Authorization) == "hide-add" && st.Authorization.Generation > 0
	})
	first := st.Authorization

	e := startEdge(t, node.ClientURL())
	cl := connectMCP(t, e.MCPURL(), "2025-11-25")
	eventually(t, 20*time.Second, "the session lists alpha_echo, not alpha_add", func() bool {
		names := cl.tools(t)
		return slices.Contains(names, "alpha_echo") && !slices.Contains(names, "alpha_add")
	})

	// Change the file's section and send SIGHUP.
	before := cl.changed.Load()
	if err := os.WriteFile(cfg, withPolicy("hide-echo", "alpha_echo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "state shows the reloaded policy", func() bool {
		var ok bool
		st, ok = state()
		return ok && ruleOf(st.Authorization) == "hide-echo"
	})
	if st.Authorization.Generation <= first.Generation || st.Generation < st.Authorization.Generation {
		t.Fatalf("reloaded policy at generation %d (state at %d), the config's at %d",
			st.Authorization.Generation, st.Generation, first.Generation)
	}
	if st.Authorization.Digest == "" || st.Authorization.Digest == first.Digest {
		t.Fatalf("reloaded policy digest %q, the config's %q", st.Authorization.Digest, first.Digest)
	}
	if !st.Leader {
		t.Fatal("the controller no longer leads after SIGHUP")
	}
	var got controller.AuthorizationJSON
	if code := httpJSON(t, "GET", p.admin+"/v1/authorization", "", &got); code != 200 ||
		got.Generation != st.Authorization.Generation || ruleOf(got) != "hide-echo" {
		t.Fatalf("GET /v1/authorization: %d %+v", code, got)
	}

	eventually(t, 20*time.Second, "list_changed for the reloaded policy", func() bool { return cl.changed.Load() > before })
	eventually(t, 10*time.Second, "the session lists alpha_add, not alpha_echo", func() bool {
		names := cl.tools(t)
		return slices.Contains(names, "alpha_add") && !slices.Contains(names, "alpha_echo")
	})
	if res, err := cl.call("alpha_add", map[string]any{"a": 1, "b": 2}); err != nil || res.IsError || text(res) != "3" {
		t.Fatalf("alpha_add after the reload: %v %+v", err, res)
	}
	if res, err := cl.call("alpha_echo", map[string]any{"text": "x"}); err == nil && !res.IsError {
		t.Fatalf("alpha_echo, hidden by the reloaded policy, answered %+v", res)
	}
	if _, ok := state(); !ok {
		t.Fatal("the controller's admin API stopped answering after SIGHUP")
	}
}
