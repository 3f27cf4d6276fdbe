package test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/controller"
	"github.com/fleetgate/fleetgate/pkg/demobackend"
)

// A killed backend becomes unadvertisable within the probe timeout (the
// dropped connection is a failure at once); restarted, it is advertised
// again; a hung backend goes unhealthy after unhealthy_after intervals.
func TestControllerBackendLifecycle(t *testing.T) {
	node := startNATS(t)
	alpha := startBackend(t, "alpha", nil)
	beta := startBackend(t, "beta", nil)
	interval := 200 * time.Millisecond
	startController(t, node.ClientURL(), "c1", fleetYAML(interval, 100*time.Millisecond, alpha, beta))
	el := followLog(t, node.ClientURL())

	el.waitEvent(t, 0, 20*time.Second, "alpha advertised", healthOf("alpha", true))
	i, _, _ := el.waitEvent(t, 0, 20*time.Second, "beta advertised", healthOf("beta", true))
	// The catalog is published before the backend is advertised.
	ci, cat, _ := el.waitEvent(t, 0, time.Second, "alpha catalog", catalogOf("alpha"))
	if ai, _, _ := el.find(0, healthOf("alpha", true)); ci > ai {
		t.Fatalf("alpha advertised (event %d) before its catalog (event %d)", ai, ci)
	}
	if cat.GetCatalogChanged().Digest == "" {
		t.Fatal("catalog event without digest")
	}

	killed := time.Now()
	alpha.Stop()
	_, ev, at := el.waitEvent(t, i, 10*time.Second, "alpha unadvertised", healthOf("alpha", false))
	if d := at.Sub(killed); d > interval/2+time.Second {
		t.Fatalf("alpha unadvertised %s after its server closed; want within the probe timeout", d)
	}
	t.Logf("backend closed -> event applied by a reader: %s (%s: %s)", at.Sub(killed), ev.GetHealthChanged().To, ev.GetHealthChanged().Reason)

	if err := alpha.Restart(); err != nil {
		t.Fatal(err)
	}
	j, _, _ := el.waitEvent(t, i, 20*time.Second, "alpha advertised again", healthOf("alpha", true))

	// Hung: connections stay open, pings time out.
	beta.SetHang(true)
	hung := time.Now()
	_, ev, at = el.waitEvent(t, j, 20*time.Second, "beta unadvertised", healthOf("beta", false))
	t.Logf("hung backend -> unadvertised after %s (%s)", at.Sub(hung), ev.GetHealthChanged().Reason)
	beta.SetHang(false)
	el.waitEvent(t, j, 20*time.Second, "beta advertised again", healthOf("beta", true))
}

