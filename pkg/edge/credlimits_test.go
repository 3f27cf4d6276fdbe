package edge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/demobackend"
)

// A header reference the event log carries is resolved by the edge only
// within its own bounds (CredentialLimits, the edge's --credential-dir and
// --credential-env-prefix): one naming a file elsewhere on the edge's host
// fails its backend's calls, naming the reference and never reading the
// file; one within them is sent.
func TestEdgeCredentialLimits(t *testing.T) {
	dir := t.TempDir()
	inside := filepath.Join(dir, "secrets", "alpha")
	outside := filepath.Join(dir, "edge.seed") // e.g. the edge's NATS seed
	if err := os.MkdirAll(filepath.Dir(inside), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{inside, outside} {
		if err := os.WriteFile(p, []byte("Bearer "+filepath.Base(p)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	synctest.Test(t, func(t *testing.T) { testEdgeCredentialLimits(t, dir, inside, outside) })
}

// testEdgeCredentialLimits is TestEdgeCredentialLimits with the
// credentials written in dir: inside its secrets, and outside.
func testEdgeCredentialLimits(t *testing.T, dir, inside, outside string) {
	e := serveMemoryEdge(t, &Options{CredentialLimits: &credential.Limits{Dir: filepath.Join(dir, "secrets")}})
	alpha, beta := demobackend.New("alpha", nil), demobackend.New("beta", nil)
	for _, tc := range []struct {
		b    *demobackend.Backend
		file string
	}{{alpha, inside}, {beta, outside}} {
		e.serveBackend(t, tc.b)
		// A copy: the published backend is the edge's to read.
		b := *e.fleet.backends[tc.b.Name()]
		b.Config.Transport = "streamable-http"
		b.Config.Headers = credential.Headers{"X-Credential": {File: tc.file}}
		e.fleet.backends[tc.b.Name()] = &b
		e.up(tc.b.Name())
	}
	e.settle()
	if _, ok := e.current().Catalog.Tool("beta_echo"); !ok {
		t.Fatal("beta_echo not served")
	}
	c := connect(t, e.MCPURL(), "2025-11-25")
	if res := c.call(t, "alpha_echo", map[string]any{"text": "in"}); res.IsError {
		t.Fatalf("a reference within the bounds: %s", text(res))
	}
	res := c.call(t, "beta_echo", map[string]any{"text": "out"})
	if !res.IsError || !strings.Contains(text(res), "beta") || strings.Contains(text(res), "Bearer edge.seed") {
		t.Fatalf("a reference out of bounds: isError %v, %s", res.IsError, text(res))
	}
	t.Logf("out of bounds: %s", text(res))
	if n := beta.Calls(); n != 0 {
		t.Fatalf("beta got %d calls with a reference out of the edge's bounds", n)
	}
}
