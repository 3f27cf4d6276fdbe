package verify

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
)

// Headers from -header-file and -header-env reach the endpoint (a proxy
// that wants a bearer token), so a token need not be on the command
// line; a malformed line is refused naming the source and the line, never
// its content.
func TestMainHeadersFromFileAndEnv(t *testing.T) {
	const secret = "Bearer s3cret-7f1e"
	b := startBackend(t, &demobackend.Options{})
	want, _ := sdkDigest(t, b.URL())
	target, _ := url.Parse(b.URL())
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	locked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != secret || r.Header.Get("X-Trace") != "1" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		r.URL.Path = target.Path
		proxy.ServeHTTP(w, r)
	}))
	defer locked.Close()
	dir := t.TempDir()
	good := filepath.Join(dir, "headers")
	bad := filepath.Join(dir, "bad")
	for p, c := range map[string]string{
		good: "# verify headers\r\nAuthorization: " + secret + "\r\n\r\nX-Trace: 1\n",
		bad:  "X-Trace: 1\n" + secret + "\n",
	} {
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("VERIFY_TEST_HEADERS", "Authorization: "+secret+"\nX-Trace: 1")
	t.Setenv("VERIFY_TEST_BAD", secret)
	for _, tc := range []struct {
		name   string
		args   []string
		exit   int
		stderr string
	}{
		{"file", []string{"--header-file", good}, ExitConverged, ""},
		{"env", []string{"--header-env", "VERIFY_TEST_HEADERS"}, ExitConverged, ""},
		{"file and flag", []string{"--header-file", good, "--header", "X-Other: 2"}, ExitConverged, ""},
		{"none", nil, ExitError, "401"},
		{"bad file line", []string{"--header-file", bad}, ExitError, "flag -header-file: file " + bad + `: line 2: header: want "Name: value"`},
		{"missing file", []string{"--header-file", filepath.Join(dir, "nope")}, ExitError, "flag -header-file: read headers: open " + filepath.Join(dir, "nope")},
		{"bad env", []string{"--header-env", "VERIFY_TEST_BAD"}, ExitError, "flag -header-env: variable VERIFY_TEST_BAD: line 1"},
		{"unset env", []string{"--header-env", "VERIFY_TEST_UNSET"}, ExitError, "variable VERIFY_TEST_UNSET is not set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"--url", locked.URL + "/mcp", "--expect-digest", want, "--timeout", "10s"}, tc.args...)
			if code := Main(args, &stdout, &stderr); code != tc.exit {
				t.Errorf("exit %d, want %d; stderr %q", code, tc.exit, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.stderr) || (tc.stderr == "") != (stderr.Len() == 0) {
				t.Errorf("stderr %q, want it to contain %q", stderr.String(), tc.stderr)
			}
			if strings.Contains(stderr.String()+stdout.String(), "s3cret") {
				t.Errorf("the output quotes the secret: %s %s", stderr.String(), stdout.String())
			}
		})
	}
}
