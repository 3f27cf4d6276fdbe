package sessionstore

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	s := openStore(t, startNode(t), nil)
	ctx := testContext(t)
	in := newRecord(newID(), t0)

	rev, err := s.Create(ctx, in)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	got, grev, err := s.Get(ctx, in.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if grev != rev {
		t.Errorf("Get revision = %d, Create returned %d", grev, rev)
	}
	if !reflect.DeepEqual(got, in) {
		t.Errorf("Get = %+v\nwant %+v", got, in)
	}
	if !bytes.Equal(got.InitializeParams, in.InitializeParams) {
		t.Errorf("initialize params = %s, want verbatim %s", got.InitializeParams, in.InitializeParams)
	}

	got.Edge, got.AppliedGeneration = "edge-b", 8
	urev, err := s.Update(ctx, got, grev)
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if urev <= grev {
		t.Errorf("Update revision %d not after %d", urev, grev)
	}
	again, arev, err := s.Get(ctx, in.ID)
	if err != nil || arev != urev || again.Edge != "edge-b" || again.AppliedGeneration != 8 {
		t.Fatalf("Get after Update = %+v, %d, %v; want edge-b gen 8 rev %d", again, arev, err, urev)
	}

	if err := s.Delete(ctx, in.ID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, _, err := s.Get(ctx, in.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after Delete: err = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, in.ID); err != nil {
		t.Errorf("second Delete: %v, want nil (idempotent)", err)
	}
	want := Stats{Creates: 1, Updates: 1, Deletes: 2}
	if st := s.Stats(); st != want {
		t.Errorf("Stats = %+v, want %+v", st, want)
	}
}

// An edge rehydrates a session another edge created; the CAS revision
// fences the edge that wrote from a stale copy.
func TestAcrossEdges(t *testing.T) {
	node := startNode(t)
	a, b := openStore(t, node, nil), openStore(t, node, nil)
	ctx := testContext(t)
	rec := newRecord(newID(), t0)
	revA, err := a.Create(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}

	onB, revB, err := b.Get(ctx, rec.ID)
	if err != nil {
		t.Fatalf("edge b Get: %v", err)
	}
	onB.Edge = "edge-b"
	if _, err := b.Update(ctx, onB, revB); err != nil {
		t.Fatalf("edge b Update: %v", err)
	}

	rec.AppliedGeneration = 99
	if _, err := a.Update(ctx, rec, revA); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale Update on edge a: err = %v, want ErrConflict", err)
	}
	if _, _, err := a.Touch(ctx, rec, revA, t0.Add(time.Hour)); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale Touch on edge a: err = %v, want ErrConflict", err)
	}
	if !rec.LastSeen.Equal(t0) {
		t.Errorf("failed Touch left LastSeen = %v, want %v", rec.LastSeen, t0)
	}
	if _, err := a.Update(ctx, rec, 0); !errors.Is(err, ErrConflict) {
		t.Errorf("Update at revision 0: err = %v, want ErrConflict", err)
	}

	if err := b.Delete(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Get(ctx, rec.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("edge a Get after edge b Delete: err = %v, want ErrNotFound", err)
	}
	if _, err := a.Update(ctx, rec, revA); !errors.Is(err, ErrNotFound) {
		t.Errorf("Update of a deleted record: err = %v, want ErrNotFound", err)
	}
}

func TestCreateExisting(t *testing.T) {
	s := openStore(t, startNode(t), nil)
	ctx := testContext(t)
	rec := newRecord(newID(), t0)
	if _, err := s.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, rec); !errors.Is(err, ErrExists) {
		t.Fatalf("second Create: err = %v, want ErrExists", err)
	}
	if err := s.Delete(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	rec.Edge = "edge-c"
	rev, err := s.Create(ctx, rec)
	if err != nil {
		t.Fatalf("Create after Delete: %v", err)
	}
	got, grev, err := s.Get(ctx, rec.ID)
	if err != nil || grev != rev || got.Edge != "edge-c" {
		t.Fatalf("Get = %+v, %d, %v; want edge-c at %d", got, grev, err, rev)
	}
}

