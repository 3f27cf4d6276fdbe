package edge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// newMeta is the _meta a go-sdk client of the 2026-07-28 revision sends
// with each request, after the members in extra (JSON object members).
func newMeta(extra string) string {
	if extra != "" {
		extra += ","
	}
	return `"_meta":{` + extra + `"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":""},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
}

// newRequest is a 2026-07-28 request of method with params (a JSON
// object's members, without braces) and the _meta of a go-sdk client
// with the members in meta.
func newRequest(id int, method, meta, params string) string {
	if params != "" {
		params = "," + params
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s%s}}`, id, method, newMeta(meta), params)
}

// Every result of a 2026-07-28 request carries resultType "complete" (the
// revision's Result requires it; the suite's WireSchemaValid checks it),
// whoever makes it: the edge's tools/call fast path (a backend's result
// spliced, or the edge's own answer for an unknown tool), the go-sdk's
// stateless handler with the edge's middleware (prompts/get,
// resources/read, a tools/call the fast path does not take), on an edge
// with the fast path and on one without.
func TestResultTypeOnNewProtocol(t *testing.T) {
	// edge serves the asking backend on the edge named ("fast": with the
	// fast path, "go-sdk": without), in the bubble of t.
	edge := func(t *testing.T, name string) *Edge {
		o := &Options{CallTimeout: 10 * time.Second}
		if name == "go-sdk" {
			o.paths = pathSwitches{goSDKStateless: true}
		}
		e := serveMemoryEdge(t, o)
		e.serveServer(t, "ask", askingServer("ask", &atomic.Value{}))
		e.settle()
		if n := len(e.current().Catalog.Tools); n != 8 {
			t.Fatalf("%d tools served; want ask's 8", n)
		}
		return e.Edge
	}
	for _, tc := range []struct {
		name, method, mcpName, meta, params string
	}{
		{"tools/call plain", "tools/call", "ask_logs", "", `"name":"ask_logs","arguments":{}`},
		{"tools/call unknown tool", "tools/call", "ask_nope", "", `"name":"ask_nope","arguments":{}`},
		{"tools/call with a progress token", "tools/call", "ask_logs", `"progressToken":"p"`, `"name":"ask_logs","arguments":{}`},
		{"prompts/get", "prompts/get", "ask_greet", "", `"name":"ask_greet","arguments":{"name":"ada"}`},
		{"resources/read", "resources/read", "res://counter", "", `"uri":"res://counter"`},
		{"resources/read of a template", "resources/read", "res://items/7", "", `"uri":"res://items/7"`},
		{"completion/complete", "completion/complete", "", "", `"ref":{"type":"ref/prompt","name":"ask_greet"},"argument":{"name":"name","value":"a"}`},
		{"tools/list", "tools/list", "", "", ``},
		{"prompts/list", "prompts/list", "", "", ``},
		{"resources/list", "resources/list", "", "", ``},
		{"resources/templates/list", "resources/templates/list", "", "", ``},
	} {
		for _, name := range []string{"fast", "go-sdk"} {
			t.Run(tc.name+" "+name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					e := edge(t, name)
					body := newRequest(7, tc.method, tc.meta, tc.params)
					hdr := map[string]string{"Mcp-Method": tc.method}
					if tc.mcpName != "" {
						hdr["Mcp-Name"] = tc.mcpName
					}
					code, _, msg := statelessPost(t, e.MCPURL(), body, hdr)
					res, _ := msg["result"].(map[string]any)
					if code != 200 || res == nil {
						t.Fatalf("HTTP %d, message %v", code, msg)
					}
					if res["resultType"] != "complete" {
						t.Fatalf("resultType %v, want complete; result %v", res["resultType"], res)
					}
				})
			})
		}
	}
}

// A protocol version that is not a date gets the 2026-07-28 revision's
// UnsupportedProtocolVersionError: HTTP 400 with a JSON-RPC body, code
// -32022, the request's id, the versions the edge serves and the one
// asked for, as the go-sdk answers an unknown version of the right form;
// a request with no body to take an id from gets id null.
func TestUnsupportedVersionIsJSONRPC(t *testing.T) {
	f := newFleet(t)
	startAskingBackend(t, f, "ask")
	e := startEdge(t, f, nil)
	for _, tc := range []struct {
		name, version, body string
		id                  any
	}{
		{"not a date", "v999.0.0", newRequest(301, "server/discover", `"io.modelcontextprotocol/protocolVersion":"v999.0.0"`, ""), float64(301)},
		{"letters in a date", "2026-07-2x", newRequest(302, "tools/list", "", ""), float64(302)},
		{"not one request", "v1", `[]`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, ct, msg := statelessPost(t, e.MCPURL(), tc.body, map[string]string{"Mcp-Protocol-Version": tc.version, "Mcp-Method": "server/discover"})
			if code != http.StatusBadRequest || ct != "application/json" {
				t.Fatalf("HTTP %d %s, want 400 application/json", code, ct)
			}
			rpcErr, _ := msg["error"].(map[string]any)
			if rpcErr == nil || rpcErr["code"] != float64(-32022) || msg["id"] != tc.id {
				t.Fatalf("message %v: want error -32022 with id %v", msg, tc.id)
			}
			data, _ := rpcErr["data"].(map[string]any)
			supported, _ := data["supported"].([]any)
			if data["requested"] != tc.version || !slices.Contains(supported, any(newProtocol)) || !slices.Contains(supported, any("2025-11-25")) {
				t.Fatalf("error data %v: want the supported versions and %q requested", data, tc.version)
			}
		})
	}
}

