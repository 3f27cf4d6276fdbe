package leader

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
)

// The tests below run electors against a real embedded NATS server, in real
// time, with a 1s TTL. Waits poll with generous deadlines; only the
// takeover times the requirements bound are asserted as durations.

const natsTTL = time.Second

func startNATS(t *testing.T) string { return natstest.Start(t).ClientURL() }

func connect(t *testing.T, url string) jetstream.JetStream { return natstest.JetStream(t, url) }

// natsElector is an elector running on its own connection.
type natsElector struct {
	e      *Elector
	rec    *recorder
	cancel context.CancelFunc
	done   chan error
}

func startNATSElector(t *testing.T, url, id string, hook func(*Elector)) *natsElector {
	t.Helper()
	rec := &recorder{}
	e, err := New(connect(t, url), id, rec.options(natsTTL))
	if err != nil {
		t.Fatal(err)
	}
	if hook != nil {
		hook(e)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &natsElector{e: e, rec: rec, cancel: cancel, done: make(chan error, 1)}
	go func() { n.done <- e.Run(ctx) }()
	t.Cleanup(n.stop)
	return n
}

func (n *natsElector) stop() {
	n.cancel()
	if err, ok := <-n.done; ok {
		close(n.done)
		_ = err
	}
}

// eventually polls cond every 10ms for up to 15s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func electedCount(n *natsElector) int {
	el, _, _ := n.rec.snapshot()
	return len(el)
}

func TestNATSOneLeaderThenGracefulHandoff(t *testing.T) {
	url := startNATS(t)
	a := startNATSElector(t, url, "a", nil)
	eventually(t, "a leads", func() bool { _, ok := a.e.Leader(); return ok })
	b := startNATSElector(t, url, "b", nil)
	// Over several renewals, exactly one leads.
	for end := time.Now().Add(3 * natsTTL); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if electedCount(b) != 0 {
			t.Fatal("b was elected while a leads")
		}
	}
	if _, ok := a.e.Leader(); !ok {
		t.Fatal("a stopped leading without a reason")
	}
	aTerm, _ := a.e.Leader()
	stopped := time.Now()
	a.stop()
	eventually(t, "b leads", func() bool { return electedCount(b) == 1 })
	_, _, at := b.rec.snapshot()
	if took := at.Sub(stopped); took >= natsTTL {
		t.Errorf("graceful handoff took %v, want under the TTL %v (one poll is %v)", took, natsTTL, natsTTL/4)
	} else {
		t.Logf("graceful handoff in %v", took)
	}
	bTerm, ok := b.e.Leader()
	if !ok || bTerm <= aTerm {
		t.Fatalf("b term %d (%v), want above a's %d", bTerm, ok, aTerm)
	}
	if _, lost, _ := a.rec.snapshot(); len(lost) != 1 || lost[0] != aTerm {
		t.Fatalf("a reported lost %v, want [%d]", lost, aTerm)
	}
}

func TestNATSCrashTakeover(t *testing.T) {
	url := startNATS(t)
	a := startNATSElector(t, url, "a", nil)
	eventually(t, "a leads", func() bool { _, ok := a.e.Leader(); return ok })
	b := startNATSElector(t, url, "b", nil)
	time.Sleep(natsTTL / 2) // let b see a few renewals
	aTerm, _ := a.e.Leader()
	a.e.noRelease.Store(true) // exit without releasing: a crash
	crashed := time.Now()
	a.stop()
	eventually(t, "b leads", func() bool { return electedCount(b) == 1 })
	_, _, at := b.rec.snapshot()
	took := at.Sub(crashed)
	t.Logf("takeover after a crash in %v (TTL %v)", took, natsTTL)
	if took >= 2*natsTTL {
		t.Fatalf("takeover after a crash took %v, want under 2×TTL = %v", took, 2*natsTTL)
	}
	if bTerm, _ := b.e.Leader(); bTerm <= aTerm {
		t.Fatalf("b term %d, want above a's %d", bTerm, aTerm)
	}
}

