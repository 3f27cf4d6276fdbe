package events

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/credential"
)

// TestBackendConfigReferences: a backend's header references and
// allow_link_local survive the event encoding and the fold, in a stable
// order, and the JSON forms carry the references only.
func TestBackendConfigReferences(t *testing.T) {
	cfg := BackendConfig{URL: "https://alpha.internal/mcp", Transport: "streamable-http", AllowLinkLocal: true,
		Headers: credential.Headers{"X-Tenant": {File: "/run/secrets/t"}, "Authorization": {Env: "ALPHA_AUTHORIZATION"}}}
	ev := NewBackendAdded(time.Unix(1, 0), "default", "alpha", cfg)
	ev.Generation = 1
	b1, err := Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := Encode(ev)
	if string(b1) != string(b2) {
		t.Fatal("the same config encodes differently")
	}
	dec, err := Decode(1, b1)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Apply(NewState(), dec)
	if err != nil {
		t.Fatal(err)
	}
	got := s.Backend("default", "alpha").Config
	if !got.Equal(cfg) {
		t.Fatalf("folded %+v, want %+v", got, cfg)
	}
	if hs := ev.GetBackendAdded().GetConfig().GetHeaders(); len(hs) != 2 || hs[0].GetName() != "Authorization" {
		t.Fatalf("headers not sorted: %v", hs)
	}
	j, _ := json.Marshal(s)
	if !strings.Contains(string(j), `"headers":{"Authorization":{"env":"ALPHA_AUTHORIZATION"},"X-Tenant":{"file":"/run/secrets/t"}},"allow_link_local":true`) {
		t.Fatalf("state JSON %s", j)
	}
	if (BackendConfig{URL: "u"}).Equal(BackendConfig{URL: "u", Headers: credential.Headers{"A": {Env: "X"}}}) ||
		!(BackendConfig{URL: "u", Headers: credential.Headers{}}).Equal(BackendConfig{URL: "u"}) {
		t.Fatal("Equal")
	}
}
