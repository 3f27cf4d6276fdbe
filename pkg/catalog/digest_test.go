package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

// sha256Of is the expected digest of hand-written canonical bytes.
func sha256Of(canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func raws(defs ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(defs))
	for i, d := range defs {
		out[i] = json.RawMessage(d)
	}
	return out
}

func mustDigest(t *testing.T, tools []json.RawMessage) string {
	t.Helper()
	d, err := Digest(tools)
	if err != nil {
		t.Fatalf("Digest: %v", err)
	}
	return d
}

func TestDigestGolden(t *testing.T) {
	tests := []struct {
		name  string
		tools []string
		want  string // digest, fixed or of hand-written canonical JSON
	}{
		{
			name: "empty list",
			want: "sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945", // sha256sum of "[]"
		},
		{
			name:  "one minimal tool",
			tools: []string{`{ "name" : "a", "inputSchema" : { "type" : "object" } }`},
			// printf '[{"inputSchema":{"type":"object"},"name":"a"}]' | sha256sum
			want: "sha256:6466400fd2e7d487fd5604f2628816b750b85b429c2064a9d991d7060d80833b",
		},
		{
			name: "sorted by name, unprojected members dropped",
			tools: []string{
				`{"name":"b","inputSchema":{"type":"object"},"_meta":{"x":1},"icons":[]}`,
				`{"description":"d","name":"a","inputSchema":{"type":"object","properties":{}}}`,
			},
			want: sha256Of(`[{"description":"d","inputSchema":{"properties":{},"type":"object"},"name":"a"},` +
				`{"inputSchema":{"type":"object"},"name":"b"}]`),
		},
		{
			name: "every projected member, numbers and strings canonicalized",
			tools: []string{`{
				"title": "caf\u00e9",
				"outputSchema": {"type": "object", "maximum": 1.0E2},
				"execution": {"taskSupport": "optional"},
				"annotations": {"readOnlyHint": true, "destructiveHint": false},
				"inputSchema": {"type": "object", "required": ["q"]},
				"description": "line\nbreak <b>",
				"name": "all"
			}`},
			want: sha256Of(`[{"annotations":{"destructiveHint":false,"readOnlyHint":true},` +
				`"description":"line\nbreak <b>","execution":{"taskSupport":"optional"},` +
				`"inputSchema":{"required":["q"],"type":"object"},"name":"all",` +
				`"outputSchema":{"maximum":100,"type":"object"},"title":"café"}]`),
		},
		{
			name:  "present null member is projected",
			tools: []string{`{"name":"n","title":null,"inputSchema":{"type":"object"}}`},
			want:  sha256Of(`[{"inputSchema":{"type":"object"},"name":"n","title":null}]`),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustDigest(t, raws(tt.tools...)); got != tt.want {
				t.Errorf("Digest = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestDigestProperties(t *testing.T) {
	base := mustDigest(t, raws(
		`{"name":"search","description":"find","inputSchema":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}}`,
		`{"name":"echo","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}`,
	))
	same := map[string][]string{
		"tools reordered": {
			`{"name":"echo","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}`,
			`{"name":"search","description":"find","inputSchema":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}}`,
		},
		"keys reordered and spaced": {
			`{"inputSchema":{"required":["q"],"properties":{"q":{"type":"string"}},"type":"object"},  "description":"find","name":"search"}`,
			`{"annotations":{"readOnlyHint":true},"inputSchema":{"type":"object"},"name":"echo"}`,
		},
		"unprojected members added": {
			`{"name":"search","description":"find","inputSchema":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]},"_meta":{"v":2},"icons":[{"src":"x"}]}`,
			`{"name":"echo","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true},"x-vendor":true}`,
		},
		"escapes instead of literals": {
			`{"name":"search","description":"\u0066ind","inputSchema":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}}`,
			`{"name":"ech\u006f","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}`,
		},
	}
	for name, tools := range same {
		if got := mustDigest(t, raws(tools...)); got != base {
			t.Errorf("%s: digest %s, want unchanged %s", name, got, base)
		}
	}
	different := map[string][]string{
		"required input changed": {
			`{"name":"search","description":"find","inputSchema":{"type":"object","properties":{"q":{"type":"string"}},"required":[]}}`,
			`{"name":"echo","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}`,
		},
		"annotation changed": {
			`{"name":"search","description":"find","inputSchema":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}}`,
			`{"name":"echo","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":false}}`,
		},
		"renamed": {
			`{"name":"search","description":"find","inputSchema":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}}`,
			`{"name":"echo2","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}`,
		},
		"tool dropped": {
			`{"name":"search","description":"find","inputSchema":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}}`,
		},
		"title added": {
			`{"name":"search","title":"","description":"find","inputSchema":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}}`,
			`{"name":"echo","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}`,
		},
	}
	for name, tools := range different {
		if got := mustDigest(t, raws(tools...)); got == base {
			t.Errorf("%s: digest unchanged %s", name, got)
		}
	}
}

func TestDigestSameNameOrderIndependent(t *testing.T) {
	a := `{"name":"x","description":"a","inputSchema":{"type":"object"}}`
	b := `{"name":"x","description":"b","inputSchema":{"type":"object"}}`
	if d1, d2 := mustDigest(t, raws(a, b)), mustDigest(t, raws(b, a)); d1 != d2 {
		t.Errorf("digest depends on order of same-named tools: %s vs %s", d1, d2)
	}
}

func TestDigestErrors(t *testing.T) {
	tests := map[string]string{
		"not JSON":                 `{"name":`,
		"array":                    `[{"name":"a"}]`,
		"no name":                  `{"inputSchema":{"type":"object"}}`,
		"name not a string":        `{"name":1}`,
		"duplicate projected key":  `{"name":"a","title":"x","title":"y"}`,
		"duplicate name":           `{"name":"a","name":"b"}`,
		"invalid UTF-8 in member":  "{\"name\":\"a\",\"description\":\"\xff\"}",
		"duplicate key in a value": `{"name":"a","inputSchema":{"type":"object","type":"object"}}`,
	}
	for name, def := range tests {
		t.Run(name, func(t *testing.T) {
			ok := `{"name":"ok","inputSchema":{"type":"object"}}`
			_, err := Digest(raws(ok, def))
			if err == nil {
				t.Fatalf("Digest(%s) succeeded", def)
			}
			if !strings.Contains(err.Error(), "tool 1") {
				t.Errorf("error %q does not name the tool's index", err)
			}
		})
	}
}

func TestCanonical(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"b":1,"a":[1.50,true,null]}`, `{"a":[1.5,true,null],"b":1}`},
		{` "\u00e9\n" `, `"é\n"`},
		{`{"€":1,"\r":2,"1":3}`, `{"\r":2,"1":3,"€":1}`},
		{`1E3`, `1000`},
	}
	for _, tt := range tests {
		got, err := Canonical([]byte(tt.in))
		if err != nil {
			t.Fatalf("Canonical(%s): %v", tt.in, err)
		}
		if string(got) != tt.want {
			t.Errorf("Canonical(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
	for _, bad := range []string{``, `{"a":1,"a":2}`, `{`, `[1,]`} {
		if _, err := Canonical([]byte(bad)); err == nil {
			t.Errorf("Canonical(%q) succeeded", bad)
		}
	}
}

// appendCanonicalString must agree with the JCS library on every string.
func TestAppendCanonicalStringMatchesJCS(t *testing.T) {
	inputs := []string{
		"", "plain", `quo"te`, `back\slash`, "\b\f\n\r\t", "\x00\x01\x1f\x7f",
		"<html>&amp;", "\u2028\u2029", "é€😀", "a/b",
	}
	for _, s := range inputs {
		lit, _ := json.Marshal(s)
		want, err := jcs.Transform(lit)
		if err != nil {
			t.Fatalf("jcs.Transform(%s): %v", lit, err)
		}
		if got := appendCanonicalString(nil, s); string(got) != string(want) {
			t.Errorf("appendCanonicalString(%q) = %s, want %s", s, got, want)
		}
	}
}

// canonicalValue skips the JCS library for some values; it must agree with
// it on all of them.
func TestCanonicalValueMatchesJCS(t *testing.T) {
	for _, v := range []string{
		`true`, `false`, `null`, `"plain"`, `"caf\u00e9"`, `"a\/b"`, `"é"`, `"\n"`,
		`1.0`, `-0`, `1e2`, `{"b":1,"a":2}`, `[ 1 , "x" ]`, `""`,
	} {
		want, err := jcs.Transform([]byte(v))
		if err != nil {
			t.Fatalf("jcs.Transform(%s): %v", v, err)
		}
		got, err := canonicalValue([]byte(v))
		if err != nil || string(got) != string(want) {
			t.Errorf("canonicalValue(%s) = %s, %v; want %s", v, got, err, want)
		}
	}
	if _, err := canonicalValue([]byte("\"\xff\"")); err == nil {
		t.Error("canonicalValue accepted invalid UTF-8")
	}
}
