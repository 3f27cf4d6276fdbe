package test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/natsnode"
	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
	"github.com/fleetgate/fleetgate/pkg/region"
	"github.com/fleetgate/fleetgate/pkg/verify"
)

// startLinkedRegions starts region a's and region b's NATS (each its own
// JetStream domain), b dialling a's leaf listener through link, and the
// mirrors of each region's log in the other.
func startLinkedRegions(t *testing.T, link *natstest.LinkProxy) (a, b *natsnode.Node) {
	t.Helper()
	start := func(name string, leaf *natsnode.LeafOptions) *natsnode.Node {
		n, err := natsnode.Start(&natsnode.Options{Name: name, DataDir: t.TempDir(), Listen: "127.0.0.1:0",
			Domain: region.Domain(name), Leaf: leaf})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(n.Shutdown)
		return n
	}
	a = start("a", &natsnode.LeafOptions{Listen: "127.0.0.1:0", Advertise: link.Addr()})
	link.SetTarget(strings.TrimPrefix(a.LeafURL(), "nats-leaf://"))
	b = start("b", &natsnode.LeafOptions{Remotes: []string{"nats-leaf://" + link.Addr()}})
	waitLeafLink(t, a, b, true)
	return a, b
}

// waitLeafLink waits until the leaf link between a and b is up (or down)
// on both sides.
func waitLeafLink(t *testing.T, a, b *natsnode.Node, up bool) {
	t.Helper()
	eventually(t, 20*time.Second, "leaf link", func() bool {
		na, nb := a.Server().NumLeafNodes(), b.Server().NumLeafNodes()
		if up {
			return na > 0 && nb > 0
		}
		return na == 0 && nb == 0
	})
}

