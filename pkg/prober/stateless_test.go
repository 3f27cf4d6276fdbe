package prober

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/health"
)

// names are the values of member key of the definitions in defs.
func names(defs []json.RawMessage, key string) []string {
	var out []string
	for _, d := range defs {
		var m map[string]any
		if json.Unmarshal(d, &m) == nil {
			if v, ok := m[key].(string); ok {
				out = append(out, v)
			}
		}
	}
	return out
}

// TestStatelessOnlyBackend: a go-sdk server run stateless behind a
// handler that refuses initialize is probed healthy over server/discover,
// listed whole (tools, prompts, resources, templates) in 2026-07-28, its
// catalog marked as of that generation only; a change of its tools,
// announced on subscriptions/listen, is listed again on a session of its
// own (the go-sdk's list cache never answers); it going down is reported
// as a failure.
func TestStatelessOnlyBackend(t *testing.T) {
	b := startBackend(t, "alpha", &demobackend.Options{StatelessOnly: true})
	srv := b.Server()
	srv.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	srv.AddResource(&mcp.Resource{URI: "file:///motd", Name: "motd"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///logs/{day}", Name: "logs"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	})
	rec := newRecorder()
	p := run(t, target(b, TransportStreamable), rec.sink(), &Options{Policy: health.Policy{Interval: time.Hour, Timeout: 5 * time.Second}})
	rec.waitObs(t, 0, "healthy", isResult(health.OK))
	c := rec.waitCatalog(t, 0, "first", anyCatalog).v
	if c.ProtocolVersion != statelessRevision || !c.StatelessOnly {
		t.Errorf("catalog revision %q stateless-only %v, want %q true", c.ProtocolVersion, c.StatelessOnly, statelessRevision)
	}
	if got := names(c.Tools, "name"); !slices.Contains(got, "echo") {
		t.Errorf("tools %v, want echo among them", got)
	}
	if got := names(c.Prompts, "name"); !slices.Contains(got, "greet") {
		t.Errorf("prompts %v", got)
	}
	if got := names(c.Resources, "uri"); !slices.Contains(got, "file:///motd") {
		t.Errorf("resources %v", got)
	}
	if got := names(c.ResourceTemplates, "uriTemplate"); !slices.Contains(got, "file:///logs/{day}") {
		t.Errorf("templates %v", got)
	}

	_, cats := rec.mark()
	b.AddTool(&mcp.Tool{Name: "later", InputSchema: json.RawMessage(`{"type":"object"}`)})
	c2 := rec.waitCatalog(t, cats, "relisted", func(c Catalog) bool { return slices.Contains(names(c.Tools, "name"), "later") }).v
	if !c2.StatelessOnly {
		t.Error("relisted catalog lost its generation")
	}

	obs, _ := rec.mark()
	b.Stop()
	p.Refresh()
	rec.waitObs(t, obs, "failure after the backend went down", isResult(health.Failure))
}

// TestSessionBackendNotStatelessOnly: a backend that takes initialize is
// probed as before, in the session-based generation, whatever else it
// speaks.
func TestSessionBackendNotStatelessOnly(t *testing.T) {
	for _, newProto := range []bool{false, true} {
		b := startBackend(t, "alpha", &demobackend.Options{NewProtocol: newProto})
		rec := newRecorder()
		run(t, target(b, TransportStreamable), rec.sink(), &Options{Policy: health.Policy{Interval: time.Hour}})
		if c := rec.waitCatalog(t, 0, "first", anyCatalog).v; c.StatelessOnly {
			t.Errorf("new protocol %v: catalog marked stateless-only", newProto)
		}
	}
}

// TestRefusingBackend: a backend that refuses initialize and
// server/discover alike is a failure, with the reason of the refused
// initialize, and has no catalog.
func TestRefusingBackend(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		if r.Method != http.MethodPost || json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req) != nil || req.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"nope"}}`, req.ID)
	}))
	t.Cleanup(srv.Close)
	rec := newRecorder()
	run(t, Target{Group: "default", Name: "refusing", URL: srv.URL + "/mcp"}, rec.sink(), &Options{Policy: health.Policy{Interval: time.Hour}})
	o, _ := rec.waitObs(t, 0, "failure", isResult(health.Failure))
	if !strings.Contains(o.v.Reason, "nope") {
		t.Errorf("reason %q, want the backend's refusal", o.v.Reason)
	}
	if _, cats := rec.mark(); cats != 0 {
		t.Errorf("%d catalogs of a refusing backend", cats)
	}
}
