package calltrail

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/fleetgate/fleetgate/pkg/natsnode"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// env is an embedded NATS node and a JetStream client connected to it.
type env struct {
	node *natsnode.Node
	nc   *nats.Conn
	js   jetstream.JetStream
}

func newEnv(t testing.TB) *env {
	t.Helper()
	node, err := natsnode.Start(&natsnode.Options{DataDir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	// Reconnect forever and slowly: a stopped server leaves publishes
	// pending rather than failing them at once.
	nc, err := nats.Connect(node.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(time.Minute))
	if err != nil {
		node.Shutdown()
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		nc.Close()
		node.Shutdown()
	})
	return &env{node: node, nc: nc, js: js}
}

// read returns the first n entries of the stream, in stream order, waiting
// for them to arrive.
func (e *env) read(t *testing.T, stream string, n int) ([]Entry, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := e.js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var entries []Entry
	var subjects []string
	for len(entries) < n {
		msg, err := c.Next(jetstream.FetchContext(ctx))
		if err != nil {
			t.Fatalf("after %d of %d entries: %v", len(entries), n, err)
		}
		// A session id is never published, only its hash.
		if strings.Contains(string(msg.Data()), "sess-1") {
			t.Fatalf("a published entry carries the session id: %s", msg.Data())
		}
		var got Entry
		if err := json.Unmarshal(msg.Data(), &got); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, got)
		subjects = append(subjects, msg.Subject())
	}
	return entries, subjects
}

// counter reads fleetgate_calltrail_dropped_total{reason} from reg.
func counter(t *testing.T, reg *prometheus.Registry, name, reason string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := reason == ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					match = true
				}
			}
			if match {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// sample is an entry with every field set.
func sample(i int) Entry {
	return Entry{
		Time:        time.Date(2026, 3, 1, 12, 0, i, 0, time.UTC),
		Group:       "default",
		Edge:        "edge-1",
		SessionID:   "sess-1",
		OwnerHash:   "sha256:abcd",
		Tool:        "alpha_echo",
		BackendTool: "echo",
		Backend:     "alpha",
		Generation:  uint64(40 + i),
		Latency:     time.Duration(i+1) * time.Millisecond,
		Outcome:     []Outcome{OutcomeOK, OutcomeError, OutcomeIsError}[i%3],
		Error:       []string{"", "backend alpha: connection refused", "no such file"}[i%3],
		Arguments:   json.RawMessage(`{"text":"hello"}`),
	}
}