// startRegionalEdge starts an edge merging the logs of regions in the NATS
// at natsURL (its own region's log and the mirrors of the others').
func startRegionalEdge(t *testing.T, natsURL string, regions []string) *edge.Edge {
	t.Helper()
	e, err := edge.NewRegional(jsConnect(t, natsURL), regions, &edge.Options{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0",
		Coalesce: time.Millisecond, CallTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	runEdge(t, e, 60*time.Second)
	return e
}

// logHeads reads the head generation of each region's own log.
func logHeads(t *testing.T, urls map[string]string) region.Vector {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	v := region.Vector{}
	for r, url := range urls {
		lg, err := events.AttachLog(ctx, jsConnect(t, url), region.LogOptions(r, 0))
		if err != nil {
			t.Fatal(err)
		}
		if v[r], err = lg.LastGeneration(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return v
}

// TestRegionSpanningGroupOnEdges: group default spans regions a (backend
// alpha, probed by a's controller) and b (beta, probed by b's). An edge
// in each region merges both logs and serves both backends; a session
// calls both. The link between the regions is cut: each side keeps
// serving and learns its own region's changes at once, and none of the
// other's; after the heal both edges serve the same view, reflecting both
// regions' log heads, and their sessions' verdicts are converged on that
// vector.
func TestRegionSpanningGroupOnEdges(t *testing.T) {
	link := natstest.NewLinkProxy(t)
	a, b := startLinkedRegions(t, link)
	urls := map[string]string{"a": a.ClientURL(), "b": b.ClientURL()}
	alpha := startBackend(t, "alpha", nil)
	beta := startBackend(t, "beta", nil)
	// Probes of 200 ms (an interval of 400 ms): a race-detector build on
	// two cores must not flap a backend that is up.
	regions := []string{"a", "b"}
	startRegionController(t, a.ClientURL(), "a", fleetYAML(400*time.Millisecond, 100*time.Millisecond, alpha), regions...)
	ctlB := startRegionController(t, b.ClientURL(), "b", fleetYAML(400*time.Millisecond, 100*time.Millisecond, beta), regions...)
	for r, url := range urls {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := region.EnsureMirrors(ctx, jsConnect(t, url), r, regions, nil)
		cancel()
		if err != nil {
			t.Fatalf("mirrors in %s: %v", r, err)
		}
	}
	edges := map[string]*edge.Edge{"a": startRegionalEdge(t, a.ClientURL(), regions), "b": startRegionalEdge(t, b.ClientURL(), regions)}
	clients := map[string]*mcpClient{}
	for r, e := range edges {
		clients[r] = connectMCP(t, e.MCPURL(), "2025-11-25")
	}
	// serves reports whether r's edge serves exactly the echo tools want
	// (one per backend listed).
	serves := func(r string, want ...string) func() bool {
		return func() bool {
			var names []string
			for _, n := range clients[r].tools(t) {
				if strings.HasSuffix(n, "_echo") {
					names = append(names, n)
				}
			}
			slices.Sort(names)
			return slices.Equal(names, want)
		}
	}
	for r := range edges {
		eventually(t, 60*time.Second, "both regions' tools on "+r+"'s edge", serves(r, "alpha_echo", "beta_echo"))
	}
	for _, tool := range []string{"alpha_echo", "beta_echo"} {
		if res, err := clients["b"].call(tool, map[string]any{"text": "x"}); err != nil || !strings.HasSuffix(text(res), ": x") {
			t.Fatalf("%s through b's edge: %v %q", tool, err, text(res))
		}
	}
	// The view and each session name the vector they reflect.
	for r, e := range edges {
		eventually(t, 30*time.Second, r+"'s edge at both log heads", func() bool {
			return region.Vector(e.View().Regions).Covers(logHeads(t, urls))
		})
		checkRegionalSession(t, e, clients[r])
	}

	link.Cut()
	waitLeafLink(t, a, b, false)
	beta.Stop()
	alpha.Stop()
	// Each side learns its own region's change and not the other's.
	eventually(t, 30*time.Second, "b's edge drops beta, keeps alpha", serves("b", "alpha_echo"))
	eventually(t, 30*time.Second, "a's edge drops alpha, keeps beta", serves("a", "beta_echo"))
	cut := time.Now()
	changedA, changedB := clients["a"].changed.Load(), clients["b"].changed.Load()

	link.Heal()
	waitLeafLink(t, a, b, true)
	for r := range edges {
		eventually(t, 120*time.Second, r+"'s edge serves neither after the heal", serves(r))
	}
	t.Logf("both edges at the merged view %v after the heal", time.Since(cut).Round(time.Millisecond))
	if clients["a"].changed.Load() <= changedA || clients["b"].changed.Load() <= changedB {
		t.Fatalf("no list_changed after the heal: a %d->%d, b %d->%d", changedA, clients["a"].changed.Load(),
			changedB, clients["b"].changed.Load())
	}
	heads := logHeads(t, urls)
	for r, e := range edges {
		eventually(t, 30*time.Second, r+"'s edge at both log heads after the heal", func() bool {
			return region.Vector(e.View().Regions).Covers(heads)
		})
		checkRegionalSession(t, e, clients[r])
	}
	// edge verify, against region b's controller, whose view of the group
	// merges both logs too: converged, at a vector covering both heads.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := verify.Run(ctx, verify.Options{URL: edges["b"].MCPURL(), Controller: ctlB.admin})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != "converged" || !region.Vector(rep.Expected.Regions).Covers(heads) {
		t.Fatalf("verify: %s (%s), expected %+v, heads %s", rep.Verdict, rep.Reason, rep.Expected, heads)
	}
}

// checkRegionalSession lists c's tools again (its evidence) and checks
// that e reports its session converged on e's vector, naming it.
func checkRegionalSession(t *testing.T, e *edge.Edge, c *mcpClient) {
	t.Helper()
	want := region.Vector(e.View().Regions)
	eventually(t, 20*time.Second, "session converged on the vector", func() bool {
		c.tools(t)
		for _, s := range e.Sessions() {
			if s.ID == c.cs.ID() {
				return s.Verdict == "converged" && region.Vector(s.AppliedRegions).Covers(want) &&
					strings.Contains(s.VerdictReason, region.Vector(s.AppliedRegions).String())
			}
		}
		return false
	})
}