func TestConcurrentCreate(t *testing.T) {
	node := startNode(t)
	stores := []*Store{openStore(t, node, nil), openStore(t, node, nil)}
	ctx := testContext(t)
	id := newID()
	const n = 50
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []string
		others  []error
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := newRecord(id, t0)
			r.Edge = "edge-" + string(rune('a'+i%26))
			_, err := stores[i%2].Create(ctx, r)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				winners = append(winners, r.Edge)
			} else {
				others = append(others, err)
			}
		}()
	}
	wg.Wait()
	if len(winners) != 1 {
		t.Fatalf("%d creates won, want exactly 1", len(winners))
	}
	for _, err := range others {
		if !errors.Is(err, ErrExists) {
			t.Errorf("losing Create: err = %v, want ErrExists", err)
		}
	}
	got, _, err := stores[0].Get(ctx, id)
	if err != nil || got.Edge != winners[0] {
		t.Fatalf("Get = %+v, %v; want the winner's record (%s)", got, err, winners[0])
	}
}

func TestBadIDs(t *testing.T) {
	s := openStore(t, startNode(t), nil)
	ctx := testContext(t)
	bad := []string{
		"", "short", "1234567", strings.Repeat("a", 129),
		"abcdefgh.ijk", "abcdefgh*", "abcdefgh>", "../../../etc", "$KV.fleetgate_sessions.x",
		"abcd efgh", "abcdefgh\n", "abcdefgh\x00", "sessión-id", "abcdefgh/", "abc:defgh",
	}
	for _, id := range bad {
		if err := ValidateID(id); !errors.Is(err, ErrBadID) {
			t.Errorf("ValidateID(%q) = %v, want ErrBadID", id, err)
		}
		if _, err := s.Create(ctx, newRecord(id, t0)); !errors.Is(err, ErrBadID) {
			t.Errorf("Create(%q): err = %v, want ErrBadID", id, err)
		}
		if _, _, err := s.Get(ctx, id); !errors.Is(err, ErrBadID) {
			t.Errorf("Get(%q): err = %v, want ErrBadID", id, err)
		}
		if _, err := s.Update(ctx, newRecord(id, t0), 1); !errors.Is(err, ErrBadID) {
			t.Errorf("Update(%q): err = %v, want ErrBadID", id, err)
		}
		if err := s.Delete(ctx, id); !errors.Is(err, ErrBadID) {
			t.Errorf("Delete(%q): err = %v, want ErrBadID", id, err)
		}
	}
	good := []string{"abcdefgh", strings.Repeat("Z", 128), "A1_b2-C3", newID(), "00000000-0000-4000-8000-000000000000"}
	for _, id := range good {
		if err := ValidateID(id); err != nil {
			t.Errorf("ValidateID(%q) = %v, want nil", id, err)
		}
		if _, err := s.Create(ctx, newRecord(id, t0)); err != nil {
			t.Errorf("Create(%q): %v", id, err)
		}
	}
	if st := s.Stats(); st.Creates != uint64(len(good)) || st.Updates != 0 || st.Deletes != 0 {
		t.Errorf("Stats = %+v, want only the %d good creates", st, len(good))
	}
}

