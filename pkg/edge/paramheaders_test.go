package edge

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/calltrail"
	"github.com/fleetgate/fleetgate/pkg/catalog"
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
// refuses it, with the same error (CodeHeaderMismatch, the same message),
// whether the edge answers the call itself (with the same status, 400) or
// hands it to the go-sdk (the error then in a 200 response, from the
// shared server's middleware, on the name and arguments the call would
// run with).
func TestParamHeadersMatchGoSDK(t *testing.T) {
	f := newFleet(t)
	b := startBackend(t, "alpha", &demobackend.Options{NewProtocol: true})
	b.AddTool(&mcp.Tool{Name: "route", InputSchema: json.RawMessage(routeSchema)})
	// Not a binding for the go-sdk: it matches member names exactly.
	b.AddTool(&mcp.Tool{Name: "zone", InputSchema: json.RawMessage(`{"type":"object","properties":{"zone":{"type":"string","X-Mcp-Header":"Zone"}}}`)})
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
		// viaSDK: the edge hands the call to the go-sdk (its fast path
		// declines the body), so a refusal comes in a 200 response.
		viaSDK bool
		tool   string // default route
	}{
		{"all headers", `{"region":"eu","count":3,"opts":{"fast":true}}`, map[string]string{"Mcp-Param-Region": "eu", "Mcp-Param-Count": "3", "Mcp-Param-Fast": "true"}, true, false, ""},
		{"unbound argument only", `{"note":"x"}`, nil, true, false, ""},
		{"no arguments", `{}`, nil, true, false, ""},
		{"null argument, no header", `{"region":null}`, nil, true, false, ""},
		{"base64 header", `{"region":"zürich"}`, map[string]string{"Mcp-Param-Region": "=?base64?esO8cmljaA==?="}, true, false, ""},
		{"integer written as a float", `{"count":3}`, map[string]string{"Mcp-Param-Count": "3.0"}, true, false, ""},
		{"missing header", `{"region":"eu"}`, nil, false, false, ""},
		{"wrong value", `{"region":"eu"}`, map[string]string{"Mcp-Param-Region": "us"}, false, false, ""},
		{"nested wrong value", `{"opts":{"fast":true}}`, map[string]string{"Mcp-Param-Fast": "false"}, false, false, ""},
		{"header for an absent argument", `{}`, map[string]string{"Mcp-Param-Region": "eu"}, false, false, ""},
		{"header for a null argument", `{"region":null}`, map[string]string{"Mcp-Param-Region": "null"}, false, false, ""},
		{"bad base64", `{"region":"eu"}`, map[string]string{"Mcp-Param-Region": "=?base64?!!?="}, false, false, ""},
		{"not a primitive", `{"region":{"a":1}}`, map[string]string{"Mcp-Param-Region": "x"}, false, false, ""},
		{"fractional count", `{"count":1.5}`, map[string]string{"Mcp-Param-Count": "1.5"}, false, false, ""},
		{"member name in another case", `{"zone":"z1"}`, nil, true, false, "zone"},
		// Bodies whose members repeat: the go-sdk takes the last.
		{"repeated name", `{"region":"eu"}`, nil, false, true, "dup-name"},
		{"repeated arguments", `{"region":"eu"},"arguments":{"region":"us"}`, map[string]string{"Mcp-Param-Region": "eu"}, false, true, ""},
		{"arguments nested deeper than the fast path parses", `{"region":"eu","pad":` + strings.Repeat("[", 400) + strings.Repeat("]", 400) + `}`, nil, false, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			post := func(url, prefix string) (int, map[string]any) {
				tool := cmp.Or(tc.tool, "route")
				b := body(prefix+tool, tc.args)
				if tool == "dup-name" {
					tool = "route"
					b = strings.Replace(body(prefix+tool, tc.args), `"name":`, `"name":"nope","name":`, 1)
				}
				code, _, msg := statelessPost(t, url, b, withName(tc.hdr, prefix+tool))
				return code, msg
			}
			dcode, dmsg := post(b.URL(), "")
			if (dcode == http.StatusOK && dmsg["error"] == nil) != tc.ok {
				t.Fatalf("go-sdk server: %d %v, want ok %v", dcode, dmsg, tc.ok)
			}
			for _, e := range []*Edge{fast, sdk} {
				code, msg := post(e.MCPURL(), "alpha_")
				viaSDK := tc.viaSDK || e.goSDKStateless.Load()
				switch {
				case tc.ok && (code != http.StatusOK || msg["result"] == nil):
					t.Fatalf("edge (go-sdk path %v): %d %v, want a result", viaSDK, code, msg)
				case !tc.ok && !reflect.DeepEqual(msg["error"], dmsg["error"]):
					t.Fatalf("edge (go-sdk path %v): %v\ngo-sdk server: %v", viaSDK, msg, dmsg)
				case !tc.ok && !viaSDK && code != dcode:
					t.Fatalf("edge: status %d, go-sdk server %d", code, dcode)
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
	view := catalog.Aggregate([]catalog.Source{{Backend: "b",
		Tools: []json.RawMessage{json.RawMessage(`{"name":"route","inputSchema":` + routeSchema + `}`)}}}, nil)
	bindings := view.ToolBindings("b_route")
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

// A call refused for its headers is not a call: the call trail records
// neither one refused on the fast path nor one refused after the go-sdk
// decoded it (a body whose arguments member repeats).
func TestParamHeadersRefusalNotAudited(t *testing.T) {
	f := newSharedFleet(t)
	trail, err := calltrail.Open(t.Context(), f.js, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := startBackend(t, "alpha", nil)
	b.AddTool(&mcp.Tool{Name: "route", InputSchema: json.RawMessage(routeSchema)})
	f.healthyBackend("default", b)
	e := startRecordEdge(t, f, "a", nil, func(o *Options) { o.CallTrail = trail })
	eventually(t, 10*time.Second, "view served", func() bool { _, ok := e.current().view.Tool("alpha_route"); return ok })
	meta := `"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":""},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	post := func(args string, hdr map[string]string) map[string]any {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{%s,"name":"alpha_route","arguments":%s}}`, meta, args)
		_, _, msg := statelessPost(t, e.MCPURL(), body, withName(hdr, "alpha_route"))
		return msg
	}
	for args, header := range map[string]string{
		`{"region":"eu"}`: "us", // on the fast path
		`{"region":"eu"},"arguments":{"region":"us"}`: "eu", // the go-sdk's: the last member
	} {
		if msg := post(args, map[string]string{"Mcp-Param-Region": header, userHeader: "alice"}); msg["error"] == nil {
			t.Fatalf("%s: %v, want refused", args, msg)
		}
	}
	if msg := post(`{"region":"eu"}`, map[string]string{"Mcp-Param-Region": "eu", userHeader: "alice"}); msg["result"] == nil {
		t.Fatalf("good call: %v", msg)
	}
	eventually(t, 10*time.Second, "entries published", func() bool { return trail.Stats().Published >= 1 })
	cons, err := f.js.OrderedConsumer(t.Context(), calltrail.DefaultStream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var ent calltrail.Entry
	if err := json.Unmarshal(msg.Data(), &ent); err != nil || ent.Outcome != calltrail.OutcomeOK {
		t.Fatalf("first entry %+v (%v), want the good call", ent, err)
	}
	if extra, err := cons.Next(jetstream.FetchMaxWait(200 * time.Millisecond)); err == nil {
		t.Fatalf("another entry: %s", extra.Data())
	}
}

// checkParamHeaders decodes each object of the arguments once, however
// many bindings look into it: a schema with a binding at each of 400
// levels and a call nested as deep (the go-sdk decodes each object on a
// binding's path again, time cubic in the depth).
func BenchmarkCheckParamHeadersDeep(b *testing.B) {
	schema, args := `{"type":"object","properties":{"h":{"type":"string","x-mcp-header":"H0"}}}`, `{}`
	for i := 1; i < 400; i++ {
		schema = fmt.Sprintf(`{"type":"object","properties":{"h":{"type":"string","x-mcp-header":"H%d"},"p":%s}}`, i, schema)
		args = `{"p":` + args + `}`
	}
	view := catalog.Aggregate([]catalog.Source{{Backend: "b",
		Tools: []json.RawMessage{json.RawMessage(`{"name":"deep","inputSchema":` + schema + `}`)}}}, nil)
	bindings := view.ToolBindings("b_deep")
	if len(bindings) != 400 {
		b.Fatalf("%d bindings (%v), want 400", len(bindings), view.Rejected)
	}
	for b.Loop() {
		if err := checkParamHeaders(http.Header{}, json.RawMessage(args), bindings); err != nil {
			b.Fatal(err)
		}
	}
}
