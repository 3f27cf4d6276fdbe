package edge

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
)

// authEdge starts an edge that accepts iss's tokens for its own resource
// URL (the default audience).
func authEdge(t *testing.T, f *fleet, iss *issuertest.Issuer, o *Options) *Edge {
	t.Helper()
	c := Options{CallTimeout: 10 * time.Second}
	if o != nil {
		c = *o
	}
	c.Auth = &AuthOptions{Issuer: iss.URL(), Scopes: c.authScopes(), HTTPClient: iss.Client()}
	return startEdge(t, f, &c)
}

// authScopes are the scopes an authEdge requires: those of o.Auth when a
// test set it, else none.
func (o *Options) authScopes() []string {
	if o.Auth != nil {
		return o.Auth.Scopes
	}
	return nil
}

// bearerTransport adds a bearer token to every request.
type bearerTransport struct{ token func() string }

func (t bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token())
	return clientTransport().RoundTrip(r)
}

// clientTransport is the transport of http.DefaultClient: the in-memory
// network's while an edge is served in a bubble (serveMemoryEdge).
func clientTransport() http.RoundTripper {
	if tr := http.DefaultClient.Transport; tr != nil {
		return tr
	}
	return http.DefaultTransport
}

// tokenHTTP is an HTTP client that sends token.
func tokenHTTP(token func() string) *http.Client {
	return &http.Client{Transport: bearerTransport{token}}
}

