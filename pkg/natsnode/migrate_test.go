package natsnode

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A store of the one-account layout (the global account) is moved into the
// two accounts on the first authenticated start: the event log stays the
// fleet's, the session bucket becomes the edge account's.
func TestMigrateGlobalStreams(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	open, err := Start(&Options{DataDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(open.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: EventStream, Subjects: []string{EventSubjects}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "fleetgate.events.default.alpha", []byte("e1")); err != nil {
		t.Fatal(err)
	}
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: SessionBucket})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "s1", []byte("r")); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	open.Shutdown()

	node, err := Start(&Options{DataDir: dir, Listen: "127.0.0.1:0", Auth: true})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Shutdown()
	conn := func(a Access) jetstream.JetStream {
		opts, err := a.Options()
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(node.ClientURL(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		js, _ := jetstream.New(nc)
		return js
	}
	fleet, edges := conn(node.ControllerAccess()), conn(node.ControllerEdgeAccess())
	st, err := fleet.Stream(ctx, EventStream)
	if err != nil {
		t.Fatalf("the event log is not in the fleet account: %v", err)
	}
	if info, err := st.Info(ctx); err != nil || info.State.Msgs != 1 {
		t.Fatalf("event log after the move: %v %v", info, err)
	}
	kv, err = edges.KeyValue(ctx, SessionBucket)
	if err != nil {
		t.Fatalf("the session bucket is not in the edge account: %v", err)
	}
	if e, err := kv.Get(ctx, "s1"); err != nil || string(e.Value()) != "r" {
		t.Fatalf("session record after the move: %v", err)
	}
	if _, err := fleet.KeyValue(ctx, SessionBucket); err == nil {
		t.Fatal("the session bucket is in the fleet account too")
	}
}
