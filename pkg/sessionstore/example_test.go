package sessionstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/natsnode"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// Edge A creates a session; edge B, which never saw its initialize,
// rehydrates it, serves a request, and takes it over; DELETE /mcp removes
// it for every edge.
func Example() {
	dir, _ := os.MkdirTemp("", "sessionstore-example")
	defer os.RemoveAll(dir)
	node, err := natsnode.Start(&natsnode.Options{DataDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer node.Shutdown()
	nc, _ := nats.Connect(node.ClientURL())
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()

	edgeA, _ := sessionstore.Open(ctx, js, nil) // 30m idle timeout, touch every 3m
	edgeB, _ := sessionstore.Open(ctx, js, nil)

	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	_, err = edgeA.Create(ctx, &sessionstore.Record{
		ID:               "W4A7VX7LKXOZ2VT4RV2MQOLB",
		Owner:            sessionstore.OwnerHash("alice@example.com"),
		Group:            "default",
		Mode:             sessionstore.ModePassthrough,
		InitializeParams: json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{}}`),
		ProtocolVersion:  "2025-06-18",
		Edge:             "edge-a",
		CreatedAt:        now,
		LastSeen:         now,
	})
	fmt.Println("created:", err)

	// A request for the session arrives at edge B.
	rec, rev, err := edgeB.Get(ctx, "W4A7VX7LKXOZ2VT4RV2MQOLB")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("owner matches:", rec.Owner == sessionstore.OwnerHash("alice@example.com"))
	_, wrote, _ := edgeB.Touch(ctx, rec, rev, now.Add(time.Minute))
	fmt.Println("touch after 1m wrote:", wrote)
	rec.Edge = "edge-b"
	_, err = edgeB.Update(ctx, rec, rev)
	fmt.Println("update:", err)

	_ = edgeB.Delete(ctx, rec.ID)
	_, _, err = edgeA.Get(ctx, rec.ID)
	fmt.Println("after delete:", errors.Is(err, sessionstore.ErrNotFound))

	_, _, err = edgeA.Get(ctx, "../../etc")
	fmt.Println("client-supplied id:", errors.Is(err, sessionstore.ErrBadID))
	// Output:
	// created: <nil>
	// owner matches: true
	// touch after 1m wrote: false
	// update: <nil>
	// after delete: true
	// client-supplied id: true
}
