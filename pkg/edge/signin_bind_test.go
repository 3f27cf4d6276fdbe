package edge

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/signins"
	"github.com/fleetgate/fleetgate/pkg/signin"
)

// signInURL is the sign-in URL the sign_in tool answers c.
func signInURL(t *testing.T, c *client) string {
	t.Helper()
	u := urlPattern.FindString(text(c.call(t, "docs_sign_in", nil)))
	if !strings.Contains(u, signin.StartPath+"?") {
		t.Fatalf("the sign-in URL is not the edge's start: %q", u)
	}
	return u
}

// notSignedIn fails unless c still sees docs as its sign-in tool and the
// backend's authorization server redeemed no code.
func (sf *signInFleet) notSignedIn(t *testing.T, c *client, who string) {
	t.Helper()
	if names := c.toolNames(t); !names["docs_sign_in"] || names["docs_whoami"] {
		t.Fatalf("%s signed in: %v", who, names)
	}
	if g := sf.as.CodeGrants(); len(g) != 0 {
		t.Fatalf("a code was redeemed: %+v", g)
	}
}

// refusedPage fails unless the page is a refusal that quotes none of
// secrets.
func refusedPage(t *testing.T, what string, code int, body string, want int, secrets ...string) {
	t.Helper()
	if code != want || !strings.Contains(body, "Sign-in refused") {
		t.Fatalf("%s: %d %q, want %d and a refusal", what, code, body, want)
	}
	for _, s := range secrets {
		if s != "" && strings.Contains(body, s) {
			t.Fatalf("%s: the page quotes a secret", what)
		}
	}
}

// TestSignInBoundToBrowser: a sign-in's URL is the edge's; the browser
// logs in at the fleet issuer, and the sign-in completes only when its
// user is the caller who asked for it. A user B who opens the URL a user
// A's call made is refused (403), links nothing and leaves nothing
// stored; the fleet login's redirect replayed in another browser is
// refused; the happy path may start on another edge than the one whose
// callback ends it.
func TestSignInBoundToBrowser(t *testing.T) {
	sf := startSignInFleet(t, "")
	alice, bob := sf.user(t, "alice"), sf.user(t, "bob")

	// The attacker (alice) lures bob into opening her sign-in URL.
	lure := signInURL(t, alice)
	bobs := sf.browser(t, "bob", "bob@docs")
	code, body := bobs.open(t, lure)
	refusedPage(t, "bob opens alice's URL", code, body, http.StatusForbidden, urlState(t, lure))
	if !strings.Contains(body, "another user") || bobs.last.Path != signin.LoginPath {
		t.Fatalf("not refused at the fleet login (%s): %q", bobs.last.Path, body)
	}
	sf.notSignedIn(t, alice, "alice")
	sf.notSignedIn(t, bob, "bob")

	// Alice logs in at the fleet issuer herself and sends bob the
	// redirect back to the edge: bob's browser did not begin it.
	login := sf.browser(t, "alice", "alice@docs").upTo(t, signInURL(t, alice), signin.LoginPath)
	code, body = sf.browser(t, "bob", "bob@docs").open(t, login)
	refusedPage(t, "bob opens alice's fleet login", code, body, http.StatusForbidden, urlState(t, login), codeOf(t, login))
	sf.notSignedIn(t, alice, "alice")

	// Alice's own sign-in, started on edge b (the URL's host changed),
	// completes: the states and cookies are sealed, not held.
	start, _ := url.Parse(signInURL(t, alice))
	start.Host = sf.b.mcpLn.Addr().String()
	n := alice.changed.Load()
	if code, body := sf.browser(t, "alice", "alice@docs").open(t, start.String()); code != http.StatusOK {
		t.Fatalf("alice's own sign-in: %d %q", code, body)
	}
	alice.waitSignal(t, n+1)
	if res := alice.call(t, "docs_whoami", nil); res.IsError || text(res) != "alice@docs" {
		t.Fatalf("whoami: %q", text(res))
	}
	if g := sf.as.CodeGrants(); len(g) != 1 || g[0].User != "alice@docs" {
		t.Fatalf("grants %+v", g)
	}
	sf.seesNoDocs(t, bob)
}

// seesNoDocs fails when c sees docs' tools.
func (sf *signInFleet) seesNoDocs(t *testing.T, c *client) {
	t.Helper()
	if names := c.toolNames(t); names["docs_whoami"] {
		t.Fatalf("signed in: %v", names)
	}
}

