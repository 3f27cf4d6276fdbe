package fastpath

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/edge/internal/jsontest"
)

// checkParamHeaders on its own: bindings at depth, strings, booleans and
// integers, the base64 form.
func TestCheckParamHeaders(t *testing.T) {
	view := catalog.Aggregate([]catalog.Source{{Backend: "b",
		Tools: []json.RawMessage{json.RawMessage(`{"name":"route","inputSchema":` + jsontest.RouteSchema + `}`)}}}, nil)
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
		err := CheckParamHeaders(h, json.RawMessage(tc.args), bindings)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %v: %v", tc.args, tc.hdr, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %v: %v, want %q", tc.args, tc.hdr, err, tc.want)
		}
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
		if err := CheckParamHeaders(http.Header{}, json.RawMessage(args), bindings); err != nil {
			b.Fatal(err)
		}
	}
}
