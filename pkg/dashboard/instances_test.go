package dashboard

import (
	"context"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edgestatus"
	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
	"github.com/fleetgate/fleetgate/pkg/stdio"
)

// Each edge card carries the edge's stdio instances from its status
// record, an edge with no session included; a change is told on the
// stream; an unreadable record is not shown, and one deleted goes.
func TestEdgeCardsShowStdioInstances(t *testing.T) {
	st, kv := bucket(t, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := st.Create(ctx, record("SESSIONAAAAAAAAAAAAAAAA1", "edge-a", 7, converged(7))); err != nil {
		t.Fatal(err)
	}
	node := natstest.Start(t)
	js := natstest.JetStream(t, node.ClientURL())
	if err := edgestatus.Provision(ctx, js, 1); err != nil {
		t.Fatal(err)
	}
	edges, err := js.KeyValue(ctx, edgestatus.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	put := func(r edgestatus.Record) {
		t.Helper()
		b, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := edges.Put(ctx, edgestatus.Key(r.Edge), b); err != nil {
			t.Fatal(err)
		}
	}
	put(edgestatus.FromStdio("edge-a", now, []stdio.Status{{Backend: "notes", Command: "notes", State: "up", PID: 41, Since: now}}))
	put(edgestatus.FromStdio("edge-idle", now, []stdio.Status{{Backend: "notes", Command: "notes", State: "backoff", Restarts: 3,
		LastError: "exit status 1", Since: now}}))
	if _, err := edges.Put(ctx, "edge-bad", []byte(`{"edge":"edge-bad","stdio":[{"backend":[[[[[1]]]]]}]}`)); err != nil {
		t.Fatal(err)
	}
	log := newFakeLog()
	var reported atomic.Int64
	d := mustNew(t, &Options{Reader: log, Log: log, Sessions: kv, Edges: edges, SessionsEvery: 20 * time.Millisecond,
		OnError: func(error) { reported.Add(1) }})
	s := newSink()
	rctx, stop := context.WithCancel(context.Background())
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		d.serveStream(s, httptest.NewRequestWithContext(rctx, "GET", "/v1/stream", nil))
	}()
	defer func() { stop(); <-ended }()
	runDashboard(t, d)

	waitFor(t, 10*time.Second, "both edges' instances", func() bool {
		e := getEdges(t, d, "")
		return e.Ready && len(e.Edges) == 2 && len(e.Edges[0].Stdio) == 1 && len(e.Edges[1].Stdio) == 1
	})
	e := getEdges(t, d, "")
	a, idle := e.Edges[0], e.Edges[1]
	if a.ID != "edge-a" || a.Sessions != 1 || a.Stdio[0].State != "up" || a.Stdio[0].PID != 41 || a.ReportedAt.IsZero() {
		t.Errorf("edge-a: %+v", a)
	}
	if reported.Load() != 1 {
		t.Errorf("%d errors reported, want 1 (the unreadable record)", reported.Load())
	}
	if idle.ID != "edge-idle" || idle.Sessions != 0 || idle.Stdio[0].State != "backoff" || idle.Stdio[0].Restarts != 3 || idle.Stdio[0].LastError != "exit status 1" {
		t.Errorf("edge-idle: %+v", idle)
	}

	// edge-a's instance restarts: the stream says so, the card shows it.
	put(edgestatus.FromStdio("edge-a", time.Now(), []stdio.Status{{Backend: "notes", Command: "notes", State: "up", PID: 42, Restarts: 1, Since: now}}))
	waitFor(t, 10*time.Second, "a second edges frame of edge-a (its first: the edge was new)", func() bool {
		n := 0
		for _, f := range s.frames() {
			if typ, v := frameData[map[string]any](t, f); typ == FrameEdges && v["edge"] == "edge-a" {
				n++
			}
		}
		return n == 2
	})
	if a := getEdges(t, d, "").Edges[0]; a.Stdio[0].PID != 42 || a.Stdio[0].Restarts != 1 {
		t.Errorf("edge-a after the restart: %+v", a)
	}
	if err := edges.Delete(ctx, "edge-idle"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "edge-idle gone", func() bool { return len(getEdges(t, d, "").Edges) == 1 })
}

// A record the server stored longer ago than its lifetime (it expired
// from the bucket, which tells no one) is not shown and is forgotten; a
// full index forgets those before it refuses a new edge.
func TestEdgeStatusesForget(t *testing.T) {
	x := newEdgeStatuses(2)
	now := time.Now()
	old := now.Add(-edgestatus.RecordTTL - time.Second)
	if !x.put("a", edgestatus.Record{Edge: "a"}, old, now) || !x.put("b", edgestatus.Record{Edge: "b"}, now, now) {
		t.Fatal("new edges not reported")
	}
	if x.put("b", edgestatus.Record{Edge: "b", UpdatedAt: now.Add(time.Second)}, now, now) {
		t.Error("a refresh with the same instances reported as a change")
	}
	if cur := x.current(now); len(cur) != 1 || cur["b"].Edge != "b" {
		t.Fatalf("current: %v, want b alone", cur)
	}
	x.put("a", edgestatus.Record{Edge: "a"}, old, now)
	if !x.put("c", edgestatus.Record{Edge: "c"}, now, now) {
		t.Fatal("a full index refused c instead of forgetting a")
	}
	if x.put("d", edgestatus.Record{Edge: "d"}, now, now) {
		t.Fatal("d kept beyond the bound")
	}
	if cur := x.current(now); len(cur) != 2 || cur["c"].Edge != "c" {
		t.Fatalf("current: %v", cur)
	}
}
