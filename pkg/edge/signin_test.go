package edge

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/signin"
)

// docsBackend is an OAuth 2.1 protected resource: a go-sdk server that
// takes only access tokens its authorization server (as) issued, answers
// any other request 401 with the RFC 9728 challenge, serves its metadata,
// and records the token of every request. Its whoami tool answers the
// token's subject.
type docsBackend struct {
	url string
	as  *issuertest.Issuer

	mu       sync.Mutex
	tokens   []string // the bearer token of each authorized request
	refuseMu sync.Mutex
	refuse   map[string]bool // tokens answered 401 although valid
}

const docsProbeKey = "probe-key-0123456789"

func startDocsBackend(t testing.TB, as *issuertest.Issuer) *docsBackend {
	t.Helper()
	demo := demobackend.New("docs", nil)
	demo.AddToolFunc(&mcp.Tool{Name: "whoami", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			sub, _ := as.Subject(strings.TrimPrefix(r.Extra.Header.Get("Authorization"), "Bearer "))
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: sub}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return demo.Server() }, nil)
	db := &docsBackend{as: as, refuse: map[string]bool{}}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	db.url = srv.URL + "/mcp"
	mux.Handle("GET /.well-known/oauth-protected-resource/mcp", as.ProtectedResource(db.url))
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		db.refuseMu.Lock()
		refused := db.refuse[tok]
		db.refuseMu.Unlock()
		if _, ok := as.Subject(tok); ok && !refused {
			db.mu.Lock()
			db.tokens = append(db.tokens, tok)
			db.mu.Unlock()
			h.ServeHTTP(w, r)
			return
		}
		if r.Header.Get("X-Probe-Key") == docsProbeKey && tok == "" { // the catalog's lister
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+srv.URL+`/.well-known/oauth-protected-resource/mcp"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	})
	return db
}

func (db *docsBackend) saw(tok string) bool {
	db.mu.Lock()
	defer db.mu.Unlock()
	return slices.Contains(db.tokens, tok)
}

// probeTransport lists the backend's catalog as a probe would.
type probeTransport struct{}

func (probeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Probe-Key", docsProbeKey)
	return http.DefaultTransport.RoundTrip(r)
}

const signInAudience = "https://fleet.example/mcp"

// signInFleet is two edges sharing session records and sign-ins, behind
// a switchable proxy, serving the user_oauth backend docs.
type signInFleet struct {
	idp, as *issuertest.Issuer
	docs    *docsBackend
	a, b    *recordEdge
	proxy   *switchProxy
	key     *signin.Key
	fleet   *sharedFleet
}

func startSignInFleet(t testing.TB, before string) *signInFleet {
	t.Helper()
	return startSignInFleetWith(t, before, nil)
}

// signInClient is the edges' client at the fleet's issuer.
const signInClient = "fleet-edge"

// startSignInFleetWith is startSignInFleet, its edges' Options changed
// by more.
func startSignInFleetWith(t testing.TB, before string, more func(*Options)) *signInFleet {
	t.Helper()
	f := newSharedFleet(t)
	sf := &signInFleet{idp: issuertest.New(t, nil), as: issuertest.New(t, nil), fleet: f}
	sf.docs = startDocsBackend(t, sf.as)
	key, err := signin.NewKey([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	cfg := events.BackendConfig{URL: sf.docs.url, Transport: "streamable-http",
		Auth: &credential.Auth{Type: credential.AuthUserOAuth, Scopes: []string{"docs.read"}, BeforeSignIn: before}}
	f.publish(events.NewBackendAdded(time.Now(), "default", "docs", cfg))
	f.catalog("default", "docs", listCatalogVia(t, &mcp.StreamableClientTransport{Endpoint: sf.docs.url, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: probeTransport{}}}))
	f.health("default", "docs", true)
	tweak := func(o *Options) {
		o.IdentityHeader = ""
		o.Auth = &AuthOptions{Issuer: sf.idp.URL(), Audience: signInAudience, ResourceURL: signInAudience, HTTPClient: sf.idp.Client()}
		o.SignIns = &SignInOptions{JetStream: f.js, Key: key, HTTPClient: &http.Client{}, LoginClientID: signInClient}
		if more != nil {
			more(o)
		}
	}
	sf.key = key
	sf.a = startRecordEdge(t, f, "edge-a", nil, tweak)
	sf.b = startRecordEdge(t, f, "edge-b", nil, tweak)
	<-sf.a.signIns.Ready() // the sign-in bucket attached and read
	<-sf.b.signIns.Ready()
	sf.proxy = newSwitchProxy(t, sf.a.MCPURL())
	return sf
}

// user is an MCP client of the fleet with its own token from the idp.
func (sf *signInFleet) user(t testing.TB, name string) *client { return sf.userWith(t, name, false) }

// userWith is user, declaring URL elicitation when urlElicit.
func (sf *signInFleet) userWith(t testing.TB, name string, urlElicit bool) *client {
	t.Helper()
	tok := sf.idp.Mint(sf.idp.Claims(name, signInAudience))
	cl := &client{signal: make(chan struct{}, 1)}
	o := &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			cl.changed.Add(1)
			select {
			case cl.signal <- struct{}{}:
			default:
			}
		},
	}
	if urlElicit {
		o.Capabilities = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}
		o.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		cl.completed = make(chan string, 4)
		o.ElicitationCompleteHandler = func(_ context.Context, r *mcp.ElicitationCompleteNotificationRequest) {
			select {
			case cl.completed <- r.Params.ElicitationID:
			default:
			}
		}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "signin-client"}, o)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: sf.proxy.url(), MaxRetries: 20,
		HTTPClient: tokenHTTP(func() string { return tok })}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	cl.cs = cs
	return cl
}

// waitSignal waits for the client's next list_changed (or d).
func (c *client) waitSignal(t testing.TB, n int64) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for c.changed.Load() < n {
		select {
		case <-c.signal:
		case <-timeout:
			t.Fatalf("no list_changed %d within 20s", n)
		}
	}
}

var urlPattern = regexp.MustCompile(`https?://\S+`)

// browser is a user's web browser: it keeps cookies and signs in at
// the fleet's issuer (idp) as fleetUser and at the backend's (as) as
// docsUser (issuertest's stand-in for a login page).
type browser struct {
	hc   *http.Client
	last *url.URL // the URL of the last page open answered
}

func (sf *signInFleet) browser(t testing.TB, fleetUser, docsUser string) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	users := map[string]string{hostOf(sf.idp.URL()): fleetUser, hostOf(sf.as.URL()): docsUser}
	rt := roundTripper(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		if u, ok := users[r.URL.Host]; ok && u != "" {
			r.Header.Set(issuertest.UserHeader, u)
		}
		return http.DefaultTransport.RoundTrip(r)
	})
	return &browser{hc: &http.Client{Jar: jar, Transport: rt}}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		panic(err)
	}
	return p.Host
}

