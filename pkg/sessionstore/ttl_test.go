package sessionstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TTL tests run on the wall clock: the server expires records. Their
// deadlines are generous and only bound a broken implementation; the
// assertions are about order (expired or not), never about speed.

// ttlOptions give records a 3s TTL: IdleTimeout 2s + TouchEvery 1s.
var ttlOptions = Options{IdleTimeout: 2 * time.Second, TouchEvery: time.Second}

const expiryDeadline = 30 * time.Second

// waitExpired polls until Get reports ErrNotFound and returns when it did.
func waitExpired(t *testing.T, s *Store, id string) time.Time {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(expiryDeadline)
	for range tick.C {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, _, err := s.Get(ctx, id)
		cancel()
		if errors.Is(err, ErrNotFound) {
			return time.Now()
		}
		if err != nil {
			t.Fatalf("Get while waiting for expiry: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("record %s still alive %s after its last write; its TTL was lost", id, expiryDeadline)
		}
	}
	panic("unreachable")
}

func TestRecordExpires(t *testing.T) {
	t.Parallel()
	s := openStore(t, startNode(t), &ttlOptions)
	ctx := testContext(t)
	rec := newRecord(newID(), time.Now())
	before := time.Now()
	if _, err := s.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(ctx, rec.ID); err != nil {
		t.Fatalf("Get right after Create: %v", err)
	}
	gone := waitExpired(t, s, rec.ID)
	if idle := gone.Sub(before); idle < ttlOptions.IdleTimeout {
		t.Errorf("record expired after %s of inactivity, before IdleTimeout %s", idle, ttlOptions.IdleTimeout)
	}
	// An expired id is free again, and its new record has a TTL too.
	if _, err := s.Create(ctx, rec); err != nil {
		t.Fatalf("Create of an expired id: %v", err)
	}
	waitExpired(t, s, rec.ID)
}

// Writes keep a record alive past the TTL of its first write, and the
// record still expires once the writes stop. The second half fails if a
// write drops the TTL (nats-server#6959: KV Update and Put do).
func TestWritesRenewTTL(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{kindUpdate, kindTouch} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			s := openStore(t, startNode(t), &ttlOptions)
			ctx := testContext(t)
			rec := newRecord(newID(), time.Now())
			rev, err := s.Create(ctx, rec)
			if err != nil {
				t.Fatal(err)
			}
			created := time.Now()
			live := 2 * s.ttl // well past the first write's expiry
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			var lastWrite time.Time
			for now := range tick.C {
				if now.Sub(created) > live {
					break
				}
				wrote, at := true, time.Now() // the write is stored after at
				switch kind {
				case kindUpdate:
					rec.AppliedGeneration++
					rev, err = s.Update(ctx, rec, rev)
				case kindTouch:
					rev, wrote, err = s.Touch(ctx, rec, rev, now)
				}
				if err != nil {
					t.Fatalf("%s %s after create: %v", kind, now.Sub(created), err)
				}
				if wrote {
					lastWrite = at
				}
				if _, _, err := s.Get(ctx, rec.ID); err != nil {
					t.Fatalf("Get %s after create, while %s keeps it alive: %v", now.Sub(created), kind, err)
				}
			}
			st := s.Stats()
			if n := st.Updates + st.Touches; n < 3 {
				t.Fatalf("only %d writes kept the record alive; the test proves nothing", n)
			}
			gone := waitExpired(t, s, rec.ID)
			if idle := gone.Sub(lastWrite); idle < ttlOptions.IdleTimeout {
				t.Errorf("record expired %s after its last write, before IdleTimeout %s", idle, ttlOptions.IdleTimeout)
			}
		})
	}
}

// Every stored write carries the TTL header (the fast, direct check of
// nats-server#6959).
func TestWritesCarryTTL(t *testing.T) {
	node := startNode(t)
	s := openStore(t, node, &ttlOptions)
	js := connect(t, node)
	ctx := testContext(t)
	st, err := js.Stream(ctx, "KV_"+DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	header := func(step, id string) {
		t.Helper()
		m, err := st.GetLastMsgForSubject(ctx, "$KV."+DefaultBucket+"."+id)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if got := m.Header.Get(jetstream.MsgTTLHeader); got != "3s" {
			t.Errorf("%s: %s = %q, want \"3s\"", step, jetstream.MsgTTLHeader, got)
		}
	}
	rec := newRecord(newID(), t0)
	rev, err := s.Create(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	header("create", rec.ID)
	if rev, err = s.Update(ctx, rec, rev); err != nil {
		t.Fatal(err)
	}
	header("update", rec.ID)
	if _, wrote, err := s.Touch(ctx, rec, rev, t0.Add(time.Minute)); err != nil || !wrote {
		t.Fatalf("Touch: wrote=%v err=%v", wrote, err)
	}
	header("touch", rec.ID)
	if err := s.Delete(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	m, err := st.GetLastMsgForSubject(ctx, "$KV."+DefaultBucket+"."+rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Header.Get(jetstream.MsgTTLHeader); got != markerTTL.String() {
		t.Errorf("delete marker %s = %q, want %q (it must expire too)", jetstream.MsgTTLHeader, got, markerTTL)
	}
}
