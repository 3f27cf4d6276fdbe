package catalog

import (
	"strings"
	"testing"
)

func TestRename(t *testing.T) {
	tests := []struct {
		name, in, to, want string
	}{
		{"replaces only the value",
			`{ "x-vendor": {"name":"inner"}, "name" :  "old" ,"inputSchema":{"type":"object"}}`, "alpha_old",
			`{ "x-vendor": {"name":"inner"}, "name" :  "alpha_old" ,"inputSchema":{"type":"object"}}`},
		{"escaped key still matched", `{"n\u0061me":"old"}`, "new", `{"n\u0061me":"new"}`},
		{"adds an absent name", `{ "uri":"a:b"}`, "x", `{"name":"x", "uri":"a:b"}`},
		{"empty object", `{}`, "x", `{"name":"x"}`},
		{"canonical escaping", `{"name":1}`, "a\"b<c>\n", `{"name":"a\"b<c>\n"}`},
		{"keeps numbers and strings verbatim", `{"name":"a","n":1.0E2,"s":"\u00e9"}`, "b", `{"name":"b","n":1.0E2,"s":"\u00e9"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Rename([]byte(tt.in), tt.to)
			if err != nil {
				t.Fatalf("Rename: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("Rename(%s, %q) = %s, want %s", tt.in, tt.to, got, tt.want)
			}
		})
	}
}

func TestRenameDoesNotAliasInput(t *testing.T) {
	in := []byte(`{"name":"a","d":"x"}`)
	out, err := Rename(in, "b")
	if err != nil {
		t.Fatal(err)
	}
	out[len(out)-3] = 'Y'
	if string(in) != `{"name":"a","d":"x"}` {
		t.Errorf("input modified through output: %s", in)
	}
}

func TestRenameErrors(t *testing.T) {
	for _, in := range []string{``, `[]`, `"name"`, `{"name":"a","name":"b"}`, `{"name":}`} {
		_, err := Rename([]byte(in), "x")
		if err == nil {
			t.Errorf("Rename(%q) succeeded", in)
			continue
		}
		if !strings.HasPrefix(err.Error(), `rename to "x": `) {
			t.Errorf("error %q does not name the operation", err)
		}
	}
}

func TestScanObjectOffsets(t *testing.T) {
	in := []byte(" {\"a\" : [1, {\"b\":\"]}\\\"\"}] ,\"c\":true,\"d\":-1.5e3 , \"e\":\"\\\\\"}\n")
	obj, err := parseObject(in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": `[1, {"b":"]}\""}]`, "c": "true", "d": "-1.5e3", "e": `"\\"`}
	if len(obj.members) != len(want) {
		t.Fatalf("members = %d, want %d", len(obj.members), len(want))
	}
	for k, w := range want {
		v, ok, err := obj.get(k)
		if err != nil || !ok || string(v) != w {
			t.Errorf("get(%q) = %s, %v, %v; want %s", k, v, ok, err, w)
		}
	}
}
