package edge

import (
	"fmt"
	"testing"
	"time"
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
	f := newFleet(t)
	startAskingBackend(t, f, "ask")
	fast := startEdge(t, f, nil)
	sdk := startEdge(t, f, &Options{CallTimeout: 10 * time.Second, paths: pathSwitches{goSDKStateless: true}})
	for _, e := range []*Edge{fast, sdk} {
		eventually(t, 10*time.Second, "tools served", func() bool { return len(e.current().Catalog.Tools) == 8 })
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
		for name, e := range map[string]*Edge{"fast": fast, "go-sdk": sdk} {
			t.Run(tc.name+" "+name, func(t *testing.T) {
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
		}
	}
}
