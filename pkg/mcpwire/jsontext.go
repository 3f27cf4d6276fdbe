package mcpwire

import (
	"bytes"

	"github.com/valyala/fastjson"
)

// PlainString reports whether s is JSON-encoded as itself in quotes:
// printable ASCII without '"', '\\' or the characters encoding/json
// escapes for HTML ('<', '>', '&').
func PlainString(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// DuplicateMember returns a member name o has twice, or "".
func DuplicateMember(o *fastjson.Object) string {
	var dup string
	if o.Len() <= 8 { // a message's few members: compared pairwise
		var keys [8][]byte
		n := 0
		o.Visit(func(k []byte, _ *fastjson.Value) {
			for _, prev := range keys[:n] {
				if dup == "" && bytes.Equal(prev, k) {
					dup = string(k)
				}
			}
			keys[n] = k
			n++
		})
		return dup
	}
	seen := make(map[string]bool, o.Len())
	o.Visit(func(k []byte, _ *fastjson.Value) {
		if seen[string(k)] && dup == "" {
			dup = string(k)
		}
		seen[string(k)] = true
	})
	return dup
}
