package test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
	"github.com/fleetgate/fleetgate/pkg/demobackend"
)

// protectedBackend is an OAuth 2.1 protected resource (RFC 9728) whose
// authorization server is as: it serves a go-sdk demo server to requests
// with an access token as issued, or (the controller's probe) with the
// probe key and no token; it answers anything else 401 with the
// resource_metadata challenge. whoami answers the token's subject.
type protectedBackend struct {
	url    string
	mu     sync.Mutex
	tokens []string
}

func startProtectedBackend(t *testing.T, as *issuertest.Issuer, probeKey string) *protectedBackend {
	t.Helper()
	demo := demobackend.New("docs", nil)
	demo.AddToolFunc(&mcp.Tool{Name: "whoami", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			sub, _ := as.Subject(strings.TrimPrefix(r.Extra.Header.Get("Authorization"), "Bearer "))
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: sub}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return demo.Server() }, nil)
	pb := &protectedBackend{}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	pb.url = srv.URL + "/mcp"
	mux.Handle("GET /.well-known/oauth-protected-resource/mcp", as.ProtectedResource(pb.url))
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if _, ok := as.Subject(tok); ok {
			pb.mu.Lock()
			pb.tokens = append(pb.tokens, tok)
			pb.mu.Unlock()
			h.ServeHTTP(w, r)
			return
		}
		if tok == "" && r.Header.Get("X-Probe-Key") == probeKey {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+srv.URL+`/.well-known/oauth-protected-resource/mcp"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	})
	return pb
}

func (pb *protectedBackend) saw(tok string) bool {
	pb.mu.Lock()
	defer pb.mu.Unlock()
	return slices.Contains(pb.tokens, tok)
}

var authURLPattern = regexp.MustCompile(`https?://\S+`)

// signInBrowser is user's browser opening the sign-in URL in reply: the
// edge's start, the fleet issuer's login as fleetUser (idp), the edge's
// login, the backend's authorization server as user (as), then the
// edge's callback (which must answer 200). It returns the backend's
// authorization code the callback carried and the other secrets the
// browser held: the fleet login's code and the binding cookie.
func signInBrowser(t *testing.T, reply, fleetUser, user string, idp, as *issuertest.Issuer) (string, []string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	users := map[string]string{hostPort(t, idp.URL()): fleetUser, hostPort(t, as.URL()): user}
	var code string
	var held []string
	hc := &http.Client{Jar: jar, Transport: headerByHost(users), CheckRedirect: func(r *http.Request, _ []*http.Request) error {
		switch r.URL.Path {
		case "/oauth/login":
			held = append(held, r.URL.Query().Get("code"))
		case "/oauth/callback":
			code = r.URL.Query().Get("code")
			for _, c := range jar.Cookies(r.URL) {
				held = append(held, c.Value)
			}
		}
		return nil
	}}
	resp, err := hc.Get(authURLPattern.FindString(reply))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || code == "" {
		t.Fatalf("sign-in: %d at %s", resp.StatusCode, resp.Request.URL.Path)
	}
	if len(held) != 2 {
		t.Fatalf("the browser held %d secrets, want the fleet login's code and the cookie", len(held))
	}
	return code, held
}

// headerByHost sets issuertest's user header to the user of each host.
type headerByHost map[string]string

func (h headerByHost) RoundTrip(r *http.Request) (*http.Response, error) {
	if u, ok := h[r.URL.Host]; ok {
		r = r.Clone(r.Context())
		r.Header.Set(issuertest.UserHeader, u)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func hostPort(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p.Host
}

// TestUserOAuthNeverLeaks: a user_oauth backend (no client_id: the edge
// registers itself) is probed by the controller with its probe-only
// header (healthy), and reached through an edge binary by a user who
// signs in with the tool (through the fleet login that binds the sign-in
// to the user's browser), then is revoked by the admin API. No access
// token, refresh token, authorization code (the backend's and the fleet
// login's), the fleet login's tokens, the binding cookie, caller token or
// probe key
// appears in any event, stored stream message (the sign-in bucket holds
// the refresh token sealed), /v1/state, /v1/events, audit export, log
// line, /metrics, /v1/sessions or client reply, and the sign-in state
// (the authorization URL) none but the reply to the user.
func TestUserOAuthNeverLeaks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	idp, as := issuertest.New(t, nil), issuertest.New(t, nil)
	probeKey := randomSecret(t)
	docs := startProtectedBackend(t, as, probeKey)
	dir := t.TempDir()
	probeFile, keyFile := filepath.Join(dir, "probe.key"), filepath.Join(dir, "signin.key")
	for f, v := range map[string]string{probeFile: probeKey, keyFile: randomSecret(t) + randomSecret(t)} {
		if err := os.WriteFile(f, []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "fleet.yaml")
	yaml := fmt.Sprintf(`groups:
  - name: default
    backends:
      - name: docs
        url: %s
        headers:
          X-Probe-Key: {file: %s}
        auth:
          type: user_oauth
          scopes: [docs.read]
          before_sign_in: sign_in_tool
health:
  interval: 1h
  timeout: 5s
  debounce: 100ms
`, docs.url, probeFile)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	node := startNATS(t)
	admin := freeAddr(t)
	ctl := startLoggedProc(t, "controller", nil, "--config", cfg, "--nats-url", node.ClientURL(), "--id", "uo-ctl",
		"--admin-listen", admin, "--data-dir", t.TempDir(), "--lease-ttl", "1s", "--log-format", "json", "--credential-dir", dir)
	ctlAdmin := "http://" + admin
	eventually(t, 30*time.Second, "docs advertised (probed with its probe key)", soleBackendAdvertised(ctlAdmin))

	listen, edgeAdmin := freeAddr(t), freeAddr(t)
	mcpURL := "http://" + listen + "/mcp"
	edgeProc := startLoggedProc(t, "edge", nil, "--nats-url", node.ClientURL(), "--listen", listen, "--admin-listen", edgeAdmin,
		"--id", "uo-edge", "--log-format", "json", "--call-timeout", "5s", "--auth-issuer", idp.URL(),
		"--signin-key-file", keyFile, "--public-url", "http://"+listen, "--credential-dir", dir, "--signin-client-id", "fleet-edge")
	waitEdgeReady(t, edgeAdmin)
	aliceTok := idp.Mint(idp.Claims("alice", mcpURL))
	alice := bearerClient(t, mcpURL, aliceTok)
	eventually(t, 20*time.Second, "the edge serves docs' sign-in tool", func() bool { return slices.Contains(alice.tools(t), "docs_sign_in") })
	var replies []string
	res, err := alice.call("docs_sign_in", nil)
	if err != nil || !strings.Contains(text(res), "http://"+listen+"/oauth/start?state=") {
		t.Fatalf("sign_in: %v %q", err, text(res))
	}
	replies = append(replies, text(res))
	authURL, _ := url.Parse(authURLPattern.FindString(text(res)))
	state := authURL.Query().Get("state") // the user's to hold, no other surface's
	code, held := signInBrowser(t, text(res), "alice", "alice@docs", idp, as)
	if res, err = alice.call("docs_whoami", nil); err != nil || res.IsError || text(res) != "alice@docs" {
		t.Fatalf("whoami: %v %q", err, text(res))
	}
	replies = append(replies, text(res))
	grants := as.CodeGrants()
	if len(grants) != 1 || !grants[0].Verified || !docs.saw(grants[0].Access) || as.Registrations() != 1 {
		t.Fatalf("grants %+v, registrations %d", grants, as.Registrations())
	}
	streamsSignedIn := rawStreams(t, node.ClientURL())
	if !strings.Contains(streamsSignedIn, "KV_fleetgate_signins") {
		t.Fatal("no sign-in record stored")
	}
	q := url.Values{"iss": {idp.URL()}, "sub": {"alice"}, "backend": {"docs"}}
	if st := httpJSON(t, http.MethodDelete, "http://"+edgeAdmin+"/v1/signins?"+q.Encode(), "", nil); st != http.StatusOK {
		t.Fatalf("revoke: %d", st)
	}
	if res, err = alice.call("docs_whoami", nil); err != nil || !res.IsError || !strings.Contains(text(res), "Sign in to docs") {
		t.Fatalf("after revoke: %v %q", err, text(res))
	}
	replies = append(replies, text(res))

	secrets := []string{aliceTok, probeKey, code, grants[0].Access, grants[0].Refresh}
	secrets = append(secrets, as.Refreshed()...)
	secrets = append(secrets, held...)
	if g := idp.CodeGrants(); len(g) != 1 || !g[0].Verified || g[0].User != "alice" {
		t.Fatalf("fleet logins %+v", g)
	} else {
		secrets = append(secrets, g[0].Access, g[0].Refresh) // the fleet login's tokens, the edge's alone
	}
	surfaces := map[string]string{
		"client replies":               strings.Join(replies, "\n"),
		"/v1/state":                    get(t, ctlAdmin+"/v1/state"),
		"/v1/events":                   get(t, ctlAdmin+"/v1/events?from=1&limit=1000"),
		"controller /metrics":          get(t, ctlAdmin+"/metrics"),
		"edge /metrics":                get(t, "http://"+edgeAdmin+"/metrics"),
		"edge /v1/sessions":            get(t, "http://"+edgeAdmin+"/v1/sessions"),
		"NATS streams while signed in": streamsSignedIn,
	}
	if !strings.Contains(surfaces["/v1/state"], `"before_sign_in":"sign_in_tool"`) || !strings.Contains(surfaces["/v1/state"], `"type":"user_oauth"`) {
		t.Fatalf("/v1/state does not show the auth section:\n%s", surfaces["/v1/state"])
	}
	if !strings.Contains(surfaces["edge /metrics"], `fleetgate_edge_signins_total{outcome="completed"} 1`) {
		t.Errorf("edge /metrics does not count the sign-in")
	}
	for _, sub := range [][]string{{"export"}, {"history", "--backend", "docs"}} {
		out, _ := exec.Command(binary(t, "controller"), append(append([]string{"audit"}, sub...), "--nats-url", node.ClientURL())...).CombinedOutput()
		if len(out) == 0 {
			t.Fatalf("audit %s: no output", sub[0])
		}
		surfaces["audit "+sub[0]] = string(out)
	}
	surfaces["NATS streams (raw)"] = rawStreams(t, node.ClientURL())
	surfaces["controller log"] = ctl.output(t)
	surfaces["edge log"] = edgeProc.output(t)
	for where, s := range surfaces {
		for i, secret := range secrets {
			if secret != "" && strings.Contains(s, secret) {
				t.Errorf("%s contains secret %d", where, i)
			}
		}
		if where != "client replies" && strings.Contains(s, state) {
			t.Errorf("%s contains the sign-in state", where)
		}
	}
	t.Logf("checked %d surfaces (%d bytes) for %d secrets", len(surfaces), totalLen(surfaces), len(secrets))
}
