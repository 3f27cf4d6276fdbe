package mcpwire

import (
	"strings"
	"testing"

	"github.com/valyala/fastjson"
)

func TestFastJSONValid(t *testing.T) {
	deep := func(n int, inner string) string { return strings.Repeat("[", n) + inner + strings.Repeat("]", n) }
	for _, tc := range []struct {
		name string
		in   string
		want bool
	}{
		{"object", `{"a":[1,2,{"b":null}]}`, true},
		{"invalid", `{"a":}`, false},
		{"trailing bytes", `{} x`, false},
		{"empty", ``, false},
		{"at the fastjson validator's depth", deep(fastValidateDepth, "1"), true},
		{"deeper, valid", deep(fastValidateDepth+1, "1"), true},
		{"deeper, invalid", deep(fastValidateDepth+1, "x"), false},
		{"at fastjson's parse depth", deep(fastjson.MaxDepth, "1"), true},
		{"past fastjson's parse depth", deep(fastjson.MaxDepth+1, "1"), false},
		{"unbalanced", strings.Repeat("[", 100000), false},
	} {
		if got := FastJSONValid([]byte(tc.in)); got != tc.want {
			t.Errorf("%s: FastJSONValid = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// BenchmarkHostileFastParse is what 2 KB of invalid JSON nested 1,000 deep
// costs the fast paths' validation: FastJSONValid (the depth check, then
// encoding/json's linear validator) against fastjson's validator, which
// the fast paths used before and whose error texts grow with the square
// of the depth.
func BenchmarkHostileFastParse(b *testing.B) {
	data := []byte(strings.Repeat("[", 1000) + "x" + strings.Repeat("]", 1000))
	at := []byte(strings.Repeat("[", fastValidateDepth) + "x" + strings.Repeat("]", fastValidateDepth))
	b.Run("FastJSONValid", func(b *testing.B) {
		for b.Loop() {
			if FastJSONValid(data) {
				b.Fatal("taken")
			}
		}
	})
	b.Run("FastJSONValid/at-fastjson-depth", func(b *testing.B) {
		for b.Loop() {
			if FastJSONValid(at) {
				b.Fatal("taken")
			}
		}
	})
	b.Run("fastjson.ValidateBytes", func(b *testing.B) {
		for b.Loop() {
			if fastjson.ValidateBytes(data) == nil {
				b.Fatal("taken")
			}
		}
	})
}