// open GETs u following redirects; it returns the last status and page.
func (b *browser) open(t testing.TB, u string) (int, string) {
	t.Helper()
	resp, err := b.hc.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b.last = resp.Request.URL
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, string(body)
}

// upTo GETs u following redirects until one leads to a URL whose path
// is path, which it returns without opening.
func (b *browser) upTo(t testing.TB, u, path string) string {
	t.Helper()
	hc := *b.hc
	var stop string
	hc.CheckRedirect = func(r *http.Request, _ []*http.Request) error {
		if r.URL.Path == path {
			stop = r.URL.String()
			return http.ErrUseLastResponse
		}
		return nil
	}
	resp, err := hc.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if stop == "" {
		t.Fatalf("no redirect to %s (last status %d)", path, resp.StatusCode)
	}
	return stop
}

// browse is the user's browser opening the sign-in URL in res's text:
// it signs in at the fleet's issuer as the user of asUser (before "@"),
// then at the backend's authorization server as asUser, and comes back
// to the edge's callback; it returns the last status.
func (sf *signInFleet) browse(t testing.TB, res *mcp.CallToolResult, asUser string) int {
	t.Helper()
	u := urlPattern.FindString(text(res))
	if u == "" {
		t.Fatalf("no URL in %q", text(res))
	}
	fleetUser, _, _ := strings.Cut(asUser, "@")
	code, _ := sf.browser(t, fleetUser, asUser).open(t, u)
	return code
}

