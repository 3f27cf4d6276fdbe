package config

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/credential"
)

const leak = "hunter2-c0ffee"

func backendYAML(extra string) string {
	return "groups:\n  - name: default\n    backends:\n      - name: alpha\n        url: http://127.0.0.1:9101/mcp\n" +
		"      - name: beta\n" + extra
}

func TestParseCredentials(t *testing.T) {
	f, err := Parse("fleet.yaml", []byte(backendYAML(
		"        url: https://beta.internal/mcp\n        headers:\n          authorization: {env: BETA_AUTHORIZATION}\n"+
			"          X-Tenant: {file: /run/secrets/beta}\n      - name: meta\n        url: http://169.254.169.254/\n        allow_link_local: true\n")))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := f.Backend("default", "beta")
	want := credential.Headers{"Authorization": {Env: "BETA_AUTHORIZATION"}, "X-Tenant": {File: "/run/secrets/beta"}}
	if !b.Headers.Equal(want) || b.AllowLinkLocal {
		t.Fatalf("beta: %+v", b)
	}
	if m, _ := f.Backend("default", "meta"); !m.AllowLinkLocal || m.Headers != nil {
		t.Fatalf("meta: %+v", m)
	}
	a, _ := f.Backend("default", "alpha")
	if a.Headers != nil {
		t.Fatalf("alpha: %+v", a)
	}
}

func TestParseCredentialErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"        url: http://h/\n        headers:\n          Authorization: Bearer " + leak + "\n",
			"fleet.yaml:9: groups[0].backends[1].headers.Authorization: literal header values are not allowed; use {env: ...} or {file: ...}"},
		{"        url: http://h/\n        headers:\n          Authorization: \"" + leak + "\"\n", "headers.Authorization: literal header values"},
		{"        url: http://h/\n        headers:\n          Authorization: 12345\n", "headers.Authorization: literal header values"},
		{"        url: http://h/\n        headers:\n          Authorization: [" + leak + "]\n", "headers.Authorization: want {env: NAME} or {file: /path}, got a sequence"},
		{"        url: http://h/\n        headers:\n          Authorization: {value: " + leak + "}\n", "headers.Authorization.value: unknown key"},
		{"        url: http://h/\n        headers:\n          Authorization: {env: \"Bearer " + leak + "\"}\n", "headers.Authorization: invalid credential reference: env: want an environment variable name"},
		{"        url: http://h/\n        headers:\n          Authorization: {file: relative/" + leak + "}\n", "headers.Authorization: invalid credential reference: file: want an absolute"},
		{"        url: http://h/\n        headers:\n          Authorization: {env: A, file: /b}\n", "not both"},
		{"        url: http://h/\n        headers:\n          Authorization: {}\n", "want {env: NAME} or {file: /path}"},
		{"        url: http://h/\n        headers:\n          Authorization: {env: 7}\n", "headers.Authorization.env: want a non-empty string, got an integer"},
		{"        url: http://h/\n        headers:\n          Host: {env: A}\n", `groups[0].backends[1].headers[0]: invalid header name: "Host" is set by`},
		{"        url: http://h/\n        headers:\n          mcp-session-id: {env: A}\n", `"Mcp-Session-Id" is set by`},
		{"        url: http://h/\n        headers:\n          Content-Length: {env: A}\n", `"Content-Length"`},
		{"        url: http://h/\n        headers:\n          Transfer-Encoding: {env: A}\n", `"Transfer-Encoding"`},
		{"        url: http://h/\n        headers:\n          Connection: {env: A}\n", `"Connection"`},
		{"        url: http://h/\n        headers:\n          Mcp-Protocol-Version: {env: A}\n", `"Mcp-Protocol-Version"`},
		{"        url: http://h/\n        headers:\n          \"Bearer " + leak + "\": {env: A}\n", "headers[0]: invalid header name: not a token"},
		{"        url: http://h/\n        headers:\n          X-A: {env: A}\n          x-a: {env: B}\n", "fleet.yaml:10: groups[0].backends[1].headers.X-A: header X-A is already set at line 9"},
		{"        url: http://h/\n        headers: [a]\n", "headers: want a mapping of header names"},
		{"        url: http://" + leak + ":" + leak + "@h/\n", "fleet.yaml:7: groups[0].backends[1].url: URL must not carry user info"},
		{"        url: http://" + leak + "@h/\n        allow_link_local: true\n", "URL must not carry user info"},
		{"        url: ftp://u:" + leak + "@h/\n", "url: is not an http(s) URL (not quoted"},
		{"        url: http://169.254.169.254/latest/meta-data/\n", "url: host 169.254.169.254 is a link-local or cloud metadata address; set allow_link_local: true to allow it"},
		{"        url: http://[fe80::1%25eth0]/\n", "link-local"},
		{"        url: http://metadata.google.internal/\n", "host metadata.google.internal is a link-local"},
		{"        url: http://[fd00:ec2::254]/\n", "host fd00:ec2::254 is a link-local"},
		{"        url: http://100.100.100.200/\n", "link-local"},
		{"        url: http://169.254.1.1/\n        allow_link_local: yes please\n", "allow_link_local: want true or false, got a string"},
	} {
		_, err := Parse("fleet.yaml", []byte(backendYAML(tc.yaml)))
		if err == nil || !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("config\n%s\nerror %v\nwant %q", tc.yaml, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), leak) {
			t.Errorf("error quotes the secret: %v", err)
		}
	}
	// Over the header count.
	var sb strings.Builder
	sb.WriteString("        url: http://h/\n        headers:\n")
	for i := range credential.MaxHeaders + 1 {
		sb.WriteString("          X-H" + strings.Repeat("a", i) + ": {env: A}\n")
	}
	if _, err := Parse("fleet.yaml", []byte(backendYAML(sb.String()))); err == nil || !strings.Contains(err.Error(), "limit 32") {
		t.Errorf("too many headers: %v", err)
	}
}

