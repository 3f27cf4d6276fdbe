package test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/edge"
	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
	"github.com/fleetgate/fleetgate/pkg/region"
)

// regionProcs is the README's two regions as processes: controller a
// (embedded NATS accepting the leaf link) and controller b (dialling a's
// leaf listener through link, a TCP proxy standing for the network
// between the regions), each with default store flags, and an edge in
// each region merging both regions' logs for group default.
type regionProcs struct {
	link   *natstest.LinkProxy
	ctl    map[string]string // region: controller admin base URL
	edge   map[string]string // region: edge admin base URL
	mcp    map[string]string // region: edge MCP URL
	linked time.Time         // controller b ready: its NATS up and dialling a (the first link-up)
}

// startRegionProcs starts the two regions, alpha probed by a and beta by b.
func startRegionProcs(t *testing.T, alpha, beta *demobackend.Backend) *regionProcs {
	t.Helper()
	p := &regionProcs{link: natstest.NewLinkProxy(t), ctl: map[string]string{}, edge: map[string]string{}, mcp: map[string]string{}}
	dir := t.TempDir()
	nats := map[string]string{"a": freeAddr(t), "b": freeAddr(t)}
	leaf := freeAddr(t)
	p.link.SetTarget(leaf)
	controller := func(r string, be *demobackend.Backend, extra ...string) {
		cfg := filepath.Join(dir, r+".yaml")
		if err := os.WriteFile(cfg, []byte(fleetYAML(500*time.Millisecond, 100*time.Millisecond, be)), 0o644); err != nil {
			t.Fatal(err)
		}
		admin := freeAddr(t)
		args := append([]string{"--config", cfg, "--data-dir", filepath.Join(dir, "data-"+r), "--region", r, "--regions", "a,b",
			"--nats-listen", nats[r], "--admin-listen", admin, "--id", "ctl-" + r, "--log-format", "json"}, extra...)
		startProc(t, "controller-"+r, exec.Command(binary(t, "controller"), args...))
		p.ctl[r] = "http://" + admin
	}
	// The README's commands, with loopback addresses; every other flag
	// (-nats-max-store among them) at its default.
	controller("a", alpha, "--nats-leaf-listen", leaf, "--nats-leaf-advertise", p.link.Addr())
	seed := filepath.Join(dir, "data-a", "nats", "leaf.seed")
	eventually(t, 30*time.Second, "a's leaf seed written", func() bool { _, err := os.Stat(seed); return err == nil })
	controller("b", beta, "--nats-leaf-remotes", "nats-leaf://"+p.link.Addr(), "--nats-leaf-seed", seed)
	for _, r := range []string{"a", "b"} {
		eventually(t, 30*time.Second, "controller "+r+" ready", func() bool { return getOK(p.ctl[r] + "/readyz") })
		if r == "b" {
			p.linked = time.Now()
		}
		listen, admin := freeAddr(t), freeAddr(t)
		cmd := exec.Command(binary(t, "edge"), "--nats-url", "nats://"+nats[r], "--regions", "a,b", "--group", "default",
			"--listen", listen, "--admin-listen", admin, "--id", "edge-"+r, "--log-format", "json")
		cmd.Env = append(os.Environ(), "FLEETGATE_NATS_NKEY_SEED="+filepath.Join(dir, "data-"+r, "nats", "edge.seed"))
		startProc(t, "edge-"+r, cmd)
		waitEdgeReady(t, admin)
		p.edge[r], p.mcp[r] = "http://"+admin, "http://"+listen+"/mcp"
	}
	return p
}

func getOK(url string) bool {
	resp, err := http.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// mirrorOf is the status of the other region's mirror in r's controller's
// /v1/regions.
func (p *regionProcs) mirrorOf(t *testing.T, r string) region.Status {
	t.Helper()
	var list []region.Status
	getJSON(t, p.ctl[r]+"/v1/regions", &list)
	for _, s := range list {
		if !s.Local {
			return s
		}
	}
	t.Fatalf("%s's /v1/regions: no mirror in %+v", r, list)
	return region.Status{}
}

// changeClient is an MCP client of an edge whose tools/list_changed
// notifications arrive on changed.
type changeClient struct {
	cs      *mcp.ClientSession
	changed chan time.Time
}

func connectChanges(t *testing.T, url string) *changeClient {
	t.Helper()
	c := &changeClient{changed: make(chan time.Time, 64)}
	cl := mcp.NewClient(&mcp.Implementation{Name: "regions"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case c.changed <- time.Now():
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	c.cs = cs
	return c
}

// echoTools lists the session's tools: the *_echo ones, sorted.
func (c *changeClient) echoTools(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var names []string
	for tool, err := range c.cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		if strings.HasSuffix(tool.Name, "_echo") {
			names = append(names, tool.Name)
		}
	}
	slices.Sort(names)
	return names
}

// waitTools waits, notification by notification, until the session lists
// exactly want, and returns when the notification that made it so came.
func (c *changeClient) waitTools(t *testing.T, d time.Duration, want ...string) time.Time {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case at := <-c.changed:
			if slices.Equal(c.echoTools(t), want) {
				return at
			}
		case <-deadline:
			t.Fatalf("no tools/list_changed to %v within %v (lists %v)", want, d, c.echoTools(t))
		}
	}
}

// sessionVerdict is the verdict of the edge's only session.
func sessionVerdict(t *testing.T, edgeAdmin string) edge.SessionInfo {
	t.Helper()
	var list []edge.SessionInfo
	getJSON(t, edgeAdmin+"/v1/sessions", &list)
	if len(list) != 1 {
		t.Fatalf("%s/v1/sessions: %d sessions, want 1", edgeAdmin, len(list))
	}
	return list[0]
}

