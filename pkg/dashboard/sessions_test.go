package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/convergence"
	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// converged is evidence of a complete traversal of the current digest.
func converged(gen uint64) convergence.Record {
	return convergence.Record{ProtocolVersion: "2025-11-25", Seq: 1, CurrentDigest: "sha256:aa", CurrentGeneration: gen,
		Traversal: convergence.Traversal{StartSeq: 1, Generation: gen, Final: true, Pages: 1, Tools: 2, Digest: "sha256:aa"}}
}

// stale is evidence of a traversal of an older digest.
func stale(gen uint64) convergence.Record {
	r := converged(gen)
	r.CurrentDigest = "sha256:bb"
	return r
}

func record(id, edge string, gen uint64, conv convergence.Record) *sessionstore.Record {
	now := time.Now().UTC().Truncate(time.Second)
	return &sessionstore.Record{ID: id, Owner: sessionstore.OwnerHash("alice"), Group: "default", Mode: sessionstore.ModePassthrough,
		InitializeParams: json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"inspector","version":"0.9"}}`),
		ProtocolVersion:  "2025-11-25", AppliedGeneration: gen, Edge: edge, CreatedAt: now, LastSeen: now, Convergence: conv}
}

// bucket provisions the session bucket on a fresh node and returns a
// store that writes records as an edge does, and the bucket as the
// controller reads it.
func bucket(t *testing.T, idle time.Duration) (*sessionstore.Store, jetstream.KeyValue) {
	t.Helper()
	node := natstest.Start(t)
	js := natstest.JetStream(t, node.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := sessionstore.Provision(ctx, js, nil); err != nil {
		t.Fatal(err)
	}
	st, err := sessionstore.Open(ctx, natstest.JetStream(t, node.ClientURL()), &sessionstore.Options{IdleTimeout: idle})
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, sessionstore.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	return st, kv
}

// runDashboard runs d until the test ends.
func runDashboard(t *testing.T, d *Dashboard) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

func getEdges(t *testing.T, d *Dashboard, query string) EdgesJSON {
	t.Helper()
	w := httptest.NewRecorder()
	d.Handler(nil).ServeHTTP(w, httptest.NewRequest("GET", "/v1/edges"+query, nil))
	if w.Code != 200 {
		t.Fatalf("GET /v1/edges%s: %d %s", query, w.Code, w.Body)
	}
	var out EdgesJSON
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Records written as edges write them show by edge with their verdicts,
// protocol, applied generation and client; changes and deletes arrive
// live as sessions frames; pages and filters hold.
func TestEdgesFromSessionRecords(t *testing.T) {
	st, kv := bucket(t, time.Minute)
	ctx := context.Background()
	for _, r := range []*sessionstore.Record{
		record("SESSIONAAAAAAAAAAAAAAAA1", "edge-a", 7, converged(7)),
		record("SESSIONAAAAAAAAAAAAAAAA2", "edge-a", 6, stale(7)),
		record("SESSIONBBBBBBBBBBBBBBBB1", "edge-b", 7, converged(7)),
	} {
		if _, err := st.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	log := newFakeLog()
	d := mustNew(t, &Options{Reader: log, Log: log, Sessions: kv, SessionsEvery: 20 * time.Millisecond})
	s := newSink()
	cancel, ended := func() (func(), chan struct{}) {
		rctx, cancel := context.WithCancel(context.Background())
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			d.serveStream(s, httptest.NewRequestWithContext(rctx, "GET", "/v1/stream", nil))
		}()
		return cancel, ended
	}()
	defer func() { cancel(); <-ended }()
	runDashboard(t, d)

	waitFor(t, 10*time.Second, "the first listing", func() bool { return getEdges(t, d, "").Ready })
	e := getEdges(t, d, "")
	if !e.Available || e.Total != 3 || e.Verdicts["converged"] != 2 || e.Verdicts["stale"] != 1 || len(e.Edges) != 2 {
		t.Fatalf("edges: %+v", e)
	}
	if a := e.Edges[0]; a.ID != "edge-a" || a.Sessions != 2 || a.MinGen != 6 || a.MaxGen != 7 || a.Groups[0] != "default" {
		t.Errorf("edge-a: %+v", a)
	}
	s0 := e.Sessions[0]
	if s0.Edge != "edge-a" || s0.ProtocolVersion != "2025-11-25" || s0.Client != "inspector 0.9" || s0.Verdict == "" {
		t.Errorf("first session: %+v", s0)
	}
	if page := getEdges(t, d, "?edge=edge-a&verdict=stale"); page.Matched != 1 || page.Sessions[0].ID != "SESSIONAAAAAAAAAAAAAAAA2" || page.Sessions[0].VerdictReason == "" {
		t.Errorf("filtered: %+v", page)
	}
	if page := getEdges(t, d, "?limit=1&offset=2"); page.Matched != 3 || len(page.Sessions) != 1 || page.Sessions[0].Edge != "edge-b" {
		t.Errorf("page 3 of 1: %+v", page)
	}
	body, _ := json.Marshal(e)
	if strings.Contains(string(body), "owner") || strings.Contains(string(body), sessionstore.OwnerHash("alice")) || strings.Contains(string(body), "capabilities") {
		t.Errorf("the answer carries the owner or the initialize params: %s", body)
	}

	// An edge applies a new generation: the stream says so.
	rec, rev, err := st.Get(ctx, "SESSIONAAAAAAAAAAAAAAAA2")
	if err != nil {
		t.Fatal(err)
	}
	rec.AppliedGeneration, rec.Convergence = 7, converged(7)
	if _, err := st.Update(ctx, rec, rev); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "a sessions frame with the update", func() bool {
		for _, f := range s.frames() {
			if typ, sf := frameData[SessionsFrame](t, f); typ == FrameSessions && len(sf.Changed) == 1 && sf.Changed[0].AppliedGeneration == 7 &&
				sf.Changed[0].Verdict == "converged" && sf.Total == 3 {
				return true
			}
		}
		return false
	})
	if err := st.Delete(ctx, "SESSIONBBBBBBBBBBBBBBBB1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "a sessions frame with the delete", func() bool {
		fs := s.frames()
		typ, sf := frameData[SessionsFrame](t, fs[len(fs)-1])
		return typ == FrameSessions && len(sf.Removed) == 1 && sf.Removed[0] == "SESSIONBBBBBBBBBBBBBBBB1" && sf.Total == 2
	})
	if e := getEdges(t, d, ""); e.Total != 2 || len(e.Edges) != 1 || e.Verdicts["converged"] != 2 {
		t.Errorf("after the delete: %+v", e)
	}
}

// A record that expires (the watcher sees nothing) is gone after the next
// scan; beyond MaxSessions records are counted, not indexed.
func TestEdgesRescanAndCap(t *testing.T) {
	st, kv := bucket(t, time.Second) // records live about 2s without a write
	ctx := context.Background()
	for _, id := range []string{"EXPIRESAAAAAAAAAAAAAAAA1", "EXPIRESAAAAAAAAAAAAAAAA2", "EXPIRESAAAAAAAAAAAAAAAA3"} {
		if _, err := st.Create(ctx, record(id, "edge-a", 1, converged(1))); err != nil {
			t.Fatal(err)
		}
	}
	log := newFakeLog()
	d := mustNew(t, &Options{Reader: log, Log: log, Sessions: kv, Rescan: 200 * time.Millisecond, MaxSessions: 2})
	runDashboard(t, d)
	waitFor(t, 10*time.Second, "the first listing", func() bool { return getEdges(t, d, "").Ready })
	if e := getEdges(t, d, ""); e.Total != 3 || e.Untracked != 1 || len(e.Sessions) != 2 {
		t.Fatalf("capped: %+v", e)
	}
	waitFor(t, 15*time.Second, "the expired records forgotten", func() bool { return getEdges(t, d, "").Total == 0 })
}

// Without a bucket the endpoint says so; bad parameters are 400.
func TestEdgesUnavailableAndParams(t *testing.T) {
	log := newFakeLog()
	d := mustNew(t, &Options{Reader: log, Log: log})
	if e := getEdges(t, d, ""); e.Available || e.Total != 0 || e.Sessions == nil || e.Edges == nil {
		t.Errorf("no bucket: %+v", e)
	}
	for _, q := range []string{"?limit=-1", "?limit=501", "?offset=x", "?limit=1e3"} {
		w := httptest.NewRecorder()
		d.Handler(nil).ServeHTTP(w, httptest.NewRequest("GET", "/v1/edges"+q, nil))
		if w.Code != 400 {
			t.Errorf("%s: %d", q, w.Code)
		}
	}
}

// Unreadable records (written by anyone who may write the bucket) are
// skipped and reported at most once per reportEvery.
func TestEdgesUnreadableRecords(t *testing.T) {
	_, kv := bucket(t, time.Minute)
	ctx := context.Background()
	for i, v := range []string{`{"id":"SOMEONEELSEAAAAAAAAAAAA1"}`, `not json`, `{"id":"BADRECORDAAAAAAAAAAAAAA3","created_at":1}`} {
		if _, err := kv.Put(ctx, fmt.Sprintf("BADRECORDAAAAAAAAAAAAAA%d", i+1), []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var errs []error
	log := newFakeLog()
	d := mustNew(t, &Options{Reader: log, Log: log, Sessions: kv, OnError: func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }})
	runDashboard(t, d)
	waitFor(t, 10*time.Second, "the first listing", func() bool { return getEdges(t, d, "").Ready })
	if e := getEdges(t, d, ""); e.Total != 0 {
		t.Errorf("unreadable records listed: %+v", e)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) != 1 || !errors.Is(errs[0], ErrRecord) {
		t.Errorf("reports %v, want one", errs)
	}
}
