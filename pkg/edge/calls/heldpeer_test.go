package calls

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/calltrail"
	"github.com/fleetgate/fleetgate/pkg/edge/heldrelay"
	"github.com/fleetgate/fleetgate/pkg/edge/inputstate"
)

// planePeers forwards to planes in this process, by edge id, through the
// relay's wire format (encoded and decoded as over NATS).
type planePeers map[string]*Plane

func (pp planePeers) Continue(ctx context.Context, edge string, r *heldrelay.Retry) (*heldrelay.Outcome, error) {
	pl := pp[edge]
	if pl == nil {
		return nil, fmt.Errorf("%w: edge %q", heldrelay.ErrHolderGone, edge)
	}
	in, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	dr, err := heldrelay.DecodeRetry(in)
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(pl.ContinueForPeer(ctx, dr))
	if err != nil {
		return nil, err
	}
	return heldrelay.DecodeOutcome(out)
}

// TestHeldForwarded: a call held on e1 that asks twice (elicitation, then
// sampling) continues on e2 for its first answer (forwarded to e1) and on
// e1 for its second; the next input request e2 hands out is e1's, the
// call runs once and only e1 records it. A retry e2 forwards with another
// caller's identity, or of a holder gone, is refused.
func TestHeldForwarded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, pool := memBackend(t)
		var runs int
		srv.AddTool(&mcp.Tool{Name: "twice", InputSchema: raw(`{"type":"object"}`)},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				runs++
				el, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{"type": "object"}})
				if err != nil {
					return nil, err
				}
				sm, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 5,
					Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
				if err != nil {
					return nil, err
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(el.Content["name"], " ", sm.Model)}}}, nil
			})
		sv := memView(t, []json.RawMessage{raw(`{"name":"twice","inputSchema":{"type":"object"}}`)}, nil, nil)
		key, err := inputstate.New([]byte(strings.Repeat("p", 32)))
		if err != nil {
			t.Fatal(err)
		}
		peers := planePeers{}
		trails := map[string]*[]calltrail.Entry{}
		var mu sync.Mutex
		planes := map[string]*Plane{}
		for _, id := range []string{"e1", "e2"} {
			pl := newPlane(t, pool, sv)
			bg := &background{}
			pl.o.Edge, pl.o.Background, pl.o.Peers, pl.sealer = id, bg, peers, key
			var got []calltrail.Entry
			trails[id] = &got
			pl.record = func(e calltrail.Entry) { mu.Lock(); got = append(got, e); mu.Unlock() }
			planes[id] = pl
			peers[id] = pl
			defer func() { pl.Close(); bg.wg.Wait() }()
		}
		call := func(pl *Plane, ident, state, responses string) (*mcp.CallToolResult, int64) {
			c := Call{Ident: ident, Name: "alpha_twice", Args: raw(`{}`), Stateless: elicitCall().Stateless}
			c.Stateless.Meta = raw(`{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"sampling":{}}}`)
			c.Stateless.RequestState = state
			if responses != "" {
				c.Stateless.InputResponses = raw(responses)
			}
			reply := pl.Run(context.Background(), c)
			if je := ClientError(reply); je != nil {
				return nil, je.Code
			}
			return reply.Decoded(), 0
		}
		first, _ := call(planes["e1"], "alice", "", "")
		if !first.NeedsInput() || first.InputRequests["input-1"] == nil {
			t.Fatalf("first call: %+v", first)
		}
		if _, code := call(planes["e2"], "mallory", first.RequestState, `{"input-1":{"action":"accept"}}`); code != -32602 {
			t.Fatalf("mallory's retry on e2: code %d; want -32602", code)
		}
		// The holder checks the caller itself, whatever the edge forwarding.
		out := planes["e1"].ContinueForPeer(context.Background(), &heldrelay.Retry{Identity: "ident\x00mallory", Tool: "alpha_twice", Backend: "alpha",
			State: first.RequestState, Responses: raw(`{"input-1":{"action":"accept"}}`)})
		if out.Code != -32602 {
			t.Fatalf("mallory's retry forwarded to e1: %+v; want -32602", out)
		}
		second, code := call(planes["e2"], "alice", first.RequestState, `{"input-1":{"action":"accept","content":{"name":"ada"}}}`)
		if code != 0 || !second.NeedsInput() || second.InputRequests["input-2"] == nil {
			t.Fatalf("retry on e2: %+v (code %d); want e1's next input request", second, code)
		}
		done, code := call(planes["e1"], "alice", second.RequestState, `{"input-2":{"model":"m1","role":"assistant","content":{"type":"text","text":"x"}}}`)
		if code != 0 || done.IsError || text(done) != "ada m1" {
			t.Fatalf("second retry on e1: %+v (code %d)", done, code)
		}
		synctest.Wait()
		mu.Lock()
		n1, n2 := len(*trails["e1"]), len(*trails["e2"])
		mu.Unlock()
		// e1: mallory's refusal is not e1's (e2 refused it), the call once.
		if runs != 1 || n1 != 1 || n2 != 1 {
			t.Fatalf("backend ran %d times; e1 recorded %d, e2 %d; want 1, 1 (the call), 1 (mallory's refusal)", runs, n1, n2)
		}
		delete(peers, "e1")
		third, _ := call(planes["e1"], "alice", "", "")
		if _, code := call(planes["e2"], "alice", third.RequestState, `{"input-1":{"action":"accept"}}`); code != -32602 {
			t.Fatalf("retry with the holder gone: code %d; want -32602", code)
		}
	})
}
