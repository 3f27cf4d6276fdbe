package records

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/fleetgate/fleetgate/pkg/edge/internal/h1"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// TestMain fails the package if a flusher or watcher outlives its Stop.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// edgeRecords is one edge's recorder over a shared bucket, with the
// registry it records and its write counter.
type edgeRecords struct {
	r       *Recorder
	reg     *session.Registry
	hj      *h1.Hijacks
	written *prometheus.CounterVec
}

func openRecords(t *testing.T, url, edge string) *edgeRecords {
	t.Helper()
	er := &edgeRecords{hj: &h1.Hijacks{},
		written: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "written_total"}, []string{"kind"})}
	er.reg = session.NewRegistry(&session.Options{Hijacks: er.hj})
	var err error
	// A flush interval of an hour: the test flushes when it means to.
	er.r, err = Open(&Options{JetStream: natstest.JetStream(t, url), FlushEvery: time.Hour},
		Wiring{Edge: edge, Sessions: er.reg, Hijacks: er.hj, Registry: prometheus.NewRegistry(), Written: er.written})
	if err != nil {
		t.Fatal(err)
	}
	er.r.Start()
	t.Cleanup(func() { er.r.Stop(); er.hj.Wait() })
	return er
}

func (er *edgeRecords) writes(kind string) float64 {
	return testutil.ToFloat64(er.written.WithLabelValues(kind))
}

// waitFor polls cond (the bucket watch is another goroutine's I/O) for up
// to ten seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A record is written when its session is created, changes queued within
// a flush cost one write, another edge that claims the session takes it
// over (the first edge's copy ends as the watch sees the write), and the
// client's delete removes it.
func TestRecorderCreateFlushTakeoverDelete(t *testing.T) {
	node := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const id = "session-records-1"
	a := openRecords(t, node.ClientURL(), "a")

	s := a.reg.New(id, session.KindSession, "2025-11-25", "")
	a.reg.Open(s)
	a.r.Created(s, sessionstore.Record{ID: id, Group: "default", Mode: sessionstore.ModePassthrough,
		ProtocolVersion: "2025-11-25"}, time.Now())
	rec, rev, err := a.r.Store().Get(ctx, id)
	if err != nil || rec.Edge != "a" {
		t.Fatalf("record after create: %+v, %v", rec, err)
	}

	s.Record().ViewApplied("digest-1", 1, nil)
	a.r.Enqueue(s)
	s.Record().ViewApplied("digest-2", 2, nil)
	a.r.Enqueue(s)
	a.r.Flush()
	if n := a.writes("update"); n != 1 {
		t.Fatalf("%v updates for two changes in one flush, want 1", n)
	}
	if rec, _, err := a.r.Store().Get(ctx, id); err != nil || rec.AppliedGeneration != 2 {
		t.Fatalf("record after the flush: %+v, %v", rec, err)
	}
	a.r.Flush()
	if n := a.writes("update"); n != 1 {
		t.Fatalf("an unchanged record was written again (%v updates)", n)
	}

	// Edge b rebuilds the session from the record it read before a's
	// update: its claim overrides the conflict, and a lets go.
	b := openRecords(t, node.ClientURL(), "b")
	sb := b.reg.New(id, session.KindSession, "2025-11-25", "")
	sb.Record().Adopt(rec, rev, time.Now(), "b", "digest-2", 2, nil)
	b.reg.Open(sb)
	if err := b.r.Write(sb, true); err != nil {
		t.Fatalf("b's claim: %v", err)
	}
	if rec, _, err := b.r.Store().Get(ctx, id); err != nil || rec.Edge != "b" {
		t.Fatalf("record after b's claim: %+v, %v", rec, err)
	}
	waitFor(t, "a to end its copy of the session taken over", func() bool { return a.reg.Lookup(id) == nil })
	s.Record().ViewApplied("digest-3", 3, nil)
	a.r.Enqueue(s)
	a.r.Flush()
	if rec, _, _ := a.r.Store().Get(ctx, id); rec == nil || rec.Edge != "b" || a.writes("update") != 1 {
		t.Fatalf("a wrote the record it gave up: %+v", rec)
	}

	b.r.Deleted(ctx, id, sb)
	if _, _, err := b.r.Store().Get(ctx, id); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Fatalf("record after delete: %v, want ErrNotFound", err)
	}
	if n := b.writes("delete"); n != 1 {
		t.Fatalf("%v deletes counted, want 1", n)
	}
}

// A nil Recorder (an edge without a store) takes every call and records
// nothing; Created still starts the session's record.
func TestNilRecorder(t *testing.T) {
	var r *Recorder
	reg := session.NewRegistry(nil)
	s := reg.New("session-nil-1", session.KindSession, "2025-11-25", "")
	r.Start()
	r.Created(s, sessionstore.Record{ID: s.ID()}, time.Now())
	r.Touched(s, time.Now())
	r.Enqueue(s)
	if err := r.Write(s, false); err != nil {
		t.Fatal(err)
	}
	r.Deleted(context.Background(), s.ID(), s)
	r.Stop()
	if r.Store() != nil {
		t.Fatal("a nil recorder has a store")
	}
}
