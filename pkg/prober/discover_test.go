package prober

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/health"
)

func TestDiscoveryDemoBackend(t *testing.T) {
	for _, transport := range []string{TransportStreamable, TransportSSE} {
		t.Run(transport, func(t *testing.T) {
			b := startBackend(t, "alpha", &demobackend.Options{SSE: transport == TransportSSE})
			rec := newRecorder()
			run(t, target(b, transport), rec.sink(), &Options{Policy: health.Policy{Interval: time.Hour}})
			o, _ := rec.waitObs(t, 0, "first", func(health.Observation) bool { return true })
			if o.v.Result != health.OK || o.v.Latency <= 0 {
				t.Errorf("first observation %+v, want OK with a latency", o.v)
			}
			c := rec.waitCatalog(t, 0, "first", anyCatalog).v
			if len(c.Tools) != 2 || len(c.Resources) != 1 || len(c.Prompts) != 1 || c.Pages != 1 {
				t.Fatalf("catalog: %d tools, %d resources, %d prompts, %d pages; want 2, 1, 1, 1",
					len(c.Tools), len(c.Resources), len(c.Prompts), c.Pages)
			}
			want, err := catalog.Digest(c.Tools)
			if err != nil || c.Digest != want || !strings.HasPrefix(c.Digest, catalog.DigestPrefix) {
				t.Errorf("digest %q, want %q (err %v)", c.Digest, want, err)
			}
			for _, raw := range append(append(c.Tools, c.Resources...), c.Prompts...) {
				if canon, _ := catalog.Canonical(raw); string(canon) != string(raw) {
					t.Errorf("definition not canonical: %s", raw)
				}
			}
		})
	}
}

// TestListChanged: a tool change on the backend reaches the sink within
// one second, through notifications/tools/list_changed.
func TestListChanged(t *testing.T) {
	for _, transport := range []string{TransportStreamable, TransportSSE} {
		t.Run(transport, func(t *testing.T) {
			b := startBackend(t, "alpha", &demobackend.Options{SSE: transport == TransportSSE})
			rec := newRecorder()
			run(t, target(b, transport), rec.sink(), &Options{Policy: health.Policy{Interval: time.Hour}})
			first := rec.waitCatalog(t, 0, "first", anyCatalog).v

			_, cats := rec.mark()
			changed := time.Now()
			b.AddTool(&mcp.Tool{Name: "fresh", Description: "new", InputSchema: json.RawMessage(`{"type":"object"}`)})
			c := rec.waitCatalog(t, cats, "changed", func(c Catalog) bool { return c.Digest != first.Digest })
			if d := c.at.Sub(changed); d >= time.Second {
				t.Errorf("new catalog after %v, want < 1s", d)
			}
			t.Logf("tool change delivered after %v", c.at.Sub(changed))
			if len(c.v.Tools) != 3 {
				t.Errorf("%d tools, want 3", len(c.v.Tools))
			}

			_, cats = rec.mark()
			b.RemoveTools("fresh")
			c = rec.waitCatalog(t, cats, "reverted", anyCatalog)
			if c.v.Digest != first.Digest {
				t.Errorf("after removal: digest %s, want the first one %s", c.v.Digest, first.Digest)
			}
		})
	}
}

// TestPagedDiscovery: 2,500 tools served 100 a page are all discovered.
func TestPagedDiscovery(t *testing.T) {
	b := startBackend(t, "big", &demobackend.Options{ExtraTools: 2498, PageSize: 100})
	rec := newRecorder()
	run(t, target(b, ""), rec.sink(), &Options{Policy: health.Policy{Interval: time.Hour}})
	c := rec.waitCatalog(t, 0, "paged", anyCatalog).v
	if len(c.Tools) != 2500 || c.Pages != 25 || len(c.InvalidTools) != 0 {
		t.Fatalf("%d tools in %d pages (%d invalid), want 2500 in 25", len(c.Tools), c.Pages, len(c.InvalidTools))
	}
}

