package test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/calltrail"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/natsnode"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// asyncErrors collects a connection's asynchronous errors (permission
// refusals arrive there).
type asyncErrors struct {
	mu   sync.Mutex
	errs []string
}

func (a *asyncErrors) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	a.mu.Lock()
	a.errs = append(a.errs, err.Error())
	a.mu.Unlock()
}

func (a *asyncErrors) text() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return strings.Join(a.errs, "\n")
}

// connectAs connects with access and returns a JetStream client; extra
// adds options.
func connectAs(t *testing.T, url string, access natsnode.Access, extra ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	opts, err := access.Options()
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url, append(opts, extra...)...)
	if err != nil {
		t.Fatalf("connect with %+v: %v", access, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// provisionFleet is what the controller does at start on its own
// connection: the event log with a few events and a snapshot, the session
// bucket, the call trail and the leader bucket.
func provisionFleet(t *testing.T, ctx context.Context, js jetstream.JetStream) *events.Log {
	t.Helper()
	lg, err := events.OpenLog(ctx, js, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := sessionstore.Provision(ctx, js, nil); err != nil {
		t.Fatal(err)
	}
	if err := calltrail.Provision(ctx, js, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: natsnode.LeaderBucket}); err != nil {
		t.Fatal(err)
	}
	w, err := events.NewWriter(ctx, lg, "c1")
	if err != nil {
		t.Fatal(err)
	}
	s := events.NewState()
	fleetEvents := []*eventspb.Event{
		events.NewBackendAdded(time.Now(), "default", "alpha", events.BackendConfig{URL: "http://127.0.0.1:1/mcp"}),
		events.NewHealthChanged(time.Now(), "default", "alpha", "unknown", "healthy", true, "probe succeeded"),
	}
	for i, ev := range fleetEvents {
		if _, err := w.Publish(ctx, ev, fmt.Sprintf("e%d", i)); err != nil {
			t.Fatal(err)
		}
		if s, err = events.Apply(s, ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := lg.SaveSnapshot(ctx, s); err != nil {
		t.Fatal(err)
	}
	return lg
}

// The embedded node's edge user against a real server: everything an edge
// does works through the edge's own code paths (the event log reader,
// the snapshot, the session store, the call trail), and everything else
// is refused: publishing an event, the leader lease, purging or rolling up
// the session bucket, purging the call trail, deleting streams, reading
// another client's inbox. A client without credentials is refused.
func TestRegionAccessEdgePermissions(t *testing.T) {
	dir := t.TempDir()
	node, err := natsnode.Start(&natsnode.Options{DataDir: dir, Listen: "127.0.0.1:0", Auth: true, EdgeUsers: []string{"e2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if node.Running() {
			node.Shutdown()
		}
	})

	// Seeds: 0600 in a 0700 dir, the same after a restart.
	seed := node.EdgeSeed()
	if seed != filepath.Join(dir, "edge.seed") {
		t.Fatalf("edge seed at %s", seed)
	}
	for path, want := range map[string]os.FileMode{seed: 0o600, node.ControllerSeed(): 0o600, dir: 0o700} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Fatalf("%s: %v mode %v, want %v", path, err, fi.Mode().Perm(), want)
		}
	}
	before, _ := os.ReadFile(seed)
	if err := node.Restart(); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(seed); string(after) != string(before) {
		t.Fatal("the edge seed changed across a restart")
	}

	// No credentials, or an unknown nkey: refused.
	if nc, err := nats.Connect(node.ClientURL()); err == nil {
		nc.Close()
		t.Fatal("a client without credentials connected")
	} else if !errors.Is(err, nats.ErrAuthorization) && !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Fatalf("unauthenticated connect: %v, want an authorization violation", err)
	}
	stranger := filepath.Join(t.TempDir(), "stranger.seed")
	if _, err := natsnode.PublicKey(stranger); err == nil {
		t.Fatal("a missing seed file has a key")
	}
	strangerNode, err := natsnode.Start(&natsnode.Options{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Auth: true})
	if err != nil {
		t.Fatal(err)
	}
	if nc, err := nats.Connect(node.ClientURL(), must(natsnode.Access{NkeySeed: strangerNode.EdgeSeed()}.Options())...); err == nil {
		nc.Close()
		t.Fatal("another node's edge seed connected")
	}
	strangerNode.Shutdown()

	attackAsEdge(t, splitFleet{url: node.ClientURL(), controller: node.ControllerAccess(), ctlEdges: node.ControllerEdgeAccess(),
		edge: node.EdgeAccess(), edge2: node.EdgeAccessFor("e2"), replicas: 1})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// The processes as `make run` starts them: the controller with its
// embedded NATS (authenticated), an edge with only the edge seed serving
// a backend's tools (sessions and call trail on) with no permission
// refused, and `controller audit` with the same seed.
func TestRegionAccessProcesses(t *testing.T) {
	alpha := startBackend(t, "alpha", nil)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(cfg, []byte(fleetYAML(200*time.Millisecond, 100*time.Millisecond, alpha)), 0o644); err != nil {
		t.Fatal(err)
	}
	natsAddr := freeAddr(t)
	dataDir := filepath.Join(dir, "controller")
	ctlAdmin := freeAddr(t)
	ctl := startLoggedProc(t, "controller", nil, "--config", cfg, "--data-dir", dataDir, "--nats-listen", natsAddr,
		"--admin-listen", ctlAdmin, "--id", "c1", "--lease-ttl", "1s", "--log-format", "json")
	seed := filepath.Join(dataDir, "nats", "edge.seed")
	eventually(t, 30*time.Second, "the edge seed written", func() bool { _, err := os.Stat(seed); return err == nil })
	// The controller provisions the session bucket and the call trail
	// before it is ready; an edge started earlier would try to create
	// them itself, which its user may not.
	eventually(t, 30*time.Second, "the controller ready", func() bool {
		resp, err := http.Get("http://" + ctlAdmin + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	natsURL := "nats://" + natsAddr

	listen, admin := freeAddr(t), freeAddr(t)
	edgeProc := startLoggedProc(t, "edge", []string{"FLEETGATE_NATS_NKEY_SEED=" + seed}, "--nats-url", natsURL,
		"--listen", listen, "--admin-listen", admin, "--id", "e1", "--log-format", "json")
	waitEdgeReady(t, admin)
	cl := connectMCP(t, "http://"+listen+"/mcp", "2025-11-25")
	eventually(t, 20*time.Second, "alpha's tools on the edge", func() bool { return slicesContains(cl.tools(t), "alpha_echo") })
	res, err := cl.call("alpha_echo", map[string]any{"text": "hi"})
	if err != nil || res.IsError || text(res) != "alpha: hi" {
		t.Fatalf("call through the authenticated edge: %v %+v", err, res)
	}

	out, err := exec.Command(binary(t, "controller"), "audit", "state", "--generation", "1", "--nats-url", natsURL,
		"--nats-nkey-seed", seed).CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"alpha"`) {
		t.Fatalf("audit with the edge seed: %v\n%s", err, out)
	}
	if out, err := exec.Command(binary(t, "controller"), "audit", "state", "--generation", "1", "--nats-url", natsURL).CombinedOutput(); err == nil {
		t.Fatalf("audit without credentials succeeded:\n%s", out)
	}
	// The edge's writes and reads all passed: its log names no refusal.
	for name, p := range map[string]*loggedProc{"edge": edgeProc, "controller": ctl} {
		if log := p.output(t); strings.Contains(strings.ToLower(log), "permissions violation") {
			t.Errorf("%s log has a permission refusal:\n%s", name, log)
		}
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// docs/limits.md's accounts section (moved from the README) is exactly what natsnode.Accounts makes
// (the embedded node's and TestNATSSplitCluster's), for its example keys.
func TestRegionAccessREADMEPermissions(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "limits.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	const marker = "<!-- natsnode.Accounts example: TestRegionAccessREADMEPermissions -->\n```\n"
	start := strings.Index(readme, marker)
	if start < 0 {
		t.Fatal("docs/limits.md has no accounts example")
	}
	listed := readme[start+len(marker):]
	listed = listed[:strings.Index(listed, "```")]
	want, err := natsnode.Accounts{Controllers: natsnode.ExampleKeys[:1], ControllerEdges: natsnode.ExampleKeys[1:2],
		Edges: natsnode.ExampleKeys[2:4]}.Config()
	if err != nil {
		t.Fatal(err)
	}
	if listed != want {
		t.Fatalf("docs/limits.md lists\n%s\nnatsnode.Accounts makes\n%s", listed, want)
	}
}
