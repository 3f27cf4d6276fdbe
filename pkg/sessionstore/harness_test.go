package sessionstore

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/convergence"
	"github.com/fleetgate/fleetgate/pkg/natsnode"
	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
)

// startNode runs an embedded JetStream node for the test.
func startNode(t testing.TB) *natsnode.Node { return natstest.Start(t) }

// connect opens a connection of its own, as a separate edge would.
func connect(t testing.TB, node *natsnode.Node) jetstream.JetStream {
	return natstest.JetStream(t, node.ClientURL())
}

// openStore opens a store with o on its own connection to node.
func openStore(t testing.TB, node *natsnode.Node, o *Options) *Store {
	t.Helper()
	s, err := Open(testContext(t), connect(t, node), o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testContext bounds one NATS operation generously: it is a guard against
// a hung test, not a performance assertion.
func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// newRecord is a record as an edge writes it after initialize.
func newRecord(id string, at time.Time) *Record {
	return &Record{
		ID:                id,
		Owner:             OwnerHash("alice@example.com"),
		Group:             "default",
		Mode:              ModePassthrough,
		InitializeParams:  json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"a<b>&c","version":"1"}}`),
		ProtocolVersion:   "2025-06-18",
		ClientListChanged: true,
		AppliedGeneration: 7,
		RegistryDigest:    "sha256:0f1e",
		Edge:              "edge-a",
		CreatedAt:         at,
		LastSeen:          at,
		Convergence: convergence.Record{
			ProtocolVersion:   "2025-06-18",
			ClientListChanged: true,
			ServerListChanged: true,
			Seq:               3,
			CurrentDigest:     "sha256:0f1e",
			CurrentGeneration: 7,
		},
	}
}

// newID is a fresh session id of the kind go-sdk generates.
func newID() string { return rand.Text() }
