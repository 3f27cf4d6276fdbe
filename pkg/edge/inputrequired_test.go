package edge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/edge/inputstate"
)

// backendState is the requestState the input backend hands out.
const backendState = "backend-state-1"

// startInputBackend starts a backend of both protocol generations,
// discovered in 2026-07-28, whose tool "confirm" asks its caller to
// confirm (an elicitation input request, with backendState) and, on the
// retry with the answer and that state, says what the answer was.
func startInputBackend(t testing.TB, f *fleet) *demobackend.Backend {
	t.Helper()
	b := startBackend(t, "alpha", &demobackend.Options{NewProtocol: true})
	b.AddToolFunc(&mcp.Tool{Name: "confirm", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Params.InputResponses == nil {
				return &mcp.CallToolResult{RequestState: backendState, InputRequests: mcp.InputRequestMap{
					"ok": &mcp.ElicitParams{Message: "sure?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"sure":{"type":"boolean"}}}`)}}}, nil
			}
			if req.Params.RequestState != backendState {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "state " + req.Params.RequestState}
			}
			r, _ := req.Params.InputResponses["ok"].(*mcp.ElicitResult)
			if r == nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no answer"}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "confirmed: " + r.Action}}}, nil
		})
	b.Server().AddPrompt(&mcp.Prompt{Name: "confirm_prompt"},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			if req.Params.InputResponses == nil {
				return &mcp.GetPromptResult{RequestState: backendState, InputRequests: mcp.InputRequestMap{
					"ok": &mcp.ElicitParams{Message: "sure?", RequestedSchema: json.RawMessage(`{"type":"object"}`)}}}, nil
			}
			r, _ := req.Params.InputResponses["ok"].(*mcp.ElicitResult)
			if req.Params.RequestState != backendState || r == nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad retry"}
			}
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "prompt " + r.Action}}}}, nil
		})
	f.add("default", b)
	c := listCatalog(t, b)
	c.ProtocolVersion = newProtocol
	f.catalog("default", b.Name(), c)
	f.health("default", b.Name(), true)
	return b
}

// newProtocolClient connects a go-sdk client of 2026-07-28 to url, its
// multi round-trip middleware off (the test answers input requests
// itself) or on (the client answers them with its elicitation handler).
func newProtocolClient(t *testing.T, url string, auto bool) *mcp.ClientSession {
	t.Helper()
	o := &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"sure": true}}, nil
		}}
	if !auto {
		o.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, o).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: newProtocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestInputRequiredAcrossEdges: a 2026-07-28 client calling a tool of a
// backend of that revision gets the backend's input requests; the state
// it is handed is sealed (the backend's is not readable in it); its retry
// completes on the edge that asked and on another edge of the group (the
// same key); a retry with the state altered, on an edge of another key, or
// with no state where one was issued is refused with invalid params, and
// the backend never runs the call with a state it did not issue.
func TestInputRequiredAcrossEdges(t *testing.T) {
	f := newFleet(t)
	startInputBackend(t, f)
	key, err := inputstate.New([]byte(strings.Repeat("g", 32)))
	if err != nil {
		t.Fatal(err)
	}
	a := startEdge(t, f, &Options{CallTimeout: 10 * time.Second, InputState: key})
	b := startEdge(t, f, &Options{CallTimeout: 10 * time.Second, InputState: key})
	foreign := startEdge(t, f, &Options{CallTimeout: 10 * time.Second})
	for _, e := range []*Edge{a, b, foreign} {
		eventually(t, 10*time.Second, "confirm served", func() bool {
			_, ok := e.current().Catalog.Tool("alpha_confirm")
			return ok
		})
	}
	ctx := context.Background()

	t.Run("automatic", func(t *testing.T) {
		cs := newProtocolClient(t, a.MCPURL(), true)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha_confirm", Arguments: map[string]any{}})
		if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "confirmed: accept" {
			t.Fatalf("call answered by the client's handler: %+v, %v", res, err)
		}
		pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "alpha_confirm_prompt"})
		if err != nil || len(pr.Messages) != 1 || pr.Messages[0].Content.(*mcp.TextContent).Text != "prompt accept" {
			t.Fatalf("prompt answered by the client's handler: %+v, %v", pr, err)
		}
	})

	first, err := newProtocolClient(t, a.MCPURL(), false).CallTool(ctx, &mcp.CallToolParams{Name: "alpha_confirm", Arguments: map[string]any{}})
	if err != nil || !first.NeedsInput() || first.InputRequests["ok"] == nil {
		t.Fatalf("first call: %+v, %v; want the backend's input request", first, err)
	}
	if first.RequestState == backendState || strings.Contains(first.RequestState, backendState) {
		t.Fatalf("requestState %q: the backend's own state reached the client", first.RequestState)
	}
	answer := mcp.InputResponseMap{"ok": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"sure": true}}}
	retry := func(e *Edge, state string, responses mcp.InputResponseMap) (*mcp.CallToolResult, error) {
		return newProtocolClient(t, e.MCPURL(), false).CallTool(ctx, &mcp.CallToolParams{Name: "alpha_confirm",
			Arguments: map[string]any{}, InputResponses: responses, RequestState: state})
	}
	for name, e := range map[string]*Edge{"the same edge": a, "another edge of the group": b} {
		t.Run(name, func(t *testing.T) {
			res, err := retry(e, first.RequestState, answer)
			if err != nil || res.IsError || res.NeedsInput() || res.Content[0].(*mcp.TextContent).Text != "confirmed: accept" {
				t.Fatalf("retry: %+v, %v", res, err)
			}
		})
	}
	for _, tc := range []struct {
		name  string
		e     *Edge
		state string
	}{
		{"altered state", b, first.RequestState + "-TAMPERED"},
		{"an edge of another key", foreign, first.RequestState},
		{"the backend's own state", a, backendState},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := retry(tc.e, tc.state, answer)
			var je *jsonrpc.Error
			if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || !strings.Contains(je.Message, "requestState") {
				t.Fatalf("retry: %v; want invalid params naming the requestState", err)
			}
		})
	}
}

