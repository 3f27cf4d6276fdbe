package edge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/edge/fastpath"
)

// statelessPost posts a 2026-07-28 request (headers as the go-sdk client
// sets them, hdr overriding) and returns the response's media type and
// its JSON-RPC message (the data of the first event of an event stream).
func statelessPost(t *testing.T, url, body string, hdr map[string]string) (int, string, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", newProtocol)
	req.Header.Set("Mcp-Method", "tools/call")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ct, _, msg, _ := readRPC(resp) // a refusal's body is not JSON
	return resp.StatusCode, ct, msg
}

// A plain 2026-07-28 tools/call is answered by the edge itself with what
// the go-sdk's stateless handler answers: the result (whatever its shape)
// with the server's info in its _meta, unless it had one; requests the
// fast path does not take get the go-sdk's answer.
func TestStatelessCallMatchesGoSDK(t *testing.T) {
	// edges serve alpha with its shapes tool on an edge with the fast
	// path and one without, in the bubble of t.
	edges := func(t *testing.T) (fast, sdk *memoryEdge) {
		b := demobackend.New("alpha", nil)
		addShapes(b)
		fast = serveMemoryEdge(t, nil)
		fast.serveBackend(t, b)
		sdk = fast.net.serveEdge(t, &Options{CallTimeout: 10 * time.Second, paths: pathSwitches{goSDKStateless: true}})
		sdk.upCatalog("alpha", fast.fleet.backends["alpha"].Catalog)
		fast.settle()
		for _, e := range []*memoryEdge{fast, sdk} {
			if _, ok := e.current().Catalog.Tool("alpha_shapes"); !ok {
				t.Fatal("alpha_shapes not served")
			}
		}
		return fast, sdk
	}
	testStatelessCallMatchesGoSDK(t, edges)
}

// addShapes gives b a tool whose result has the shape its argument names.
func addShapes(b *demobackend.Backend) {
	b.AddToolFunc(&mcp.Tool{Name: "shapes", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ Shape string }
			_ = json.Unmarshal(r.Params.Arguments, &args)
			switch args.Shape {
			case "meta":
				return &mcp.CallToolResult{Meta: mcp.Meta{"k": "v"}, Content: []mcp.Content{&mcp.TextContent{Text: "m"}}}, nil
			case "own-info":
				return &mcp.CallToolResult{Meta: mcp.Meta{fastpath.ServerInfoKey: map[string]any{"name": "backend"}}, Content: []mcp.Content{&mcp.TextContent{Text: "i"}}}, nil
			case "image":
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: []byte{1, 2}, MIMEType: "image/png"}}}, nil
			case "error":
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "it failed"}}}, nil
			case "structured":
				return &mcp.CallToolResult{StructuredContent: map[string]any{"n": 1}, Content: []mcp.Content{&mcp.TextContent{Text: `{"n":1}`}}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{}}, nil
		})
}

// testStatelessCallMatchesGoSDK is TestStatelessCallMatchesGoSDK, each
// case in a bubble of its own with the edges made by edges.
func testStatelessCallMatchesGoSDK(t *testing.T, edges func(t *testing.T) (fast, sdk *memoryEdge)) {
	meta := `"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"t","version":""},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	call := func(id, name, args string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{%s,"name":%q,"arguments":%s}}`, id, meta, name, args)
	}
	for _, tc := range []struct {
		name string
		body string
		hdr  map[string]string
		fast bool // answered by the edge itself
	}{
		{"plain", call("1", "alpha_echo", `{"text":"x"}`), map[string]string{"Mcp-Name": "alpha_echo"}, true},
		{"string id", call(`"s-2"`, "alpha_echo", `{"text":"x"}`), map[string]string{"Mcp-Name": "alpha_echo"}, true},
		{"result with _meta", call("3", "alpha_shapes", `{"shape":"meta"}`), map[string]string{"Mcp-Name": "alpha_shapes"}, true},
		{"result with a server info", call("4", "alpha_shapes", `{"shape":"own-info"}`), map[string]string{"Mcp-Name": "alpha_shapes"}, true},
		{"image result", call("5", "alpha_shapes", `{"shape":"image"}`), map[string]string{"Mcp-Name": "alpha_shapes"}, true},
		{"isError result", call("6", "alpha_shapes", `{"shape":"error"}`), map[string]string{"Mcp-Name": "alpha_shapes"}, true},
		{"structured result", call("7", "alpha_shapes", `{"shape":"structured"}`), map[string]string{"Mcp-Name": "alpha_shapes"}, true},
		{"empty content", call("8", "alpha_shapes", `{}`), map[string]string{"Mcp-Name": "alpha_shapes"}, true},
		{"unknown tool", call("9", "nope", `{}`), map[string]string{"Mcp-Name": "nope"}, true},
		{"Mcp-Name differs", call("10", "alpha_echo", `{"text":"x"}`), map[string]string{"Mcp-Name": "alpha_other"}, false},
		{"no Mcp-Name", call("11", "alpha_echo", `{"text":"x"}`), nil, false},
		{"no capabilities", strings.Replace(call("12", "alpha_echo", `{}`), `"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},`, "", 1),
			map[string]string{"Mcp-Name": "alpha_echo"}, false},
		{"no protocol version in _meta", strings.Replace(call("15", "alpha_echo", `{}`), `,"io.modelcontextprotocol/protocolVersion":"2026-07-28"`, "", 1),
			map[string]string{"Mcp-Name": "alpha_echo"}, false},
		{"number out of range in _meta", strings.Replace(call("14", "alpha_echo", `{}`), `"_meta":{`, `"_meta":{"x":[1e400],`, 1),
			map[string]string{"Mcp-Name": "alpha_echo"}, false},
		{"body one byte over the limit", func() string {
			b := call("16", "alpha_echo", `{"text":"x"}`)
			return b + strings.Repeat(" ", maxBody+1-len(b))
		}(), map[string]string{"Mcp-Name": "alpha_echo"}, false},
		{"another member", strings.Replace(call("13", "alpha_echo", `{}`), `"arguments"`, `"task":{},"arguments"`, 1), map[string]string{"Mcp-Name": "alpha_echo"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fast, sdk := edges(t)
				fcode, fct, fmsg := statelessPost(t, fast.MCPURL(), tc.body, tc.hdr)
				scode, _, smsg := statelessPost(t, sdk.MCPURL(), tc.body, tc.hdr)
				if fcode != scode || !reflect.DeepEqual(fmsg, smsg) {
					t.Fatalf("edge: %d %v\ngo-sdk: %d %v", fcode, fmsg, scode, smsg)
				}
				if strings.HasPrefix(tc.name, "body one byte over") && fcode != http.StatusRequestEntityTooLarge {
					t.Fatalf("status %d, want 413 (the body given back whole)", fcode)
				}
				if (fct == "application/json" && fcode == http.StatusOK) != tc.fast {
					t.Fatalf("answered as %s (%d): fast path %v, want %v", fct, fcode, !tc.fast, tc.fast)
				}
			})
		})
	}
}
