package adminauth_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/adminauth"
)

var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })

func TestGuard(t *testing.T) {
	g := adminauth.Guard(ok, adminauth.Options{Token: []byte("s3cret!"), AllowedHosts: []string{"admin.internal", "10.0.0.5:9000", "[fd00::1]"},
		ListenAddr: "127.0.0.1:8081"})
	open := adminauth.Guard(ok, adminauth.Options{ListenAddr: "[::]:8081"})
	cases := []struct {
		name       string
		h          http.Handler
		path, host string
		auth       []string
		want       int
	}{
		{"no token", g, "/v1/state", "127.0.0.1:8081", nil, 401},
		{"wrong token", g, "/v1/state", "127.0.0.1:8081", []string{"Bearer s3cret"}, 401},
		{"token as Basic", g, "/v1/state", "127.0.0.1:8081", []string{"Basic s3cret!"}, 401},
		{"two headers", g, "/v1/state", "127.0.0.1:8081", []string{"Bearer s3cret!", "Bearer s3cret!"}, 401},
		{"token", g, "/v1/state", "127.0.0.1:8081", []string{"Bearer s3cret!"}, 200},
		{"scheme in lower case", g, "/metrics", "localhost:8081", []string{"bearer s3cret!"}, 200},
		{"ipv6 loopback", g, "/v1/state", "[::1]:8081", []string{"Bearer s3cret!"}, 200},
		{"LOCALHOST.", g, "/v1/state", "LOCALHOST.:8081", []string{"Bearer s3cret!"}, 200},
		{"foreign host", g, "/v1/state", "evil.example:8081", []string{"Bearer s3cret!"}, 403},
		{"foreign host, no token", g, "/v1/state", "evil.example:8081", nil, 403},
		{"loopback, other port", g, "/v1/state", "127.0.0.1:9999", []string{"Bearer s3cret!"}, 403},
		{"loopback, no port", g, "/v1/state", "localhost", []string{"Bearer s3cret!"}, 403},
		{"other loopback address", g, "/v1/state", "127.0.0.2:8081", []string{"Bearer s3cret!"}, 403},
		{"allowed name, any port", g, "/v1/state", "Admin.Internal:1234", []string{"Bearer s3cret!"}, 200},
		{"allowed name, no port", g, "/v1/state", "admin.internal", []string{"Bearer s3cret!"}, 200},
		{"allowed host:port", g, "/v1/state", "10.0.0.5:9000", []string{"Bearer s3cret!"}, 200},
		{"allowed host, other port", g, "/v1/state", "10.0.0.5:9001", []string{"Bearer s3cret!"}, 403},
		{"allowed ipv6", g, "/v1/state", "[fd00::1]:8081", []string{"Bearer s3cret!"}, 200},
		{"suffix of an allowed name", g, "/v1/state", "xadmin.internal", []string{"Bearer s3cret!"}, 403},
		{"empty host", g, "/v1/state", "", []string{"Bearer s3cret!"}, 403},
		{"healthz open", g, "/healthz", "10.1.2.3:8081", nil, 200},
		{"readyz open", g, "/readyz", "anything", nil, 200},
		{"healthz prefix is not open", g, "/healthz/x", "127.0.0.1:8081", nil, 401},
		{"no token configured", open, "/v1/state", "127.0.0.1:8081", nil, 200},
		{"no token configured, foreign host", open, "/v1/state", "evil.example:8081", nil, 403},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "http://x"+c.path, nil)
			r.Host = c.host
			for _, a := range c.auth {
				r.Header.Add("Authorization", a)
			}
			w := httptest.NewRecorder()
			c.h.ServeHTTP(w, r)
			if w.Code != c.want {
				t.Fatalf("status %d, want %d: %s", w.Code, c.want, w.Body)
			}
			if c.want == 401 && !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("401 without a Bearer challenge")
			}
			if strings.Contains(w.Body.String(), "s3cret") {
				t.Errorf("the answer carries the token: %s", w.Body)
			}
		})
	}
}