// A backend that changes its tools and sends list_changed yields a catalog
// event within one second.
func TestControllerCatalogChange(t *testing.T) {
	node := startNATS(t)
	alpha := startBackend(t, "alpha", nil)
	startController(t, node.ClientURL(), "c1", fleetYAML(time.Second, 100*time.Millisecond, alpha))
	el := followLog(t, node.ClientURL())
	i, _, _ := el.waitEvent(t, 0, 20*time.Second, "alpha advertised", healthOf("alpha", true))
	changed := time.Now()
	alpha.AddTool(&mcp.Tool{Name: "weather", Description: "Current weather for a city.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)})
	_, ev, at := el.waitEvent(t, i, 5*time.Second, "catalog change", catalogOf("alpha"))
	if d := at.Sub(changed); d > time.Second {
		t.Fatalf("catalog event %s after the tool change, want under 1s", d)
	}
	s := el.r.State()
	if names := s.Backend("default", "alpha").Catalog.ToolNames(); !slices.Contains(names, "weather") {
		t.Fatalf("catalog %v lacks the new tool (event %d)", names, ev.Generation)
	}
}

// A backend with 2,500 tools across 25 pages is discovered completely and
// its catalog event fits the stream.
func TestControllerLargeCatalog(t *testing.T) {
	node := startNATS(t)
	big := startBackend(t, "big", &demobackend.Options{ExtraTools: 2498, PageSize: 100})
	startController(t, node.ClientURL(), "c1", fleetYAML(time.Second, 100*time.Millisecond, big))
	el := followLog(t, node.ClientURL())
	el.waitEvent(t, 0, 30*time.Second, "big advertised", healthOf("big", true))
	if n := len(el.r.State().Backend("default", "big").Catalog.Tools); n != 2500 {
		t.Fatalf("discovered %d tools, want 2500", n)
	}
}

// Runtime PUT and DELETE, and a SIGHUP-style reload, publish the right
// events and answer with the new generation.
func TestControllerMembershipChanges(t *testing.T) {
	node := startNATS(t)
	alpha := startBackend(t, "alpha", nil)
	beta := startBackend(t, "beta", nil)
	gamma := startBackend(t, "gamma", nil)
	c := startController(t, node.ClientURL(), "c1", fleetYAML(200*time.Millisecond, 100*time.Millisecond, alpha))
	el := followLog(t, node.ClientURL())
	el.waitEvent(t, 0, 20*time.Second, "alpha advertised", healthOf("alpha", true))
	eventually(t, 10*time.Second, "leader", c.c.Leading)

	var put map[string]uint64
	if code := httpJSON(t, "PUT", c.admin+"/v1/groups/default/backends/beta", `{"url":"`+beta.URL()+`"}`, &put); code != 200 {
		t.Fatalf("PUT beta: %d", code)
	}
	i, ev, _ := el.waitEvent(t, 0, 10*time.Second, "beta added", kindOf("backend_added", "beta"))
	if put["generation"] < ev.Generation {
		t.Fatalf("PUT answered generation %d before the add event %d", put["generation"], ev.Generation)
	}
	el.waitEvent(t, i, 20*time.Second, "beta advertised", healthOf("beta", true))

	var errBody map[string]string
	if code := httpJSON(t, "PUT", c.admin+"/v1/groups/default/backends/Bad_Name", `{"url":"http://x/mcp"}`, &errBody); code != 400 {
		t.Fatalf("PUT bad name: %d %v", code, errBody)
	}
	if code := httpJSON(t, "PUT", c.admin+"/v1/groups/default/backends/delta", `{"url":"ftp://x"}`, &errBody); code != 400 {
		t.Fatalf("PUT bad url: %d %v", code, errBody)
	}
	if code := httpJSON(t, "DELETE", c.admin+"/v1/groups/default/backends/nope", "", &errBody); code != 404 {
		t.Fatalf("DELETE unknown: %d %v", code, errBody)
	}

	var del map[string]uint64
	if code := httpJSON(t, "DELETE", c.admin+"/v1/groups/default/backends/beta", "", &del); code != 200 {
		t.Fatalf("DELETE beta: %d", code)
	}
	_, ev, _ = el.waitEvent(t, i, 10*time.Second, "beta removed", kindOf("backend_removed", "beta"))
	if del["generation"] < ev.Generation {
		t.Fatalf("DELETE answered %d, before the removal %d", del["generation"], ev.Generation)
	}

	// Reload: the file now lists gamma instead of alpha.
	n := el.len()
	if err := os.WriteFile(c.path, []byte(fleetYAML(200*time.Millisecond, 100*time.Millisecond, gamma)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.c.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	el.waitEvent(t, n, 10*time.Second, "alpha removed", kindOf("backend_removed", "alpha"))
	el.waitEvent(t, n, 10*time.Second, "gamma added", kindOf("backend_added", "gamma"))
	el.waitEvent(t, n, 20*time.Second, "gamma advertised", healthOf("gamma", true))

	var st controller.StateJSON
	httpJSON(t, "GET", c.admin+"/v1/state", "", &st)
	if len(st.Groups) != 1 || len(st.Groups[0].Backends) != 1 || st.Groups[0].Backends[0].Name != "gamma" ||
		!slices.Equal(st.Groups[0].Backends[0].Tools, []string{"add", "echo"}) || st.Generation == 0 {
		t.Fatalf("state after reload: %+v", st)
	}
	var view controller.ViewJSON
	httpJSON(t, "GET", c.admin+"/v1/groups/default/view", "", &view)
	if len(view.Tools) != 2 || view.Digest == "" {
		t.Fatalf("view: %+v", view)
	}
	// Everything an operator graphs is exported.
	resp, err := http.Get(c.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, name := range []string{"fleetgate_prober_probes_total", "fleetgate_prober_probe_seconds", "fleetgate_controller_backends",
		"fleetgate_events_published_total", "fleetgate_events_applied_generation", "fleetgate_outbox_depth", "fleetgate_controller_leader"} {
		if !strings.Contains(string(body), name) {
			t.Errorf("metrics lack %s", name)
		}
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "fleetgate_events_applied_generation "); ok && (v == "0" || v == "") {
			t.Errorf("current generation metric is %q", v)
		}
		if v, ok := strings.CutPrefix(line, "fleetgate_controller_leader "); ok && v != "1" {
			t.Errorf("leader metric is %q on the leader", v)
		}
	}

	// A bad reload is refused and the running config stays.
	if err := os.WriteFile(c.path, []byte("groups: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.c.Reload(t.Context()); err == nil {
		t.Fatal("bad config reloaded")
	}
	if _, ok := c.c.Fleet().Backend("default", "gamma"); !ok {
		t.Fatal("running config lost after a refused reload")
	}
}
