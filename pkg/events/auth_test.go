package events

import (
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/credential"
)

// A backend's auth section goes through the log as references: encoded,
// decoded, equal; without a client secret too; and none stays none.
func TestBackendAuthRoundTrip(t *testing.T) {
	for _, a := range []*credential.Auth{
		{Type: credential.AuthTokenExchange, TokenURL: "https://idp/t", Audience: "https://tickets", Scopes: []string{"a", "b"},
			ClientID: "edge", ClientSecret: credential.Ref{File: "/run/secrets/sts"}},
		{Type: credential.AuthTokenExchange, TokenURL: "https://idp/t", ClientID: "public"},
		{Type: credential.AuthUserOAuth, Scopes: []string{"docs.read"}, BeforeSignIn: credential.BeforeSignInHidden},
		nil,
	} {
		cfg := BackendConfig{URL: "https://tickets/mcp", Transport: TransportStreamableHTTP, Auth: a}
		ev0 := NewBackendAdded(time.Unix(1, 0), "default", "tickets", cfg)
		ev0.Generation = 1
		data, err := Encode(ev0)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := Decode(1, data)
		if err != nil {
			t.Fatal(err)
		}
		got := configFromProto(ev.GetBackendAdded().GetConfig())
		if !got.Equal(cfg) || (a != nil && got.Auth == a) {
			t.Fatalf("round trip of %+v: %+v", a, got.Auth)
		}
	}
	if (BackendConfig{Auth: &credential.Auth{Type: "token_exchange"}}).Equal(BackendConfig{}) {
		t.Fatal("a config with auth equals one without")
	}
}
