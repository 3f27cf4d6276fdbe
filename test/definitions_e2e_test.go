package test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge"
	"github.com/fleetgate/fleetgate/pkg/verify"
)

// Definitions through the edge are the backends' own: a client of the
// edge receives every tool, prompt, resource and resource template
// exactly as a client of the backend does (JSON-equivalent), but for the
// exposed name, on every protocol revision, less only the members its
// revision does not define; and the convergence evidence (edge verify,
// the session's verdict) says converged for them.

// rawDefs are the definitions of the raw backend, which sends them as
// written here: partial annotations (no go-sdk server would send
// {"readOnlyHint": true, "openWorldHint": false} alone, as the official
// filesystem server does), _meta, icons, title, outputSchema, execution
// and members no revision defines.
var rawDefs = map[string][]string{
	"tools": {
		`{"name":"read_file","title":"Read a file","description":"Reads a file.",` +
			`"inputSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]},` +
			`"outputSchema":{"type":"object","properties":{"content":{"type":"string"}}},` +
			`"annotations":{"readOnlyHint":true,"openWorldHint":false},` +
			`"_meta":{"example.com/owner":"fs","example.com/n":[1,2.5,null]},` +
			`"icons":[{"src":"https://example.com/file.png","mimeType":"image/png","sizes":["48x48"]}],` +
			`"x-vendor":{"cost":3,"tags":["io"]}}`,
		`{"name":"slow_job","description":"A long job.","inputSchema":{"type":"object"},` +
			`"execution":{"taskSupport":"optional"},"annotations":{"destructiveHint":false}}`,
		`{"name":"bare","inputSchema":{"type":"object","additionalProperties":false}}`,
	},
	"prompts": {
		`{"name":"review","title":"Review","description":"Reviews code.","arguments":[{"name":"lang","title":"Language","required":true}],` +
			`"icons":[{"src":"https://example.com/r.svg"}],"_meta":{"example.com/k":"v"},"x-extra":true}`,
	},
	"resources": {
		`{"uri":"file:///etc/motd","name":"motd","title":"Message of the day","mimeType":"text/plain","size":12,` +
			`"annotations":{"audience":["user"],"priority":0.5},"icons":[{"src":"https://example.com/m.png"}],` +
			`"_meta":{"example.com/r":1},"x-origin":"raw"}`,
	},
	"resourceTemplates": {
		`{"uriTemplate":"file:///logs/{day}","name":"logs","title":"Logs by day","mimeType":"text/plain",` +
			`"icons":[{"src":"https://example.com/l.png"}],"_meta":{"example.com/t":2},"x-kind":"log"}`,
	},
}

// startRawBackend serves rawDefs over streamable HTTP (2025-11-25,
// session-based), answering with JSON-RPC written by hand: what it sends
// is exactly rawDefs.
func startRawBackend(t *testing.T) string {
	t.Helper()
	items := func(key string) json.RawMessage {
		return json.RawMessage("[" + strings.Join(rawDefs[key], ",") + "]")
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
		case http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
			return
		default:
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if len(req.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var result any
		switch req.Method {
		case "initialize":
			v := req.Params.ProtocolVersion
			if v != "2025-06-18" && v != "2025-03-26" {
				v = "2025-11-25"
			}
			w.Header().Set("Mcp-Session-Id", "raw-session")
			result = map[string]any{"protocolVersion": v, "serverInfo": map[string]any{"name": "raw", "version": "1"},
				"capabilities": map[string]any{"tools": map[string]any{}, "prompts": map[string]any{}, "resources": map[string]any{}}}
		case "ping":
			result = map[string]any{}
		case "tools/list":
			result = map[string]any{"tools": items("tools")}
		case "prompts/list":
			result = map[string]any{"prompts": items("prompts")}
		case "resources/list":
			result = map[string]any{"resources": items("resources")}
		case "resources/templates/list":
			result = map[string]any{"resourceTemplates": items("resourceTemplates")}
		}
		w.Header().Set("Content-Type", "application/json")
		resp := map[string]any{"jsonrpc": "2.0", "id": req.ID}
		if result == nil {
			resp["error"] = map[string]any{"code": -32601, "message": "method not found: " + req.Method}
		} else {
			resp["result"] = result
		}
		_ = json.NewEncoder(w).Encode(resp)
	})
	return serveHTTP(t, h)
}