// rawBackend is a minimal hand-written MCP server (streamable HTTP, JSON
// responses, no GET stream) that serves byte-exact list results.
type rawBackend struct {
	caps  string            // initialize capabilities
	lists map[string]string // "method cursor" -> result JSON, or "error:<code>"

	mu       sync.Mutex
	sessions int    // sessions created
	lost     string // a session answered with 404 from now on
}

// forget makes the newest session unknown, as after a backend restart.
func (rb *rawBackend) forget() {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	rb.lost = fmt.Sprintf("raw-%d", rb.sessions)
}

func (rb *rawBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rb.mu.Lock()
	lost := rb.lost
	rb.mu.Unlock()
	if sid := r.Header.Get("Mcp-Session-Id"); sid != "" && sid == lost {
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	switch r.Method {
	case http.MethodGet:
		http.Error(w, "no stream", http.StatusMethodNotAllowed)
		return
	case http.MethodDelete:
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Cursor string `json:"cursor"`
		} `json:"params"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if req.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	result := `{}`
	switch req.Method {
	case "initialize":
		rb.mu.Lock()
		rb.sessions++
		w.Header().Set("Mcp-Session-Id", fmt.Sprintf("raw-%d", rb.sessions))
		rb.mu.Unlock()
		result = `{"protocolVersion":"2025-11-25","capabilities":` + rb.caps + `,"serverInfo":{"name":"raw","version":"1"}}`
	case "ping":
	default:
		r, ok := rb.lists[req.Method+" "+req.Params.Cursor]
		if !ok {
			r = "error:-32601"
		}
		if code, isErr := strings.CutPrefix(r, "error:"); isErr {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":%s,"message":"nope"}}`, req.ID, code)
			return
		}
		result = r
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, result)
}

func startRaw(t *testing.T, rb *rawBackend) Target {
	srv := httptest.NewServer(rb)
	t.Cleanup(srv.Close)
	return Target{Group: "default", Name: "raw", URL: srv.URL + "/mcp"}
}

// TestRawDefinitions: definitions reach the sink with every member the
// backend sent (the SDK's Tool struct drops "execution"), invalid tools are
// reported and dropped, and a backend without prompts support just has
// none.
func TestRawDefinitions(t *testing.T) {
	target := startRaw(t, &rawBackend{
		caps: `{"tools":{},"resources":{},"prompts":{}}`,
		lists: map[string]string{
			"tools/list ": `{"tools":[` +
				`{"name":"slow","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"},"x-vendor":[1,2]},` +
				`{"name":"bad name!","inputSchema":{"type":"object"}},` +
				`{"name":"noschema"}` +
				`],"nextCursor":"p2"}`,
			"tools/list p2":   `{"tools":[{"name":"two","description":"second page","inputSchema":{"type":"object"}}]}`,
			"resources/list ": `{"resources":[{"uri":"file:///a","name":"a","annotations":{"z":1,"a":2}}]}`,
			"prompts/list ":   "error:-32601",
		},
	})
	rec := newRecorder()
	run(t, target, rec.sink(), &Options{Policy: health.Policy{Interval: time.Hour}})
	c := rec.waitCatalog(t, 0, "raw", anyCatalog).v
	want := []string{
		`{"execution":{"taskSupport":"optional"},"inputSchema":{"type":"object"},"name":"slow","x-vendor":[1,2]}`,
		`{"description":"second page","inputSchema":{"type":"object"},"name":"two"}`,
	}
	if len(c.Tools) != len(want) {
		t.Fatalf("tools %s, want %d", c.Tools, len(want))
	}
	for i := range want {
		if string(c.Tools[i]) != want[i] {
			t.Errorf("tool %d:\n got %s\nwant %s", i, c.Tools[i], want[i])
		}
	}
	if len(c.InvalidTools) != 2 || c.InvalidTools[0].Name != "bad name!" || c.InvalidTools[1].Name != "noschema" ||
		!errors.Is(&c.InvalidTools[1], catalog.ErrInvalidTool) {
		t.Errorf("invalid tools %+v, want 'bad name!' and 'noschema'", c.InvalidTools)
	}
	if len(c.Resources) != 1 || string(c.Resources[0]) != `{"annotations":{"a":2,"z":1},"name":"a","uri":"file:///a"}` {
		t.Errorf("resources %s", c.Resources)
	}
	if len(c.Prompts) != 0 || c.Pages != 2 {
		t.Errorf("prompts %s, pages %d; want none and 2", c.Prompts, c.Pages)
	}
}

