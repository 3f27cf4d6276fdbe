package calls

import (
	"encoding/json"
	"strconv"
	"testing"
)

// TestHeldBounds: an edge holds at most maxHeld calls, a caller at most
// maxHeldPerIdentity; a call that ends gives its room back.
func TestHeldBounds(t *testing.T) {
	var hc heldCalls
	var alice []*heldCall
	for range maxHeldPerIdentity {
		h := hc.start("alice", clientCaps{elicitation: true}, DefaultHeldWait)
		if h == nil {
			t.Fatal("alice refused below her bound")
		}
		alice = append(alice, h)
	}
	if hc.start("alice", clientCaps{}, DefaultHeldWait) != nil {
		t.Fatal("alice held more than maxHeldPerIdentity calls")
	}
	hc.end(alice[0])
	if hc.start("alice", clientCaps{}, DefaultHeldWait) == nil {
		t.Fatal("an ended call's room not given back")
	}
	for i := 0; len(hc.calls) < maxHeld; i++ {
		if hc.start("user-"+strconv.Itoa(i/maxHeldPerIdentity), clientCaps{}, DefaultHeldWait) == nil {
			t.Fatalf("refused at %d held calls, below maxHeld", len(hc.calls))
		}
	}
	if hc.start("bob", clientCaps{}, DefaultHeldWait) != nil {
		t.Fatal("more than maxHeld calls held")
	}
}

func TestCapsOf(t *testing.T) {
	for meta, want := range map[string]clientCaps{
		`{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"roots":{"listChanged":true}}}`: {elicitation: true, roots: true},
		`{"io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`:                                 {sampling: true},
		`{"io.modelcontextprotocol/clientCapabilities":{"sampling":null}}`:                               {},
		`{"io.modelcontextprotocol/clientCapabilities":{}}`:                                              {},
		`{}`:   {},
		`null`: {},
		`[`:    {},
	} {
		if got := capsOf(json.RawMessage(meta)); got != want {
			t.Errorf("capsOf(%s) = %+v, want %+v", meta, got, want)
		}
	}
}

// FuzzCapsOf: a client's _meta, any bytes, never panics capsOf.
func FuzzCapsOf(f *testing.F) {
	f.Add([]byte(`{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`))
	f.Add([]byte(`{"io.modelcontextprotocol/clientCapabilities":[]}`))
	f.Fuzz(func(t *testing.T, meta []byte) {
		c := capsOf(json.RawMessage(meta))
		if c.any() && !json.Valid(meta) {
			t.Fatalf("capabilities %+v from invalid JSON %q", c, meta)
		}
	})
}