// Open paths are reached by GET and HEAD without the token, never with a
// foreign Host, and only exactly.
func TestGuardOpen(t *testing.T) {
	g := adminauth.Guard(ok, adminauth.Options{Token: []byte("s3cret!"), ListenAddr: "127.0.0.1:8081", Open: []string{"/ui/", "/ui/app.js"}})
	cases := []struct {
		method, path, host string
		want               int
	}{
		{"GET", "/ui/", "127.0.0.1:8081", 200},
		{"HEAD", "/ui/app.js", "localhost:8081", 200},
		{"POST", "/ui/", "127.0.0.1:8081", 401},
		{"GET", "/ui/", "evil.example:8081", 403},
		{"GET", "/ui/app.js/x", "127.0.0.1:8081", 401},
		{"GET", "/ui", "127.0.0.1:8081", 401},
		{"GET", "/v1/state", "127.0.0.1:8081", 401},
	}
	for _, c := range cases {
		r := httptest.NewRequest(c.method, "http://x"+c.path, nil)
		r.Host = c.host
		w := httptest.NewRecorder()
		g.ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("%s %s (Host %s): status %d, want %d", c.method, c.path, c.host, w.Code, c.want)
		}
	}
}

func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct{ content, want string }{
		{"tok\n", "tok"},
		{"tok\r\n", "tok"},
		{"tok", "tok"},
		{"a-b_c.d~e+f/g=\n\n", "a-b_c.d~e+f/g="},
	} {
		got, err := adminauth.ReadTokenFile(write("good", c.content))
		if err != nil || string(got) != c.want {
			t.Errorf("%q: %q %v", c.content, got, err)
		}
	}
	for _, bad := range []string{"", "\n", "two words\n", "tab\there", strings.Repeat("x", adminauth.MaxTokenBytes+1), "ünï"} {
		_, err := adminauth.ReadTokenFile(write("bad", bad))
		if !errors.Is(err, adminauth.ErrToken) {
			t.Errorf("%.20q accepted: %v", bad, err)
		}
		if err != nil && len(bad) > 3 && strings.Contains(err.Error(), strings.TrimSpace(bad)) {
			t.Errorf("error carries the content: %v", err)
		}
	}
	if _, err := adminauth.ReadTokenFile(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestClientToken(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tok")
	_ = os.WriteFile(p, []byte("from-file\n"), 0o600)
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == adminauth.EnvToken {
				return v
			}
			return ""
		}
	}
	if tok, err := adminauth.ClientToken(p, env("from-env")); err != nil || string(tok) != "from-file" {
		t.Errorf("file: %q %v", tok, err)
	}
	if tok, err := adminauth.ClientToken("", env("from-env")); err != nil || string(tok) != "from-env" {
		t.Errorf("env: %q %v", tok, err)
	}
	if tok, err := adminauth.ClientToken("", env("")); err != nil || tok != nil {
		t.Errorf("none: %q %v", tok, err)
	}
	if _, err := adminauth.ClientToken("", env("a b")); !errors.Is(err, adminauth.ErrToken) {
		t.Errorf("bad env: %v", err)
	}
	h := http.Header{}
	adminauth.SetToken(h, nil)
	if h.Get("Authorization") != "" {
		t.Error("empty token set")
	}
	adminauth.SetToken(h, []byte("t"))
	if h.Get("Authorization") != "Bearer t" {
		t.Error(h)
	}
}

