package ledger

import (
	"encoding/json"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/catalog"
)

// TestDeclaresToolsListChanged: a tools.listChanged client capability
// counts in capabilities or experimental capabilities; anything else,
// malformed params included, does not.
func TestDeclaresToolsListChanged(t *testing.T) {
	for _, c := range []struct {
		params string
		want   bool
	}{
		{`{"capabilities":{"tools":{"listChanged":true}}}`, true},
		{`{"capabilities":{"experimental":{"tools":{"listChanged":true}}}}`, true},
		{`{"capabilities":{"tools":{"listChanged":false}}}`, false},
		{`{"capabilities":{"roots":{"listChanged":true}}}`, false},
		{`{"capabilities":{}}`, false},
		{`{}`, false},
		{`[]`, false},
		{`{"capabilities":{"tools":{"listChanged":"yes"}}}`, false},
		{``, false},
	} {
		if got := declaresToolsListChanged(json.RawMessage(c.params)); got != c.want {
			t.Errorf("%s: %v, want %v", c.params, got, c.want)
		}
	}
}

// TestDigestOf: a traversal that returned exactly the served tools
// reuses the served digest; any other is digested.
func TestDigestOf(t *testing.T) {
	raws := []json.RawMessage{json.RawMessage(`{"name":"a_x","inputSchema":{"type":"object"}}`),
		json.RawMessage(`{"name":"a_y","inputSchema":{"type":"object"}}`)}
	d := &toolDefs{digest: "served", raws: raws}
	if got, err := d.digestOf(raws); err != nil || got != "served" {
		t.Fatalf("same tools: %q %v, want the served digest", got, err)
	}
	other := raws[:1]
	want, err := catalog.Digest(other)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := d.digestOf(other); err != nil || got != want {
		t.Fatalf("other tools: %q %v, want %q", got, err, want)
	}
}
