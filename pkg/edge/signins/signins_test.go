package signins

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/pkg/signin"
)

func TestClipWord(t *testing.T) {
	for in, want := range map[string]string{
		"access_denied":         `"access_denied"`,
		"<script>":              `"<script>"`, // escaped by the page, not here
		"two words":             "an error",
		strings.Repeat("x", 65): "an error",
		"caf\u00e9":             "an error",
	} {
		if got := clipWord(in); got != want {
			t.Errorf("clipWord(%q) = %s, want %s", in, got, want)
		}
	}
}

// An edge without sign-ins answers both routes 404, the admin one in
// JSON, the browser's a page that is not stored.
func TestAbsent(t *testing.T) {
	for _, admin := range []bool{true, false} {
		rec := httptest.NewRecorder()
		Absent(admin)(rec, httptest.NewRequest(http.MethodGet, "/oauth/callback?code=c&state=s", nil))
		ct := rec.Header().Get("Content-Type")
		if rec.Code != http.StatusNotFound || (admin && ct != "application/json") || (!admin && (!strings.HasPrefix(ct, "text/html") || rec.Header().Get("Cache-Control") != "no-store")) {
			t.Errorf("admin %v: %d %q %q", admin, rec.Code, ct, rec.Body.String())
		}
	}
}

// A callback whose query is over the bound is refused before anything
// reads it; an authorization server's error is named, clipped and escaped,
// and leaves the binding cookie (anyone can make such a redirect).
func TestCallbackRefusals(t *testing.T) {
	wb := New(Options{Outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x"}, []string{"outcome"})})
	rec := httptest.NewRecorder()
	wb.ServeCallback(rec, httptest.NewRequest(http.MethodGet, "/oauth/callback?state="+strings.Repeat("a", maxCallbackQuery), nil))
	if rec.Code != http.StatusRequestURITooLong || rec.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("long query: %d", rec.Code)
	}
	for _, h := range []http.HandlerFunc{wb.ServeStart, wb.ServeLogin} {
		rec = httptest.NewRecorder()
		h(rec, httptest.NewRequest(http.MethodGet, "/oauth/x?state="+strings.Repeat("a", maxCallbackQuery), nil))
		if rec.Code != http.StatusRequestURITooLong || rec.Header().Get("Cache-Control") != "no-store" {
			t.Fatalf("long query: %d", rec.Code)
		}
	}
	rec = httptest.NewRecorder()
	wb.ServeLogin(rec, httptest.NewRequest(http.MethodGet, "/oauth/login?error=%3Cscript%3E&state=s", nil))
	if body := rec.Body.String(); rec.Code != http.StatusBadRequest || strings.Contains(body, "<script>") || rec.Header().Get("Set-Cookie") != "" {
		t.Fatalf("login refused by the fleet issuer: %d %s", rec.Code, body)
	}
	rec = httptest.NewRecorder()
	wb.ServeCallback(rec, httptest.NewRequest(http.MethodGet, "/oauth/callback?error=%3Cscript%3E&state=s", nil))
	if body := rec.Body.String(); rec.Code != http.StatusBadRequest || !strings.Contains(body, "&#34;&lt;script&gt;&#34;") || strings.Contains(body, "<script>") {
		t.Fatalf("refused by the authorization server: %d %s", rec.Code, body)
	}
}

// The edge's MCP listener serves the callback at a literal path (so the
// route list of the docs can be checked): it must be signin's.
func TestCallbackPath(t *testing.T) {
	if signin.CallbackPath != "/oauth/callback" {
		t.Fatalf("signin.CallbackPath %q: the edge serves /oauth/callback (pkg/edge/transport.go)", signin.CallbackPath)
	}
}

// The binding cookie is HttpOnly and SameSite=Lax, scoped to /oauth/
// under the public URL's path, or a Secure __Host- cookie when the public
// URL is https; a cleared one expires at once. Each sign-in has a cookie
// of its own name, so setting one leaves another's.
func TestBindingCookie(t *testing.T) {
	for base, want := range map[string]string{"https://mcp.example.com/gw": "/", "http://127.0.0.1:8080": "/oauth/",
		"http://127.0.0.1:8080/gw/": "/gw/oauth/"} {
		wb := &Web{secure: secureBase(base), prefix: pathPrefix(base)}
		rec := httptest.NewRecorder()
		wb.setCookie(rec, "bind-1", "fb1.v", time.Now().Add(time.Minute))
		c := rec.Result().Cookies()[0]
		name, path := CookieName+CookieSuffix("bind-1"), want
		if strings.HasPrefix(base, "https:") {
			name = SecureCookieName + CookieSuffix("bind-1")
		}
		if c.Name != name || c.Value != "fb1.v" || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != path ||
			c.Secure != strings.HasPrefix(base, "https:") || c.MaxAge < 1 || c.MaxAge > 60 {
			t.Errorf("%s: %+v", base, c)
		}
		req := httptest.NewRequest(http.MethodGet, "/oauth/callback", nil)
		req.AddCookie(c)
		if got := wb.cookies(req); got("bind-1") != "fb1.v" || got("bind-2") != "" {
			t.Errorf("%s: cookies of bind-1 %q, of bind-2 %q", base, got("bind-1"), got("bind-2"))
		}
		rec = httptest.NewRecorder()
		wb.setCookie(rec, "bind-1", "", time.Time{})
		if c := rec.Result().Cookies()[0]; c.MaxAge >= 0 || c.Value != "" || c.Name != name {
			t.Errorf("%s: cleared %+v", base, c)
		}
	}
	if CookieSuffix("a") == CookieSuffix("b") || strings.Contains(CookieSuffix("bind-1"), "bind") {
		t.Error("cookie suffixes do not tell sign-ins apart, or name them")
	}
}

// A nil Web (an edge without sign-ins) answers every route 404.
func TestNilWeb(t *testing.T) {
	var wb *Web
	for _, h := range []http.HandlerFunc{wb.ServeStart, wb.ServeLogin, wb.ServeCallback, wb.ServeRevoke} {
		rec := httptest.NewRecorder()
		h(rec, httptest.NewRequest(http.MethodGet, "/oauth/start?state=s", nil))
		if rec.Code != http.StatusNotFound {
			t.Errorf("%d", rec.Code)
		}
	}
}