func TestParseAllowedHosts(t *testing.T) {
	got, err := adminauth.ParseAllowedHosts(" a.example, 10.0.0.1:8081,,[::1]:9 ")
	if err != nil || strings.Join(got, "|") != "a.example|10.0.0.1:8081|[::1]:9" {
		t.Fatalf("%q %v", got, err)
	}
	for _, bad := range []string{"http://a", "a/b", "u@h", "*.example", ":8081", "a:0", "a:99999", "a:x"} {
		if _, err := adminauth.ParseAllowedHosts(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The guard never panics, and answers 200 for a non-open path only with
// the token and an allowed Host.
func FuzzGuard(f *testing.F) {
	f.Add("/v1/state", "127.0.0.1:8081", "Bearer tok")
	f.Add("/healthz", "[::1", "bearer\ttok")
	f.Add("/v1/state", "admin.internal:1", "Bearer  tok ")
	g := adminauth.Guard(ok, adminauth.Options{Token: []byte("tok"), AllowedHosts: []string{"admin.internal"}, ListenAddr: "127.0.0.1:8081"})
	f.Fuzz(func(t *testing.T, path, host, authz string) {
		r := httptest.NewRequest("GET", "http://x/", nil)
		r.URL.Path, r.Host = path, host
		r.Header.Set("Authorization", authz)
		w := httptest.NewRecorder()
		g.ServeHTTP(w, r)
		if w.Code == 200 && path != "/healthz" && path != "/readyz" {
			if !strings.HasSuffix(strings.TrimSpace(authz), " tok") && !strings.HasSuffix(strings.TrimSpace(authz), "\ttok") {
				t.Fatalf("200 for %q", authz)
			}
		}
	})
}

func FuzzParseAllowedHosts(f *testing.F) {
	for _, s := range []string{"a,b:1", "[::1]:8081", "http://x", ",,", "a:65536"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hosts, err := adminauth.ParseAllowedHosts(s)
		if err != nil {
			return
		}
		// Whatever was accepted configures a guard that still refuses a
		// foreign name.
		g := adminauth.Guard(ok, adminauth.Options{AllowedHosts: hosts, ListenAddr: "127.0.0.1:1"})
		r := httptest.NewRequest("GET", "http://x/v1/state", nil)
		r.Host = "not-allowed.invalid:1"
		w := httptest.NewRecorder()
		g.ServeHTTP(w, r)
		if w.Code == 200 && !strings.Contains(strings.ToLower(s), "not-allowed.invalid") {
			t.Fatalf("%q allows a foreign host", s)
		}
	})
}

// Each role has its own token: the edge's is refused by the controller's
// API (401 whose realm and message name the controller), and the
// controller's by the edge's.
func TestGuardRoles(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"controller": "c0ntroller-t0ken", "edge": "edge-t0ken"}
	servers := map[string]*httptest.Server{}
	for role, tok := range files {
		p := filepath.Join(dir, role+".token")
		if err := os.WriteFile(p, []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		read, err := adminauth.ReadTokenFile(p)
		if err != nil {
			t.Fatal(err)
		}
		servers[role] = httptest.NewServer(adminauth.Guard(ok, adminauth.Options{Role: role, Token: read}))
		defer servers[role].Close()
	}
	for _, c := range []struct {
		at, token string
		want      int
	}{
		{"controller", files["controller"], 200},
		{"controller", files["edge"], 401},
		{"edge", files["edge"], 200},
		{"edge", files["controller"], 401},
	} {
		req, _ := http.NewRequest("PUT", servers[c.at].URL+"/v1/groups/default/backends/alpha", strings.NewReader(`{}`))
		adminauth.SetToken(req.Header, []byte(c.token))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := make([]byte, 512)
		n, _ := resp.Body.Read(body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s with %s's token: %d, want %d", c.at, c.token, resp.StatusCode, c.want)
		}
		if c.want == 401 {
			if got := resp.Header.Get("WWW-Authenticate"); got != `Bearer realm="fleetgate `+c.at+` admin"` {
				t.Errorf("%s: challenge %q", c.at, got)
			}
			if !strings.Contains(string(body[:n]), "the "+c.at+"'s admin token required") || strings.Contains(string(body[:n]), "t0ken") {
				t.Errorf("%s: 401 body %q", c.at, body[:n])
			}
		}
	}
}
