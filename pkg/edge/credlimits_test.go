package edge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/events"
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
	f := newFleet(t)
	alpha, beta := startBackend(t, "alpha", nil), startBackend(t, "beta", nil)
	for _, tc := range []struct {
		b    interface{ Name() string }
		url  string
		file string
	}{{alpha, alpha.URL(), inside}, {beta, beta.URL(), outside}} {
		f.publish(events.NewBackendAdded(time.Now(), "default", tc.b.Name(), events.BackendConfig{URL: tc.url, Transport: "streamable-http",
			Headers: credential.Headers{"X-Credential": {File: tc.file}}}))
	}
	f.catalog("default", "alpha", listCatalog(t, alpha))
	f.catalog("default", "beta", listCatalog(t, beta))
	f.health("default", "alpha", true)
	f.health("default", "beta", true)
	e := startEdge(t, f, &Options{CredentialLimits: &credential.Limits{Dir: filepath.Join(dir, "secrets")}})
	eventually(t, 10*time.Second, "view served", func() bool { _, ok := e.current().Catalog.Tool("beta_echo"); return ok })
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
