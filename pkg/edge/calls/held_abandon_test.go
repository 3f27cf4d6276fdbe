package calls

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/calltrail"
	"github.com/fleetgate/fleetgate/pkg/edge/backend"
)

// background is a Plane's Background: a wait group.
type background struct{ wg sync.WaitGroup }

func (b *background) Hold() bool { b.wg.Add(1); return true }
func (b *background) Done()      { b.wg.Done() }

// elicitCall is a 2026-07-28 client's call of alpha_elicit, a tool of a
// backend of the session-based revisions that elicits during the call.
func elicitCall() Call {
	return Call{Ident: "alice", Name: "alpha_elicit", Args: raw(`{}`), Stateless: &backend.Stateless{Revision: "2026-07-28",
		Meta: raw(`{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`)}}
}

// TestHeldAbandoned: a held call whose client never retries. Its input
// request waits HeldWait for the answer, then the backend is answered with
// an error and ends its call; the result waits HeldWait for a request to
// take it, then the call's goroutine ends the call and records it in the
// call trail, once, with the call's whole time; the room it held is given
// back and a late retry is refused.
func TestHeldAbandoned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, pool := memBackend(t)
		srv.AddTool(&mcp.Tool{Name: "elicit", InputSchema: raw(`{"type":"object"}`)},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{"type": "object"}})
				if err != nil {
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "elicitation: " + err.Error()}}}, nil
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action}}}, nil
			})
		pl := newPlane(t, pool, memView(t, []json.RawMessage{raw(`{"name":"elicit","inputSchema":{"type":"object"}}`)}, nil, nil))
		const wait = 4 * time.Second // below the pool's call timeout (10s)
		bg := &background{}
		pl.o.Background, pl.o.HeldWait = bg, wait
		var mu sync.Mutex
		var recorded []calltrail.Entry
		pl.record = func(e calltrail.Entry) { mu.Lock(); recorded = append(recorded, e); mu.Unlock() }
		trail := func() []calltrail.Entry {
			mu.Lock()
			defer mu.Unlock()
			return append([]calltrail.Entry(nil), recorded...)
		}
		defer func() { pl.Close(); bg.wg.Wait() }()

		firstReply := pl.Run(context.Background(), elicitCall())
		first := firstReply.Decoded()
		if !first.NeedsInput() || first.RequestState == "" {
			t.Fatalf("first call: %+v; want an input request", first)
		}
		time.Sleep(2*wait - time.Second)
		synctest.Wait()
		if n, h := len(trail()), pl.held.count(); n != 0 || h != 1 {
			t.Fatalf("before 2×HeldWait: %d trail entries, %d calls held; want 0 and 1", n, h)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		got := trail()
		if len(got) != 1 || got[0].Outcome != calltrail.OutcomeIsError || got[0].Latency != 2*wait || got[0].Tool != "alpha_elicit" {
			t.Fatalf("trail %+v; want the abandoned call once, isError, after %s", got, 2*wait)
		}
		if h := pl.held.count(); h != 0 {
			t.Fatalf("%d calls still held", h)
		}
		late := elicitCall()
		late.Stateless.RequestState = first.RequestState
		late.Stateless.InputResponses = raw(`{"input-1":{"action":"accept"}}`)
		if je := ClientError(pl.Run(context.Background(), late)); je == nil || fmt.Sprint(je.Code) != "-32602" {
			t.Fatalf("late retry: %v; want invalid params", je)
		}
		if n := len(trail()); n != 2 {
			t.Fatalf("%d trail entries after the late retry; want 2 (the refusal recorded)", n)
		}
	})
}

// count is how many calls are held, and checks the per-caller counts
// agree.
func (hc *heldCalls) count() int {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	n := 0
	for _, v := range hc.per {
		n += v
	}
	if n != len(hc.calls) {
		return -1
	}
	return n
}
