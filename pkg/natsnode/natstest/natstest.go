// Package natstest starts embedded NATS servers for tests: a JetStream
// node in the test's temp dir, stopped when the test ends, and JetStream
// clients that reconnect forever and close with the test.
//
//	node := natstest.Start(t)
//	js := natstest.JetStream(t, node.ClientURL())
package natstest

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/natsnode"
)

// Start starts a JetStream node on a free loopback port with its store in
// t.TempDir(); it is shut down when the test ends (if still running).
func Start(t testing.TB) *natsnode.Node {
	t.Helper()
	node, err := natsnode.Start(&natsnode.Options{DataDir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if node.Running() {
			node.Shutdown()
		}
	})
	return node
}

// Connect opens a connection that reconnects forever (tests restart
// servers) and closes when the test ends.
func Connect(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond), nats.RetryOnFailedConnect(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// JetStream returns a JetStream client on a new connection to url.
func JetStream(t testing.TB, url string) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(Connect(t, url))
	if err != nil {
		t.Fatal(err)
	}
	return js
}
