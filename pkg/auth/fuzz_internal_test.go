package auth

import (
	"encoding/json"
	"testing"
)

func FuzzParseJWKS(f *testing.F) {
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","kid":"a"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"oct","k":"AAAA"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`))
	f.Add([]byte(`{"keys":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		keys, err := parseJWKS(b, 8)
		if err == nil {
			if len(keys) == 0 || len(keys) > 8 {
				t.Fatalf("%d keys", len(keys))
			}
			for _, k := range keys {
				if family(k.Key) == "" || !k.IsPublic() {
					t.Fatalf("key %T accepted", k.Key)
				}
			}
		}
	})
}

func FuzzMaxAge(f *testing.F) {
	for _, s := range []string{"", "max-age=60", "public, max-age=\"10\"", "no-store", "max-age=-1", "max-age=99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d := maxAge(s); d < 0 {
			t.Fatalf("%q: %v", s, d)
		}
	})
}

// checkDepth agrees with a decoder on the depth of valid JSON.
func FuzzCheckDepth(f *testing.F) {
	for _, s := range []string{`{}`, `[[[]]]`, `{"a":"[[[["}`, `{"a":"\"[["}`, `[{"a":[1,{"b":[]}]}]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v any
		if json.Unmarshal([]byte(s), &v) != nil {
			_ = checkDepth([]byte(s), 3)
			return
		}
		d := depth(v)
		if err := checkDepth([]byte(s), 3); (err == nil) != (d <= 3) {
			t.Fatalf("%q: depth %d, checkDepth %v", s, d, err)
		}
	})
}

func depth(v any) int {
	n := 0
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			n = max(n, depth(e))
		}
		return n + 1
	case map[string]any:
		for _, e := range x {
			n = max(n, depth(e))
		}
		return n + 1
	}
	return 0
}
