package verify

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/adminauth"
)

// guardedController is fakeController behind the admin guard with token.
func guardedController(t *testing.T, token, digest string) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/groups/{group}/view", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"generation": 4, "digest": digest, "tools": []any{}})
	})
	srv := httptest.NewUnstartedServer(nil)
	srv.Config.Handler = adminauth.Guard(mux, adminauth.Options{Token: []byte(token), ListenAddr: srv.Listener.Addr().String()})
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// edge verify --controller sends the controller's admin token from
// --admin-token-file or FLEETGATE_ADMIN_TOKEN, and only to the controller.
func TestMainControllerToken(t *testing.T) {
	b := startBackend(t, nil)
	want, _ := sdkDigest(t, b.URL())
	ctl := guardedController(t, "adm1n-t0ken", want)
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("adm1n-t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wrong := filepath.Join(t.TempDir(), "wrong")
	_ = os.WriteFile(wrong, []byte("nope\n"), 0o600)
	run := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := Main(append([]string{"--url", b.URL(), "--controller", ctl}, args...), &stdout, &stderr)
		return code, stderr.String()
	}
	if code, stderr := run(); code != ExitError || !strings.Contains(stderr, "HTTP 401") {
		t.Errorf("no token: exit %d %q", code, stderr)
	}
	if code, stderr := run("--admin-token-file", wrong); code != ExitError || !strings.Contains(stderr, "HTTP 401") {
		t.Errorf("wrong token: exit %d %q", code, stderr)
	}
	if code, stderr := run("--admin-token-file", file); code != ExitConverged {
		t.Errorf("token file: exit %d %q", code, stderr)
	}
	if code, stderr := run("--admin-token-file", filepath.Join(t.TempDir(), "missing")); code != ExitError || !strings.Contains(stderr, "admin token file") {
		t.Errorf("missing file: exit %d %q", code, stderr)
	}
	t.Setenv(adminauth.EnvToken, "adm1n-t0ken")
	if code, stderr := run(); code != ExitConverged {
		t.Errorf("token from the environment: exit %d %q", code, stderr)
	}
	t.Setenv(adminauth.EnvToken, "")
	t.Setenv("FLEETGATE_ADMIN_TOKEN_FILE", file)
	if code, stderr := run(); code != ExitConverged {
		t.Errorf("token file from the environment: exit %d %q", code, stderr)
	}
}
