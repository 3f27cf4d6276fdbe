package edge

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/edge/callslot"
	"github.com/fleetgate/fleetgate/pkg/policy"
	"github.com/fleetgate/fleetgate/pkg/ratelimit"
)

// A call the go-sdk serves holds its concurrency slot for as long as it
// runs, not only until its client leaves: with concurrent_calls 1, a
// second call is refused while the first runs; once the first call's
// client leaves, the edge ends that call (its result can reach no one)
// and only then is the slot free for the next. Before, the slot was given
// back when the client left while the call ran on, so a client that
// leaves and comes back ran any number of calls at once.
func TestConcurrencySlotHeldWhileGoSDKCallRuns(t *testing.T) {
	synctest.Test(t, testConcurrencySlotHeldWhileGoSDKCallRuns)
}

func testConcurrencySlotHeldWhileGoSDKCallRuns(t *testing.T) {
	be := demobackend.New("alpha", nil)
	started, release := make(chan struct{}, 4), make(chan struct{})
	defer close(release)
	be.AddToolFunc(&mcp.Tool{Name: "block", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	// A session timeout keeps the session's calls on the go-sdk's path.
	m := serveMemoryEdge(t, &Options{IdentityHeader: userHeader, CallTimeout: time.Minute, SessionTimeout: time.Hour})
	m.serveBackend(t, be)
	m.settle()
	e := m.Edge
	if _, ok := e.current().Catalog.Tool("alpha_block"); !ok {
		t.Fatal("alpha_block not served")
	}
	sid := rawInitialize(t, e.MCPURL(), "alice")
	m.setPolicy(&policy.Section{RateLimits: &ratelimit.Limits{Identity: &ratelimit.IdentityLimits{ConcurrentCalls: 1}}})
	m.settle()

	ctx, leave := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.MCPURL(), strings.NewReader(gateCall(1, "alpha_block")))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set(userHeader, "alice")
	first := make(chan error, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		first <- err
	}()
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("the first call never reached the backend")
	}
	if code, body := gatePost(t, http.DefaultClient, e.MCPURL(), sid, "2025-11-25", "alice", gateCall(2, "alpha_echo")); code != http.StatusTooManyRequests {
		t.Fatalf("a second call while the first runs: %d %s, want 429", code, body)
	}
	leave()
	<-first
	synctest.Wait()
	if n := e.calls.Inflight(); n != 0 {
		t.Fatalf("%d calls in flight once the first call's client left; want 0", n)
	}
	if code, body := gatePost(t, http.DefaultClient, e.MCPURL(), sid, "2025-11-25", "alice", gateCall(3, "alpha_echo")); code != http.StatusOK {
		t.Fatalf("a call once the first has ended: %d %s", code, body)
	}
	if n := e.slots.Len(); n != 0 {
		t.Fatalf("%d requests' slots still held", n)
	}
}

// A client may not send the header by which the edge names a request's
// slots to its own handler.
func TestCallSlotHeaderReserved(t *testing.T) {
	f := newFleet(t)
	f.healthyBackend("default", startBackend(t, "alpha", nil))
	e := startEdge(t, f, nil)
	req, _ := http.NewRequest(http.MethodPost, e.MCPURL(), strings.NewReader(initBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(callslot.Header, "1")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest {
		t.Fatalf("a request carrying %s: %d, want 400", callslot.Header, res.StatusCode)
	}
}