// A backend's MissingRequiredClientCapabilityError (-32021) to a
// tools/call reaches a 2026-07-28 client as that JSON-RPC error, with its
// message and data and HTTP 400, on the fast path and the go-sdk's; a
// session-based client still gets an isError result naming the backend.
func TestMissingCapabilityPassesThrough(t *testing.T) {
	for _, name := range []string{"fast", "go-sdk"} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testMissingCapabilityPassesThrough(t, name) })
		})
	}
}

// needyServer is a backend whose tool and prompt refuse a client without
// sampling and elicitation.
func needyServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "needy"}, nil)
	srv.AddTool(&mcp.Tool{Name: "needs_sampling", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "sampling capability required but not declared by client",
				Data: json.RawMessage(`{"requiredCapabilities":{"sampling":{}}}`)}
		})
	srv.AddPrompt(&mcp.Prompt{Name: "needs_elicitation"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "elicitation capability required but not declared by client",
			Data: json.RawMessage(`{"requiredCapabilities":{"elicitation":{}}}`)}
	})
	return srv
}

// testMissingCapabilityPassesThrough is TestMissingCapabilityPassesThrough
// on the edge named ("fast": with the fast path, "go-sdk": without).
func testMissingCapabilityPassesThrough(t *testing.T, name string) {
	o := &Options{CallTimeout: 10 * time.Second}
	if name == "go-sdk" {
		o.paths = pathSwitches{goSDKStateless: true}
	}
	m := serveMemoryEdge(t, o)
	m.serveServer(t, "needy", needyServer())
	m.settle()
	e := m.Edge
	_, ok := e.current().Catalog.Tool("needy_needs_sampling")
	_, pok := e.current().Catalog.Prompt("needy_needs_elicitation")
	if !ok || !pok {
		t.Fatal("needy's tool and prompt not served")
	}
	body := newRequest(401, "tools/call", "", `"name":"needy_needs_sampling","arguments":{}`)
	code, _, msg := statelessPost(t, e.MCPURL(), body, map[string]string{"Mcp-Name": "needy_needs_sampling"})
	rpcErr, _ := msg["error"].(map[string]any)
	if code != http.StatusBadRequest || rpcErr == nil || rpcErr["code"] != float64(-32021) || msg["id"] != float64(401) {
		t.Fatalf("HTTP %d, message %v: want 400 and error -32021", code, msg)
	}
	data, _ := json.Marshal(rpcErr["data"])
	if string(data) != `{"requiredCapabilities":{"sampling":{}}}` || !strings.Contains(fmt.Sprint(rpcErr["message"]), "sampling capability required") {
		t.Fatalf("error %v: want the backend's message and data", rpcErr)
	}
	// prompts/get (the go-sdk's path on either edge) the same.
	body = newRequest(402, "prompts/get", "", `"name":"needy_needs_elicitation"`)
	code, _, msg = statelessPost(t, e.MCPURL(), body, map[string]string{"Mcp-Method": "prompts/get", "Mcp-Name": "needy_needs_elicitation"})
	rpcErr, _ = msg["error"].(map[string]any)
	data, _ = json.Marshal(rpcErr["data"])
	if code != http.StatusBadRequest || rpcErr["code"] != float64(-32021) || string(data) != `{"requiredCapabilities":{"elicitation":{}}}` {
		t.Fatalf("prompts/get: HTTP %d, message %v: want 400 and the backend's -32021", code, msg)
	}
	if name != "fast" {
		return
	}
	c := connect(t, e.MCPURL(), "2025-11-25")
	if res := c.call(t, "needy_needs_sampling", nil); !res.IsError || !strings.Contains(text(res), `backend "needy"`) || !strings.Contains(text(res), "-32021") {
		t.Fatalf("session-based call: %+v %q, want an isError result naming the backend", res, text(res))
	}
}

// A 2026-07-28 tools/call with a progress token in its _meta reaches the
// backend with the token, and the backend's progress notifications reach
// the client on the call's response stream under it, before the result.
func TestProgressOnNewProtocol(t *testing.T) { synctest.Test(t, testProgressOnNewProtocol) }

func testProgressOnNewProtocol(t *testing.T) {
	m := serveMemoryEdge(t, nil)
	m.serveServer(t, "ask", askingServer("ask", &atomic.Value{}))
	m.settle()
	e := m.Edge
	if n := len(e.current().Catalog.Tools); n != 8 {
		t.Fatalf("%d tools served; want ask's 8", n)
	}
	body := newRequest(11, "tools/call", `"progressToken":"progress-test-1"`, `"name":"ask_progress","arguments":{}`)
	req, _ := http.NewRequest(http.MethodPost, e.MCPURL(), strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": newProtocol, "Mcp-Method": "tools/call", "Mcp-Name": "ask_progress"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var progress []string
	var result map[string]any
	for line := range strings.SplitSeq(string(raw), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok && strings.HasPrefix(string(raw), "{") {
			data, ok = line, line != ""
		}
		if !ok {
			continue
		}
		var msg struct {
			Method string
			Params struct {
				ProgressToken any
				Progress      float64
			}
			Result map[string]any
		}
		if err := json.Unmarshal([]byte(data), &msg); err != nil {
			t.Fatalf("message %q: %v", data, err)
		}
		switch {
		case msg.Method == "notifications/progress":
			progress = append(progress, fmt.Sprintf("%v:%v", msg.Params.ProgressToken, msg.Params.Progress))
		case msg.Result != nil:
			result = msg.Result
		}
	}
	content, _ := result["content"].([]any)
	if len(content) != 1 || fmt.Sprint(content[0].(map[string]any)["text"]) != "token progress-test-1" {
		t.Fatalf("result %v: want the backend to have seen the token (response %s)", result, raw)
	}
	if want := []string{"progress-test-1:1", "progress-test-1:2", "progress-test-1:3"}; !slices.Equal(progress, want) {
		t.Fatalf("progress %v, want %v (response %s)", progress, want, raw)
	}
}
