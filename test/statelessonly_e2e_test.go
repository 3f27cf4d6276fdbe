package test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
)

// recordingTransport keeps every response body a client reads.
type recordingTransport struct {
	mu     sync.Mutex
	bodies bytes.Buffer
}

func (rt *recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		resp.Body = &teeBody{ReadCloser: resp.Body, rt: rt}
	}
	return resp, err
}

func (rt *recordingTransport) seen() string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.bodies.String()
}

type teeBody struct {
	io.ReadCloser
	rt *recordingTransport
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.rt.mu.Lock()
	b.rt.bodies.Write(p[:n])
	b.rt.mu.Unlock()
	return n, err
}

// statelessOnlyBackend is a go-sdk v1.8.0 server run stateless that
// refuses initialize (demobackend.Options.StatelessOnly), with a prompt,
// and a tool that asks its client for input (an input_required result)
// before answering.
func statelessOnlyBackend(t *testing.T) *demobackend.Backend {
	t.Helper()
	b := startBackend(t, "alpha", &demobackend.Options{StatelessOnly: true, Subscribe: true,
		Complete: func(_ context.Context, r *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			var vals []string
			if r.Params.Ref.Name == "greet" {
				for _, v := range []string{"ada", "alan", "grace"} {
					if strings.HasPrefix(v, r.Params.Argument.Value) {
						vals = append(vals, v)
					}
				}
			}
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: vals, Total: len(vals)}}, nil
		}})
	b.Server().AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello"}}}}, nil
	})
	elicit := mcp.InputRequestMap{"name": &mcp.ElicitParams{Message: "your name?",
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}}
	b.Server().AddPrompt(&mcp.Prompt{Name: "ask"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{InputRequests: elicit}, nil
	})
	b.Server().AddTool(&mcp.Tool{Name: "nag", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{InputRequests: elicit}, nil // never satisfied
		})
	b.Server().AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if res, ok := r.Params.InputResponses["name"].(*mcp.ElicitResult); ok {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi " + res.Content["name"].(string)}}}, nil
			}
			return &mcp.CallToolResult{InputRequests: elicit}, nil
		})
	return b
}

