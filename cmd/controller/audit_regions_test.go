package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/natsnode"
	"github.com/fleetgate/fleetgate/pkg/region"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// auditRegions is a two-region fleet for the audit: region a's and region
// b's NATS, each its own JetStream domain and authenticated, b dialling
// a's leaf listener; each holds its own event log and a mirror of the
// other's (region.EnsureMirrors, as each region's controller runs it).
type auditRegions struct {
	node   map[string]*natsnode.Node
	js     map[string]jetstream.JetStream // the controller user's
	log    map[string]*events.Log         // each region's own log, in its own NATS
	writer map[string]*events.Writer
}

var auditRegionNames = []string{"a", "b"}

func startAuditRegions(t *testing.T, ctx context.Context) *auditRegions {
	t.Helper()
	f := &auditRegions{node: map[string]*natsnode.Node{}, js: map[string]jetstream.JetStream{},
		log: map[string]*events.Log{}, writer: map[string]*events.Writer{}}
	start := func(name string, leaf *natsnode.LeafOptions) *natsnode.Node {
		n, err := natsnode.Start(&natsnode.Options{Name: name, DataDir: t.TempDir(), Listen: "127.0.0.1:0", Auth: true,
			Domain: region.Domain(name), EdgeLogs: region.EdgeLogs(auditRegionNames), Leaf: leaf})
		if err != nil {
			t.Fatalf("start region %s NATS: %v", name, err)
		}
		t.Cleanup(n.Shutdown)
		return n
	}
	f.node["a"] = start("a", &natsnode.LeafOptions{Listen: "127.0.0.1:0"})
	f.node["b"] = start("b", &natsnode.LeafOptions{Remotes: []string{f.node["a"].LeafURL()}, RemoteSeed: f.node["a"].LeafSeed()})
	eventually(t, 20*time.Second, "leaf link", func() bool {
		return f.node["a"].Server().NumLeafNodes() == 1 && f.node["b"].Server().NumLeafNodes() == 1
	})
	for _, r := range auditRegionNames {
		opts, err := f.node[r].ControllerAccess().Options()
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(f.node[r].ClientURL(), opts...)
		if err != nil {
			t.Fatalf("connect region %s: %v", r, err)
		}
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		lg, err := events.OpenLog(ctx, js, region.LogOptions(r, 0))
		if err != nil {
			t.Fatalf("region %s: open log: %v", r, err)
		}
		if err := region.EnsureMirrors(ctx, js, r, auditRegionNames, nil); err != nil {
			t.Fatal(err)
		}
		w, err := events.NewWriter(ctx, lg, "controller-"+r)
		if err != nil {
			t.Fatal(err)
		}
		f.js[r], f.log[r], f.writer[r] = js, lg, w
	}
	return f
}

