package events

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/natsnode"
	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// fleet is a NATS deployment for log tests: one embedded node or a 3-node
// loopback cluster, with the disruption the suite applies to it.
type fleet struct {
	url      string
	replicas int
	// disrupt restarts the single node, or kills the stream leader of a
	// cluster, and returns a func that brings it back.
	disrupt func(t *testing.T) (restore func())
}

func singleNode(t *testing.T) (*fleet, *natsnode.Node) {
	t.Helper()
	node := natstest.Start(t)
	f := &fleet{url: node.ClientURL(), replicas: 1}
	f.disrupt = func(t *testing.T) func() {
		node.Shutdown()
		return func() {
			if err := node.Restart(); err != nil {
				t.Errorf("restart node: %v", err)
			}
		}
	}
	return f, node
}

func threeNodes(t *testing.T) *fleet {
	t.Helper()
	c, err := natsnode.StartCluster(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Shutdown)
	f := &fleet{url: c.ClientURLs(), replicas: 3}
	f.disrupt = func(t *testing.T) func() {
		leader := c.StreamLeader("$G", testStream)
		if leader == nil {
			t.Fatal("no stream leader")
		}
		leader.Shutdown()
		return func() {
			if err := leader.Restart(); err != nil {
				t.Errorf("restart leader: %v", err)
			}
		}
	}
	return f
}

const testStream = "FLEETGATE_EVENTS"

func (f *fleet) connect(t testing.TB) jetstream.JetStream { return natstest.JetStream(t, f.url) }

func (f *fleet) openLog(t *testing.T, ctx context.Context) *Log {
	t.Helper()
	l, err := OpenLog(ctx, f.connect(t), &LogOptions{Replicas: f.replicas, Stream: testStream})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// healthEvent is a small event on backend b of group "default".
func healthEvent(b string, i int) *eventspb.Event {
	to := "healthy"
	if i%2 == 1 {
		to = "unhealthy"
	}
	return NewHealthChanged(time.Now(), "default", b, "unknown", to, to == "healthy", fmt.Sprintf("step %d", i))
}

// readAll returns every stored message's generation and Nats-Msg-Id.
func readAll(t *testing.T, ctx context.Context, l *Log) (gens []uint64, ids []string, evs []*eventspb.Event) {
	t.Helper()
	_, last, err := l.Bounds(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= last; seq++ {
		m, err := l.stream.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("get %d: %v", seq, err)
		}
		ev, err := Decode(seq, m.Data)
		if err != nil {
			t.Fatalf("decode %d: %v", seq, err)
		}
		gens = append(gens, seq)
		ids = append(ids, m.Header.Get(jetstream.MsgIDHeader))
		evs = append(evs, ev)
	}
	return gens, ids, evs
}

// eventually polls cond until it holds or the deadline passes; a polled
// condition, not a sleep-and-hope.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
