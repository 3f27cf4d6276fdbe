package catalog

import (
	"encoding/json"
	"reflect"
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

// WithoutMembers of any object is valid JSON holding the object's other
// members, unchanged.
func FuzzWithoutMembers(f *testing.F) {
	f.Add([]byte(`{"name":"a","execution":{"x":1},"icons":[]}`), "execution")
	f.Add([]byte(` { "a" : "\u0000" , "b":[{"a":1}] } `), "a")
	f.Add([]byte(`{}`), "")
	f.Fuzz(func(t *testing.T, raw []byte, key string) {
		var in map[string]json.RawMessage
		if json.Unmarshal(raw, &in) != nil || in == nil {
			return
		}
		out, err := WithoutMembers(raw, func(k string) bool { return k == key })
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%q -> %q: %v", raw, out, err)
		}
		if _, ok := got[key]; ok {
			t.Fatalf("%q -> %q: %q kept", raw, out, key)
		}
		delete(in, key)
		if len(got) != len(in) {
			t.Fatalf("%q -> %q: members %d, want %d", raw, out, len(got), len(in))
		}
		for k, v := range got {
			var a, b any
			_ = json.Unmarshal(v, &a)
			_ = json.Unmarshal(in[k], &b)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%q -> %q: member %q changed", raw, out, k)
			}
		}
	})
}
