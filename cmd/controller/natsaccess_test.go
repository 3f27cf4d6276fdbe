package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nkeys"
)

func writeSeed(t *testing.T) string {
	t.Helper()
	kp, _ := nkeys.CreateUser()
	seed, _ := kp.Seed()
	p := filepath.Join(t.TempDir(), "u.seed")
	if err := os.WriteFile(p, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseNATSAccess(t *testing.T) {
	seed := writeSeed(t)
	env := map[string]string{"FLEETGATE_NATS_NKEY_SEED": seed, "FLEETGATE_SESSION_MAX_BYTES": "64MiB"}
	o, err := parse([]string{"--config", "x", "--nats-max-store", "2GiB"}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if o.nats.access.NkeySeed != seed || o.nats.maxStore != 2<<30 || o.nats.sessionBytes != 64<<20 || o.nats.callBytes != 256<<20 {
		t.Fatalf("nats options %+v", o.nats)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", "x", "--nats-nkey-seed", seed, "--nats-creds", seed}, "exclusive"},
		{[]string{"--config", "x", "--nats-tls-cert", seed}, "key"},
		{[]string{"--config", "x", "--nats-nkey-seed", "/nonexistent/seed"}, "/nonexistent/seed"},
		{[]string{"--config", "x", "--session-max-bytes", "1KiB"}, "-session-max-bytes"},
		{[]string{"--config", "x", "--nats-max-store", "lots"}, "-nats-max-store"},
		{[]string{"--config", "x", "--nats-max-store", "512MiB"}, "need 832MiB"},
	} {
		if _, err := parse(c.args, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want it to name %q", c.args, err, c.want)
		}
	}
}
