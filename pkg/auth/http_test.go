package auth_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/auth"
)

func TestParseAuthorization(t *testing.T) {
	cases := []struct {
		in, tok string
		want    error
	}{
		{"", "", auth.ErrNoToken},
		{"   ", "", auth.ErrNoToken},
		{"Basic dXNlcjpwdw==", "", auth.ErrNoToken},
		{"Bearerx abc", "", auth.ErrNoToken},
		{"Bearer", "", auth.ErrMalformed},
		{"Bearer ", "", auth.ErrMalformed},
		{"Bearer a b", "", auth.ErrMalformed},
		{"Bearer a,b", "", auth.ErrMalformed},
		{"Bearer a\tb", "", auth.ErrMalformed},
		{"Bearer a=b", "", auth.ErrMalformed},
		{"Bearer ab\x00", "", auth.ErrMalformed},
		{"Bearer " + strings.Repeat("a", 70<<10), "", auth.ErrMalformed},
		{"Bearer abc.DEF-_~+/==", "abc.DEF-_~+/==", nil},
		{"bearer abc", "abc", nil},
		{"BEARER   abc  ", "abc", nil},
	}
	for _, c := range cases {
		tok, err := auth.ParseAuthorization(c.in)
		if tok != c.tok || (c.want == nil) != (err == nil) || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%.40q: %q %v, want %q %v", c.in, tok, err, c.tok, c.want)
		}
	}
	h := http.Header{}
	h.Add("Authorization", "Bearer a")
	h.Add("Authorization", "Bearer b")
	if _, err := auth.BearerToken(h); !errors.Is(err, auth.ErrMalformed) {
		t.Errorf("two headers: %v", err)
	}
}

func TestChallenge(t *testing.T) {
	md := "https://gw.example/.well-known/oauth-protected-resource/mcp"
	cases := []struct {
		err    error
		status int
		header string
	}{
		{nil, 200, ""},
		{auth.ErrNoToken, 401, `Bearer resource_metadata="` + md + `"`},
		{auth.ErrExpired, 401, `Bearer resource_metadata="` + md + `", error="invalid_token"`},
		{errors.New("anything"), 401, `Bearer resource_metadata="` + md + `", error="invalid_token"`},
		{&auth.ScopeError{Required: []string{"a", "b"}, Missing: []string{"b"}}, 403,
			`Bearer resource_metadata="` + md + `", error="insufficient_scope", scope="a b"`},
		{auth.ErrKeysUnavailable, 503, ""},
	}
	for _, c := range cases {
		status, header := auth.Challenge(c.err, md)
		if status != c.status || header != c.header {
			t.Errorf("%v: %d %q, want %d %q", c.err, status, header, c.status, c.header)
		}
	}
	if _, h := auth.Challenge(auth.ErrNoToken, `x"\y`); h != `Bearer resource_metadata="x\"\\y"` {
		t.Errorf("quoting: %s", h)
	}
}

func TestMetadataURL(t *testing.T) {
	cases := []struct{ in, path, url string }{
		{"http://127.0.0.1:8080/mcp", "/.well-known/oauth-protected-resource/mcp", "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp"},
		{"https://gw.example/a/b/", "/.well-known/oauth-protected-resource/a/b", "https://gw.example/.well-known/oauth-protected-resource/a/b"},
		{"https://gw.example", "/.well-known/oauth-protected-resource", "https://gw.example/.well-known/oauth-protected-resource"},
		{"https://gw.example/", "/.well-known/oauth-protected-resource", "https://gw.example/.well-known/oauth-protected-resource"},
	}
	for _, c := range cases {
		p, u, err := auth.MetadataURL(c.in)
		if err != nil || p != c.path || u != c.url {
			t.Errorf("%s: %q %q %v", c.in, p, u, err)
		}
	}
	for _, bad := range []string{"", "/mcp", "ftp://x/mcp", "https://u:p@x/mcp", "https://x/mcp?a=1", "https://x/mcp#f"} {
		if _, _, err := auth.MetadataURL(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The RFC 9728 document, as the contract gives it, at the path of the
// resource URL.
func TestMetadataHandler(t *testing.T) {
	resource := "http://127.0.0.1:8080/mcp"
	path, _, err := auth.MetadataURL(resource)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(path, auth.MetadataHandler(auth.NewMetadata(resource, "https://issuer.example", []string{"tools"})))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := `{"resource":"http://127.0.0.1:8080/mcp","authorization_servers":["https://issuer.example"],"scopes_supported":["tools"],"bearer_methods_supported":["header"]}`
	if resp.StatusCode != 200 || string(body) != want || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	var m auth.Metadata
	if err := json.Unmarshal(body, &m); err != nil || m.Resource != resource {
		t.Fatal(m, err)
	}
	resp, err = srv.Client().Post(srv.URL+path, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 {
		t.Fatalf("POST: %d", resp.StatusCode)
	}
	if b, _ := json.Marshal(auth.NewMetadata(resource, "https://i", nil)); !strings.Contains(string(b), `"scopes_supported":[]`) {
		t.Fatalf("no scopes: %s", b)
	}
}
