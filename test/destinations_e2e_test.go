package test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/controller"
)

// TestConfigDestinationsRefused: the controller binary refuses, with one
// line naming the field and quoting no secret, a config whose backend URL
// carries user info, points at a link-local or metadata address, or whose
// header is a literal.
func TestConfigDestinationsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	const leak = "pw-5e0b1d77aa"
	for _, tc := range []struct {
		backend, want string
	}{
		{"url: http://admin:" + leak + "@127.0.0.1:9101/mcp", "groups[0].backends[0].url: URL must not carry user info"},
		{"url: http://169.254.169.254/latest/meta-data/", "groups[0].backends[0].url: host 169.254.169.254 is a link-local or cloud metadata address; set allow_link_local: true to allow it"},
		{"url: http://[fe80::1%25eth0]:80/mcp", "groups[0].backends[0].url: host fe80::1%eth0 is a link-local"},
		{"url: http://metadata.google.internal/computeMetadata/v1/", "host metadata.google.internal is a link-local"},
		{"url: http://127.0.0.1:9101/mcp\n        headers:\n          Authorization: Bearer " + leak,
			"groups[0].backends[0].headers.Authorization: literal header values are not allowed; use {env: ...} or {file: ...}"},
		{"url: http://127.0.0.1:9101/mcp\n        headers:\n          Mcp-Session-Id: {env: X}", `groups[0].backends[0].headers[0]: invalid header name: "Mcp-Session-Id"`},
	} {
		cfg := filepath.Join(t.TempDir(), "fleet.yaml")
		yaml := "groups:\n  - name: default\n    backends:\n      - name: alpha\n        " + tc.backend + "\n"
		if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(binary(t, "controller"), "--config", cfg, "--admin-listen", freeAddr(t),
			"--data-dir", t.TempDir(), "--nats-listen", freeAddr(t)).CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) || strings.Count(strings.TrimSpace(string(out)), "\n") != 0 {
			t.Errorf("config %q: exit %v, output %q; want one line with %q", tc.backend, err, out, tc.want)
		}
		if strings.Contains(string(out), leak) {
			t.Errorf("output quotes the secret: %q", out)
		}
	}
}

