package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
	"github.com/fleetgate/fleetgate/pkg/signin"
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

// TestStorePlanMirrors: the mirrors of the other regions get what the
// region's own streams leave of -nats-max-store, split over a stream and a
// snapshot bucket per other region, at most 256MiB each; the README's
// two-region start (default flags) fits the default 1GiB store.
func TestStorePlanMirrors(t *testing.T) {
	for _, c := range []struct {
		args        []string
		mirrorBytes int64
		want        string // an error naming it
	}{
		{[]string{"--region", "a", "--regions", "a,b"}, 96 << 20, ""},   // (1024-832)/2
		{[]string{"--region", "a", "--regions", "a,b,c"}, 48 << 20, ""}, // (1024-832)/4
		{[]string{"--region", "a"}, 0, ""},                              // no other region
		{[]string{}, 0, ""},                                             // single-region fleet
		{[]string{"--region", "a", "--regions", "a,b", "--nats-max-store", "2GiB"}, 256 << 20, ""},
		{[]string{"--region", "a", "--regions", "a,b,c,d,e,f,g,h"}, 0, "mirrors of 7 other region(s)"},
		{[]string{"--region", "a", "--regions", "a,b", "--nats-max-store", "840MiB"}, 0, "32MiB more"},
	} {
		o, err := parse(append([]string{"--config", "x"}, c.args...), func(string) string { return "" })
		if c.want != "" {
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v: err = %v, want it to name %q", c.args, err, c.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", c.args, err)
			continue
		}
		if o.store.mirrorBytes != c.mirrorBytes {
			t.Errorf("%v: mirror bound %d MiB, want %d MiB", c.args, o.store.mirrorBytes>>20, c.mirrorBytes>>20)
		}
		if reserved := o.store.own + int64(o.store.mirrors)*o.store.mirrorBytes; reserved > int64(o.nats.maxStore) {
			t.Errorf("%v: reserves %d MiB of a %d MiB store", c.args, reserved>>20, int64(o.nats.maxStore)>>20)
		}
	}
}

// TestBucketKeeperMatchesProvision: the keeper compares the buckets with
// what provision makes them (with the flags' sizes), so it finds nothing
// to restore on a fresh provision; it restores a bucket whose limits an
// update loosened, counted by bucket in the controller's metrics, and
// leaves a session bucket an operator made larger.
func TestBucketKeeperMatchesProvision(t *testing.T) {
	node := natstest.Start(t)
	js := natstest.JetStream(t, node.ClientURL())
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	o, err := parse([]string{"--config", "x", "--session-max-bytes", "8MiB", "--replicas", "1"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if err := o.nats.provision(ctx, js, o.replicas); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	k, err := o.nats.bucketKeeper(js, o.replicas, func() bool { return true }, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := k.Keep(ctx); len(r) != 0 {
		t.Fatalf("a fresh provision drifted: %+v", r)
	}
	st, err := js.Stream(ctx, "KV_"+signin.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	loose := st.CachedInfo().Config
	loose.MaxBytes, loose.MaxMsgsPerSubject = -1, 10
	if _, err := js.UpdateStream(ctx, loose); err != nil {
		t.Fatal(err)
	}
	if r := k.Keep(ctx); len(r) != 1 || r[0].Bucket() != signin.DefaultBucket {
		t.Fatalf("repairs %+v", r)
	}
	st, err = js.Stream(ctx, "KV_"+sessionstore.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	larger := st.CachedInfo().Config
	larger.MaxBytes = 32 << 20
	if _, err := js.UpdateStream(ctx, larger); err != nil {
		t.Fatal(err)
	}
	if r := k.Keep(ctx); len(r) != 0 {
		t.Fatalf("a larger session bucket repaired: %+v", r)
	}
	if st, err := js.Stream(ctx, "KV_"+sessionstore.DefaultBucket); err != nil || st.CachedInfo().Config.MaxBytes != 32<<20 {
		t.Fatalf("session bucket after a look: %v", err)
	}
	want := `
# HELP fleetgate_controller_kv_hardening_check_failures_total Failed checks of a KV bucket stream by the controller's bucket keeper, by bucket: the look at the stream or its repair failed.
# TYPE fleetgate_controller_kv_hardening_check_failures_total counter
fleetgate_controller_kv_hardening_check_failures_total{bucket="fleetgate_edges"} 0
fleetgate_controller_kv_hardening_check_failures_total{bucket="fleetgate_sessions"} 0
fleetgate_controller_kv_hardening_check_failures_total{bucket="fleetgate_signins"} 0
# HELP fleetgate_controller_kv_hardening_reapplied_total KV bucket streams written by the controller's bucket keeper, by bucket: found missing and created, or found with loosened limits or hardening and restored.
# TYPE fleetgate_controller_kv_hardening_reapplied_total counter
fleetgate_controller_kv_hardening_reapplied_total{bucket="fleetgate_edges"} 0
fleetgate_controller_kv_hardening_reapplied_total{bucket="fleetgate_sessions"} 0
fleetgate_controller_kv_hardening_reapplied_total{bucket="fleetgate_signins"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "fleetgate_controller_kv_hardening_reapplied_total",
		"fleetgate_controller_kv_hardening_check_failures_total"); err != nil {
		t.Fatal(err)
	}
}
