package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/natsnode"
)

func TestParse(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := parse([]string{"--group", "g1"}, env(map[string]string{"FLEETGATE_GROUP": "ignored", "FLEETGATE_ADMIN_LISTEN": "127.0.0.1:9", "FLEETGATE_COALESCE": "1s"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.group != "g1" || c.adminListen != "127.0.0.1:9" || c.coalesce != time.Second || c.listen != "127.0.0.1:8080" || c.id == "" {
		t.Fatalf("%+v", c)
	}
	c, err = parse([]string{"--mode", "optimizer"}, env(map[string]string{"FLEETGATE_PINNED_TOOLS": "alpha_echo, beta_add,,"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.mode != "optimizer" || len(c.pinned) != 2 || c.pinned[0] != "alpha_echo" || c.pinned[1] != "beta_add" {
		t.Fatalf("optimizer: %+v", c)
	}
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--nope"}, nil, "nope"},
		{[]string{"--mode", "fast"}, nil, "-mode"},
		{nil, map[string]string{"FLEETGATE_MODE": "turbo"}, "-mode"},
		{[]string{"--pinned-tools", "alpha_echo"}, nil, "-pinned-tools"},
		{nil, map[string]string{"FLEETGATE_COALESCE": "soon"}, "FLEETGATE_COALESCE"},
		{[]string{"--separator", "/"}, nil, "-separator"},
		{[]string{"--log-format", "xml"}, nil, "-log-format"},
		{[]string{"--listen", "8080"}, nil, "-listen"},
		{[]string{"--auth-issuer", "http://issuer.example"}, nil, "-auth-issuer"},
		{[]string{"--auth-issuer", "https://issuer.example", "--auth-jwks-url", "http://keys.example/jwks"}, nil, "-auth-jwks-url"},
		{[]string{"--auth-issuer", "https://issuer.example", "--identity-header", "X-User"}, nil, "-identity-header"},
		{[]string{"--auth-scopes", "mcp"}, nil, "-auth-scopes"},
		{[]string{"--admin-token-file", "/nonexistent/token"}, nil, "-admin-token-file"},
		{[]string{"--public-url", "mcp.example.com"}, nil, "-public-url"},
		{[]string{"--public-url", "https://u:p@mcp.example.com"}, nil, "-public-url"},
		{[]string{"--public-url", "https://mcp.example.com/?x=1"}, nil, "-public-url"},
		{[]string{"--signin-client-secret-file", "/run/secrets/s"}, nil, "-signin-client-secret-file"},
		{[]string{"--signin-client-id", "c", "--signin-unbound"}, nil, "-signin-unbound"},
		{[]string{"--signin-client-id", "two words"}, nil, "-signin-client-id"},
	} {
		_, err := parse(tc.args, env(tc.env))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("parse(%v, %v) = %v, want one line naming %q", tc.args, tc.env, err, tc.want)
		}
	}
}

// The command attaches to the log, becomes ready and stops cleanly.
func TestRunServes(t *testing.T) {
	node, err := natsnode.Start(&natsnode.Options{DataDir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Shutdown()
	nc, err := nats.Connect(node.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := events.OpenLog(ctx, js, nil); err != nil { // the controller's part
		t.Fatal(err)
	}
	admin := freeAddr(t)
	c, err := parse([]string{"--nats-url", node.ClientURL(), "--listen", "127.0.0.1:0", "--admin-listen", admin, "--log-format", "json"},
		func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- run(ctx, c) }()
	waitReady(t, admin)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
