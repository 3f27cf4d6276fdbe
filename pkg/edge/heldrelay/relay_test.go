package heldrelay

import (
	"context"
	"crypto/cipher"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/fleetgate/fleetgate/pkg/edge/inputstate"
	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
)

// testKey is the relay key of the test group's key file.
var testKey = func() cipher.AEAD {
	s, err := inputstate.New([]byte(strings.Repeat("k", 32)))
	if err != nil {
		panic(err)
	}
	return s.RelayKey()
}()

// runRelay runs a relay of edge on conn with handle until the test ends.
func runRelay(t *testing.T, nc *nats.Conn, edge string, handle func(context.Context, *Retry) *Outcome) *Relay {
	t.Helper()
	rl := New(Options{Conn: nc, Edge: edge, Key: testKey, Answer: handle})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rl.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return rl
}

// TestRelay: a retry reaches the holder's handler and its outcome comes
// back; a holder nobody runs is ErrHolderGone, a slow one ErrHolderTimeout;
// an answer over the connection's max payload is replaced by an error
// saying so.
func TestRelay(t *testing.T) {
	url := natstest.Start(t).ClientURL()
	holder := natstest.Connect(t, url)
	var got atomic.Pointer[Retry]
	late := make(chan struct{})
	runRelay(t, holder, "edge-a", func(ctx context.Context, r *Retry) *Outcome {
		got.Store(r)
		switch r.Tool {
		case "slow": // answers after the forwarder gave up (at the test's end)
			<-late
			return &Outcome{Code: codeInternal, Message: "late"}
		case "huge":
			return &Outcome{Result: json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("x", int(holder.MaxPayload())) + `"}]}`), Final: true}
		}
		return &Outcome{Result: json.RawMessage(`{"content":[]}`), Final: true}
	})
	t.Cleanup(func() { close(late) }) // before the relay's Run ends
	if err := holder.Flush(); err != nil {
		t.Fatal(err)
	}
	fwd := New(Options{Conn: natstest.Connect(t, url), Edge: "edge-b", Key: testKey})
	ctx := context.Background()
	retry := func(tool string, wait time.Duration) *Retry {
		return &Retry{Identity: "ident\x00alice", Tool: tool, Backend: "b", State: "fg1.s", Responses: json.RawMessage(`{"input-1":{}}`),
			WaitMillis: wait.Milliseconds()}
	}
	out, err := fwd.Continue(ctx, "edge-a", retry("t", 5*time.Second))
	if r := got.Load(); err != nil || !out.Final || string(out.Result) != `{"content":[]}` || r == nil || r.Identity != "ident\x00alice" {
		t.Fatalf("Continue: %+v, %v (handler got %+v)", out, err, r)
	}
	if _, err := fwd.Continue(ctx, "edge-gone", retry("t", 5*time.Second)); !errors.Is(err, ErrHolderGone) {
		t.Fatalf("to a holder nobody runs: %v; want ErrHolderGone", err)
	}
	if _, err := fwd.Continue(ctx, "edge-a", retry("slow", 50*time.Millisecond)); !errors.Is(err, ErrHolderTimeout) {
		t.Fatalf("to a slow holder: %v; want ErrHolderTimeout", err)
	}
	out, err = fwd.Continue(ctx, "edge-a", retry("huge", time.Minute)) // building it takes seconds under -race on a loaded machine
	if err != nil || out.Code != codeInternal || !strings.Contains(out.Message, "max_payload") {
		t.Fatalf("an answer over the max payload: %+v, %v; want an error saying so", out, err)
	}
	raw, _ := json.Marshal(map[string]string{"identity": "x"})
	sealed, nonce := seal(testKey, retryAAD(Subject("edge-a")), raw)
	msg, err := natstest.Connect(t, url).Request(Subject("edge-a"), sealed, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	plain, _, err := open(testKey, outcomeAAD(nonce), msg.Data)
	if err != nil {
		t.Fatalf("the answer to a malformed retry: %v", err)
	}
	if o, err := DecodeOutcome(plain); err != nil || o.Code != codeInvalidParams {
		t.Fatalf("a malformed retry: %+v, %v; want invalid params", o, err)
	}
}
