package dashboard

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/adminauth"
	"github.com/fleetgate/fleetgate/pkg/events"
)

func serve(h http.Handler, method, path string, hdr map[string]string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, "http://127.0.0.1:8081"+path, nil)
	r.Host = "127.0.0.1:8081"
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// The shell is served without the token, with the security headers and
// the right types; every data path needs the token; the Host check holds
// for the shell too; other paths reach the API.
func TestShellAndGuard(t *testing.T) {
	log := newFakeLog()
	d := mustNew(t, &Options{Reader: log, Log: log})
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("api " + r.URL.Path)) })
	h := adminauth.Guard(d.Handler(api), adminauth.Options{Token: []byte("t0ken"), ListenAddr: "127.0.0.1:8081", Open: OpenPaths()})
	bearer := map[string]string{"Authorization": "Bearer t0ken"}

	for path, ctype := range map[string]string{"/ui/": "text/html", "/ui/index.html": "text/html", "/ui/js/app.js": "text/javascript",
		"/ui/style.css": "text/css", "/ui/favicon.svg": "image/svg+xml"} {
		w := serve(h, "GET", path, nil)
		if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), ctype) {
			t.Errorf("GET %s without token: %d %q", path, w.Code, w.Header().Get("Content-Type"))
		}
		for k, want := range map[string]string{"Content-Security-Policy": "script-src 'self'", "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY"} {
			if !strings.Contains(w.Header().Get(k), want) {
				t.Errorf("GET %s: %s %q", path, k, w.Header().Get(k))
			}
		}
	}
	if w := serve(h, "GET", "/ui", nil); w.Code != http.StatusMovedPermanently || w.Header().Get("Location") != "/ui/" {
		t.Errorf("GET /ui: %d %q", w.Code, w.Header().Get("Location"))
	}
	if w := serve(h, "GET", "/ui/nothing.js", bearer); w.Code != 404 {
		t.Errorf("unknown asset: %d", w.Code)
	}
	for _, path := range []string{"/v1/stream", "/v1/edges", "/v1/events/recent", "/v1/state", "/ui/../v1/state"} {
		if w := serve(h, "GET", path, nil); w.Code != 401 {
			t.Errorf("GET %s without token: %d", path, w.Code)
		}
	}
	r := httptest.NewRequest("GET", "http://evil.example/ui/", nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 403 {
		t.Errorf("the shell for a foreign Host: %d", w.Code)
	}
	if w := serve(h, "GET", "/v1/state", bearer); w.Body.String() != "api /v1/state" {
		t.Errorf("the API behind: %d %q", w.Code, w.Body)
	}
	if w := serve(h, "GET", "/v1/events/recent", bearer); w.Code != 200 {
		t.Errorf("recent with the token: %d", w.Code)
	}
}

var (
	inlineScript  = regexp.MustCompile(`(?i)<script(?:\s[^>]*)?>\s*[^<\s]`)
	handlerAttr   = regexp.MustCompile(`(?i)<[^>]+\son[a-z]+\s*=`)
	styleAttr     = regexp.MustCompile(`(?i)<[^>]+\sstyle\s*=`)
	innerHTML     = regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function`)
	remoteOrigins = regexp.MustCompile(`(?i)(src|href)\s*=\s*"(https?:)?//`)
)