// waitMirrored waits until every region's NATS holds every other region's
// log up to its origin's head.
func (f *auditRegions) waitMirrored(t *testing.T, ctx context.Context) {
	t.Helper()
	for _, origin := range auditRegionNames {
		head, err := f.log[origin].LastGeneration(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, local := range auditRegionNames {
			if local == origin {
				continue
			}
			eventually(t, 60*time.Second, fmt.Sprintf("mirror of %s in %s at %d", origin, local, head), func() bool {
				st, err := f.js[local].Stream(ctx, region.StreamName(origin))
				if err != nil {
					return false
				}
				info, err := st.Info(ctx)
				return err == nil && info.State.LastSeq >= head
			})
		}
	}
}

// merged is region.Merge of each region's own log replayed, apart from
// the audit, to its component of want.
func (f *auditRegions) merged(t *testing.T, ctx context.Context, want region.Vector) (*events.State, region.Vector, []region.Conflict) {
	t.Helper()
	states := map[string]*events.State{}
	for r, g := range want {
		s, err := f.log[r].Replay(ctx, g, nil)
		if err != nil {
			t.Fatalf("replay region %s to %d: %v", r, g, err)
		}
		states[r] = s
	}
	return region.Merge(states)
}

// runAudit runs audit state on region local's NATS as the edge user.
func (f *auditRegions) runAudit(local string, args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	args = append([]string{"state", "--nats-url", f.node[local].ClientURL(), "--nats-nkey-seed", f.node[local].EdgeSeed()}, args...)
	code := audit(args, &out, &errb)
	return out.String(), errb.String(), code
}

func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached in %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAuditRegionStateAtVector: audit state of a two-region fleet at a
// vector, on either region's NATS (its own log and its mirror of the
// other's), is region.Merge of the regional logs replayed to the vector's
// generations; it names the vector and the merge's conflicts; a region
// left out of -vector is at its head; a generation beyond a head fails
// naming the region and the head.
func TestAuditRegionStateAtVector(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := startAuditRegions(t, ctx)
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cfg := func(name string) events.BackendConfig {
		return events.BackendConfig{URL: "http://127.0.0.1:1/" + name, Transport: "streamable-http"}
	}
	publish := map[string][]*eventspb.Event{
		"a": {
			events.NewBackendAdded(at, "shared", "alpha", cfg("alpha")),
			events.NewHealthChanged(at, "shared", "alpha", "unknown", "healthy", true, "ok"),
			events.NewBackendAdded(at, "only-a", "x", cfg("x")),
			events.NewBackendAdded(at, "shared", "dup", cfg("dup-a")),
		},
		"b": {
			events.NewBackendAdded(at, "shared", "beta", cfg("beta")),
			events.NewHealthChanged(at, "shared", "beta", "unknown", "healthy", true, "ok"),
			events.NewBackendAdded(at, "shared", "dup", cfg("dup-b")),
			events.NewHealthChanged(at, "shared", "beta", "healthy", "unhealthy", false, "down"),
			events.NewBackendAdded(at, "only-b", "y", cfg("y")),
		},
	}
	for _, r := range auditRegionNames {
		for i, e := range publish[r] {
			if _, err := f.writer[r].Publish(ctx, e, fmt.Sprintf("%s-%d", r, i)); err != nil {
				t.Fatalf("region %s publish %d: %v", r, i, err)
			}
		}
	}
	f.waitMirrored(t, ctx)

	type output struct {
		events.State                            // Regions: the vector the output names
		Conflicts    []region.Conflict          `json:"conflicts"`
		Views        map[string]json.RawMessage `json:"views"`
	}
	for _, tc := range []struct {
		vector    string
		want      region.Vector
		conflicts int
	}{
		{"a=2,b=3", region.Vector{"a": 2, "b": 3}, 0},
		{"b=3,a=4", region.Vector{"a": 4, "b": 3}, 1},
		{"a=1", region.Vector{"a": 1, "b": 5}, 0}, // b at its head
		{"", region.Vector{"a": 4, "b": 5}, 1},    // both at their heads
		{"a=0,b=2", region.Vector{"a": 0, "b": 2}, 0},
	} {
		wantState, wantVec, wantConflicts := f.merged(t, ctx, tc.want)
		if !maps.Equal(wantVec, tc.want) || len(wantConflicts) != tc.conflicts {
			t.Fatalf("vector %q: the independent merge is at %s with %v", tc.vector, wantVec, wantConflicts)
		}
		wantJSON, err := json.Marshal(wantState)
		if err != nil {
			t.Fatal(err)
		}
		for _, local := range auditRegionNames {
			args := []string{"--regions", "a,b"}
			if tc.vector != "" {
				args = append(args, "--vector", tc.vector)
			}
			out, errs, code := f.runAudit(local, args...)
			if code != 0 {
				t.Fatalf("on %s, vector %q: exit %d: %s", local, tc.vector, code, errs)
			}
			var got output
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("on %s, vector %q: %v\n%s", local, tc.vector, err, out)
			}
			if !maps.Equal(region.Vector(got.Regions), tc.want) {
				t.Errorf("on %s, vector %q: output names %v, want %s", local, tc.vector, got.Regions, tc.want)
			}
			gotJSON, err := json.Marshal(&got.State)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(gotJSON, wantJSON) {
				t.Errorf("on %s, vector %q: merged state\n%s\nwant region.Merge of the replayed logs\n%s", local, tc.vector, gotJSON, wantJSON)
			}
			if fmt.Sprint(got.Conflicts) != fmt.Sprint(wantConflicts) || got.Conflicts == nil {
				t.Errorf("on %s, vector %q: conflicts %v, want %v", local, tc.vector, got.Conflicts, wantConflicts)
			}
			if len(got.Views) != len(wantState.Groups) {
				t.Errorf("on %s, vector %q: %d views for %d groups", local, tc.vector, len(got.Views), len(wantState.Groups))
			}
		}
	}
	// The kept backend of a conflict is the first region's.
	out, _, _ := f.runAudit("b", "--regions", "a,b")
	var heads output
	if err := json.Unmarshal([]byte(out), &heads); err != nil {
		t.Fatal(err)
	}
	if b := heads.Backend("shared", "dup"); b == nil || b.Config.URL != cfg("dup-a").URL {
		t.Fatalf("shared/dup at the heads: %+v, want region a's", b)
	}

	// Beyond a head: an error naming the region and its head.
	for _, c := range []struct{ vector, region, head string }{
		{"a=5", "region a", "4"},
		{"a=1,b=6", "region b", "5"},
	} {
		_, errs, code := f.runAudit("b", "--regions", "a,b", "--vector", c.vector)
		if code != 1 || !strings.Contains(errs, c.region) || !strings.Contains(errs, "the head is "+c.head) {
			t.Errorf("vector %s beyond a head: exit %d, %q; want 1 naming %s and head %s", c.vector, code, errs, c.region, c.head)
		}
	}
	// Usage errors.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--vector", "a=1"}, "-vector needs -regions"},
		{[]string{"--regions", "a,b", "--vector", "c=1"}, `region "c"`},
		{[]string{"--regions", "a,b", "--vector", "a=x"}, "-vector"},
		{[]string{"--regions", "a,B"}, "-regions"},
		{[]string{"--regions", "a,b", "--generation", "2"}, "-generation"},
	} {
		_, errs, code := f.runAudit("a", c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 naming %q", c.args, code, errs, c.want)
		}
	}
	var errb bytes.Buffer
	if code := audit([]string{"history", "--backend", "alpha", "--regions", "a,b"}, &bytes.Buffer{}, &errb); code != 2 ||
		!strings.Contains(errb.String(), "audit state only") {
		t.Errorf("history with -regions: exit %d, %q", code, errb.String())
	}
}
