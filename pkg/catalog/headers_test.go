package catalog

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// A tool's header bindings are found at any depth, in the order of their
// paths, with member names matched exactly (escapes decoded) as the
// go-sdk's decoder matches them, and only in the input schema's
// properties; a View gives them by exposed name.
func TestToolBindings(t *testing.T) {
	for schema, want := range map[string]string{
		`{"type":"object"}`: ``,
		`{"type":"object","description":"x-mcp-header \u003cb\u003e"}`:                                                                              ``,
		`{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"R"}}}`:                                                                 `r=R`,
		`{"type":"object","properties":{"r":{"type":"string","x-mcp-\u0068eader":"R"}}}`:                                                            `r=R`,
		`{"type":"object","properties":{"r":{"type":"string","X-Mcp-Header":"R"}}}`:                                                                 ``,
		`{"type":"object","Properties":{"r":{"type":"string","x-mcp-header":"R"}}}`:                                                                 ``,
		`{"type":"object","properties":{"o":{"properties":{"f":{"type":"boolean","x-mcp-header":"F"}}},"a":{"type":"integer","x-mcp-header":"A"}}}`: `a=A,o.f=F`,
	} {
		def := fmt.Sprintf(`{"name":"t","inputSchema":%s}`, schema)
		v := Aggregate([]Source{{Backend: "b", Tools: []json.RawMessage{json.RawMessage(def)}}}, nil)
		if _, ok := v.Tool("b_t"); !ok {
			t.Fatalf("%s: not served (%v)", def, v.Rejected)
		}
		var got []string
		for _, b := range v.ToolBindings("b_t") {
			got = append(got, strings.Join(b.Path, ".")+"="+b.Header)
		}
		if strings.Join(got, ",") != want {
			t.Errorf("%s: bindings %v, want %s", schema, got, want)
		}
	}
	if b := (&View{}).ToolBindings("b_t"); b != nil {
		t.Errorf("bindings of a tool not served: %v", b)
	}
}

// A schema nested nearly as deep as the go-sdk decodes, bound at its
// deepest property: time and memory linear in its size (a property's path
// is copied only when it is bound).
func BenchmarkParamHeadersDeep(b *testing.B) {
	schema := `{"type":"object","properties":{"x":{"type":"string","x-mcp-header":"X"}}}`
	for range 490 {
		schema = `{"type":"object","properties":{"p":` + schema + `}}`
	}
	for b.Loop() {
		if got, err := paramHeaders([]byte(schema)); err != nil || len(got) != 1 || len(got[0].Path) != 491 {
			b.Fatalf("bindings %v, %v", got, err)
		}
	}
}