// TestAdminPutDestinations: PUT /v1/groups/{group}/backends/{name}
// applies the same rules (400 naming the field, no secret quoted); a
// link-local backend is accepted with allow_link_local and then dialed
// (on the loopback interface: the dial fails, not refused); a backend
// answering 302 is never advertised and the redirect's target gets no
// request.
func TestAdminPutDestinations(t *testing.T) {
	node := startNATS(t)
	// The config file holds local's header reference: the admin API
	// may pair a reference only with the backend and origin the file
	// gives it (TestAdminPutCredentialOrigin).
	yaml := strings.Replace(fleetYAMLAt(200*time.Millisecond, 100*time.Millisecond), "backends:\n",
		"backends:\n      - name: local\n        url: http://[fe80::1%25lo]:9/mcp\n        allow_link_local: true\n"+
			"        headers:\n          X-Api-Key: {file: /nonexistent/key}\n", 1)
	x := startController(t, node.ClientURL(), "ctl-put", yaml)
	eventually(t, 20*time.Second, "leader", x.c.Leading)
	const leak = "pw-31c9aa02"
	put := func(name, body string) (int, string) {
		var out map[string]any
		code := httpJSON(t, "PUT", x.admin+"/v1/groups/default/backends/"+name, body, &out)
		return code, fmt.Sprint(out)
	}
	for _, tc := range []struct{ body, want string }{
		{`{"url":"http://u:` + leak + `@127.0.0.1:1/mcp"}`, "url: URL must not carry user info"},
		{`{"url":"http://169.254.169.254/"}`, "url: host 169.254.169.254 is a link-local"},
		{`{"url":"http://[fd00:ec2::254]/"}`, "url: host fd00:ec2::254 is a link-local"},
		{`{"url":"http://100.100.100.200/"}`, "link-local"},
		{`{"url":"http://127.0.0.1:1/mcp","headers":{"Authorization":"Bearer ` + leak + `"}}`, "headers.Authorization: literal header values are not allowed"},
		{`{"url":"http://127.0.0.1:1/mcp","headers":{"Authorization":{"env":"Bearer ` + leak + `"}}}`, "headers.Authorization: invalid credential reference"},
		{`{"url":"http://127.0.0.1:1/mcp","headers":{"Host":{"env":"X"}}}`, `headers: invalid header name: "Host"`},
		{`{"url":"http://127.0.0.1:1/mcp","headers":{"Transfer-Encoding":{"env":"X"}}}`, `"Transfer-Encoding"`},
	} {
		code, out := put("alpha", tc.body)
		if code != http.StatusBadRequest || !strings.Contains(out, tc.want) {
			t.Errorf("PUT %s: %d %s, want 400 with %q", tc.body, code, out, tc.want)
		}
		if strings.Contains(out, leak) {
			t.Errorf("PUT answer quotes the secret: %s", out)
		}
	}

	// Allowed: accepted, shown in the state, and dialed.
	if code, out := put("local", `{"url":"http://[fe80::1%25lo]:9/mcp","allow_link_local":true,"headers":{"X-Api-Key":{"file":"/nonexistent/key"}}}`); code != http.StatusOK {
		t.Fatalf("PUT allowed link-local: %d %s", code, out)
	}
	var reason string
	eventually(t, 20*time.Second, "the allowed backend probed", func() bool {
		var st controller.StateJSON
		httpJSON(t, "GET", x.admin+"/v1/state", "", &st)
		for _, g := range st.Groups {
			for _, b := range g.Backends {
				if b.Name == "local" && b.AllowLinkLocal && b.Headers["X-Api-Key"].File == "/nonexistent/key" && b.Reason != "" {
					reason = b.Reason
					return true
				}
			}
		}
		return false
	})
	// Its header file is missing: the probe fails on that, before any dial.
	if !strings.Contains(reason, "header X-Api-Key: file /nonexistent/key") {
		t.Fatalf("reason %q", reason)
	}
	if code, out := put("local", `{"url":"http://[fe80::1%25lo]:9/mcp","allow_link_local":true}`); code != http.StatusOK {
		t.Fatalf("PUT allowed link-local: %d %s", code, out)
	}
	eventually(t, 20*time.Second, "the allowed backend dialed", func() bool {
		var st controller.StateJSON
		httpJSON(t, "GET", x.admin+"/v1/state", "", &st)
		for _, g := range st.Groups {
			for _, b := range g.Backends {
				if b.Name == "local" && b.Headers == nil && b.Reason != "" && !strings.Contains(b.Reason, "X-Api-Key") {
					reason = b.Reason
					return true
				}
			}
		}
		return false
	})
	if strings.Contains(reason, "link-local") {
		t.Fatalf("an allowed backend was refused: %q", reason)
	}
	t.Logf("the allowed link-local backend: %s", reason)

	// A redirect is not followed.
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	var redirects atomic.Int64
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		redirects.Add(1)
		http.Redirect(w, r, other.URL+"/mcp", http.StatusFound)
	}))
	defer redirecting.Close()
	if code, out := put("redir", `{"url":"`+redirecting.URL+`/mcp"}`); code != http.StatusOK {
		t.Fatalf("PUT redirecting backend: %d %s", code, out)
	}
	eventually(t, 20*time.Second, "probes of the redirecting backend", func() bool { return redirects.Load() >= 3 })
	var st controller.StateJSON
	httpJSON(t, "GET", x.admin+"/v1/state", "", &st)
	for _, g := range st.Groups {
		for _, b := range g.Backends {
			if b.Name == "redir" && b.Advertisable {
				t.Fatalf("the redirecting backend is advertised: %+v", b)
			}
		}
	}
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the redirect target got %d requests", n)
	}
}