// TestStatelessOnlyBackendThroughEdge: a backend that speaks only
// 2026-07-28 (it refuses initialize) behind a real controller and edge
// over embedded NATS: the controller probes it healthy and publishes its
// catalog as of that generation only; a 2025-11-25 go-sdk client and a
// 2026-07-28 one both list its tools, call its tool, get its prompt and
// read its resource through the edge with the same content, the older
// one never seeing a member of the newer revision; its input request
// reaches the 2026-07-28 client, and a 2025-11-25 client on its own stream
// when it declared elicitation (the call retried with its answer), and
// fails the call of one that did not, naming why (a backend asking
// forever fails the call after a bounded number of rounds; a prompt asking
// fails naming why); a completion of its prompt's argument reaches it
// in its revision for both, and a 2025-11-25 client's resource
// subscription hears the backend's update; it going down is seen and its
// tools leave.
func TestStatelessOnlyBackendThroughEdge(t *testing.T) {
	node := startNATS(t)
	alpha := statelessOnlyBackend(t)
	startController(t, node.ClientURL(), "c1", fleetYAML(200*time.Millisecond, 200*time.Millisecond, alpha))
	el := followLog(t, node.ClientURL())
	el.waitEvent(t, 0, 20*time.Second, "alpha advertised", healthOf("alpha", true))
	_, ev, _ := el.waitEvent(t, 0, 20*time.Second, "alpha's catalog", catalogOf("alpha"))
	if cc := ev.GetCatalogChanged(); cc.ProtocolVersion != "2026-07-28" || !cc.StatelessOnly {
		t.Fatalf("catalog protocol %q stateless-only %v, want 2026-07-28 true", cc.ProtocolVersion, cc.StatelessOnly)
	}
	e := startEdge(t, node.ClientURL())

	rec := &recordingTransport{}
	old := mcp.NewClient(&mcp.Implementation{Name: "old"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ocs, err := old.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.MCPURL(), HTTPClient: &http.Client{Transport: rec}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer ocs.Close()
	asked := 0
	newer := mcp.NewClient(&mcp.Implementation{Name: "new"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked++
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, nil
		}})
	ncs, err := newer.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.MCPURL()}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer ncs.Close()
	if v := ncs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("newer client negotiated %q", v)
	}
	clients := map[string]*mcp.ClientSession{"2025-11-25": ocs, "2026-07-28": ncs}
	listed := func(cs *mcp.ClientSession) bool {
		res, err := cs.ListTools(ctx, nil)
		return err == nil && slices.ContainsFunc(res.Tools, func(t *mcp.Tool) bool { return t.Name == "alpha_echo" })
	}
	for rev, cs := range clients {
		eventually(t, 10*time.Second, rev+" client lists alpha_echo", func() bool { return listed(cs) })
	}

	var contents []any
	for _, rev := range []string{"2025-11-25", "2026-07-28"} {
		cs := clients[rev]
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha_echo", Arguments: map[string]any{"text": "hi"}})
		if err != nil || res.IsError || text(res) != "alpha: hi" {
			t.Fatalf("%s: call: %v %+v", rev, err, res)
		}
		pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "alpha_greet"})
		if err != nil || len(pr.Messages) != 1 {
			t.Fatalf("%s: prompt: %v %+v", rev, err, pr)
		}
		rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://alpha/readme"})
		if err != nil || len(rr.Contents) != 1 || rr.Contents[0].URI != "demo://alpha/readme" {
			t.Fatalf("%s: read: %v %+v", rev, err, rr)
		}
		cr, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "alpha_greet"},
			Argument: mcp.CompleteParamsArgument{Name: "name", Value: "a"}})
		if err != nil || !slices.Equal(cr.Completion.Values, []string{"ada", "alan"}) {
			t.Fatalf("%s: completion: %v %+v", rev, err, cr)
		}
		contents = append(contents, []any{res.Content, pr.Messages, rr.Contents, cr.Completion})
	}
	a, _ := json.Marshal(contents[0])
	b, _ := json.Marshal(contents[1])
	if !reflect.DeepEqual(a, b) {
		t.Errorf("content differs by revision:\n2025-11-25 %s\n2026-07-28 %s", a, b)
	}

	// A resource subscription of a 2025-11-25 client: the edge subscribes
	// on its pooled session of the backend's revision (a listen stream),
	// and the backend's update reaches the client.
	updated := make(chan string, 4)
	sub := mcp.NewClient(&mcp.Implementation{Name: "subscriber"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { updated <- r.Params.URI }})
	scs, err := sub.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.MCPURL()}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer scs.Close()
	if err := scs.Subscribe(ctx, &mcp.SubscribeParams{URI: "demo://alpha/readme"}); err != nil {
		t.Fatalf("subscription to a stateless-only backend's resource: %v", err)
	}
	for got := ""; got == ""; {
		if err := alpha.Server().ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "demo://alpha/readme"}); err != nil {
			t.Fatal(err)
		}
		select { // the backend's listen stream may still be opening: told again
		case got = <-updated:
			if got != "demo://alpha/readme" {
				t.Fatalf("update of %q", got)
			}
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("the backend's resource update never reached the subscriber")
		}
	}

	res, err := ncs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha_ask", Arguments: map[string]any{}})
	if err != nil || res.IsError || text(res) != "hi ada" || asked != 1 {
		t.Fatalf("2026-07-28 input request: %v %+v (asked %d)", err, res, asked)
	}
	res, err = ocs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha_ask", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(text(res), "elicitation/create") || !strings.Contains(text(res), "did not declare the elicitation capability") {
		t.Fatalf("2025-11-25 input request, no capability: %v %+v, want an error naming the request and why", err, res)
	}
	oldAsked := 0
	asking := mcp.NewClient(&mcp.Implementation{Name: "old-asked"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			oldAsked++
			if r.Params.Message != "your name?" {
				t.Errorf("2025-11-25 client asked %q", r.Params.Message)
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "grace"}}, nil
		}})
	acs, err := asking.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.MCPURL(), HTTPClient: &http.Client{Transport: rec}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer acs.Close()
	res, err = acs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha_ask", Arguments: map[string]any{}})
	if err != nil || res.IsError || text(res) != "hi grace" || oldAsked != 1 {
		t.Fatalf("2025-11-25 input request relayed: %v %+v (asked %d)", err, res, oldAsked)
	}
	res, err = acs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha_nag", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(text(res), "too many input rounds") || oldAsked != 1+7 {
		t.Fatalf("2025-11-25 endless input requests: %v %+v (asked %d), want a bounded failure", err, res, oldAsked)
	}
	if _, err := acs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "alpha_ask"}); err == nil || !strings.Contains(err.Error(), "only on a tools/call's stream") {
		t.Fatalf("2025-11-25 prompt asking for input: %v, want the reason", err)
	}
	for _, member := range []string{`"resultType"`, `"ttlMs"`, `"cacheScope"`, `"requestState"`, `"inputRequests"`} {
		if strings.Contains(rec.seen(), member) {
			t.Errorf("the 2025-11-25 client was sent %s", member)
		}
	}

	from := el.len()
	alpha.Stop()
	el.waitEvent(t, from, 20*time.Second, "alpha's loss", healthOf("alpha", false))
	for rev, cs := range clients {
		eventually(t, 10*time.Second, rev+" client no longer lists alpha_echo", func() bool { return !listed(cs) })
	}
}