func TestNATSPausedLeaderLoses(t *testing.T) {
	url := startNATS(t)
	var mu sync.Mutex
	paused := false
	wake := make(chan struct{})
	a := startNATSElector(t, url, "a", func(e *Elector) {
		e.beforeOp = func(op Op) {
			mu.Lock()
			p := paused
			mu.Unlock()
			if p && op == OpRenew {
				<-wake
			}
		}
	})
	eventually(t, "a leads", func() bool { _, ok := a.e.Leader(); return ok })
	lead, aTerm, err := a.e.Await(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b := startNATSElector(t, url, "b", nil)
	mu.Lock()
	paused = true
	mu.Unlock()
	eventually(t, "b leads", func() bool { return electedCount(b) == 1 })
	if _, ok := a.e.Leader(); ok {
		t.Fatal("paused a still says it leads while b leads")
	}
	select {
	case <-lead.Done():
	default:
		t.Fatal("a's term context is live while b leads")
	}
	if _, lost, _ := a.rec.snapshot(); len(lost) != 0 {
		t.Fatalf("a reported lost %v while paused", lost)
	}
	mu.Lock()
	paused = false
	mu.Unlock()
	close(wake)
	eventually(t, "a reports the loss", func() bool { _, lost, _ := a.rec.snapshot(); return len(lost) == 1 })
	if _, lost, _ := a.rec.snapshot(); lost[0] != aTerm {
		t.Fatalf("a lost term %v, want %d", lost, aTerm)
	}
	bTerm, ok := b.e.Leader()
	if !ok || bTerm <= aTerm {
		t.Fatalf("b leads %v in term %d, want a term above %d", ok, bTerm, aTerm)
	}
	if _, ok := a.e.Leader(); ok {
		t.Fatal("a leads again")
	}
}

// TestNATSForeignWriteDeposes overwrites the lease behind the leader's back
// with a value that is not a lease: the leader's next renewal fails its
// compare-and-set and it reports the loss at once; then, as a standby, it
// takes the unreadable lease over after the TTL, in a higher term.
func TestNATSForeignWriteDeposes(t *testing.T) {
	url := startNATS(t)
	a := startNATSElector(t, url, "a", nil)
	eventually(t, "a leads", func() bool { _, ok := a.e.Leader(); return ok })
	aTerm, _ := a.e.Leader()
	js := connect(t, url)
	kv, err := js.KeyValue(context.Background(), DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(context.Background(), DefaultKey, []byte("not a lease")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a reports the loss", func() bool { _, lost, _ := a.rec.snapshot(); return len(lost) == 1 })
	eventually(t, "a is elected again", func() bool { return electedCount(a) == 2 })
	elected, lost, _ := a.rec.snapshot()
	if lost[0] != aTerm || elected[1] <= aTerm {
		t.Fatalf("a elected %v lost %v: want term %d lost, then a higher term", elected, lost, aTerm)
	}
	e, err := kv.Get(context.Background(), DefaultKey)
	if err != nil {
		t.Fatal(err)
	}
	var l Lease
	if err := l.UnmarshalJSON(e.Value()); err != nil || l.Holder != "a" || l.TTL != natsTTL {
		t.Fatalf("stored lease %s (%v), want a's", e.Value(), err)
	}
}

func TestNATSRunReportsBadBucketConfig(t *testing.T) {
	url := startNATS(t)
	e, err := New(connect(t, url), "a", &Options{TTL: natsTTL, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = e.Run(ctx)
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("Run with 3 replicas on one server: %v, want the server's API error", err)
	}
}

func TestNewRejects(t *testing.T) {
	if _, err := New(nil, "a", nil); err == nil {
		t.Error("nil JetStream accepted")
	}
	if _, err := newElector("", nil); err == nil {
		t.Error("empty id accepted")
	}
	if _, err := newElector("a", &Options{TTL: MinTTL - 1}); err == nil {
		t.Error("TTL below the minimum accepted")
	}
	e, err := newElector("a", nil)
	if err != nil || e.ttl != DefaultTTL || e.bucket != DefaultBucket || e.key != DefaultKey || e.replicas != 1 {
		t.Errorf("defaults: %+v, %v", e, err)
	}
}
