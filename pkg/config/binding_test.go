package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/credential"
)

func bindingFleet(t *testing.T) *Fleet {
	t.Helper()
	f, err := Parse("fleet.yaml", []byte(backendYAML(
		"        url: https://beta.internal/mcp\n        headers:\n          Authorization: {env: BETA_AUTHORIZATION}\n"+
			"          X-Tenant: {file: /run/secrets/beta}\n")))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestCheckBinding(t *testing.T) {
	file := bindingFleet(t)
	tf, err := Parse("fleet.yaml", []byte(strings.Replace(backendYAML(authYAML), "name: beta", "name: tickets", 1)))
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := tf.Backend("default", "tickets")
	if err := file.Put("default", tb); err != nil {
		t.Fatal(err)
	}
	fileAuth := tb.Auth
	otherAuth := fileAuth.Clone()
	otherAuth.TokenURL = "https://attacker.example/token"
	auth := credential.Headers{"Authorization": {Env: "BETA_AUTHORIZATION"}}
	for _, c := range []struct {
		name, group string
		b           Backend
		want        string // "" accepted, else part of the refusal
	}{
		{"same origin, other path", "default", Backend{Name: "beta", URL: "https://BETA.internal:443/v2/mcp", Headers: auth}, ""},
		{"another header name, same ref", "default", Backend{Name: "beta", URL: "https://beta.internal/mcp", Headers: credential.Headers{"X-Api-Key": {File: "/run/secrets/beta"}}}, ""},
		{"no headers anywhere", "default", Backend{Name: "gamma", URL: "http://attacker.example/"}, ""},
		{"attacker origin", "default", Backend{Name: "beta", URL: "http://attacker.example/mcp", Headers: auth},
			"headers.Authorization: credential reference env BETA_AUTHORIZATION is bound to the origin https://beta.internal:443 of this backend in the config file, not http://attacker.example:80"},
		{"scheme downgrade", "default", Backend{Name: "beta", URL: "http://beta.internal:443/mcp", Headers: auth}, "is bound to the origin"},
		{"other port", "default", Backend{Name: "beta", URL: "https://beta.internal:8443/mcp", Headers: auth}, "is bound to the origin"},
		{"a reference the file lacks", "default", Backend{Name: "beta", URL: "https://beta.internal/mcp", Headers: credential.Headers{"Authorization": {File: "/etc/fleetgate/nats/controller.seed"}}},
			"headers.Authorization: credential reference file /etc/fleetgate/nats/controller.seed is not one the config file holds for this backend"},
		{"another backend's reference", "default", Backend{Name: "alpha", URL: "https://beta.internal/mcp", Headers: auth}, "not one the config file holds"},
		{"a new backend with a reference", "default", Backend{Name: "gamma", URL: "https://beta.internal/mcp", Headers: auth}, "not one the config file holds"},
		{"the backend in another group", "other", Backend{Name: "beta", URL: "https://beta.internal/mcp", Headers: auth}, "not one the config file holds"},
		{"the file's auth", "default", Backend{Name: "tickets", URL: "https://tickets.example/v2/mcp", Auth: fileAuth.Clone()}, ""},
		{"auth to another origin", "default", Backend{Name: "tickets", URL: "https://attacker.example/mcp", Auth: fileAuth.Clone()},
			"auth: is bound to the origin https://tickets.example:443"},
		{"another token endpoint", "default", Backend{Name: "tickets", URL: "https://tickets.example/mcp", Auth: otherAuth},
			"auth: is not the auth section the config file holds"},
		{"auth on a backend the file has none for", "default", Backend{Name: "beta", URL: "https://beta.internal/mcp", Auth: fileAuth.Clone()},
			"auth: is not the auth section"},
	} {
		err := file.CheckBinding(c.group, c.b)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want accepted", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrUnboundRef) || !errors.Is(err, ErrInvalidConfig)):
			t.Errorf("%s: %v, want ErrUnboundRef with %q", c.name, err, c.want)
		}
	}
}

func TestCheckRefs(t *testing.T) {
	f := bindingFleet(t)
	if err := CheckRefs("fleet.yaml", f, credential.Limits{Dir: credential.DefaultDir}); err != nil {
		t.Fatalf("default limits: %v", err)
	}
	err := CheckRefs("fleet.yaml", f, credential.Limits{Dir: "/srv/creds"})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "groups[0].backends[1].headers.X-Tenant" || !errors.Is(err, credential.ErrOutOfBounds) ||
		!strings.Contains(err.Error(), "fleet.yaml: groups[0].backends[1].headers.X-Tenant: credential reference out of bounds: file /run/secrets/beta: the file is not under the allowed directory /srv/creds") {
		t.Errorf("file outside the dir: %v", err)
	}
	err = CheckRefs("fleet.yaml", f, credential.Limits{Dir: credential.DefaultDir, EnvPrefix: "CRED_"})
	if err == nil || !strings.Contains(err.Error(), "headers.Authorization: credential reference out of bounds: env BETA_AUTHORIZATION") {
		t.Errorf("variable without the prefix: %v", err)
	}
}
