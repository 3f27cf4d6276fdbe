package calls

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestBridgeOf: a bridged request's _meta names the backend's revision
// and the capabilities given, keeps the client's other members (a
// progress token) and never the client's own claims of who it is.
func TestBridgeOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		meta map[string]any
		caps map[string]any
		want string
	}{
		{"none", nil, nil, `{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`},
		{"progress token kept", map[string]any{"progressToken": "p1"}, nil,
			`{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":"p1"}`},
		{"claims replaced", map[string]any{mcp.MetaKeyProtocolVersion: "2099-01-01", mcp.MetaKeyClientInfo: map[string]any{"name": "x"},
			mcp.MetaKeyClientCapabilities: map[string]any{"sampling": map[string]any{}}}, map[string]any{"elicitation": map[string]any{}},
			`{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := bridgeOf(tc.meta, "2026-07-28", tc.caps)
			if err != nil {
				t.Fatal(err)
			}
			if st.Revision != "2026-07-28" || string(st.Meta) != tc.want || st.RequestState != "" || st.InputResponses != nil {
				t.Errorf("got %+v (meta %s), want meta %s", st, st.Meta, tc.want)
			}
		})
	}
}

// TestBridgeCallMeta: a call's _meta that is not an object is refused.
func TestBridgeCallMeta(t *testing.T) {
	if _, err := bridgeCall(Call{Meta: json.RawMessage(`[1]`)}, "2026-07-28"); err == nil {
		t.Error("an array _meta was taken")
	}
	st, err := bridgeCall(Call{Meta: json.RawMessage(`{"progressToken":7}`)}, "2026-07-28")
	if err != nil || !strings.Contains(string(st.Meta), `"progressToken":7`) || !strings.Contains(string(st.Meta), `"io.modelcontextprotocol/clientCapabilities":{}`) {
		t.Errorf("got %v %s", err, st.Meta)
	}
}

// TestInputAsked names each input request's method, in key order, and
// wraps ErrInputNotRelayed.
func TestInputAsked(t *testing.T) {
	err := inputAsked("alpha", mcp.InputRequestMap{"b": &mcp.ListRootsParams{}, "a": &mcp.ElicitParams{Message: "m"},
		"c": &mcp.CreateMessageParams{}})
	if !errors.Is(err, ErrInputNotRelayed) {
		t.Fatalf("%v does not wrap ErrInputNotRelayed", err)
	}
	if want := `backend "alpha" asked for elicitation/create, roots/list, sampling/createMessage`; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("%q, want it to start with %q", err, want)
	}
}

// FuzzBridgeCall: whatever _meta a client sends, a bridged call's _meta is
// an object naming the backend's revision and no capability, or the call
// is refused.
func FuzzBridgeCall(f *testing.F) {
	for _, s := range []string{`{}`, `{"progressToken":1}`, `null`, `[1]`, `{"io.modelcontextprotocol/protocolVersion":3}`, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, meta []byte) {
		if len(meta) > 1<<16 {
			return
		}
		st, err := bridgeCall(Call{Meta: meta}, "2026-07-28")
		if err != nil {
			return
		}
		var m map[string]any
		if err := json.Unmarshal(st.Meta, &m); err != nil {
			t.Fatalf("meta %s: %v", st.Meta, err)
		}
		if m[mcp.MetaKeyProtocolVersion] != "2026-07-28" || len(m[mcp.MetaKeyClientCapabilities].(map[string]any)) != 0 {
			t.Fatalf("meta %s", st.Meta)
		}
		if _, ok := m[mcp.MetaKeyClientInfo]; ok {
			t.Fatalf("client info passed on: %s", st.Meta)
		}
	})
}
