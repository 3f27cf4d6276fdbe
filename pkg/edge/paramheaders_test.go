package edge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
)

// routeSchema binds three arguments, one nested, to headers.
const routeSchema = `{"type":"object","properties":{
	"region":{"type":"string","x-mcp-header":"Region"},
	"count":{"type":"integer","x-mcp-header":"Count"},
	"opts":{"type":"object","properties":{"fast":{"type":"boolean","x-mcp-header":"Fast"}}},
	"note":{"type":"string"}}}`

// A 2026-07-28 tools/call of a tool that binds arguments to headers is
// refused through the edge exactly when a go-sdk server with the tool
// refuses it (400, CodeHeaderMismatch, the same message), whether the
// edge answers the call itself or hands it to the go-sdk.
func TestParamHeadersMatchGoSDK(t *testing.T) {
	f := newFleet(t)
	b := startBackend(t, "alpha", &demobackend.Options{NewProtocol: true})
	b.AddTool(&mcp.Tool{Name: "route", InputSchema: json.RawMessage(routeSchema)})
	f.healthyBackend("default", b)
	fast, sdk := startEdge(t, f, nil), startEdge(t, f, nil)
	sdk.goSDKStateless.Store(true) // every call through the go-sdk's stateless handler
	for _, e := range []*Edge{fast, sdk} {
		eventually(t, 10*time.Second, "view served", func() bool { _, ok := e.current().view.Tool("alpha_route"); return ok })
	}
	meta := `"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":""},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	body := func(name, args string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{%s,"name":%q,"arguments":%s}}`, meta, name, args)
	}
	for _, tc := range []struct {
		name string
		args string
		hdr  map[string]string
		ok   bool
	}{
		{"all headers", `{"region":"eu","count":3,"opts":{"fast":true}}`, map[string]string{"Mcp-Param-Region": "eu", "Mcp-Param-Count": "3", "Mcp-Param-Fast": "true"}, true},
		{"unbound argument only", `{"note":"x"}`, nil, true},
		{"no arguments", `{}`, nil, true},
		{"null argument, no header", `{"region":null}`, nil, true},
		{"base64 header", `{"region":"zürich"}`, map[string]string{"Mcp-Param-Region": "=?base64?esO8cmljaA==?="}, true},
		{"integer written as a float", `{"count":3}`, map[string]string{"Mcp-Param-Count": "3.0"}, true},
		{"missing header", `{"region":"eu"}`, nil, false},
		{"wrong value", `{"region":"eu"}`, map[string]string{"Mcp-Param-Region": "us"}, false},
		{"nested wrong value", `{"opts":{"fast":true}}`, map[string]string{"Mcp-Param-Fast": "false"}, false},
		{"header for an absent argument", `{}`, map[string]string{"Mcp-Param-Region": "eu"}, false},
		{"header for a null argument", `{"region":null}`, map[string]string{"Mcp-Param-Region": "null"}, false},
		{"bad base64", `{"region":"eu"}`, map[string]string{"Mcp-Param-Region": "=?base64?!!?="}, false},
		{"not a primitive", `{"region":{"a":1}}`, map[string]string{"Mcp-Param-Region": "x"}, false},
		{"fractional count", `{"count":1.5}`, map[string]string{"Mcp-Param-Count": "1.5"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dcode, _, dmsg := statelessPost(t, b.URL(), body("route", tc.args), withName(tc.hdr, "route"))
			if (dcode == http.StatusOK && dmsg["error"] == nil) != tc.ok {
				t.Fatalf("go-sdk server: %d %v, want ok %v", dcode, dmsg, tc.ok)
			}
			for _, e := range []*Edge{fast, sdk} {
				code, _, msg := statelessPost(t, e.MCPURL(), body("alpha_route", tc.args), withName(tc.hdr, "alpha_route"))
				if code != dcode {
					t.Fatalf("edge (go-sdk path %v): status %d %v, go-sdk server %d %v", e.goSDKStateless.Load(), code, msg, dcode, dmsg)
				}
				if !tc.ok && !reflect.DeepEqual(msg, dmsg) {
					t.Fatalf("edge (go-sdk path %v): %v\ngo-sdk server: %v", e.goSDKStateless.Load(), msg, dmsg)
				}
				if tc.ok && msg["result"] == nil {
					t.Fatalf("edge (go-sdk path %v): %v, want a result", e.goSDKStateless.Load(), msg)
				}
			}
		})
	}

	// A go-sdk client sets the headers from the listed tool itself.
	cl := connect(t, fast.MCPURL(), "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cl.cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	res, err := cl.cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha_route",
		Arguments: map[string]any{"region": "eu-west", "count": 2, "opts": map[string]any{"fast": false}}})
	if err != nil || res.IsError {
		t.Fatalf("go-sdk client call: %v %+v", err, res)
	}
}

// withName is hdr with Mcp-Name set to name.
func withName(hdr map[string]string, name string) map[string]string {
	out := map[string]string{"Mcp-Name": name}
	for k, v := range hdr {
		out[k] = v
	}
	return out
}

// checkParamHeaders on its own: bindings at depth, strings, booleans and
// integers, the base64 form.
func TestCheckParamHeaders(t *testing.T) {
	bindings := paramBindings(json.RawMessage(`{"inputSchema":` + routeSchema + `}`))
	if len(bindings) != 3 {
		t.Fatalf("bindings %v, want 3", bindings)
	}
	for _, tc := range []struct {
		args string
		hdr  map[string]string
		want string // "" for none, else a fragment of the error
	}{
		{`{"region":"eu"}`, map[string]string{"Region": "eu"}, ""},
		{`{"count":-9007199254740991}`, map[string]string{"Count": "-9007199254740991"}, ""},
		{`{"count":9007199254740992}`, map[string]string{"Count": "9007199254740992"}, "not a primitive"},
		{`{"opts":{"fast":false}}`, map[string]string{"Fast": "false"}, ""},
		{`{"opts":{"fast":false}}`, map[string]string{"Fast": "False"}, "does not match"},
		{`{"opts":"x"}`, nil, ""},
		{`{"region":" a "}`, map[string]string{"Region": "=?base64?IGEg?="}, ""},
		{`{"region":"eu"}`, nil, "missing Mcp-Param-Region header"},
		{`not json`, map[string]string{"Region": "eu"}, ""}, // left to the go-sdk's decoding
	} {
		h := http.Header{}
		for k, v := range tc.hdr {
			h.Set("Mcp-Param-"+k, v)
		}
		err := checkParamHeaders(h, json.RawMessage(tc.args), bindings)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %v: %v", tc.args, tc.hdr, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %v: %v, want %q", tc.args, tc.hdr, err, tc.want)
		}
	}
}