func serveHTTP(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/mcp"
}

// startSDKBackend is a go-sdk server (both protocol generations, as
// go-sdk's own conformance server runs them) with definitions that use
// every member the go-sdk's types have.
func startSDKBackend(t *testing.T) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "sdk", Version: "1"}, nil)
	icons := []mcp.Icon{{Source: "https://example.com/s.png", MIMEType: "image/png", Sizes: []string{"16x16", "32x32"}}}
	srv.AddTool(&mcp.Tool{Name: "search", Title: "Search", Description: "Searches.",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"hits":{"type":"array"}}}`),
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false), Title: "Search things"},
		Meta:         mcp.Meta{"example.com/sdk": map[string]any{"x": 1}}, Icons: icons},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "plain", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "greet", Title: "Greet", Description: "Greets.", Icons: icons,
		Arguments: []*mcp.PromptArgument{{Name: "who", Title: "Who", Required: true}}, Meta: mcp.Meta{"example.com/p": true}},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
	srv.AddResource(&mcp.Resource{URI: "mem://sdk/readme", Name: "readme", Title: "Read me", MIMEType: "text/markdown",
		Icons: icons, Meta: mcp.Meta{"example.com/r": "s"}, Annotations: &mcp.Annotations{Priority: 1}},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "text/markdown", Text: "# hi"}}}, nil
		})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "mem://sdk/items/{id}", Name: "item", Title: "Item",
		MIMEType: "application/json", Icons: icons, Meta: mcp.Meta{"example.com/t": 1}},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{}, nil
		})
	stateful := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	stateless := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	return serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Protocol-Version") >= "2026-07-28" {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	}))
}

// recorder is an http.RoundTripper that keeps the raw result of every
// JSON-RPC response a client receives, by the request's method.
type recorder struct {
	mu      sync.Mutex
	results map[string][]json.RawMessage
}

func (rec *recorder) RoundTrip(r *http.Request) (*http.Response, error) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if r.Body != nil && r.Method == http.MethodPost {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		_ = json.Unmarshal(body, &req)
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || r.Method != http.MethodPost || len(req.ID) == 0 {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var msgs [][]byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				msgs = append(msgs, []byte(strings.TrimSpace(d)))
			}
		}
	} else {
		msgs = append(msgs, body)
	}
	for _, m := range msgs {
		var res struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(m, &res) == nil && bytes.Equal(res.ID, req.ID) && res.Result != nil {
			rec.mu.Lock()
			rec.results[req.Method] = append(rec.results[req.Method], res.Result)
			rec.mu.Unlock()
		}
	}
	return resp, nil
}

// received lists url's tools, prompts, resources and resource templates
// with a go-sdk client of protocol version (empty: the go-sdk's default,
// 2026-07-28) and returns every item of each list as the client received
// it (member name -> items), and the negotiated version.
//
// With strict, it also checks what the results around the items carry:
// only 2026-07-28 defines ttlMs, cacheScope and resultType on results,
// and only 2025-11-25 the tasks capability (the go-sdk's server sends the
// former to every revision: the backend is not held to it); with tasks,
// that a 2025-11-25 session gets the tasks capability.
func received(t *testing.T, url, version string, strict, tasks bool) (map[string][]json.RawMessage, string) {
	t.Helper()
	rec := &recorder{results: map[string][]json.RawMessage{}}
	c := mcp.NewClient(&mcp.Implementation{Name: "differential"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rec}, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mem://sdk/readme"}); err != nil {
		t.Fatalf("%s: read: %v", url, err)
	}
	neg := cs.InitializeResult().ProtocolVersion
	for _, method := range []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read", "initialize"} {
		for _, r := range rec.results[method] {
			if !strict {
				break
			}
			var m map[string]json.RawMessage
			_ = json.Unmarshal(r, &m)
			for _, k := range []string{"ttlMs", "cacheScope", "resultType"} {
				if _, ok := m[k]; ok && neg < "2026-07-28" {
					t.Errorf("%s at %s: %s result with %s: %s", url, neg, method, k, r)
				}
			}
			var caps struct{ Tasks json.RawMessage }
			_ = json.Unmarshal(m["capabilities"], &caps)
			if caps.Tasks != nil && neg != "2025-11-25" {
				t.Errorf("%s at %s: the tasks capability: %s", url, neg, r)
			}
			if method == "initialize" && caps.Tasks == nil && neg == "2025-11-25" && tasks {
				t.Errorf("%s at %s: no tasks capability: %s", url, neg, r)
			}
		}
	}
	out := map[string][]json.RawMessage{}
	for method, key := range map[string]string{"tools/list": "tools", "prompts/list": "prompts",
		"resources/list": "resources", "resources/templates/list": "resourceTemplates"} {
		results := rec.results[method]
		if len(results) == 0 {
			t.Fatalf("%s: no %s result recorded", url, method)
		}
		for _, r := range results {
			var page map[string]json.RawMessage
			var items []json.RawMessage
			if err := json.Unmarshal(r, &page); err != nil || json.Unmarshal(page[key], &items) != nil {
				t.Fatalf("%s: %s result %s", url, method, r)
			}
			out[key] = append(out[key], items...)
		}
	}
	return out, cs.InitializeResult().ProtocolVersion
}

// keyOf is how an item is matched between two lists: its URI for a
// resource, its uriTemplate for a template, its name otherwise.
func keyOf(kind string, item map[string]any) string {
	switch kind {
	case "resources":
		s, _ := item["uri"].(string)
		return s
	case "resourceTemplates":
		s, _ := item["uriTemplate"].(string)
		return s
	}
	s, _ := item["name"].(string)
	return s
}

func decodeItems(t *testing.T, raws []json.RawMessage) []map[string]any {
	t.Helper()
	out := make([]map[string]any, len(raws))
	for i, r := range raws {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			t.Fatalf("item %s: %v", r, err)
		}
	}
	return out
}

// undefinedAt are the members of definitions a revision does not define
// that an older or newer one does (the specification's schema.json of
// each revision): what a client of that revision must not receive.
var undefinedAt = map[string]map[string][]string{
	"2025-06-18": {"tools": {"execution", "icons"}, "prompts": {"icons"}, "resources": {"icons"}, "resourceTemplates": {"icons"}},
	"2025-11-25": {},
	"2026-07-28": {"tools": {"execution"}},
}

// compareDefs checks that the items a client received through the edge
// (via) are those it received directly (direct) from backend, but for the
// exposed name (<backend>_<name>; templates keep theirs) and the members
// revision rev does not define. Every direct item must be there.
func compareDefs(t *testing.T, backend, rev string, direct, via map[string][]json.RawMessage, kinds ...string) {
	t.Helper()
	if len(kinds) == 0 {
		kinds = []string{"tools", "prompts", "resources", "resourceTemplates"}
	}
	for _, kind := range kinds {
		got := map[string]map[string]any{}
		for _, item := range decodeItems(t, via[kind]) {
			got[keyOf(kind, item)] = item
		}
		want := decodeItems(t, direct[kind])
		if len(want) == 0 {
			t.Fatalf("%s: no %s directly", backend, kind)
		}
		for _, w := range want {
			key := keyOf(kind, w)
			if kind != "resourceTemplates" {
				w["name"] = backend + "_" + w["name"].(string)
			}
			if kind == "tools" || kind == "prompts" {
				key = w["name"].(string)
			}
			for _, m := range undefinedAt[rev][kind] {
				delete(w, m)
			}
			g, ok := got[key]
			if !ok {
				t.Errorf("%s at %s: %s %q not served through the edge", backend, rev, kind, key)
				continue
			}
			if !reflect.DeepEqual(g, w) {
				gb, _ := json.Marshal(g)
				wb, _ := json.Marshal(w)
				t.Errorf("%s at %s: %s %q through the edge\n%s\nwant (the backend's, renamed)\n%s", backend, rev, kind, key, gb, wb)
			}
		}
	}
}

func TestDefinitionsAsTheBackendGaveThem(t *testing.T) {
	n := startNATS(t)
	rawURL, sdkURL := startRawBackend(t), startSDKBackend(t)
	ctl := startController(t, n.ClientURL(), "c1", fleetYAMLAt(200*time.Millisecond, 50*time.Millisecond,
		[2]string{"raw", rawURL}, [2]string{"sdk", sdkURL}))
	e := startEdge(t, n.ClientURL())
	opt := startEdgeOn(t, n.ClientURL(), nil, edge.Options{Coalesce: 100 * time.Millisecond, Mode: edge.ModeOptimizer,
		PinnedTools: []string{"raw_read_file", "raw_slow_job"}})
	for _, x := range []*edge.Edge{e, opt} {
		eventually(t, 30*time.Second, "both backends served", func() bool {
			tools := x.View().Tools
			return slices.Contains(tools, "raw_read_file") && slices.Contains(tools, "sdk_search")
		})
	}

	direct := map[string]map[string][]json.RawMessage{"raw": {}}
	for kind, defs := range rawDefs {
		for _, d := range defs {
			direct["raw"][kind] = append(direct["raw"][kind], json.RawMessage(d))
		}
	}
	for _, rev := range []string{"2025-06-18", "2025-11-25", "2026-07-28"} {
		t.Run(rev, func(t *testing.T) {
			ask := rev
			if rev == "2026-07-28" {
				ask = "" // the go-sdk's default
			}
			via, got := received(t, e.MCPURL(), ask, true, true)
			if got != rev {
				t.Fatalf("negotiated %s through the edge, want %s", got, rev)
			}
			sdk, _ := received(t, sdkURL, ask, false, false)
			compareDefs(t, "raw", rev, direct["raw"], via)
			compareDefs(t, "sdk", rev, sdk, via)
		})
	}

	// The optimizer's tools/list: its pinned tools as the backend gave them.
	for _, rev := range []string{"2025-06-18", "2025-11-25", "2026-07-28"} {
		ask := rev
		if rev == "2026-07-28" {
			ask = ""
		}
		via, _ := received(t, opt.MCPURL(), ask, true, false)
		var pinned []json.RawMessage
		for _, tool := range via["tools"] {
			if strings.Contains(string(tool), `"name":"raw_`) {
				pinned = append(pinned, tool)
			}
		}
		if len(pinned) != 2 {
			t.Fatalf("optimizer at %s: pinned tools %s", rev, pinned)
		}
		compareDefs(t, "raw", rev, map[string][]json.RawMessage{"tools": direct["raw"]["tools"][:2]},
			map[string][]json.RawMessage{"tools": pinned}, "tools")
	}

	// find_tool: the tools found are the definitions, with a score.
	for _, rev := range []string{"2025-11-25", "2026-07-28"} {
		ask := rev
		if rev == "2026-07-28" {
			ask = ""
		}
		c := connectMCP(t, opt.MCPURL(), ask)
		res, err := c.call("find_tool", map[string]any{"query": "read a file", "limit": 50})
		if err != nil || res.IsError {
			t.Fatalf("find_tool: %v %+v", err, res)
		}
		var found struct{ Tools []json.RawMessage }
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &found); err != nil {
			t.Fatal(err)
		}
		var items []json.RawMessage
		for _, f := range found.Tools {
			var m map[string]any
			_ = json.Unmarshal(f, &m)
			if _, ok := m["score"].(float64); !ok {
				t.Fatalf("find_tool at %s: no score in %s", rev, f)
			}
			delete(m, "score")
			delete(m, "matched") // the edge's, as the score: the query words the tool matched
			if strings.HasPrefix(m["name"].(string), "raw_") {
				items = append(items, mustMarshal(t, m))
			}
		}
		// Of the raw backend's tools, those found (read_file at least).
		var want []json.RawMessage
		for _, d := range direct["raw"]["tools"] {
			var m struct{ Name string }
			_ = json.Unmarshal(d, &m)
			if slices.ContainsFunc(items, func(f json.RawMessage) bool { return strings.Contains(string(f), `"name":"raw_`+m.Name+`"`) }) ||
				m.Name == "read_file" {
				want = append(want, d)
			}
		}
		compareDefs(t, "raw", rev, map[string][]json.RawMessage{"tools": want}, map[string][]json.RawMessage{"tools": items}, "tools")
	}

	// The evidence: edge verify and the session's verdict say converged.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := verify.Run(ctx, verify.Options{URL: e.MCPURL(), Controller: ctl.admin})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != "converged" {
		t.Fatalf("edge verify: %s (%s)", rep.Verdict, rep.Reason)
	}
	for _, rev := range []string{"2025-06-18", "2025-11-25"} {
		c := connectMCP(t, e.MCPURL(), rev)
		c.tools(t)
		eventually(t, 10*time.Second, rev+" session converged", func() bool {
			for _, s := range e.Sessions() {
				if s.ID == c.cs.ID() {
					return s.Verdict == "converged"
				}
			}
			return false
		})
	}
}

func mustMarshal(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
