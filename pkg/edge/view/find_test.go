package view

import (
	"bytes"
	"encoding/json"
	"testing"
)

// encodeReference is the encoding find_tool answers had before encode:
// json.Marshal, which compacts and HTML-escapes each tool's MarshalJSON.
func encodeReference(t testing.TB, r any) []byte {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A result is encoded byte for byte as json.Marshal encodes it, whatever
// white space, HTML characters or line separators the definitions hold.
func TestFindResultEncoding(t *testing.T) {
	defs := []string{
		`{"name":"a_x","inputSchema":{"type":"object"}}`,
		`{}`,
		"{ \"name\" : \"a_y\",\n  \"description\": \"<b>&amp;</b> \u2028 é\", \"inputSchema\":{} }",
		"{\"name\":\"a_z\" \r\n }",
	}
	for _, def := range defs {
		for _, score := range []float64{0, 12.3456, 1e-7, 3e21} {
			r := &FindResult{Tools: []FoundTool{{Name: "a", Score: score, Matched: []string{"send", "<mail>", "naïve"}, def: json.RawMessage(def)}},
				CatalogTools: 3, CatalogTokens: 100, ReturnedTokens: 20}
			got, err := r.encode()
			if err != nil {
				t.Fatal(err)
			}
			if want := encodeReference(t, r); !bytes.Equal(got, want) {
				t.Errorf("def %s score %g:\n got %s\nwant %s", def, score, got, want)
			}
		}
	}
	// Without a definition the decoded fields are encoded.
	r := &FindResult{Tools: []FoundTool{{Name: "b", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`), Score: 1}}}
	if got, _ := r.encode(); !bytes.Equal(got, encodeReference(t, r)) {
		t.Errorf("no definition: %s", got)
	}
}

func FuzzFindResultEncoding(f *testing.F) {
	f.Add(`{"name":"a","inputSchema":{}}`, 1.5, "word")
	f.Add("{ \"d\" : \"<\u2028>\" }", 0.0001, "é\"")
	f.Fuzz(func(t *testing.T, def string, score float64, word string) {
		num, nerr := appendNumber(nil, score)
		wantNum, werr := json.Marshal(score)
		if (nerr != nil) != (werr != nil) || nerr == nil && !bytes.Equal(num, wantNum) {
			t.Fatalf("number %v: %s (%v), json.Marshal %s (%v)", score, num, nerr, wantNum, werr)
		}
		if str, want := appendString(nil, word), encodeReference(t, word); !bytes.Equal(str, want) {
			t.Fatalf("string %q: %s, json.Marshal %s", word, str, want)
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(def), &obj) != nil || bytes.HasPrefix(bytes.TrimSpace([]byte(def)), []byte("null")) {
			return
		}
		r := &FindResult{Tools: []FoundTool{{Name: "a", Score: score, Matched: []string{word}, def: json.RawMessage(def)}}}
		got, err := r.encode()
		want, werr := json.Marshal(r)
		if (err != nil) != (werr != nil) {
			t.Fatalf("encode error %v, json.Marshal error %v", err, werr)
		}
		if err == nil && !bytes.Equal(got, want) {
			t.Fatalf("def %q:\n got %s\nwant %s", def, got, want)
		}
	})
}
