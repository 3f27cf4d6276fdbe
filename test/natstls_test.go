package test

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/natsnode"
	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
)

// TLS to NATS with a private CA and a client certificate, plus the edge's
// nkey: the edge's access flags connect and read the event log; without
// the client certificate, the CA or the nkey the connection is refused.
func TestRegionAccessTLS(t *testing.T) {
	dir := t.TempDir()
	ca, srvCert, srvKey, cliCert, cliKey := natstest.PKI(t, dir)
	tlsConf, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: srvCert, KeyFile: srvKey, CaFile: ca, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	user := func(name string) (string, string) {
		kp, _ := nkeys.CreateUser()
		pub, _ := kp.PublicKey()
		seed, _ := kp.Seed()
		p := filepath.Join(dir, name+".seed")
		if err := os.WriteFile(p, seed, 0o600); err != nil {
			t.Fatal(err)
		}
		return pub, p
	}
	ctlPub, ctlSeed := user("controller")
	edgePub, edgeSeed := user("edge")
	conf, err := natsnode.Accounts{Controllers: []string{ctlPub}, Edges: []string{edgePub}}.Config()
	if err != nil {
		t.Fatal(err)
	}
	var so server.Options
	if err := so.ProcessConfigString(conf); err != nil {
		t.Fatal(err)
	}
	so.Host, so.Port, so.JetStream, so.StoreDir = "127.0.0.1", -1, true, filepath.Join(dir, "js")
	so.NoLog, so.NoSigs, so.TLSConfig, so.TLSVerify, so.TLS = true, true, tlsConf, true, true
	srv, err := server.NewServer(&so)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("TLS server not ready")
	}
	url := srv.ClientURL()
	full := natsnode.Access{TLSCA: ca, TLSCert: cliCert, TLSKey: cliKey}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	ctlAccess := full
	ctlAccess.NkeySeed = ctlSeed
	_, jsCtl := connectAs(t, url, ctlAccess)
	provisionFleet(t, ctx, jsCtl)

	edgeAccess := full
	edgeAccess.NkeySeed = edgeSeed
	nc, _ := connectAs(t, url, edgeAccess)
	if st, err := nc.TLSConnectionState(); err != nil || st.Version < tls.VersionTLS12 {
		t.Fatalf("connection state %v, %v: not TLS 1.2+", st.Version, err)
	}
	fjs, split, err := natsnode.FleetJetStream(ctx, nc, "")
	if err != nil || !split {
		t.Fatalf("the fleet account's read services over TLS: split %v, %v", split, err)
	}
	lg, err := events.AttachLog(ctx, fjs, &events.LogOptions{BySequence: true})
	if err != nil {
		t.Fatalf("attach the event log over TLS: %v", err)
	}
	if last, err := lg.LastGeneration(ctx); err != nil || last != 2 {
		t.Fatalf("last generation over TLS: %d, %v", last, err)
	}

	for name, tc := range map[string]struct {
		a    natsnode.Access
		want string
	}{
		"no client certificate": {natsnode.Access{TLSCA: ca, NkeySeed: edgeSeed}, "tls"},
		"no CA":                 {natsnode.Access{TLSCert: cliCert, TLSKey: cliKey, NkeySeed: edgeSeed}, "tls"},
		"no nkey":               {full, "authorization"},
	} {
		opts, err := tc.a.Options()
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(url, append(opts, nats.Timeout(3*time.Second))...)
		if err == nil {
			nc.Close()
			t.Errorf("%s: connected", name)
			continue
		}
		if !strings.Contains(strings.ToLower(err.Error()), tc.want) {
			t.Errorf("%s: %v, want an error about %q", name, err, tc.want)
		}
	}
	if _, err := (natsnode.Access{TLSCert: cliCert}).Options(); err == nil {
		t.Error("a certificate without its key was accepted")
	}
	if _, err := (natsnode.Access{NkeySeed: edgeSeed, Creds: edgeSeed}).Options(); err == nil {
		t.Error("an nkey seed with a creds file was accepted")
	}
}
