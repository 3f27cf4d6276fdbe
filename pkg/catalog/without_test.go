package catalog

import (
	"encoding/json"
	"testing"
)

// WithoutMembers drops top-level members only and keeps every other byte.
func TestWithoutMembers(t *testing.T) {
	raw := json.RawMessage(`{ "a" : 1, "b":{"a":2}, "c":"\u0061", "d":[ ] }`)
	drop := func(k string) bool { return k == "a" || k == "d" }
	got, err := WithoutMembers(raw, drop)
	if err != nil || string(got) != `{"b":{"a":2},"c":"\u0061"}` {
		t.Fatalf("%s %v", got, err)
	}
	same, err := WithoutMembers(raw, func(string) bool { return false })
	if err != nil || &same[0] != &raw[0] {
		t.Fatalf("nothing dropped: %s %v", same, err)
	}
	if all, err := WithoutMembers(raw, func(string) bool { return true }); err != nil || string(all) != `{}` {
		t.Fatalf("all dropped: %s %v", all, err)
	}
	if _, err := WithoutMembers(json.RawMessage(`[1]`), drop); err == nil {
		t.Fatal("an array accepted")
	}
}
