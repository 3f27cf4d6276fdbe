package test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace/noop"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/tracing"
)

// otlpReceiver is an OTLP/HTTP trace receiver: it decodes every
// ExportTraceServiceRequest POSTed to /v1/traces and keeps its spans.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			o.spans = append(o.spans, ss.GetSpans()...)
		}
	}
	o.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func (o *otlpReceiver) all() []*tracepb.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]*tracepb.Span(nil), o.spans...)
}

func attrOf(sp *tracepb.Span, key string) (string, int64, bool) {
	for _, kv := range sp.GetAttributes() {
		if kv.GetKey() == key {
			return kv.GetValue().GetStringValue(), kv.GetValue().GetIntValue(), true
		}
	}
	return "", 0, false
}

// headerTap is a reverse proxy in front of a backend that records the
// traceparent header and params._meta of every tools/call it passes on.
type headerTap struct {
	mu    sync.Mutex
	calls []tappedCall
}

type tappedCall struct{ header, meta string }

func (h *headerTap) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string `json:"method"`
				Params struct {
					Meta struct {
						Traceparent string `json:"traceparent"`
					} `json:"_meta"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &msg) == nil && msg.Method == "tools/call" {
				h.mu.Lock()
				h.calls = append(h.calls, tappedCall{r.Header.Get("Traceparent"), msg.Params.Meta.Traceparent})
				h.mu.Unlock()
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (h *headerTap) last() (tappedCall, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.calls) == 0 {
		return tappedCall{}, false
	}
	return h.calls[len(h.calls)-1], true
}

// TestTracesEndToEnd runs a controller (probing a real go-sdk backend
// behind a tap) and an edge with tracing exported over OTLP/HTTP to a
// receiver in the test. It asserts a tools/call's edge span and backend
// span (whose context the backend received, in its traceparent header
// and params._meta), and, when the backend goes down, a chain of the
// failed probe, the down event's publication and its application at the
// edge, in one trace, sharing the generation.
func TestTracesEndToEnd(t *testing.T) {
	rcv := &otlpReceiver{}
	collector := httptest.NewServer(rcv)
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	tp, err := tracing.New(context.Background(), &tracing.Options{ServiceName: "fleetgate-e2e"})
	if err != nil {
		t.Fatal(err)
	}
	if !tp.Enabled() {
		t.Fatal("tracing is off with OTEL_EXPORTER_OTLP_ENDPOINT set")
	}
	defer func() {
		if err := tp.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
		otel.SetTracerProvider(noop.NewTracerProvider()) // the next tests untraced
	}()

	// A real go-sdk backend (the demo backend's server) behind a tap.
	be := demobackend.New("alpha", nil)
	tap := &headerTap{}
	front := httptest.NewServer(tap.wrap(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return be.Server() }, nil)))
	defer front.Close()

	node := startNATS(t)
	startController(t, node.ClientURL(), "c1", fleetYAMLAt(200*time.Millisecond, 0, [2]string{"alpha", front.URL}))
	e := startEdge(t, node.ClientURL())
	cl := connectMCP(t, e.MCPURL(), "2025-11-25")
	eventually(t, 20*time.Second, "alpha_echo served", func() bool {
		for _, n := range cl.tools(t) {
			if n == "alpha_echo" {
				return true
			}
		}
		return false
	})
	res, err := cl.call("alpha_echo", map[string]any{"text": "hi"})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %v", err, text(res))
	}

	// The backend goes down: the probe fails, the controller publishes
	// the withdrawal and the edge applies it.
	front.Listener.Close()
	front.CloseClientConnections()

	var server, client *tracepb.Span
	var chain [3]*tracepb.Span // probe, publish, apply
	eventually(t, 30*time.Second, "the call's spans and a probe→publish→apply chain exported", func() bool {
		if err := tp.ForceFlush(context.Background()); err != nil {
			t.Logf("flush: %v", err)
		}
		spans := rcv.all()
		byID := map[string]*tracepb.Span{}
		for _, sp := range spans {
			byID[hex.EncodeToString(sp.GetSpanId())] = sp
		}
		server, client = nil, nil
		for _, sp := range spans {
			if sp.GetName() == "tools/call alpha_echo" && sp.GetKind() == tracepb.Span_SPAN_KIND_SERVER {
				server = sp
			}
		}
		for _, sp := range spans {
			if server != nil && sp.GetKind() == tracepb.Span_SPAN_KIND_CLIENT && bytes.Equal(sp.GetParentSpanId(), server.GetSpanId()) {
				client = sp
			}
		}
		chain = [3]*tracepb.Span{}
		for _, ap := range spans {
			if ap.GetName() != "fleetgate.apply" {
				continue
			}
			probe := byID[hex.EncodeToString(ap.GetParentSpanId())]
			if probe == nil || probe.GetName() != "ping" {
				continue
			}
			if r, _, _ := attrOf(probe, "fleetgate.probe.result"); r == "ok" {
				continue
			}
			_, gen, _ := attrOf(ap, "fleetgate.generation")
			for _, pub := range spans {
				_, pgen, _ := attrOf(pub, "fleetgate.generation")
				if pub.GetName() == "fleetgate.publish" && bytes.Equal(pub.GetParentSpanId(), probe.GetSpanId()) && pgen == gen && gen > 0 {
					chain = [3]*tracepb.Span{probe, pub, ap}
				}
			}
		}
		return server != nil && client != nil && chain[0] != nil
	})

	for key, want := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "alpha_echo",
		"fleetgate.backend": "alpha", "mcp.protocol.version": "2025-11-25"} {
		if got, _, _ := attrOf(server, key); got != want {
			t.Errorf("edge span %s = %q, want %q", key, got, want)
		}
	}
	if sid, _, _ := attrOf(server, "mcp.session.id"); sid == "" {
		t.Error("edge span has no mcp.session.id")
	}
	if _, gen, ok := attrOf(server, "fleetgate.view.generation"); !ok || gen == 0 {
		t.Errorf("edge span fleetgate.view.generation = %d, %v", gen, ok)
	}
	if got, _, _ := attrOf(client, "gen_ai.tool.name"); got != "echo" {
		t.Errorf("backend span gen_ai.tool.name = %q, want echo", got)
	}
	want := "00-" + hex.EncodeToString(client.GetTraceId()) + "-" + hex.EncodeToString(client.GetSpanId()) + "-01"
	got, ok := tap.last()
	if !ok || got.header != want || got.meta != want {
		t.Errorf("backend received traceparent header %q and _meta %q, want %q (the backend span)", got.header, got.meta, want)
	}
	probe, pub, ap := chain[0], chain[1], chain[2]
	if !bytes.Equal(probe.GetTraceId(), pub.GetTraceId()) || !bytes.Equal(probe.GetTraceId(), ap.GetTraceId()) {
		t.Error("probe, publish and apply spans are not in one trace")
	}
	_, gen, _ := attrOf(ap, "fleetgate.generation")
	t.Logf("probe %q → publish and apply of generation %d in trace %x", probe.GetStatus().GetMessage(), gen, probe.GetTraceId())
}