// postWithToken posts body to url with the headers of version (a
// session-creating request) and token ("" for none).
func postWithToken(t *testing.T, url, version, token, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if version != "" {
		req.Header.Set("Mcp-Protocol-Version", version)
		req.Header.Set("Mcp-Method", "tools/list")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

const (
	initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	listBody = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
)

// Every refusal reason gets the contract's status and challenge, on both
// protocol generations; a good token is served.
func TestBearerRefusals(t *testing.T) {
	f := newFleet(t)
	f.healthyBackend("default", startBackend(t, "alpha", nil))
	iss := issuertest.New(t, nil)
	e := authEdge(t, f, iss, &Options{Auth: &AuthOptions{Scopes: []string{"mcp"}}})
	aud := e.MCPURL()
	md := `resource_metadata="http://` + e.mcpLn.Addr().String() + `/.well-known/oauth-protected-resource/mcp"`
	now := time.Now()
	with := func(mut func(c map[string]any)) string {
		c := iss.Claims("alice", aud, "mcp")
		mut(c)
		return iss.Mint(c)
	}
	other := issuertest.New(t, nil)
	for _, tc := range []struct {
		name, token string
		status      int
		challenge   string
	}{
		{"good", iss.Mint(iss.Claims("alice", aud, "mcp")), http.StatusOK, ""},
		{"no token", "", http.StatusUnauthorized, "Bearer " + md},
		{"garbage", "not.a.jwt", http.StatusUnauthorized, "Bearer " + md + `, error="invalid_token"`},
		{"bad signature", iss.MintForged(jose.RS256, iss.KeyID(), iss.Claims("alice", aud, "mcp")), http.StatusUnauthorized, "Bearer " + md + `, error="invalid_token"`},
		{"unknown key", iss.MintForged(jose.RS256, "no-such-kid", iss.Claims("alice", aud, "mcp")), http.StatusUnauthorized, "Bearer " + md + `, error="invalid_token"`},
		{"wrong issuer", other.Mint(other.Claims("alice", aud, "mcp")), http.StatusUnauthorized, "Bearer " + md + `, error="invalid_token"`},
		{"wrong audience", with(func(c map[string]any) { c["aud"] = "http://elsewhere/mcp" }), http.StatusUnauthorized, "Bearer " + md + `, error="invalid_token"`},
		{"expired", with(func(c map[string]any) { c["exp"] = now.Add(-time.Hour).Unix() }), http.StatusUnauthorized, "Bearer " + md + `, error="invalid_token"`},
		{"not yet valid", with(func(c map[string]any) { c["nbf"] = now.Add(time.Hour).Unix() }), http.StatusUnauthorized, "Bearer " + md + `, error="invalid_token"`},
		{"missing scope", with(func(c map[string]any) { delete(c, "scope") }), http.StatusForbidden,
			"Bearer " + md + `, error="insufficient_scope", scope="mcp"`},
	} {
		for _, gen := range []struct{ name, version, body string }{{"2025-11-25", "", initBody}, {"2026-07-28", "2026-07-28", listBody}} {
			t.Run(tc.name+"/"+gen.name, func(t *testing.T) {
				res := postWithToken(t, e.MCPURL(), gen.version, tc.token, gen.body)
				if res.StatusCode != tc.status || res.Header.Get("WWW-Authenticate") != tc.challenge {
					t.Fatalf("%d %q, want %d %q", res.StatusCode, res.Header.Get("WWW-Authenticate"), tc.status, tc.challenge)
				}
			})
		}
	}
	// The RFC 9728 metadata.
	res, err := http.Get("http://" + e.mcpLn.Addr().String() + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{`"resource":"` + aud + `"`, `"authorization_servers":["` + iss.URL() + `"]`,
		`"scopes_supported":["mcp"]`, `"bearer_methods_supported":["header"]`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metadata %s: no %s", body, want)
		}
	}
}

// A go-sdk client with a token lists and calls; a refreshed token of the
// same iss and sub continues the session; the same session with another
// subject's token is refused 403, on the net/http path and on a call lane.
func TestBearerSession(t *testing.T) {
	f := newFleet(t)
	f.healthyBackend("default", startBackend(t, "alpha", nil))
	iss := issuertest.New(t, nil)
	e := authEdge(t, f, iss, nil)
	tok := iss.Mint(iss.Claims("alice", e.MCPURL()))
	current := func() string { return tok }
	c := connectWith(t, e.MCPURL(), "2025-11-25", tokenHTTP(func() string { return current() }))
	if got := text(c.call(t, "alpha_echo", map[string]any{"text": "hi"})); !strings.HasSuffix(got, "hi") {
		t.Fatalf("call: %q", got)
	}
	tok = iss.Mint(iss.Claims("alice", e.MCPURL())) // refreshed: another jti and iat
	if got := text(c.call(t, "alpha_echo", map[string]any{"text": "again"})); !strings.HasSuffix(got, "again") {
		t.Fatalf("call after refresh: %q", got)
	}
	sid := c.cs.ID()
	bob := iss.Mint(iss.Claims("bob", e.MCPURL()))
	call := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"alpha_echo","arguments":{"text":"x"}}}`
	// On one keep-alive connection (its later requests on a call lane):
	// alice's calls are served, bob's refused.
	hc := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer hc.CloseIdleConnections()
	post := func(token string) int {
		req, _ := http.NewRequest(http.MethodPost, e.MCPURL(), strings.NewReader(call))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	for i := range 3 {
		if code := post(tok); code != http.StatusOK {
			t.Fatalf("alice's call %d: %d", i, code)
		}
		if code := post(bob); code != http.StatusForbidden {
			t.Fatalf("bob's call %d on alice's session: %d, want 403", i, code)
		}
		if code := post("garbage"); code != http.StatusUnauthorized {
			t.Fatalf("a bad token's call %d: %d, want 401", i, code)
		}
	}
	if got := text(c.call(t, "alpha_echo", map[string]any{"text": "still"})); !strings.HasSuffix(got, "still") {
		t.Fatalf("the session after the refusals: %q", got)
	}
}

// A session created on one edge with alice's token is rebuilt on another
// edge for alice's (refreshed) token, and refused 403 there for bob's.
// (A stored record becomes visible to other edges after its first flush:
// alice's request is retried until then.) The session is made on edge a
// by a client without a standalone stream: once edge a lets the session
// go to b, a client still holding a's stream would see it end, give the
// session up and DELETE it, which ends it everywhere (as it should).
func TestBearerSessionAcrossEdges(t *testing.T) {
	f := newSharedFleet(t)
	f.healthyBackend("default", startBackend(t, "alpha", nil))
	iss := issuertest.New(t, nil)
	const resource = "http://gateway.example/mcp" // both edges behind one name
	tweak := func(o *Options) {
		o.IdentityHeader = ""
		o.Auth = &AuthOptions{Issuer: iss.URL(), ResourceURL: resource, HTTPClient: iss.Client()}
	}
	a := startRecordEdge(t, f, "a", nil, tweak)
	b := startRecordEdge(t, f, "b", nil, tweak)
	alice := iss.Mint(iss.Claims("alice", resource))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "alice"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: a.MCPURL(), DisableStandaloneSSE: true, HTTPClient: tokenHTTP(func() string { return alice })},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha_echo", Arguments: map[string]any{"text": "on a"}}); err != nil {
		t.Fatal(err)
	}
	sid := cs.ID()
	eventually(t, 10*time.Second, "record stored", func() bool {
		rec := stored(t, a.Edge, sid)
		return rec != nil && rec.ProtocolVersion != "" && len(rec.InitializeParams) > 0
	})
	call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"alpha_echo","arguments":{"text":"x"}}}`
	post := func(token string) int {
		req, _ := http.NewRequest(http.MethodPost, b.MCPURL(), strings.NewReader(call))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	if code := post(iss.Mint(iss.Claims("bob", resource))); code != http.StatusForbidden {
		t.Fatalf("bob's token on alice's session on edge b: %d, want 403", code)
	}
	eventually(t, 10*time.Second, "alice's refreshed token served on edge b", func() bool {
		return post(iss.Mint(iss.Claims("alice", resource))) == http.StatusOK
	})
	if code := post(iss.Mint(iss.Claims("bob", resource))); code != http.StatusForbidden {
		t.Fatalf("bob's token on alice's session just rebuilt on edge b: %d, want 403", code)
	}
}

// The admin API: 401 without the token, 403 for a foreign Host, open
// health checks.
func TestEdgeAdminGuard(t *testing.T) {
	f := newFleet(t)
	e := startEdge(t, f, &Options{AdminToken: []byte("s3cret-admin"), CallTimeout: 10 * time.Second})
	get := func(path, host, token string) int {
		req, _ := http.NewRequest(http.MethodGet, e.AdminURL()+path, nil)
		if host != "" {
			req.Host = host
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for _, tc := range []struct {
		path, host, token string
		want              int
	}{
		{"/v1/sessions", "", "", http.StatusUnauthorized},
		{"/v1/sessions", "", "wrong", http.StatusUnauthorized},
		{"/v1/sessions", "", "s3cret-admin", http.StatusOK},
		{"/v1/sessions", "attacker.example", "s3cret-admin", http.StatusForbidden},
		{"/metrics", "", "", http.StatusUnauthorized},
		{"/healthz", "", "", http.StatusOK},
	} {
		if got := get(tc.path, tc.host, tc.token); got != tc.want {
			t.Errorf("GET %s (Host %q, token %q): %d, want %d", tc.path, tc.host, tc.token, got, tc.want)
		}
	}
}

// The issuer rotates its keys under a live edge: a session goes on with
// a refreshed token signed by the new key (an unknown kid refetches the
// keys), a new session opens with one, and once the old key is retired
// and the edge has refetched, a new token of the old key is refused with
// the contract's challenge.
func TestBearerKeyRotation(t *testing.T) {
	f := newFleet(t)
	f.healthyBackend("default", startBackend(t, "alpha", nil))
	iss := issuertest.New(t, nil)
	e := startEdge(t, f, &Options{CallTimeout: 10 * time.Second,
		Auth: &AuthOptions{Issuer: iss.URL(), HTTPClient: iss.Client(), MinRefetchInterval: time.Millisecond}})
	old := iss.KeyID()
	tok := iss.Mint(iss.Claims("alice", e.MCPURL()))
	var mu sync.Mutex
	current := func() string { mu.Lock(); defer mu.Unlock(); return tok }
	c := connectWith(t, e.MCPURL(), "2025-11-25", tokenHTTP(current))
	if got := text(c.call(t, "alpha_echo", map[string]any{"text": "one"})); !strings.HasSuffix(got, "one") {
		t.Fatalf("call with the first key: %q", got)
	}
	fetched := iss.Hits(issuertest.HitJWKS)

	fresh := iss.Rotate(jose.ES256)
	mu.Lock()
	tok = iss.Mint(iss.Claims("alice", e.MCPURL()))
	mu.Unlock()
	if got := text(c.call(t, "alpha_echo", map[string]any{"text": "two"})); !strings.HasSuffix(got, "two") {
		t.Fatalf("call with a token of the new key %s: %q", fresh, got)
	}
	if n := iss.Hits(issuertest.HitJWKS); n <= fetched {
		t.Fatalf("the new kid did not refetch the keys (%d fetches, %d before)", n, fetched)
	}
	bob := iss.Mint(iss.Claims("bob", e.MCPURL()))
	c2 := connectWith(t, e.MCPURL(), "2025-11-25", tokenHTTP(func() string { return bob }))
	if got := text(c2.call(t, "alpha_echo", map[string]any{"text": "three"})); !strings.HasSuffix(got, "three") {
		t.Fatalf("a new session with the new key: %q", got)
	}

	iss.Retire(old)
	// A kid the edge has not seen makes it refetch: the old key is gone.
	if res := postWithToken(t, e.MCPURL(), "", iss.MintForged(jose.RS256, "no-such-kid", iss.Claims("carol", e.MCPURL())), initBody); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("an unknown kid: %d", res.StatusCode)
	}
	md := `Bearer resource_metadata="http://` + e.mcpLn.Addr().String() + `/.well-known/oauth-protected-resource/mcp", error="invalid_token"`
	res := postWithToken(t, e.MCPURL(), "", iss.MintWith(old, iss.Claims("carol", e.MCPURL())), initBody)
	if res.StatusCode != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") != md {
		t.Fatalf("a new token of the retired key: %d %q", res.StatusCode, res.Header.Get("WWW-Authenticate"))
	}
	if got := text(c.call(t, "alpha_echo", map[string]any{"text": "four"})); !strings.HasSuffix(got, "four") {
		t.Fatalf("the session on the new key after the retirement: %q", got)
	}
}