// TestSignInTwoUsersMoveRevoke: before signing in, a user sees docs as
// one sign-in tool, and a call to a docs tool answers the authorization
// URL. Two users sign in through one edge (PKCE verified by the
// authorization server), get list_changed and docs' tools, and reach the
// backend each with their own token. A session moved to the other edge
// keeps its sign-in (the refresh token from the bucket); a token the
// backend refuses (401) is refreshed and the call goes through; an admin
// revocation on one edge ends the sign-in on the other; sign_out ends
// the other user's.
func TestSignInTwoUsersMoveRevoke(t *testing.T) {
	sf := startSignInFleet(t, "")
	alice, bob := sf.user(t, "alice"), sf.user(t, "bob")
	names := alice.toolNames(t)
	if !names["docs_sign_in"] || names["docs_whoami"] || names["docs_sign_out"] {
		t.Fatalf("before sign-in: %v", names)
	}
	res := alice.call(t, "docs_whoami", nil)
	if !res.IsError || !strings.Contains(text(res), "Sign in to docs") {
		t.Fatalf("call before sign-in: %q", text(res))
	}
	n := alice.changed.Load()
	if code := sf.browse(t, alice.call(t, "docs_sign_in", nil), "alice@docs"); code != http.StatusOK {
		t.Fatalf("callback %d", code)
	}
	alice.waitSignal(t, n+1)
	if names := alice.toolNames(t); !names["docs_whoami"] || !names["docs_sign_out"] || names["docs_sign_in"] {
		t.Fatalf("after sign-in: %v", names)
	}
	if names := bob.toolNames(t); names["docs_whoami"] {
		t.Fatalf("bob sees alice's sign-in: %v", names)
	}
	if code := sf.browse(t, bob.call(t, "docs_sign_in", nil), "bob@docs"); code != http.StatusOK {
		t.Fatalf("callback %d", code)
	}
	for _, u := range []struct {
		c    *client
		want string
	}{{alice, "alice@docs"}, {bob, "bob@docs"}} {
		if res := u.c.call(t, "docs_whoami", nil); res.IsError || text(res) != u.want {
			t.Fatalf("whoami: %q, want %q", text(res), u.want)
		}
	}
	grants := sf.as.CodeGrants()
	if len(grants) != 2 || !grants[0].Verified || !grants[1].Verified || grants[0].Access == grants[1].Access {
		t.Fatalf("grants %+v", grants)
	}
	for _, g := range grants {
		if !sf.docs.saw(g.Access) {
			t.Fatalf("the backend did not get %s's token", g.User)
		}
	}

	// Alice's session moves to edge b: its sign-in is there (refreshed).
	sf.proxy.to(sf.b.MCPURL())
	refreshed := len(sf.as.Refreshed())
	if res := alice.call(t, "docs_whoami", nil); res.IsError || text(res) != "alice@docs" {
		t.Fatalf("whoami on edge b: %q", text(res))
	}
	if len(sf.as.Refreshed()) != refreshed+1 || !sf.docs.saw(sf.as.Refreshed()[refreshed]) {
		t.Fatal("edge b did not refresh alice's token")
	}
	// The backend refuses that token: refreshed at once, the call goes through.
	sf.docs.refuseMu.Lock()
	sf.docs.refuse[sf.as.Refreshed()[refreshed]] = true
	sf.docs.refuseMu.Unlock()
	if res := alice.call(t, "docs_whoami", nil); res.IsError || text(res) != "alice@docs" || len(sf.as.Refreshed()) != refreshed+2 {
		t.Fatalf("after a 401: %q (refreshes %d)", text(res), len(sf.as.Refreshed())-refreshed)
	}

	// Revoked on edge a's admin API: alice (on edge b) is asked again.
	n = alice.changed.Load()
	q := url.Values{"iss": {sf.idp.URL()}, "sub": {"alice"}, "backend": {"docs"}}
	req, _ := http.NewRequest(http.MethodDelete, sf.a.AdminURL()+"/v1/signins?"+q.Encode(), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %v %v", err, resp)
	}
	resp.Body.Close()
	alice.waitSignal(t, n+1)
	if names := alice.toolNames(t); !names["docs_sign_in"] || names["docs_whoami"] {
		t.Fatalf("after revoke: %v", names)
	}
	if res := alice.call(t, "docs_whoami", nil); !res.IsError || !strings.Contains(text(res), "Sign in to docs") {
		t.Fatalf("call after revoke: %q", text(res))
	}
	// Bob signs out with the tool.
	if res := bob.call(t, "docs_sign_out", nil); res.IsError || !strings.Contains(text(res), "Signed out") {
		t.Fatalf("sign out: %q", text(res))
	}
	if names := bob.toolNames(t); !names["docs_sign_in"] {
		t.Fatalf("after sign-out: %v", names)
	}
}