func TestRecordRefused(t *testing.T) {
	s := openStore(t, startNode(t), nil)
	ctx := testContext(t)
	rec := newRecord(newID(), t0)
	rev, err := s.Create(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}

	big := *rec
	big.InitializeParams = []byte(`{"pad":"` + strings.Repeat("x", MaxRecordSize) + `"}`)
	_, err = s.Update(ctx, &big, rev)
	var tl *TooLargeError
	if !errors.Is(err, ErrTooLarge) || !errors.As(err, &tl) || tl.Size <= MaxRecordSize || tl.ID != rec.ID {
		t.Fatalf("oversize Update: err = %v, want *TooLargeError over %d", err, MaxRecordSize)
	}
	big.ID = newID()
	if _, err := s.Create(ctx, &big); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversize Create: err = %v, want ErrTooLarge", err)
	}
	if _, _, err := s.Get(ctx, big.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of refused record: err = %v, want ErrNotFound", err)
	}

	for name, mutate := range map[string]func(r *Record){
		"no mode":      func(r *Record) { r.Mode = "" },
		"unknown mode": func(r *Record) { r.Mode = "turbo" },
		"params":       func(r *Record) { r.InitializeParams = []byte(`{"protocolVersion":`) },
	} {
		r := newRecord(newID(), t0)
		mutate(r)
		if _, err := s.Create(ctx, r); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Create err = %v, want ErrInvalid", name, err)
		}
	}
	got, grev, err := s.Get(ctx, rec.ID)
	if err != nil || grev != rev || !reflect.DeepEqual(got, rec) {
		t.Errorf("record after refused writes = %+v, %d, %v; want unchanged at %d", got, grev, err, rev)
	}
}

func TestTouchThrottle(t *testing.T) {
	const every = time.Second
	s := openStore(t, startNode(t), &Options{IdleTimeout: 10 * time.Second, TouchEvery: every})
	ctx := testContext(t)
	rec := newRecord(newID(), t0)
	rev, err := s.Create(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}

	// 1,000 requests inside one window that opens TouchEvery after the
	// record was created: only the first writes.
	start := t0.Add(every)
	for i := range 1000 {
		now := start.Add(time.Duration(i) * (every / 1000))
		next, wrote, err := s.Touch(ctx, rec, rev, now)
		if err != nil {
			t.Fatalf("touch %d: %v", i, err)
		}
		if wrote != (i == 0) {
			t.Fatalf("touch %d wrote = %v, want %v", i, wrote, i == 0)
		}
		if !wrote && next != rev {
			t.Fatalf("touch %d without a write moved revision %d -> %d", i, rev, next)
		}
		rev = next
	}
	st := s.Stats()
	if st.Touches != 1 || st.SkippedTouches != 999 {
		t.Errorf("Stats = %+v, want 1 touch written and 999 skipped", st)
	}
	got, grev, err := s.Get(ctx, rec.ID)
	if err != nil || grev != rev || !got.LastSeen.Equal(start) {
		t.Errorf("Get = LastSeen %v rev %d err %v; want %v at %d", got.LastSeen, grev, err, start, rev)
	}

	// The next window writes again.
	if _, wrote, err := s.Touch(ctx, rec, rev, start.Add(every)); err != nil || !wrote {
		t.Errorf("touch in the next window: wrote=%v err=%v, want a write", wrote, err)
	}
}

func TestOpenOptions(t *testing.T) {
	node := startNode(t)
	ctx := testContext(t)
	js := connect(t, node)
	for name, o := range map[string]*Options{
		"idle below 1s":        {IdleTimeout: 500 * time.Millisecond},
		"touch not below idle": {IdleTimeout: time.Minute, TouchEvery: time.Minute},
		"negative touch":       {TouchEvery: -time.Second},
		"negative replicas":    {Replicas: -1},
		"bad bucket":           {Bucket: "a.b"},
		"replicas on one node": {Replicas: 3},
	} {
		if _, err := Open(ctx, js, o); err == nil {
			t.Errorf("%s: Open succeeded, want an error", name)
		}
	}
	// Edges with different timeouts share one bucket.
	a, err := Open(ctx, js, &Options{Bucket: "shared"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(ctx, js, &Options{Bucket: "shared", IdleTimeout: time.Hour})
	if err != nil {
		t.Fatalf("reopen with another idle timeout: %v", err)
	}
	if a.ttl != 33*time.Minute || b.ttl != 66*time.Minute {
		t.Errorf("ttl = %s, %s; want 33m (30m+3m), 66m (1h+6m)", a.ttl, b.ttl)
	}
}
