package edge

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/fleetgate/fleetgate/pkg/edge/heldrelay"
	"github.com/fleetgate/fleetgate/pkg/edge/inputstate"
	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
)

// heldGroup is two edges of one group (one input-state key, the same
// identity header) that forward retries of held calls to each other over
// the fleet's NATS, in front of a go-sdk backend of the session-based
// revisions whose tool ask_elicit asks its client during the call.
type heldGroup struct {
	a, b  *Edge
	stopA func()
	url   string // NATS
	key   *inputstate.Sealer
}

func startHeldGroup(t *testing.T) *heldGroup {
	t.Helper()
	f, js := openFleet(t)
	url := js.Conn().ConnectedUrl()
	startAskingBackend(t, f, "ask")
	key, err := inputstate.New([]byte(strings.Repeat("r", 32)))
	if err != nil {
		t.Fatal(err)
	}
	g := &heldGroup{url: url, key: key}
	opts := func(id string) *Options {
		return &Options{ID: id, CallTimeout: 10 * time.Second, InputState: key, IdentityHeader: "X-User",
			HeldRelay: natstest.Connect(t, url)}
	}
	g.a, g.stopA = startEdgeStoppable(t, f, opts("edge-a"))
	g.b = startEdge(t, f, opts("edge-b"))
	for _, e := range []*Edge{g.a, g.b} {
		eventually(t, 10*time.Second, "ask served", func() bool { _, ok := e.current().Catalog.Tool("ask_elicit"); return ok })
	}
	return g
}

// startEdgeStoppable is startEdge with a stop that ends the edge at once
// (and at the test's end if not called).
func startEdgeStoppable(t *testing.T, f *fleet, o *Options) (*Edge, func()) {
	t.Helper()
	opts := *o
	opts.Listen, opts.AdminListen = "127.0.0.1:0", "127.0.0.1:0"
	e, err := New(f.log, &opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	var stopped error
	stop := func() {
		if done != nil {
			cancel()
			stopped = <-done
			done = nil
		}
	}
	t.Cleanup(func() {
		stop()
		if stopped != nil {
			t.Errorf("edge Run: %v", stopped)
		}
	})
	eventually(t, 30*time.Second, "edge ready", e.Ready)
	return e, stop
}

// userClient is a 2026-07-28 go-sdk client of user on url whose input
// requests the test answers (the multi round-trip handling off).
func userClient(t *testing.T, url, user string) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: headerTransport{"X-User": user}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("not asked here")
		},
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: newProtocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type headerTransport map[string]string

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// askFirst makes the first call of ask_elicit on cs: its one input request
// and state.
func askFirst(t *testing.T, cs *mcp.ClientSession) (key, state string) {
	t.Helper()
	first, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask_elicit", Arguments: map[string]any{}})
	if err != nil || !first.NeedsInput() || len(first.InputRequests) != 1 {
		t.Fatalf("first call: %+v, %v; want one input request", first, err)
	}
	for k := range first.InputRequests {
		key = k
	}
	return key, first.RequestState
}

func answerRetry(cs *mcp.ClientSession, key, state, name string) (*mcp.CallToolResult, error) {
	return cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask_elicit", Arguments: map[string]any{}, RequestState: state,
		InputResponses: mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}}})
}

// TestHeldRetryOnAnotherEdge: a 2026-07-28 client's call to a backend of
// the session-based revisions that elicits during the call is held on
// edge-a; the client's retry with the answer reaches edge-b, which
// forwards it to edge-a over NATS, and the client gets the call's result
// from edge-b. The call ran once: a second retry, on either edge, is
// refused. A retry of another caller is refused by edge-b (the state's
// binding), and a retry forwarded by hand with another caller's identity
// is refused by the holder itself, leaving the call to its caller.
func TestHeldRetryOnAnotherEdge(t *testing.T) {
	g := startHeldGroup(t)

	t.Run("completes", func(t *testing.T) {
		key, state := askFirst(t, userClient(t, g.a.MCPURL(), "alice"))
		res, err := answerRetry(userClient(t, g.b.MCPURL(), "alice"), key, state, "grace")
		if err != nil || res.IsError || res.NeedsInput() || text(res) != "accept grace" {
			t.Fatalf("retry on edge-b: %+v, %v; want the call's result", res, err)
		}
		for _, e := range []*Edge{g.a, g.b} {
			_, err := answerRetry(userClient(t, e.MCPURL(), "alice"), key, state, "grace")
			var je *jsonrpc.Error
			if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
				t.Fatalf("second retry: %v; want invalid params (the call ended)", err)
			}
		}
	})

	t.Run("identity", func(t *testing.T) {
		key, state := askFirst(t, userClient(t, g.a.MCPURL(), "alice"))
		_, err := answerRetry(userClient(t, g.b.MCPURL(), "mallory"), key, state, "mallory")
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || !strings.Contains(je.Message, "requestState") {
			t.Fatalf("mallory's retry on edge-b: %v; want invalid params naming the requestState", err)
		}
		// Straight to the holder with mallory's identity: the holder opens
		// the state itself and refuses it.
		nc := natstest.Connect(t, g.url)
		for _, who := range []string{"ident\x00mallory", "token\x00https://issuer.test\x00alice"} {
			out := forwardByHand(t, nc, g.key, &heldrelay.Retry{Identity: who, Tool: "ask_elicit", Backend: "ask", State: state,
				Responses: json.RawMessage(`{"` + key + `":{"action":"accept","content":{"name":"mallory"}}}`), WaitMillis: 5000})
			if out.Code != jsonrpc.CodeInvalidParams || out.Result != nil {
				t.Fatalf("forwarded as %q: %+v; want invalid params", who, out)
			}
		}
		res, err := answerRetry(userClient(t, g.b.MCPURL(), "alice"), key, state, "ada")
		if err != nil || res.IsError || text(res) != "accept ada" {
			t.Fatalf("alice's retry after the refusals: %+v, %v", res, err)
		}
	})

	t.Run("holder gone", func(t *testing.T) {
		key, state := askFirst(t, userClient(t, g.a.MCPURL(), "alice"))
		g.stopA()
		_, err := answerRetry(userClient(t, g.b.MCPURL(), "alice"), key, state, "grace")
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || !strings.Contains(je.Message, `"edge-a"`) ||
			!strings.Contains(je.Message, "does not answer") {
			t.Fatalf("retry with edge-a gone: %v; want invalid params naming edge-a", err)
		}
	})
}

// forwardByHand sends r to edge-a's subject as an edge of the group
// would (sealed with the group's relay key).
func forwardByHand(t *testing.T, nc *nats.Conn, key *inputstate.Sealer, r *heldrelay.Retry) *heldrelay.Outcome {
	t.Helper()
	out, err := heldrelay.New(heldrelay.Options{Conn: nc, Edge: "by-hand", Key: key.RelayKey()}).Continue(context.Background(), "edge-a", r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