// TestSignInHiddenURLElicitation: with before_sign_in: hidden, a user who
// has not signed in sees nothing of docs; a client declaring URL
// elicitation that calls a docs tool gets URLElicitationRequired (-32042)
// carrying the authorization URL; once signed in it hears that
// elicitation completed and sees docs' tools.
func TestSignInHiddenURLElicitation(t *testing.T) {
	sf := startSignInFleet(t, credential.BeforeSignInHidden)
	carol := sf.userWith(t, "carol", true)
	for name := range carol.toolNames(t) {
		if strings.HasPrefix(name, "docs_") {
			t.Fatalf("hidden backend shows %s", name)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := carol.cs.CallTool(ctx, &mcp.CallToolParams{Name: "docs_whoami"})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != mcp.CodeURLElicitationRequired {
		t.Fatalf("call before sign-in: %v", err)
	}
	var data struct {
		Elicitations []mcp.ElicitParams `json:"elicitations"`
	}
	if err := json.Unmarshal(je.Data, &data); err != nil || len(data.Elicitations) != 1 || data.Elicitations[0].Mode != "url" {
		t.Fatalf("elicitations %s: %v", je.Data, err)
	}
	n := carol.changed.Load()
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: data.Elicitations[0].URL}}}
	if code := sf.browse(t, res, "carol@docs"); code != http.StatusOK {
		t.Fatalf("callback %d", code)
	}
	carol.waitSignal(t, n+1)
	select {
	case id := <-carol.completed:
		if id != data.Elicitations[0].ElicitationID {
			t.Fatalf("elicitation %q completed, want %q", id, data.Elicitations[0].ElicitationID)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no notifications/elicitation/complete")
	}
	if res := carol.call(t, "docs_whoami", nil); res.IsError || text(res) != "carol@docs" {
		t.Fatalf("whoami: %q", text(res))
	}
}

// TestSignInCallbackHostile: the callback refuses a forged, altered or
// oversized state, an authorization server's error and a code replayed,
// with a page that quotes none of them; nothing is signed in.
func TestSignInCallbackHostile(t *testing.T) {
	sf := startSignInFleet(t, "")
	alice := sf.user(t, "alice")
	authURL := urlPattern.FindString(text(alice.call(t, "docs_sign_in", nil)))
	u, _ := url.Parse(authURL)
	state := u.Query().Get("state")
	cb := "http://" + sf.a.mcpLn.Addr().String() + signin.CallbackPath
	get := func(q url.Values) (int, string) {
		resp, err := http.Get(cb + "?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		return resp.StatusCode, string(body)
	}
	for _, q := range []url.Values{
		{"state": {"fs1.forged"}, "code": {"c"}},
		{"state": {state[:len(state)-2] + "AA"}, "code": {"c"}},
		{"state": {strings.Repeat("x", 20<<10)}, "code": {"c"}},
		{"state": {state}, "error": {"access_denied<script>"}},
		{"state": {state}, "code": {"not-a-code"}},
	} {
		code, body := get(q)
		if code < 400 || strings.Contains(body, q.Get("state")) || strings.Contains(body, "<script>") {
			t.Errorf("callback %.40v: %d %q", q, code, body)
		}
	}
	if names := alice.toolNames(t); !names["docs_sign_in"] {
		t.Fatalf("signed in by a hostile callback: %v", names)
	}
}
