package heldrelay

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
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
	fwd := New(Options{Conn: connectAs(t, node, node.EdgeAccessFor("e2")), Edge: "edge-b", Key: testKey})
	out, err := fwd.Continue(context.Background(), "edge-a", &Retry{Identity: "ident\x00alice", Tool: "t", Backend: "b", State: "fg1.s",
		WaitMillis: (5 * time.Second).Milliseconds()})
	if err != nil || !out.Final {
		t.Fatalf("Continue under edge permissions: %+v, %v; want the holder's result", out, err)
	}
}

// TestRelayRefusesOtherEdgeUsers: a NATS user with edge permissions that
// is not an edge of the group (another group's edge, `controller audit`
// with an edge seed: no input-state key) subscribed to fleetgate.held.>
// reads nothing of a forwarded retry, its answer to it is not taken for
// the holder's, and a retry it forwards itself under any identity never
// reaches the holder's handler.
func TestRelayRefusesOtherEdgeUsers(t *testing.T) {
	node := startAuthNode(t, "e2", "e3")
	holder := connectAs(t, node, node.EdgeAccess())
	attacker := connectAs(t, node, node.EdgeAccessFor("e3"))

	seen := make(chan []byte, 4)
	answered := make(chan struct{})
	var once sync.Once
	sub, err := attacker.Subscribe(SubjectPrefix+".>", func(m *nats.Msg) {
		seen <- m.Data
		_ = m.Respond([]byte(`{"result":{"content":[{"type":"text","text":"forged"}]},"final":true}`))
		_ = attacker.Flush() // at the server before the holder answers
		once.Do(func() { close(answered) })
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := attacker.Flush(); err != nil {
		t.Fatal(err)
	}

	var handled atomic.Int32
	runRelay(t, holder, "edge-a", func(ctx context.Context, r *Retry) *Outcome {
		handled.Add(1)
		if r.Identity != "ident\x00alice" {
			return &Outcome{Result: json.RawMessage(`{"content":[{"type":"text","text":"the victim's call, for ` + r.Identity + `"}]}`), Final: true}
		}
		select { // the attacker answered first
		case <-answered:
		case <-ctx.Done():
		}
		return &Outcome{Result: json.RawMessage(`{"content":[{"type":"text","text":"genuine"}]}`), Final: true}
	})
	if err := holder.Flush(); err != nil {
		t.Fatal(err)
	}
	fwd := New(Options{Conn: connectAs(t, node, node.EdgeAccessFor("e2")), Edge: "edge-b", Key: testKey})
	out, err := fwd.Continue(context.Background(), "edge-a", &Retry{Identity: "ident\x00alice", Tool: "t", Backend: "b", State: "fg1.state-of-alice",
		Responses: json.RawMessage(`{"input-1":{"action":"accept","content":{"password":"s3cret"}}}`), WaitMillis: (5 * time.Second).Milliseconds()})
	if err != nil || !strings.Contains(string(out.Result), "genuine") {
		t.Fatalf("Continue with another edge user answering first: %+v, %v; want the holder's answer", out, err)
	}
	if got := <-seen; strings.Contains(string(got), "s3cret") || strings.Contains(string(got), "alice") || strings.Contains(string(got), "state-of-alice") {
		t.Fatalf("another edge user read the forwarded retry: %s", got)
	}

	// A retry the other user makes up, for the victim, is not answered;
	// the holder, which takes its messages in order, had it before the
	// retry forwarded next.
	if err := sub.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	forged, _ := json.Marshal(&Retry{Identity: "ident\x00mallory-as-alice", Tool: "t", Backend: "b", State: "fg1.state-of-alice", WaitMillis: 1000})
	inbox := attacker.NewInbox()
	replies, err := attacker.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	if err := attacker.PublishRequest(Subject("edge-a"), inbox, forged); err != nil {
		t.Fatal(err)
	}
	if err := attacker.Flush(); err != nil {
		t.Fatal(err)
	}
	before := handled.Load()
	out, err = fwd.Continue(context.Background(), "edge-a", &Retry{Identity: "ident\x00alice", Tool: "t", Backend: "b", State: "fg1.s",
		WaitMillis: (5 * time.Second).Milliseconds()})
	if err != nil || !strings.Contains(string(out.Result), "genuine") {
		t.Fatalf("Continue after the made-up retry: %+v, %v", out, err)
	}
	if n := handled.Load() - before; n != 1 {
		t.Fatalf("the holder's handler ran %d times; want once (the made-up retry reached it)", n)
	}
	if m, err := replies.NextMsg(0); err == nil {
		t.Fatalf("the made-up retry was answered: %q", m.Data)
	}
}
