package edge

import (
	"strings"
	"testing"

	"github.com/valyala/fastjson"

	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

// BenchmarkFastCallParse is the cost of the depth check the admission
// gate runs on every body (mcpwire.Check) next to the fast call's own
// parse of the same body (parseFastMessage: fastjson's validation and
// parse), for a small call and one with 4 KiB of arguments. The figure to
// report is checked/unchecked in one run.
func BenchmarkFastCallParse(b *testing.B) {
	bodies := map[string]string{
		"small": `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"alpha_echo","arguments":{"text":"hello"}}}`,
		"4KiB":  `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"alpha_echo","arguments":{"text":"` + strings.Repeat("x", 4096) + `","n":[1,2,{"a":[3]}]}}}`,
	}
	for name, body := range bodies {
		data := []byte(body)
		b.Run(name+"/unchecked", func(b *testing.B) {
			for b.Loop() {
				if _, ok := parseFastMessage(data); !ok {
					b.Fatal("not parsed")
				}
			}
		})
		b.Run(name+"/checked", func(b *testing.B) {
			for b.Loop() {
				if mcpwire.Check(data, mcpwire.MaxDepth) != nil {
					b.Fatal("refused")
				}
				if _, ok := parseFastMessage(data); !ok {
					b.Fatal("not parsed")
				}
			}
		})
	}
}

// BenchmarkHostileFastParse is what 2 KB of invalid JSON nested 1,000 deep
// costs the fast paths' validation: fastJSON (the depth check, then
// encoding/json's linear validator) against fastjson's validator, which
// the fast paths used before and whose error texts grow with the square
// of the depth.
func BenchmarkHostileFastParse(b *testing.B) {
	data := []byte(strings.Repeat("[", 1000) + "x" + strings.Repeat("]", 1000))
	at := []byte(strings.Repeat("[", fastValidateDepth) + "x" + strings.Repeat("]", fastValidateDepth))
	b.Run("fastJSON", func(b *testing.B) {
		for b.Loop() {
			if fastJSON(data) {
				b.Fatal("taken")
			}
		}
	})
	b.Run("fastJSON/at-fastjson-depth", func(b *testing.B) {
		for b.Loop() {
			if fastJSON(at) {
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
