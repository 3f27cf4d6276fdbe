package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/credential"
)

const authYAML = "        url: https://tickets.example/mcp\n        auth:\n          type: token_exchange\n" +
	"          token_url: https://idp.example/oauth2/token\n          audience: https://tickets.example\n" +
	"          scopes: [tickets.read, tickets.write]\n          client_id: fleetgate-edge\n          client_secret: {file: /run/secrets/sts}\n"

func TestParseAuth(t *testing.T) {
	f, err := Parse("fleet.yaml", []byte(backendYAML(authYAML)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := f.Backend("default", "beta")
	want := &credential.Auth{Type: "token_exchange", TokenURL: "https://idp.example/oauth2/token", Audience: "https://tickets.example",
		Scopes: []string{"tickets.read", "tickets.write"}, ClientID: "fleetgate-edge", ClientSecret: credential.Ref{File: "/run/secrets/sts"}}
	if !b.Auth.Equal(want) || !b.Auth.PerCaller() {
		t.Fatalf("auth %+v", b.Auth)
	}
	if a, _ := f.Backend("default", "alpha"); a.Auth != nil || a.Auth.PerCaller() {
		t.Fatalf("alpha has auth %+v", a.Auth)
	}
	// A clone shares nothing; a changed auth is another connection.
	c := f.Clone()
	cb, _ := c.Backend("default", "beta")
	cb.Auth.Scopes[0] = "x"
	if b.Auth.Scopes[0] != "tickets.read" {
		t.Fatal("clone shares the scopes")
	}
	if cb.Equal(b) {
		t.Fatal("backends with other auth scopes are equal")
	}
}

const userOAuthYAML = "        url: https://docs.example/mcp\n        auth:\n          type: user_oauth\n" +
	"          client_id: fleetgate\n          scopes: [docs.read]\n"

// A user_oauth section: client_id optional (dynamic registration),
// before_sign_in carried, per caller but not exchanged.
func TestParseUserOAuth(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want credential.Auth
	}{
		{userOAuthYAML + "          before_sign_in: hidden\n", credential.Auth{Type: "user_oauth", ClientID: "fleetgate", Scopes: []string{"docs.read"}, BeforeSignIn: "hidden"}},
		{strings.Replace(userOAuthYAML, "          client_id: fleetgate\n", "", 1), credential.Auth{Type: "user_oauth", Scopes: []string{"docs.read"}}},
	} {
		f, err := Parse("fleet.yaml", []byte(backendYAML(tc.yaml)))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := f.Backend("default", "beta")
		if !b.Auth.Equal(&tc.want) || !b.Auth.PerCaller() || b.Auth.Exchanges() || !b.Auth.SignIn() {
			t.Fatalf("auth %+v", b.Auth)
		}
		if b.Auth.HiddenBeforeSignIn() != (tc.want.BeforeSignIn == "hidden") {
			t.Fatalf("hidden %v", b.Auth.HiddenBeforeSignIn())
		}
	}
}

func TestParseAuthErrors(t *testing.T) {
	base := func(repl ...string) string { return strings.NewReplacer(repl...).Replace(authYAML) }
	for _, tc := range []struct{ yaml, want string }{
		{base("type: token_exchange", "type: user_oauth"), "fleet.yaml:10: groups[0].backends[1].auth.token_url: is not for user_oauth"},
		{userOAuthYAML + "          audience: x\n", "auth.audience: is not for user_oauth"},
		{userOAuthYAML + "          before_sign_in: later\n", `auth.before_sign_in: "later" is not a choice`},
		{base("          client_id: fleetgate-edge\n", "          before_sign_in: hidden\n"), "auth.before_sign_in: is for user_oauth only"},
		{strings.Replace(userOAuthYAML, "          client_id: fleetgate\n", "", 1) + "          client_secret: {file: /s}\n", "auth.client_secret: needs a client_id"},
		{base("type: token_exchange", "type: magic"), `auth.type: "magic" is not an auth type`},
		{base("          type: token_exchange\n", ""), "auth.type: is required"},
		{base("token_url: https://idp.example/oauth2/token", "token_url: https://u:"+leak+"@idp/t"), "fleet.yaml:10: groups[0].backends[1].auth.token_url: must not carry user info"},
		{base("token_url: https://idp.example/oauth2/token", "token_url: idp/token"), "auth.token_url: is not an absolute http(s) URL"},
		{base("          token_url: https://idp.example/oauth2/token\n", ""), "auth.token_url: is required"},
		{base("          client_id: fleetgate-edge\n", ""), "auth.client_id: is required"},
		{base("client_secret: {file: /run/secrets/sts}", "client_secret: "+leak), "auth.client_secret: literal header values are not allowed"},
		{base("client_secret: {file: /run/secrets/sts}", "client_secret: {env: \""+leak+" x\"}"), "auth.client_secret: invalid credential reference"},
		{base("tickets.write", "tickets read"), "fleet.yaml:12: groups[0].backends[1].auth.scopes[1]: want a scope token"},
		{base("tickets.write", "tickets.read"), "auth.scopes[1]: scope \"tickets.read\" is given twice"},
		{base("scopes: [tickets.read, tickets.write]", "scopes: tickets.read"), "auth.scopes: want a sequence"},
		{base("          client_id: fleetgate-edge\n", "          client_id: fleetgate-edge\n          password: x\n"), "auth.password: unknown key"},
		{"        url: https://t/mcp\n        headers:\n          Authorization: {env: A}\n" + strings.TrimPrefix(authYAML, "        url: https://tickets.example/mcp\n"),
			"groups[0].backends[1].headers.Authorization: excludes auth"},
		{"        transport: stdio\n        command: files\n" + strings.TrimPrefix(authYAML, "        url: https://tickets.example/mcp\n"),
			"groups[0].backends[1].auth: is not for transport stdio"},
		{"        url: https://t/mcp\n        auth: [x]\n", "auth: want a mapping"},
	} {
		_, err := Parse("fleet.yaml", []byte(backendYAML(tc.yaml)))
		if err == nil || !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("config\n%s\nerror %v\nwant %q", tc.yaml, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), leak) {
			t.Errorf("error quotes the secret: %v", err)
		}
	}
}

func TestPutAuth(t *testing.T) {
	f := &Fleet{}
	a := &credential.Auth{Type: "token_exchange", TokenURL: "https://idp/t", ClientID: "c"}
	if err := f.Put("default", Backend{Name: "tickets", URL: "https://t/mcp", Auth: a}); err != nil {
		t.Fatal(err)
	}
	a.ClientID = "changed"
	if b, _ := f.Backend("default", "tickets"); b.Auth.ClientID != "c" {
		t.Fatal("Put kept the caller's section")
	}
	err := f.Put("default", Backend{Name: "tickets", URL: "https://t/mcp", Auth: &credential.Auth{Type: "token_exchange", ClientID: "c"}})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "auth.token_url" {
		t.Fatalf("put without token_url: %v", err)
	}
}
