package prober

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/health"
)

// eraServer is a go-sdk server for the stateless generation's requests
// of a backend whose catalog differs by era: echo as the session-based
// server has it, plus the tools and prompt named.
func eraServer(tools []string, prompt string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "era", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}, Prompts: &mcp.PromptCapabilities{ListChanged: true}}})
	for _, name := range tools {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil
			})
	}
	if prompt != "" {
		srv.AddPrompt(&mcp.Prompt{Name: prompt}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
	}
	return srv
}

// TestBothErasListed: a backend that speaks both generations and lists
// them different tools and prompts is listed in both: the catalog's own
// lists are the session-based ones, its Stateless lists the stateless
// generation's, with their digest; a tool added to the stateless lists
// alone, announced on that generation's subscriptions/listen, is listed
// again without a refresh; a backend listing both eras alike has no
// Stateless lists.
func TestBothErasListed(t *testing.T) {
	b := startBackend(t, "alpha", &demobackend.Options{NewProtocol: true})
	sessionTools := names(mustList(t, b), "name")
	era := eraServer([]string{"echo", "fresh"}, "greet")
	b.ServeStatelessWith(era)
	rec := newRecorder()
	run(t, target(b, TransportStreamable), rec.sink(), &Options{Policy: health.Policy{Interval: time.Hour, Timeout: 5 * time.Second}})
	c := rec.waitCatalog(t, 0, "first", anyCatalog).v
	if c.ProtocolVersion != statelessRevision || c.StatelessOnly {
		t.Fatalf("revision %q stateless-only %v, want %q false", c.ProtocolVersion, c.StatelessOnly, statelessRevision)
	}
	if got := names(c.Tools, "name"); !slices.Equal(got, sessionTools) {
		t.Errorf("session-based tools %v, want %v", got, sessionTools)
	}
	if c.Stateless == nil {
		t.Fatal("no stateless lists for a backend listing the eras differently")
	}
	if got := names(c.Stateless.Tools, "name"); !slices.Equal(got, []string{"echo", "fresh"}) {
		t.Errorf("stateless tools %v, want [echo fresh]", got)
	}
	if got := names(c.Stateless.Prompts, "name"); !slices.Equal(got, []string{"greet"}) {
		t.Errorf("stateless prompts %v, want [greet]", got)
	}
	if d, _ := catalog.Digest(c.Stateless.Tools); d != c.Stateless.Digest || d == c.Digest {
		t.Errorf("stateless digest %s, want %s and not the session digest %s", c.Stateless.Digest, d, c.Digest)
	}

	_, cats := rec.mark()
	era.AddTool(&mcp.Tool{Name: "later", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	c2 := rec.waitCatalog(t, cats, "stateless list change", func(c Catalog) bool {
		return c.Stateless != nil && slices.Contains(names(c.Stateless.Tools, "name"), "later")
	}).v
	if got := names(c2.Tools, "name"); !slices.Equal(got, sessionTools) {
		t.Errorf("session-based tools after the change %v, want %v", got, sessionTools)
	}

	same := startBackend(t, "beta", &demobackend.Options{NewProtocol: true})
	rec2 := newRecorder()
	run(t, target(same, TransportStreamable), rec2.sink(), &Options{Policy: health.Policy{Interval: time.Hour, Timeout: 5 * time.Second}})
	if c := rec2.waitCatalog(t, 0, "first", anyCatalog).v; c.ProtocolVersion != statelessRevision || c.Stateless != nil {
		t.Errorf("a backend listing both eras alike: revision %q, stateless lists %v", c.ProtocolVersion, c.Stateless)
	}
}

// mustList lists b's tools over a session of 2025-11-25.
func mustList(t *testing.T, b *demobackend.Backend) []json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: b.URL(), MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []json.RawMessage
	for _, tool := range res.Tools {
		raw, _ := json.Marshal(tool)
		out = append(out, raw)
	}
	return out
}
