package edge

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// statelessUser is a go-sdk client of 2026-07-28 for user name, with
// the fleet's token; declaring URL elicitation when urlElicit, its multi
// round-trip middleware on when handler is not nil (handler answers the
// input requests).
func (sf *signInFleet) statelessUser(t *testing.T, name string, urlElicit bool,
	handler func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	t.Helper()
	tok := sf.idp.Mint(sf.idp.Claims(name, signInAudience))
	o := &mcp.ClientOptions{ElicitationHandler: handler}
	if handler == nil {
		o.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
		o.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
	}
	if urlElicit {
		o.Capabilities = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "signin-2026"}, o).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: sf.a.MCPURL(), HTTPClient: tokenHTTP(func() string { return tok })},
		&mcp.ClientSessionOptions{ProtocolVersion: newProtocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func callTool(t *testing.T, cs *mcp.ClientSession, p *mcp.CallToolParams) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("call %s: %v", p.Name, err)
	}
	return res
}

// TestSignInStateless: a 2026-07-28 client declaring URL elicitation that
// calls a tool of docs before signing in gets an input-required result
// with one URL-mode elicitation (the edge's sign-in URL) and a
// requestState; its retry after the user signed in, with the accept and
// the requestState, gets the tool's result with the user's token. A
// client declaring none gets the sign-in URL as text; a retry that
// declines gets it as text too. A go-sdk client answering the input
// request itself (its handler starts the browser and accepts at once)
// has its retry wait for the sign-in and gets the tool's result.
func TestSignInStateless(t *testing.T) {
	sf := startSignInFleet(t, "")
	plain := sf.statelessUser(t, "dave", false, nil)
	if res := callTool(t, plain, &mcp.CallToolParams{Name: "docs_whoami"}); !res.IsError || !strings.Contains(text(res), "Sign in to docs") {
		t.Fatalf("a client without URL elicitation: %q", text(res))
	}

	erin := sf.statelessUser(t, "erin", true, nil)
	res := callTool(t, erin, &mcp.CallToolParams{Name: "docs_whoami"})
	if !res.NeedsInput() || len(res.InputRequests) != 1 || res.RequestState == "" {
		t.Fatalf("before sign-in: %+v %q", res, text(res))
	}
	var key string
	var ep *mcp.ElicitParams
	for k, r := range res.InputRequests {
		key = k
		ep, _ = r.(*mcp.ElicitParams)
	}
	if ep == nil || ep.Mode != "url" || !strings.Contains(ep.URL, "/oauth/start?") || ep.ElicitationID == "" {
		t.Fatalf("input request %+v", ep)
	}
	if code := sf.browse(t, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: ep.URL}}}, "erin@docs"); code != http.StatusOK {
		t.Fatalf("callback %d", code)
	}
	res = callTool(t, erin, &mcp.CallToolParams{Name: "docs_whoami", RequestState: res.RequestState,
		InputResponses: mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept"}}})
	if res.IsError || res.NeedsInput() || text(res) != "erin@docs" {
		t.Fatalf("retry after sign-in: %+v %q", res, text(res))
	}

	frank := sf.statelessUser(t, "frank", true, nil)
	res = callTool(t, frank, &mcp.CallToolParams{Name: "docs_whoami"})
	res = callTool(t, frank, &mcp.CallToolParams{Name: "docs_whoami", RequestState: res.RequestState,
		InputResponses: mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "decline"}}})
	if !res.IsError || res.NeedsInput() || !strings.Contains(text(res), "/oauth/start?") {
		t.Fatalf("a declined retry: %+v %q", res, text(res))
	}

	browsed := make(chan int, 1)
	grace := sf.statelessUser(t, "grace", true, func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if r.Params.Mode != "url" {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		go func() { // the user's browser; the client accepts at once
			browsed <- sf.browse(t, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: r.Params.URL}}}, "grace@docs")
		}()
		return &mcp.ElicitResult{Action: "accept"}, nil
	})
	if res := callTool(t, grace, &mcp.CallToolParams{Name: "docs_whoami"}); res.IsError || text(res) != "grace@docs" {
		t.Fatalf("a client answering the sign-in itself: %+v %q", res, text(res))
	}
	if code := <-browsed; code != http.StatusOK {
		t.Fatalf("callback %d", code)
	}
}