// TestDiscoveryFailures: a cursor loop and a page limit fail the discovery
// (no catalog is delivered; the failure is counted) while pings stay OK.
func TestDiscoveryFailures(t *testing.T) {
	cases := []struct {
		name     string
		lists    map[string]string
		maxPages int
	}{
		{"cursor loop", map[string]string{
			"tools/list ":  `{"tools":[],"nextCursor":"a"}`,
			"tools/list a": `{"tools":[],"nextCursor":"b"}`,
			"tools/list b": `{"tools":[],"nextCursor":"a"}`,
		}, 0},
		{"page limit", map[string]string{
			"tools/list ":  `{"tools":[],"nextCursor":"a"}`,
			"tools/list a": `{"tools":[],"nextCursor":"b"}`,
			"tools/list b": `{"tools":[]}`,
		}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target := startRaw(t, &rawBackend{caps: `{"tools":{}}`, lists: tc.lists})
			reg := prometheus.NewRegistry()
			rec := newRecorder()
			run(t, target, rec.sink(), &Options{Policy: health.Policy{Interval: 20 * time.Millisecond},
				MaxPages: tc.maxPages, Metrics: NewMetrics(reg)})
			// Discovery is retried after each OK ping until it works.
			deadline := time.Now().Add(waitFor)
			for counter(t, reg, "fleetgate_prober_discoveries_total", "failure") < 2 {
				if time.Now().After(deadline) {
					t.Fatal("discovery failures were not counted")
				}
				rec.waitObs(t, 0, "OK", isResult(health.OK))
				time.Sleep(10 * time.Millisecond) // polling interval, not an assertion
			}
			if _, cats := rec.mark(); cats != 0 {
				t.Errorf("%d catalogs delivered from a failing discovery", cats)
			}
			if n := counter(t, reg, "fleetgate_prober_probes_total", "ok"); n < 1 {
				t.Errorf("ok probes counted: %v", n)
			}
		})
	}
}

// counter sums the series of a counter family whose labels include value.
func counter(t *testing.T, g prometheus.Gatherer, name, value string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == value {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// TestSessionMissing: a backend that forgot the session (HTTP 404,
// mcp.ErrSessionMissing) is a Failure at the next ping, then the prober
// reconnects and the backend is OK again.
func TestSessionMissing(t *testing.T) {
	rb := &rawBackend{caps: `{"tools":{}}`, lists: map[string]string{"tools/list ": `{"tools":[]}`}}
	target := startRaw(t, rb)
	reg := prometheus.NewRegistry()
	rec := newRecorder()
	run(t, target, rec.sink(), &Options{Policy: health.Policy{Interval: 50 * time.Millisecond}, Metrics: NewMetrics(reg)})
	rec.waitObs(t, 0, "first OK", isResult(health.OK))
	from, _ := rec.mark()
	rb.forget()
	o, i := rec.waitObs(t, from, "failure", isResult(health.Failure))
	if !strings.Contains(o.v.Reason, "session not found") {
		t.Errorf("reason %q, want session not found", o.v.Reason)
	}
	rec.waitObs(t, i, "OK after reconnect", isResult(health.OK))
	if n := counter(t, reg, "fleetgate_prober_reconnects_total", "raw"); n != 1 {
		t.Errorf("reconnects counted: %v, want 1", n)
	}
}
