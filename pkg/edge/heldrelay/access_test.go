package heldrelay

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/fleetgate/fleetgate/pkg/natsnode"
)

// startAuthNode starts an embedded node with the fleet's accounts: an
// edge user per name, each with natsnode.EdgePermissions for its own
// inbox prefix, as edges connect in production.
func startAuthNode(t *testing.T, edges ...string) *natsnode.Node {
	t.Helper()
	node, err := natsnode.Start(&natsnode.Options{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Auth: true, EdgeUsers: edges})
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

// connectAs connects to node with access, closed when the test ends.
func connectAs(t *testing.T, node *natsnode.Node, access natsnode.Access) *nats.Conn {
	t.Helper()
	opts, err := access.Options()
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(node.ClientURL(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// TestRelayUnderEdgePermissions: two edges, each its own edge user (the
// accounts natsnode writes): a retry one forwards reaches the other, and
// the holder's answer comes back to the forwarder's own inbox.
func TestRelayUnderEdgePermissions(t *testing.T) {
	node := startAuthNode(t, "e2")
	holder := connectAs(t, node, node.EdgeAccess())
	runRelay(t, holder, "edge-a", func(ctx context.Context, r *Retry) *Outcome {
		return &Outcome{Result: json.RawMessage(`{"content":[]}`), Final: true}
	})
	if err := holder.Flush(); err != nil {
		t.Fatal(err)
	}
	fwd := New(Options{Conn: connectAs(t, node, node.EdgeAccessFor("e2")), Edge: "edge-b"})
	out, err := fwd.Continue(context.Background(), "edge-a", &Retry{Identity: "ident\x00alice", Tool: "t", Backend: "b", State: "fg1.s",
		WaitMillis: (5 * time.Second).Milliseconds()})
	if err != nil || !out.Final {
		t.Fatalf("Continue under edge permissions: %+v, %v; want the holder's result", out, err)
	}
}
