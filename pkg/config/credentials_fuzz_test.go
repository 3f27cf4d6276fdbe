package config

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// FuzzBackendHeaders: the headers section of a backend, alone. Parse never
// panics and refuses with a *FieldError; accepted headers validate, and
// pass Put.
func FuzzBackendHeaders(f *testing.F) {
	for _, s := range []string{
		"{Authorization: {env: ALPHA_AUTHORIZATION}}",
		"\n  Authorization: {file: /run/secrets/alpha}\n  X-Tenant: {env: T}",
		"{Authorization: Bearer x}", "{A: {env: X}, a: {env: Y}}", "{Host: {env: X}}", "[x]", "~", "{A: ~}",
		"{A: {env: X, file: /y}}", "{A: {env: 1X}}", "{A: {file: rel}}", "{A: &r {env: X}, B: *r}", "{? [a]: {env: X}}",
		"{A: {env: !!binary aGk=}}", "{A: !!str {env: X}}", "{\"\\u00e9\": {env: X}}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, section string) {
		doc := "groups:\n  - name: g\n    backends:\n      - name: b\n        url: http://h/mcp\n        headers: " +
			strings.ReplaceAll(section, "\n", "\n          ") + "\n"
		fl, err := Parse("fuzz.yaml", []byte(doc))
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("refused with %T %v", err, err)
			}
			return
		}
		b, _ := fl.Backend("g", "b")
		if err := b.Headers.Validate(); err != nil {
			t.Fatalf("accepted headers %v: %v", b.Headers, err)
		}
		if err := (&Fleet{}).Put("g", b); err != nil {
			t.Fatalf("accepted backend %+v: Put refuses: %v", b, err)
		}
	})
}

// FuzzParseHeadersJSON: the headers of an admin PUT body. Never panics;
// refusals are *FieldError naming a headers field; accepted headers pass
// Put.
func FuzzParseHeadersJSON(f *testing.F) {
	for _, s := range []string{`{"Authorization":{"env":"X"}}`, `{"authorization":{"file":"/run/a"}}`, `{"A":"Bearer x"}`,
		`{"A":{"env":"X"},"a":{"env":"Y"}}`, `{"Host":{"env":"X"}}`, `{"A":{"env":"X","file":"/y"}}`, `{"A":null}`, `{"A":[]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var raw map[string]json.RawMessage
		if json.Unmarshal(data, &raw) != nil {
			return
		}
		h, err := ParseHeadersJSON(raw)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || !strings.HasPrefix(fe.Field, "headers") {
				t.Fatalf("refused with %T %v", err, err)
			}
			return
		}
		if err := (&Fleet{}).Put("g", Backend{Name: "b", URL: "http://h/", Headers: h}); err != nil {
			t.Fatalf("accepted %v: Put refuses: %v", h, err)
		}
	})
}
