package main

import (
	"strings"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/natsnode"
)

func TestParseRegionFlags(t *testing.T) {
	none := func(string) string { return "" }
	o, err := parse([]string{"--config", "x"}, none)
	if err != nil {
		t.Fatal(err)
	}
	var n natsnode.Options
	o.region.node(&n)
	if n.Domain != "" || n.Leaf != nil || n.EdgeLogs != nil || o.region.logOptions(1).Stream != "" {
		t.Fatalf("no region must change nothing: %+v", n)
	}
	o, err = parse([]string{"--config", "x", "--region", "eu", "--regions", "us,eu", "--nats-leaf-listen", "127.0.0.1:7422",
		"--nats-leaf-remotes", "nats-leaf://10.0.0.1:7422, nats-leaf://10.0.0.2:7422"}, none)
	if err != nil {
		t.Fatal(err)
	}
	o.region.node(&n)
	if n.Domain != "eu" || len(n.EdgeLogs) != 2 || n.Leaf == nil || len(n.Leaf.Remotes) != 2 ||
		o.region.logOptions(3).Stream != "FLEETGATE_EVENTS_EU" || o.region.logOptions(3).Replicas != 3 {
		t.Fatalf("region options: %+v %+v", n, n.Leaf)
	}
	o, err = parse([]string{"--config", "x", "--region", "eu", "--nats-leaf-remotes", "nats-leaf://10.0.0.1:7422",
		"--nats-leaf-tls-ca", "ca.pem", "--nats-leaf-tls-cert", "c.pem", "--nats-leaf-tls-key", "k.pem"}, none)
	if err != nil {
		t.Fatal(err)
	}
	n = natsnode.Options{}
	o.region.node(&n)
	if n.Leaf == nil || n.Leaf.TLS == nil || *n.Leaf.TLS != (natsnode.LeafTLS{Cert: "c.pem", Key: "k.pem", CA: "ca.pem"}) {
		t.Fatalf("leaf TLS: %+v", n.Leaf)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", "x", "--regions", "a,b"}, "need -region"},
		{[]string{"--config", "x", "--nats-leaf-listen", ":7422"}, "need -region"},
		{[]string{"--config", "x", "--region", "EU"}, "-region"},
		{[]string{"--config", "x", "--region", "eu", "--regions", "us,ap"}, "does not list"},
		{[]string{"--config", "x", "--region", "eu", "--regions", "eu,eu"}, "-regions"},
		{[]string{"--config", "x", "--nats-leaf-tls-ca", "ca.pem"}, "need -region"},
		{[]string{"--config", "x", "--region", "eu", "--nats-leaf-tls-ca", "ca.pem"}, "need -nats-leaf-listen"},
		{[]string{"--config", "x", "--region", "eu", "--nats-leaf-listen", ":7422", "--nats-leaf-tls-ca", "ca.pem"}, "needs -nats-leaf-tls-cert"},
		{[]string{"--config", "x", "--region", "eu", "--nats-leaf-remotes", "nats-leaf://h:7422", "--nats-leaf-tls-cert", "c.pem"}, "go together"},
	} {
		if _, err := parse(c.args, none); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want it to name %q", c.args, err, c.want)
		}
	}
}