// TestRegionsDocumentedStart: the README's "Running two regions" with
// default flags (the 1GiB default store, the mirrors sized to what the
// region's own streams leave): both controllers stay up, each region's
// mirror of the other is at its origin's head (the heads compared across
// the link), and each region's edge serves the other region's backend
// within 5 s of the first link-up (the server alone took about 40 s in
// half the runs: its first mirror request went out before the link was up).
func TestRegionsDocumentedStart(t *testing.T) {
	alpha := startBackend(t, "alpha", nil)
	beta := startBackend(t, "beta", nil)
	p := startRegionProcs(t, alpha, beta)
	for _, r := range []string{"a", "b"} {
		eventually(t, 10*time.Second, r+"'s edge serves both regions' backends", func() bool {
			var v edge.ViewInfo
			getJSON(t, p.edge[r]+"/v1/view", &v)
			return slices.Contains(v.Tools, "alpha_echo") && slices.Contains(v.Tools, "beta_echo")
		})
	}
	took := time.Since(p.linked)
	t.Logf("both edges serve both regions' backends %v after controller b was ready (the link's first up)", took.Round(time.Millisecond))
	if took > 5*time.Second {
		t.Errorf("first link-up to both regions' tools: %v, want at most 5s", took)
	}
	for _, r := range []string{"a", "b"} {
		m := p.mirrorOf(t, r)
		if m.Lag == nil || *m.Lag != 0 || m.OriginHead == 0 || m.Head != m.OriginHead {
			t.Errorf("%s's mirror: %+v, want at its origin's head, lag 0", r, m)
		}
	}
}

// TestRegionCutProcesses: the two regions as processes, the link between
// them cut for FLEETGATE_REGION_CUT (e.g. 30s; skipped when unset: it
// takes the cut plus about 20 s). During the cut a backend of region a
// goes down: a's edge tells its session at once; b's controller reports
// its mirror of a silent, with no lag figure (the origin cannot be read),
// and b's edge judges its session stale for region a. After the heal b's
// session is told within 5 s (the mirror keeper re-creates the mirror the
// server's retry timers hold), the mirror is at a's head, and the session
// is converged again once it has listed the tools.
func TestRegionCutProcesses(t *testing.T) {
	cut, err := time.ParseDuration(os.Getenv("FLEETGATE_REGION_CUT"))
	if err != nil {
		t.Skip("set FLEETGATE_REGION_CUT (e.g. 30s) to cut the link between two regions' processes for that long")
	}
	alpha := startBackend(t, "alpha", nil)
	beta := startBackend(t, "beta", nil)
	p := startRegionProcs(t, alpha, beta)
	clients := map[string]*changeClient{}
	for _, r := range []string{"a", "b"} {
		clients[r] = connectChanges(t, p.mcp[r])
		eventually(t, 10*time.Second, r+"'s session lists both regions' backends", func() bool {
			return slices.Equal(clients[r].echoTools(t), []string{"alpha_echo", "beta_echo"})
		})
		eventually(t, 10*time.Second, r+"'s session converged", func() bool { return sessionVerdict(t, p.edge[r]).Verdict == "converged" })
	}

	p.link.Cut()
	cutAt := time.Now()
	alpha.Stop()
	clients["a"].waitTools(t, 10*time.Second, "beta_echo")
	clients["a"].echoTools(t) // a's session lists again: converged on its own region's change
	// Past the bound (5 s) and a poll of the mirrors (1 s).
	time.Sleep(min(cut, 8*time.Second) - time.Since(cutAt))
	m := p.mirrorOf(t, "b")
	t.Logf("b's mirror of a during the cut: head %d, lag %v, origin error %q, inactive %v", m.Head, m.Lag, m.OriginError, m.MirrorActive)
	if m.Lag != nil || m.OriginError == "" || m.MirrorActive < 5*time.Second {
		t.Errorf("b's mirror of a during the cut: %+v, want no lag figure, the origin's error and inactive past 5s", m)
	}
	s := sessionVerdict(t, p.edge["b"])
	if s.Verdict != "stale" || !strings.Contains(s.VerdictReason, "region a") {
		t.Errorf("b's session during the cut: %s (%s), want stale naming region a", s.Verdict, s.VerdictReason)
	}
	var v edge.ViewInfo
	getJSON(t, p.edge["b"]+"/v1/view", &v)
	t.Logf("b's edge during the cut: session %s (%s); view mirrors %+v", s.Verdict, s.VerdictReason, v.Mirrors)
	if sa := sessionVerdict(t, p.edge["a"]); sa.Verdict != "stale" || !strings.Contains(sa.VerdictReason, "region b") {
		t.Errorf("a's session during the cut: %s (%s), want stale naming region b", sa.Verdict, sa.VerdictReason)
	}
	if got := clients["b"].echoTools(t); !slices.Equal(got, []string{"alpha_echo", "beta_echo"}) {
		t.Fatalf("b's session during the cut lists %v: it learnt a's change through a cut link", got)
	}

	time.Sleep(cut - time.Since(cutAt)) // the cut's length is what is measured against
	healAt := time.Now()
	p.link.Heal()
	told := clients["b"].waitTools(t, 60*time.Second, "beta_echo")
	took := told.Sub(healAt)
	t.Logf("cut %v: b's session told of a's change %v after the heal", cut, took.Round(time.Millisecond))
	if took > 5*time.Second {
		t.Errorf("b's session told %v after the heal, want at most 5s", took.Round(time.Millisecond))
	}
	eventually(t, 10*time.Second, "b's mirror of a at a's head and b's session converged", func() bool {
		m := p.mirrorOf(t, "b")
		return m.Lag != nil && *m.Lag == 0 && sessionVerdict(t, p.edge["b"]).Verdict == "converged"
	})
}