// TestInputRequiredHeldCall: a 2026-07-28 client calling a tool of a
// backend of the session-based revisions that asks its client during the
// call (elicitation, sampling) gets the backend's request as an input
// request, and its retry with the answer completes the held call: with
// the go-sdk client's own multi round-trip handling, and by hand. A retry
// that reaches another edge of the group is refused naming the edge that
// holds the call (never run twice, never a hang); a client that declared
// no capability is not held (the backend's request refused at once).
func TestInputRequiredHeldCall(t *testing.T) {
	f := newFleet(t)
	startAskingBackend(t, f, "ask")
	key, err := inputstate.New([]byte(strings.Repeat("h", 32)))
	if err != nil {
		t.Fatal(err)
	}
	a := startEdge(t, f, &Options{ID: "edge-a", CallTimeout: 10 * time.Second, InputState: key})
	b := startEdge(t, f, &Options{ID: "edge-b", CallTimeout: 10 * time.Second, InputState: key})
	for _, e := range []*Edge{a, b} {
		eventually(t, 10*time.Second, "ask served", func() bool {
			_, ok := e.current().Catalog.Tool("ask_elicit")
			return ok
		})
	}
	ctx := context.Background()
	text := func(res *mcp.CallToolResult) string {
		if res == nil || len(res.Content) != 1 {
			return fmt.Sprintf("%+v", res)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}

	t.Run("automatic", func(t *testing.T) {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, &mcp.ClientOptions{
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, nil
			},
			CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				return &mcp.CreateMessageResult{Model: "m1", Role: "assistant", Content: &mcp.TextContent{Text: "hi"}}, nil
			}}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: a.MCPURL()}, &mcp.ClientSessionOptions{ProtocolVersion: newProtocol})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		for tool, want := range map[string]string{"ask_elicit": "accept ada", "ask_sample": "model m1: hi"} {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
			if err != nil || res.IsError || text(res) != want {
				t.Errorf("%s: %s, %v; want %q", tool, text(res), err, want)
			}
		}
	})

	t.Run("by hand, retry on another edge", func(t *testing.T) {
		first, err := newProtocolClient(t, a.MCPURL(), false).CallTool(ctx, &mcp.CallToolParams{Name: "ask_elicit", Arguments: map[string]any{}})
		if err != nil || !first.NeedsInput() || len(first.InputRequests) != 1 {
			t.Fatalf("first call: %+v, %v; want one input request", first, err)
		}
		var key string
		for k, v := range first.InputRequests {
			if p, ok := v.(*mcp.ElicitParams); !ok || p.Message != "your name?" {
				t.Fatalf("input request %T %+v, want the backend's elicitation", v, v)
			}
			key = k
		}
		answer := mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "grace"}}}
		_, err = newProtocolClient(t, b.MCPURL(), false).CallTool(ctx, &mcp.CallToolParams{Name: "ask_elicit",
			Arguments: map[string]any{}, InputResponses: answer, RequestState: first.RequestState})
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || !strings.Contains(je.Message, `"edge-a"`) {
			t.Fatalf("retry on edge-b: %v; want invalid params naming edge-a", err)
		}
		res, err := newProtocolClient(t, a.MCPURL(), false).CallTool(ctx, &mcp.CallToolParams{Name: "ask_elicit",
			Arguments: map[string]any{}, InputResponses: answer, RequestState: first.RequestState})
		if err != nil || res.NeedsInput() || text(res) != "accept grace" {
			t.Fatalf("retry on edge-a: %s, %v", text(res), err)
		}
		_, err = newProtocolClient(t, a.MCPURL(), false).CallTool(ctx, &mcp.CallToolParams{Name: "ask_elicit",
			Arguments: map[string]any{}, InputResponses: answer, RequestState: first.RequestState})
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
			t.Fatalf("second retry of an ended call: %v; want invalid params", err)
		}
	})

	t.Run("no capability", func(t *testing.T) {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: a.MCPURL()}, &mcp.ClientSessionOptions{ProtocolVersion: newProtocol})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_elicit", Arguments: map[string]any{}})
		if err != nil || !res.IsError || !strings.Contains(text(res), "elicitation") {
			t.Fatalf("call of a client that cannot be asked: %s, %v; want the backend's error", text(res), err)
		}
	})
}
