package signin

import (
	"errors"
	"strings"
	"testing"
)

func TestParseChallenge(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		err      bool
	}{
		{`Bearer resource_metadata="https://r.example/.well-known/oauth-protected-resource/mcp"`, "https://r.example/.well-known/oauth-protected-resource/mcp", false},
		{`Basic realm="x", Bearer error="invalid_token", resource_metadata=https://r/m, scope="a b"`, "https://r/m", false},
		{`Bearer realm="x"`, "", false},
		{`Basic resource_metadata="https://r/m"`, "", false},
		{`Bearer resource_metadata="javascript:alert(1)"`, "", true},
		{`Bearer resource_metadata="https://u:p@r/m"`, "", true},
		{`Bearer resource_metadata="https://r/m`, "", true},
		{strings.Repeat("a", MaxChallenge+1), "", true},
		{"Bearer " + strings.Repeat("a=b, ", maxParams+1), "", true},
	} {
		got, err := ParseChallenge(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseChallenge(%.60q) = %q, %v", tc.in, got, err)
		}
		if err != nil && !errors.Is(err, ErrBadMetadata) {
			t.Errorf("error %v is not ErrBadMetadata", err)
		}
	}
}

func TestParseMetadata(t *testing.T) {
	prm := `{"resource":"https://r/mcp","authorization_servers":["https://as/t1","https://as/t2"]}`
	if md, err := ParseResourceMetadata([]byte(prm), "https://r/mcp"); err != nil || md.AuthorizationServers[0] != "https://as/t1" {
		t.Fatalf("%+v %v", md, err)
	}
	for _, bad := range []struct{ body, resource string }{
		{prm, "https://other/mcp"},
		{`{"resource":"https://r/mcp","authorization_servers":[]}`, "https://r/mcp"},
		{`{"resource":"https://r/mcp","authorization_servers":["file:///etc/passwd"]}`, "https://r/mcp"},
		{`[1]`, "https://r/mcp"},
		{`{"resource":"` + strings.Repeat("x", MaxDocument) + `"}`, "https://r/mcp"},
	} {
		if _, err := ParseResourceMetadata([]byte(bad.body), bad.resource); !errors.Is(err, ErrBadMetadata) {
			t.Errorf("accepted %.80s: %v", bad.body, err)
		}
	}
	asm := `{"issuer":"https://as","authorization_endpoint":"https://as/a","token_endpoint":"https://as/t","registration_endpoint":"https://as/r"}`
	if md, err := ParseServerMetadata([]byte(asm), "https://as"); err != nil || md.RegistrationEndpoint != "https://as/r" {
		t.Fatalf("%+v %v", md, err)
	}
	for _, bad := range []struct{ body, issuer string }{
		{asm, "https://evil"},
		{`{"issuer":"https://as","authorization_endpoint":"https://as/a"}`, "https://as"},
		{`{"issuer":"https://as","authorization_endpoint":"https://as/a","token_endpoint":"https://as/t","code_challenge_methods_supported":["plain"]}`, "https://as"},
	} {
		if _, err := ParseServerMetadata([]byte(bad.body), bad.issuer); !errors.Is(err, ErrBadMetadata) {
			t.Errorf("accepted %s: %v", bad.body, err)
		}
	}
}
