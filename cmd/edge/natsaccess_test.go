package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nkeys"
)

func TestParseNATSAccess(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	kp, _ := nkeys.CreateUser()
	seed, _ := kp.Seed()
	p := filepath.Join(t.TempDir(), "edge.seed")
	if err := os.WriteFile(p, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := parse(nil, env(map[string]string{"FLEETGATE_NATS_NKEY_SEED": p}))
	if err != nil {
		t.Fatal(err)
	}
	if c.nats.access.NkeySeed != p || c.nats.access.InboxPrefix != "" {
		t.Fatalf("nats access %+v", c.nats.access)
	}
	for args, want := range map[string]string{
		"--nats-nkey-seed " + p + " --nats-creds " + p: "exclusive",
		"--nats-tls-key " + p:                          "certificate",
		"--nats-creds /nonexistent/x.creds":            "/nonexistent/x.creds",
	} {
		if _, err := parse(strings.Fields(args), env(nil)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to name %q", args, err, want)
		}
	}
}