func TestPutCredentials(t *testing.T) {
	f := &Fleet{}
	hs, err := ParseHeadersJSON(map[string]json.RawMessage{"authorization": json.RawMessage(`{"env":"X"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Put("default", Backend{Name: "alpha", URL: "http://h/mcp", Headers: hs}); err != nil {
		t.Fatal(err)
	}
	got, _ := f.Backend("default", "alpha")
	if !got.Headers.Equal(credential.Headers{"Authorization": {Env: "X"}}) {
		t.Fatalf("put: %+v", got)
	}
	hs["Authorization"] = credential.Ref{Env: "CHANGED"}
	if got, _ := f.Backend("default", "alpha"); got.Headers["Authorization"].Env != "X" {
		t.Fatal("Put keeps the caller's map")
	}
	if err := f.Put("default", Backend{Name: "meta", URL: "http://169.254.169.254/", AllowLinkLocal: true}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		raw   map[string]json.RawMessage
		b     Backend
		field string
		msg   string
	}{
		{raw: map[string]json.RawMessage{"Authorization": json.RawMessage(`"Bearer ` + leak + `"`)}, field: "headers.Authorization", msg: "literal header values are not allowed"},
		{raw: map[string]json.RawMessage{"Host": json.RawMessage(`{"env":"X"}`)}, field: "headers", msg: `"Host"`},
		{raw: map[string]json.RawMessage{"Bearer " + leak: json.RawMessage(`{"env":"X"}`)}, field: "headers", msg: "not a token"},
		{raw: map[string]json.RawMessage{"X-A": json.RawMessage(`{"env":"Bearer ` + leak + `"}`)}, field: "headers.X-A", msg: "environment variable name"},
		{raw: map[string]json.RawMessage{"X-A": json.RawMessage(`{"env":"A"}`), "x-a": json.RawMessage(`{"env":"B"}`)}, field: "headers.X-A", msg: "twice"},
		{b: Backend{URL: "http://u:" + leak + "@h/"}, field: "url", msg: "user info"},
		{b: Backend{URL: "http://169.254.169.254/"}, field: "url", msg: "allow_link_local"},
		{b: Backend{URL: "http://h/", Headers: credential.Headers{"Te": {Env: "A"}}}, field: "headers", msg: `"Te"`},
		{b: Backend{URL: "http://h/", Headers: credential.Headers{"x-a": {Env: "A"}}}, field: "headers.X-A", msg: "canonical"},
		{b: Backend{URL: "http://h/", Headers: credential.Headers{"X-A": {}}}, field: "headers.X-A", msg: "want {env"},
	} {
		var err error
		if tc.raw != nil {
			_, err = ParseHeadersJSON(tc.raw)
		} else {
			tc.b.Name = "beta"
			err = f.Put("default", tc.b)
		}
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(fe.Msg, tc.msg) || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v %+v: %v, want field %s, %q", tc.raw, tc.b, err, tc.field, tc.msg)
		}
		if err != nil && strings.Contains(err.Error(), leak) {
			t.Errorf("error quotes the secret: %v", err)
		}
	}
	// Diff sees a header or allow_link_local change.
	next := f.Clone()
	b, _ := next.Backend("default", "alpha")
	b.Headers = credential.Headers{"Authorization": {File: "/run/a"}}
	if err := next.Put("default", b); err != nil {
		t.Fatal(err)
	}
	if d := Diff(f, next); len(d.Updated) != 1 || d.Updated[0].Name != "alpha" {
		t.Fatalf("diff %+v", d)
	}
	if d := Diff(f, f.Clone()); !d.Empty() {
		t.Fatalf("diff of a clone %+v", d)
	}
}