// The page works under its CSP: no inline script, handler or style
// attribute, nothing from another origin; its scripts never parse data
// as markup.
func TestAssetsStrict(t *testing.T) {
	err := fs.WalkDir(web, "web", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, _ := web.ReadFile(p)
		s := string(b)
		switch {
		case strings.HasSuffix(p, ".html"):
			for _, re := range []*regexp.Regexp{inlineScript, handlerAttr, styleAttr, remoteOrigins} {
				if m := re.FindString(s); m != "" {
					t.Errorf("%s: %q", p, m)
				}
			}
		case strings.HasSuffix(p, ".js"):
			if m := innerHTML.FindString(s); m != "" {
				t.Errorf("%s uses %s", p, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(OpenPaths(), "/ui/") || !slices.Contains(OpenPaths(), "/ui/js/app.js") || slices.Contains(OpenPaths(), "/v1/stream") {
		t.Errorf("OpenPaths %v", OpenPaths())
	}
}

// GET /v1/events/recent is the newest window of the log, oldest first, in
// brief; before pages back; a purged start moves up.
func TestRecent(t *testing.T) {
	log := newFakeLog()
	for range 9 {
		log.append("health_changed", "alpha", &events.HealthChangeJSON{From: "healthy", To: "unhealthy"})
	}
	d := mustNew(t, &Options{Reader: log, Log: log})
	get := func(q string) RecentJSON {
		t.Helper()
		w := serve(d.Handler(nil), "GET", "/v1/events/recent"+q, nil)
		if w.Code != 200 {
			t.Fatalf("%s: %d %s", q, w.Code, w.Body)
		}
		var out RecentJSON
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	gens := func(r RecentJSON) []uint64 {
		var out []uint64
		for _, e := range r.Events {
			out = append(out, e.Generation)
		}
		return out
	}
	if r := get("?limit=3"); !slices.Equal(gens(r), []uint64{7, 8, 9}) || r.First != 1 || r.Last != 9 || r.Events[0].Summary != "healthy → unhealthy" {
		t.Errorf("limit 3: %v %+v", gens(r), r)
	}
	if r := get("?limit=3&before=3"); !slices.Equal(gens(r), []uint64{1, 2}) {
		t.Errorf("before 3: %v", gens(r))
	}
	if r := get("?before=1"); len(r.Events) != 0 {
		t.Errorf("before 1: %v", gens(r))
	}
	log.purge(6)
	if r := get(""); !slices.Equal(gens(r), []uint64{6, 7, 8, 9}) || r.First != 6 {
		t.Errorf("after a purge: %v", gens(r))
	}
	for _, q := range []string{"?limit=0", "?limit=1001", "?before=-1", "?before=x"} {
		if w := serve(d.Handler(nil), "GET", "/v1/events/recent"+q, nil); w.Code != 400 {
			t.Errorf("%s: %d", q, w.Code)
		}
	}
}

func TestSummary(t *testing.T) {
	long := strings.Repeat("é", 400)
	cases := []struct {
		ev   events.EventJSON
		want string
	}{
		{events.EventJSON{Kind: "backend_added", Config: &events.BackendConfig{URL: "http://a/mcp"}}, "backend added: http://a/mcp (streamable-http)"},
		{events.EventJSON{Kind: "backend_removed"}, "backend removed"},
		{events.EventJSON{Kind: "health_changed", Health: &events.HealthChangeJSON{From: "healthy", To: "degraded", Reason: "slow"}}, "healthy → degraded: slow"},
		{events.EventJSON{Kind: "health_changed", Health: &events.HealthChangeJSON{}}, "unknown → unknown"},
		{events.EventJSON{Kind: "catalog_changed", Catalog: &events.CatalogJSON{Digest: "sha256:0123456789abcdef0123", Tools: []string{"a"}, Resources: 2,
			InvalidTools: []events.InvalidTool{{Name: "x"}}}}, "catalog: 1 tool, 2 resources, 0 prompts, sha256:0123456789ab… (1 invalid tool refused)"},
		{events.EventJSON{Kind: "policy_changed", Authorization: &events.AuthorizationJSON{Section: json.RawMessage("null")}}, "policy removed: everything allowed"},
		{events.EventJSON{Kind: "policy_changed", Authorization: &events.AuthorizationJSON{Digest: "sha256:ff",
			Section: json.RawMessage(`{"default":"deny","rules":[{"name":"a"},{"name":"b"}]}`)}}, "policy: default deny, 2 rules, sha256:ff"},
		{events.EventJSON{Kind: "policy_changed", Authorization: &events.AuthorizationJSON{Section: json.RawMessage(`[`)}}, "policy: unreadable section"},
		{events.EventJSON{Error: "proto: cannot parse"}, "undecodable event: proto: cannot parse"},
		{events.EventJSON{Kind: "catalog_changed", Error: "bad catalog"}, "catalog_changed: bad catalog"},
		{events.EventJSON{Kind: "something_new"}, "something new"},
	}
	for _, c := range cases {
		if got := Summary(c.ev); got != c.want {
			t.Errorf("Summary(%+v) = %q, want %q", c.ev, got, c.want)
		}
	}
	b := Brief(events.EventJSON{Kind: "health_changed", Health: &events.HealthChangeJSON{From: "a", To: "b", Reason: long}})
	if n := len([]rune(b.Summary)); n != maxSummary || !strings.HasSuffix(b.Summary, "…") || len([]rune(b.Health.Reason)) != maxSummary {
		t.Errorf("a long reason: %d runes", n)
	}
}

func TestNewNeedsLog(t *testing.T) {
	log := newFakeLog()
	for _, o := range []*Options{nil, {Reader: log}, {Log: log}} {
		if _, err := New(o); !errors.Is(err, ErrOptions) {
			t.Errorf("New(%+v): %v", o, err)
		}
	}
}
