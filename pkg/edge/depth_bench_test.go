package edge

import (
	"strings"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/edge/fastpath"
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
				if _, ok := fastpath.ParseMessage(data); !ok {
					b.Fatal("not parsed")
				}
			}
		})
		b.Run(name+"/checked", func(b *testing.B) {
			for b.Loop() {
				if mcpwire.Check(data, mcpwire.MaxDepth) != nil {
					b.Fatal("refused")
				}
				if _, ok := fastpath.ParseMessage(data); !ok {
					b.Fatal("not parsed")
				}
			}
		})
	}
}
