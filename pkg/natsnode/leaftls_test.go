package natsnode_test

import (
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/natsnode"
	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
)

// TestRegionLeafLinkTLS: a leaf listener with a certificate and a CA
// takes a link from a node that verifies it against the CA and presents a
// client certificate signed by it (and its leaf seed); a node without the
// client certificate, or dialling in plain TCP, gets no link.
func TestRegionLeafLinkTLS(t *testing.T) {
	dir := t.TempDir()
	ca, srvCert, srvKey, cliCert, cliKey := natstest.PKI(t, dir)
	hub, err := natsnode.Start(&natsnode.Options{Name: "hub", DataDir: t.TempDir(), Listen: "127.0.0.1:0", Auth: true, Domain: "a",
		Leaf: &natsnode.LeafOptions{Listen: "127.0.0.1:0", TLS: &natsnode.LeafTLS{Cert: srvCert, Key: srvKey, CA: ca}}})
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Shutdown()
	dial := func(name string, tls *natsnode.LeafTLS) *natsnode.Node {
		n, err := natsnode.Start(&natsnode.Options{Name: name, DataDir: t.TempDir(), Listen: "127.0.0.1:0", Auth: true, Domain: name,
			Leaf: &natsnode.LeafOptions{Remotes: []string{hub.LeafURL()}, RemoteSeed: hub.LeafSeed(), TLS: tls}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(n.Shutdown)
		return n
	}
	links := func(n *natsnode.Node, want int, within time.Duration) bool {
		deadline := time.Now().Add(within)
		for {
			if n.Server().NumLeafNodes() == want {
				return true
			}
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// Refused ones first: none of them may count as the hub's link.
	plain := dial("plain", nil)
	noCert := dial("nocert", &natsnode.LeafTLS{CA: ca})
	if links(hub, 1, 3*time.Second) || plain.Server().NumLeafNodes() != 0 || noCert.Server().NumLeafNodes() != 0 {
		t.Fatalf("a link without TLS or without a client certificate: hub %d, plain %d, nocert %d",
			hub.Server().NumLeafNodes(), plain.Server().NumLeafNodes(), noCert.Server().NumLeafNodes())
	}
	good := dial("b", &natsnode.LeafTLS{Cert: cliCert, Key: cliKey, CA: ca})
	if !links(good, 1, 20*time.Second) || !links(hub, 1, 5*time.Second) {
		t.Fatalf("TLS link with the client certificate: hub %d, b %d", hub.Server().NumLeafNodes(), good.Server().NumLeafNodes())
	}
}

// A TLS listener needs its certificate; a remote's certificate needs its
// key.
func TestRegionLeafTLSOptions(t *testing.T) {
	for name, l := range map[string]*natsnode.LeafOptions{
		"listener without a certificate": {Listen: "127.0.0.1:0", TLS: &natsnode.LeafTLS{CA: "ca.pem"}},
		"remote certificate without key": {Remotes: []string{"nats-leaf://127.0.0.1:1"}, TLS: &natsnode.LeafTLS{Cert: "c.pem"}},
		"remote CA that is missing":      {Remotes: []string{"nats-leaf://127.0.0.1:1"}, TLS: &natsnode.LeafTLS{CA: "/nonexistent/ca.pem"}},
	} {
		if n, err := natsnode.Start(&natsnode.Options{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Leaf: l}); err == nil {
			n.Shutdown()
			t.Errorf("%s: started", name)
		}
	}
}
