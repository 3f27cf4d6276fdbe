package edge

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/tracing"
)

// TestTraceCall: a tools/call through a traced edge is a server span
// with the MCP attributes and a client span under it, whose context the
// backend call carries; with a client's traceparent in _meta, the server
// span is its child.
func TestTraceCall(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	f := newFleet(t)
	be := startBackend(t, "alpha", nil)
	f.healthyBackend("default", be)
	e := startEdge(t, f, &Options{TracerProvider: tp, CallTimeout: 10 * time.Second})
	c := connect(t, e.MCPURL(), "2025-11-25")
	const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha_echo", Arguments: map[string]any{"text": "hi"},
		Meta: mcp.Meta{"traceparent": parent}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %v", err, text(res))
	}
	var server, client sdktrace.ReadOnlySpan
	for _, s := range exp.GetSpans().Snapshots() {
		switch s.SpanKind() {
		case trace.SpanKindServer:
			if strings.HasPrefix(s.Name(), "tools/call") {
				server = s
			}
		case trace.SpanKindClient:
			client = s
		}
	}
	if server == nil || client == nil {
		t.Fatalf("spans: %v", exp.GetSpans())
	}
	if got := server.Parent().TraceID().String(); got != "0af7651916cd43dd8448eb211c80319c" || !server.Parent().IsRemote() {
		t.Errorf("server span's parent trace %s (remote %v), want the client's", got, server.Parent().IsRemote())
	}
	if client.Parent().SpanID() != server.SpanContext().SpanID() {
		t.Error("the backend span is not the edge span's child")
	}
	want := map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "alpha_echo",
		"mcp.protocol.version": "2025-11-25", "fleetgate.backend": "alpha", "gen_ai.operation.name": "execute_tool"}
	for _, kv := range server.Attributes() {
		if w, ok := want[string(kv.Key)]; ok {
			if kv.Value.AsString() != w {
				t.Errorf("%s = %q, want %q", kv.Key, kv.Value.AsString(), w)
			}
			delete(want, string(kv.Key))
		}
	}
	if len(want) > 0 {
		t.Errorf("server span lacks %v", want)
	}
	if server.Name() != "tools/call alpha_echo" || client.Name() != "tools/call echo" {
		t.Errorf("span names %q, %q", server.Name(), client.Name())
	}
}

// TestTraceApply: an event carrying a traceparent is applied in a span
// that is its child, with the generation; untraced events make none.
func TestTraceApply(t *testing.T) { synctest.Test(t, testTraceApply) }

func testTraceApply(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	e := serveMemoryEdge(t, &Options{TracerProvider: tp})
	e.up("alpha", "echo") // untraced
	e.settle()
	const cause = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ev := events.NewHealthChanged(time.Now(), "default", "alpha", "healthy", "unhealthy", false, "probe failed")
	ev.Traceparent = cause
	gen := e.publishEvent(e.withBackend(e.next(), "alpha", false, nil), ev)
	e.settle()
	applied := false
	for _, s := range exp.GetSpans().Snapshots() {
		if s.Name() == "fleetgate.apply" && s.Parent().SpanID() == tracing.SpanContextOf(cause).SpanID() {
			for _, kv := range s.Attributes() {
				if kv.Key == "fleetgate.generation" && kv.Value.AsInt64() == int64(gen) {
					applied = true
				}
			}
		}
	}
	if !applied {
		t.Fatalf("no apply span under the event's trace with generation %d", gen)
	}
	for _, s := range exp.GetSpans().Snapshots() {
		if s.Name() == "fleetgate.apply" && !s.Parent().IsValid() {
			t.Error("an untraced event was applied in a span")
		}
	}
}

// TestTraceRequests: the other MCP requests a traced edge serves are
// server spans too, named by method, with the session's attributes, and
// a backend call made for one (prompts/get) is under it.
func TestTraceRequests(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	f := newFleet(t)
	f.healthyBackend("default", startBackend(t, "alpha", nil))
	e := startEdge(t, f, &Options{TracerProvider: tp, CallTimeout: 10 * time.Second})
	c := connect(t, e.MCPURL(), "2025-11-25")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var prompt string
	for p, err := range c.cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		prompt = p.Name
	}
	if _, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: prompt, Arguments: map[string]string{"name": "x", "topic": "x"}}); err != nil {
		t.Logf("prompts/get: %v (the span is what is checked)", err)
	}
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range exp.GetSpans().Snapshots() {
		if s.SpanKind() == trace.SpanKindServer {
			byName[s.Name()] = s
		}
	}
	for _, m := range []string{"initialize", "tools/list", "prompts/list", "prompts/get"} {
		s, ok := byName[m]
		if !ok {
			t.Errorf("no server span %q among %v", m, exp.GetSpans())
			continue
		}
		attrs := map[string]string{}
		for _, kv := range s.Attributes() {
			attrs[string(kv.Key)] = kv.Value.Emit()
		}
		if attrs["mcp.method.name"] != m || attrs["mcp.session.id"] != c.cs.ID() && m != "initialize" {
			t.Errorf("span %s attributes %v", m, attrs)
		}
	}
}
