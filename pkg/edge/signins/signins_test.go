package signins

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
// reads it; an authorization server's error is named, clipped and escaped.
func TestCallbackRefusals(t *testing.T) {
	wb := New(Options{Outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x"}, []string{"outcome"})})
	rec := httptest.NewRecorder()
	wb.ServeCallback(rec, httptest.NewRequest(http.MethodGet, "/oauth/callback?state="+strings.Repeat("a", maxCallbackQuery), nil))
	if rec.Code != http.StatusRequestURITooLong || rec.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("long query: %d", rec.Code)
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
