package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A header reference outside --credential-dir or --credential-env-prefix
// is refused at config load, naming the field, the reference and the
// flags; the defaults allow /run/secrets and any variable but the
// gateway's own.
func TestCredentialLimitsAtLoad(t *testing.T) {
	dir := t.TempDir()
	creds := filepath.Join(dir, "creds")
	cfg := func(ref string) string {
		p := filepath.Join(t.TempDir(), "fleet.yaml")
		yaml := "groups:\n  - name: default\n    backends:\n      - name: alpha\n        url: http://127.0.0.1:9101/mcp\n" +
			"        headers:\n          Authorization: " + ref + "\n"
		if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		ref   string
		flags []string
		want  string // "" loads
	}{
		{"{file: /run/secrets/alpha}", nil, ""},
		{"{env: ALPHA_AUTHORIZATION}", nil, ""},
		{"{file: " + filepath.Join(dir, "data", "nats", "controller.seed") + "}", nil,
			"groups[0].backends[0].headers.Authorization: credential reference out of bounds: file " + filepath.Join(dir, "data", "nats", "controller.seed") + ": the file is not under the allowed directory /run/secrets (see --credential-dir and --credential-env-prefix)"},
		{"{file: /run/secrets/kubernetes.io/serviceaccount/token}", nil, "headers.Authorization: credential reference out of bounds"},
		{"{env: FLEETGATE_ADMIN_TOKEN}", nil, "env FLEETGATE_ADMIN_TOKEN: FLEETGATE_* variables are the gateway's own settings"},
		{"{file: " + filepath.Join(creds, "alpha") + "}", []string{"--credential-dir", creds}, ""},
		{"{file: /run/secrets/alpha}", []string{"--credential-dir", creds}, "not under the allowed directory " + creds},
		{"{env: ALPHA_AUTHORIZATION}", []string{"--credential-env-prefix", "FG_CRED_"}, "env ALPHA_AUTHORIZATION: the variable does not begin with the allowed prefix FG_CRED_"},
		{"{env: FG_CRED_ALPHA}", []string{"--credential-env-prefix", "FG_CRED_"}, ""},
	} {
		o, err := parse(append([]string{"--config", cfg(c.ref), "--data-dir", filepath.Join(dir, "data")}, c.flags...), func(string) string { return "" })
		if err != nil {
			t.Fatalf("%s %v: parse: %v", c.ref, c.flags, err)
		}
		_, err = loadFleet(o)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %v: %v, want it loaded", c.ref, c.flags, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n")):
			t.Errorf("%s %v: %v, want one line with %q", c.ref, c.flags, err, c.want)
		}
	}
	for _, bad := range [][]string{{"--credential-dir", "relative"}, {"--credential-env-prefix", "FLEETGATE_"}, {"--credential-env-prefix", "A-B"}} {
		if _, err := parse(append([]string{"--config", "x"}, bad...), func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), bad[0][1:]) {
			t.Errorf("%v: %v, want a refusal naming the flag", bad, err)
		}
	}
}