// TestSignInCallbackNeedsBinding: the backend's callback is refused
// (403, nothing redeemed, nothing stored) without the browser's cookie,
// with a cookie altered, expired, of another sign-in or naming another
// identity, and with the cookie of the fleet login alone; the browser
// that holds the right one completes it after all those refusals, and
// after being sent to forged callbacks and to another user's sign-in.
func TestSignInCallbackNeedsBinding(t *testing.T) {
	sf := startSignInFleet(t, "")
	alice := sf.user(t, "alice")
	br := sf.browser(t, "alice", "alice@docs")
	callback := br.upTo(t, signInURL(t, alice), signin.CallbackPath)
	state := urlState(t, callback)
	p, err := sf.key.OpenState(state, time.Now())
	if err != nil || p.Bind == "" {
		t.Fatalf("state: %v %+v", err, p.Bind)
	}
	cookieURL, _ := url.Parse(callback)
	var good string
	for _, c := range br.hc.Jar.Cookies(cookieURL) {
		if c.Name == signins.CookieName+signins.CookieSuffix(p.Bind) {
			good = c.Value
		}
	}
	if good == "" {
		t.Fatal("the browser holds no binding cookie")
	}
	seal := func(b signin.Binding) string {
		v, err := sf.key.SealBinding(b)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	exp := time.Now().Add(time.Minute).Unix()
	for _, c := range []struct{ name, cookie string }{
		{"no cookie", ""},
		{"altered", good[:len(good)-3] + "AAA"},
		{"oversized", strings.Repeat("A", signin.MaxCookie+1)},
		{"expired", seal(signin.Binding{Identity: p.Identity, Bind: p.Bind, Expires: time.Now().Add(-time.Second).Unix()})},
		{"another sign-in", seal(signin.Binding{Identity: p.Identity, Bind: "another", Expires: exp})},
		{"another identity", seal(signin.Binding{Identity: sf.idp.URL() + " bob", Bind: p.Bind, Expires: exp})},
		{"the fleet login's", seal(signin.Binding{Bind: p.Bind, Nonce: "n", Expires: exp})},
	} {
		req, _ := http.NewRequest(http.MethodGet, callback, nil)
		if c.cookie != "" {
			req.AddCookie(&http.Cookie{Name: signins.CookieName + signins.CookieSuffix(p.Bind), Value: c.cookie})
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := readBody(t, resp)
		refusedPage(t, c.name, resp.StatusCode, body, http.StatusForbidden, state, codeOf(t, callback), c.cookie, good)
		if sc := resp.Header.Get("Set-Cookie"); sc != "" {
			t.Fatalf("%s: a refusal sets a cookie: %q", c.name, sc)
		}
		sf.notSignedIn(t, alice, c.name)
	}
	// Any page can send the bound browser to a refused callback (another
	// state, or an error redirect): that ends nothing of its own sign-in.
	for _, forged := range []string{"/oauth/callback?state=forged&code=x", "/oauth/callback?error=access_denied",
		"/oauth/login?state=forged&code=x"} {
		u := *cookieURL
		u.Path, u.RawQuery, _ = strings.Cut(forged, "?")
		if code, _ := br.open(t, u.String()); code == http.StatusOK {
			t.Fatalf("%s answered 200", forged)
		}
	}
	// Nor does another user's sign-in URL opened in this browser (its
	// start sets a cookie of that sign-in, its login is refused).
	if code, _ := br.open(t, signInURL(t, sf.user(t, "bob"))); code == http.StatusOK {
		t.Fatal("bob's sign-in completed in alice's browser")
	}
	if code, body := br.open(t, callback); code != http.StatusOK {
		t.Fatalf("the bound browser: %d %q", code, body)
	}
	if g := sf.as.CodeGrants(); len(g) != 1 || !g[0].Verified {
		t.Fatalf("grants %+v", g)
	}
}

// TestSignInRefusedWithoutFleetClient: an edge with no client at the
// fleet issuer refuses sign-ins (they could not be bound), saying why;
// with Unbound it hands out the backend's authorization URL directly.
func TestSignInRefusedWithoutFleetClient(t *testing.T) {
	sf := startSignInFleetWith(t, "", func(o *Options) { o.SignIns.LoginClientID = "" })
	alice := sf.user(t, "alice")
	res := alice.call(t, "docs_sign_in", nil)
	if !res.IsError || !strings.Contains(text(res), "disabled") || urlPattern.MatchString(text(res)) {
		t.Fatalf("sign_in without a fleet client: %q", text(res))
	}

	sf = startSignInFleetWith(t, "", func(o *Options) { o.SignIns.LoginClientID, o.SignIns.Unbound = "", true })
	bob := sf.user(t, "bob")
	u := urlPattern.FindString(text(bob.call(t, "docs_sign_in", nil)))
	if !strings.HasPrefix(u, sf.as.AuthorizeURL()) {
		t.Fatalf("unbound sign-in URL %q", u)
	}
	if code, _ := sf.browser(t, "", "bob@docs").open(t, u); code != http.StatusOK {
		t.Fatalf("unbound callback %d", code)
	}
}

func urlState(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil || p.Query().Get("state") == "" {
		t.Fatalf("no state in the URL")
	}
	return p.Query().Get("state")
}

func codeOf(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p.Query().Get("code")
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for b.Len() < 1<<16 {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return b.String()
}
