package view

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Each revision leaves out exactly the members of definitions another
// revision's schema defines and its own does not.
func TestUndefined(t *testing.T) {
	for _, tc := range []struct {
		k    Kind
		rev  string
		want []string
	}{
		{KindTool, Rev20251125, nil},
		{KindTool, Rev20260728, []string{"execution"}},
		{KindTool, Rev20250618, []string{"execution", "icons"}},
		{KindTool, Rev20250326, []string{"_meta", "execution", "icons", "outputSchema", "title"}},
		{KindTool, Rev20241105, []string{"_meta", "annotations", "execution", "icons", "outputSchema", "title"}},
		{KindPrompt, Rev20260728, nil},
		{KindPrompt, Rev20250618, []string{"icons"}},
		{KindResource, Rev20250618, []string{"icons"}},
		{KindTemplate, Rev20250326, []string{"_meta", "icons", "title"}},
		{KindTool, "2099-01-01", nil}, // unknown: nothing left out
		{KindTool, "", nil},
	} {
		if got := Undefined(tc.k, tc.rev); !slices.Equal(got, tc.want) {
			t.Errorf("Undefined(%d, %q) = %v, want %v", tc.k, tc.rev, got, tc.want)
		}
	}
}

// A definition is served byte for byte but for the members its revision
// does not define; members no revision defines are kept.
func TestProject(t *testing.T) {
	def := json.RawMessage(`{"name":"a_read","annotations":{"readOnlyHint":true,"openWorldHint":false},` +
		`"execution":{"taskSupport":"optional"},"x-vendor":{"execution":1},"icons":[{"src":"i"}],"inputSchema":{"type":"object"}}`)
	if got := Project(def, KindTool, Rev20251125); &got[0] != &def[0] || !bytes.Equal(got, def) {
		t.Fatalf("2025-11-25: %s, want the definition itself", got)
	}
	want := `{"name":"a_read","annotations":{"readOnlyHint":true,"openWorldHint":false},"x-vendor":{"execution":1},"icons":[{"src":"i"}],"inputSchema":{"type":"object"}}`
	if got := Project(def, KindTool, Rev20260728); string(got) != want {
		t.Fatalf("2026-07-28:\n%s\nwant\n%s", got, want)
	}
	want = `{"name":"a_read","annotations":{"readOnlyHint":true,"openWorldHint":false},"x-vendor":{"execution":1},"inputSchema":{"type":"object"}}`
	if got := Project(def, KindTool, Rev20250618); string(got) != want {
		t.Fatalf("2025-06-18:\n%s\nwant\n%s", got, want)
	}
	if string(def) != `{"name":"a_read","annotations":{"readOnlyHint":true,"openWorldHint":false},`+
		`"execution":{"taskSupport":"optional"},"x-vendor":{"execution":1},"icons":[{"src":"i"}],"inputSchema":{"type":"object"}}` {
		t.Fatalf("the definition changed: %s", def)
	}
	plain := json.RawMessage(`{"name":"p","inputSchema":{"type":"object"}}`)
	if got := Project(plain, KindTool, Rev20250618); &got[0] != &plain[0] {
		t.Fatal("a definition without undefined members was copied")
	}
}

// A list result is encoded from its definitions, not from the go-sdk
// values (whose encoder adds "idempotentHint": false); an older revision
// gets no 2026-07-28 result members.
func TestListEncoding(t *testing.T) {
	defs := []json.RawMessage{
		json.RawMessage(`{"name":"a_read","annotations":{"readOnlyHint":true,"openWorldHint":false},"execution":{"taskSupport":"optional"},"inputSchema":{"type":"object"}}`),
		nil, // an edge's own tool: encoded by the go-sdk
	}
	tools := []*mcp.Tool{{Name: "a_read", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, FindToolDef}
	for _, tc := range []struct {
		rev      string
		envelope bool
		first    string
	}{
		{Rev20251125, false, string(defs[0])},
		{Rev20250618, false, `{"name":"a_read","annotations":{"readOnlyHint":true,"openWorldHint":false},"inputSchema":{"type":"object"}}`},
		{Rev20260728, true, `{"name":"a_read","annotations":{"readOnlyHint":true,"openWorldHint":false},"inputSchema":{"type":"object"}}`},
	} {
		r := &ListToolsResult{ListToolsResult: &mcp.ListToolsResult{Tools: tools, NextCursor: "c",
			Cacheable: mcp.Cacheable{CacheScope: "public"}}, Defs: defs, Rev: tc.rev}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		var items []json.RawMessage
		if err := json.Unmarshal(m["tools"], &items); err != nil || len(items) != 2 {
			t.Fatalf("%s: tools %s (%v)", tc.rev, m["tools"], err)
		}
		if string(items[0]) != tc.first {
			t.Errorf("%s: first tool\n%s\nwant\n%s", tc.rev, items[0], tc.first)
		}
		if sdk, _ := json.Marshal(FindToolDef); string(items[1]) != string(sdk) {
			t.Errorf("%s: meta-tool %s, want %s", tc.rev, items[1], sdk)
		}
		_, ttl := m["ttlMs"]
		_, scope := m["cacheScope"]
		if ttl != tc.envelope || scope != tc.envelope || string(m["nextCursor"]) != `"c"` {
			t.Errorf("%s: result members %s", tc.rev, b)
		}
	}
}

// A found tool is its definition with its score added.
func TestFoundToolEncoding(t *testing.T) {
	f := FoundTool{Name: "a_x", Score: 1.5, def: json.RawMessage(`{"name":"a_x","x-y":[1] }`)}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"name":"a_x","x-y":[1],"score":1.5}` {
		t.Fatalf("found tool %s", b)
	}
	if !strings.HasSuffix(string(f.def), "] }") {
		t.Fatalf("the definition changed: %s", f.def)
	}
	b, _ = json.Marshal(FoundTool{Name: "a_y", Description: "d", InputSchema: json.RawMessage(`{}`)})
	if string(b) != `{"name":"a_y","description":"d","inputSchema":{},"score":0}` {
		t.Fatalf("found tool without a definition %s", b)
	}
}
