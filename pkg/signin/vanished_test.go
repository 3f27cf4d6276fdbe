package signin

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// kvUpdate is one update of a watch of the bucket.
type kvUpdate struct {
	key string
	rev uint64
	op  jetstream.KeyValueOp
}

func (u kvUpdate) Bucket() string                  { return DefaultBucket }
func (u kvUpdate) Key() string                     { return u.key }
func (u kvUpdate) Value() []byte                   { return nil }
func (u kvUpdate) Revision() uint64                { return u.rev }
func (u kvUpdate) Created() time.Time              { return time.Time{} }
func (u kvUpdate) Delta() uint64                   { return 0 }
func (u kvUpdate) Operation() jetstream.KeyValueOp { return u.op }

// A delete of a sign-in's key older than the record this edge holds (a
// watch made again replays the marker of an earlier sign-out) leaves the
// sign-in; a newer one ends it and is told.
func TestReplayedDeleteKeepsNewerSignIn(t *testing.T) {
	var mu sync.Mutex
	var told []string
	m := Open(Options{OnChange: func(id, b string) { mu.Lock(); told = append(told, id+" "+b); mu.Unlock() }})
	k := KeyOf(alice, "docs")
	m.entries[k] = &entry{identity: alice, backend: "docs", sealed: []byte("sealed"), rev: 10}
	m.apply(kvUpdate{key: k, rev: 5, op: jetstream.KeyValueDelete}, true)
	if m.entries[k] == nil || len(told) != 0 {
		t.Fatalf("an older delete ended a newer sign-in (told %q)", told)
	}
	m.apply(kvUpdate{key: k, rev: 11, op: jetstream.KeyValueDelete}, true)
	if m.entries[k] != nil || len(told) != 1 || told[0] != alice+" docs" {
		t.Fatalf("a newer delete: entry %v, told %q", m.entries[k], told)
	}
}

// A sign-in whose record left the bucket with no marker while the watch
// was down (a message removed under it, as an eviction or an expiry
// does) ends when the watch is made again, and is told; one whose
// record is still there stays.
func TestRunWatchAgainDropsVanished(t *testing.T) {
	f := newFleet(t, nil)
	ctx := context.Background()
	// A bucket of the sign-ins' name without the hardening, so that a
	// record can be removed as an eviction does.
	if _, err := f.js.CreateStream(ctx, jetstream.StreamConfig{Name: "KV_vanishing", Subjects: []string{"$KV.vanishing.>"},
		MaxMsgsPerSubject: 1, AllowDirect: true, AllowRollup: true, Discard: jetstream.DiscardNew}); err != nil {
		t.Fatal(err)
	}
	plain, err := f.js.KeyValue(ctx, "vanishing")
	if err != nil {
		t.Fatal(err)
	}
	kv := &endableKV{KeyValue: plain, gate: make(chan struct{})}
	t.Cleanup(func() { f.cancel(); f.done.Wait(); kv.forward.Wait() })
	changed := make(chan string, 4)
	m := Open(Options{Key: f.key, JetStream: bucketJS{JetStream: f.js, kv: kv},
		OnChange: func(id, b string) { changed <- id + " " + b }})
	f.done.Add(1)
	go func() { defer f.done.Done(); _ = m.Run(f.ctx) }()
	<-m.Ready()
	put := func(backend string) uint64 {
		sealed, err := f.key.SealRecord(Record{Identity: alice, Backend: backend, Refresh: "rt", ClientID: "c"})
		if err != nil {
			t.Fatal(err)
		}
		rev, err := plain.Put(ctx, KeyOf(alice, backend), sealed)
		if err != nil {
			t.Fatal(err)
		}
		if got := <-changed; got != alice+" "+backend {
			t.Fatalf("sign-in not followed: %q", got)
		}
		return rev
	}
	gone := put("docs")
	put("mail")
	kv.endWatch()
	st, err := f.js.Stream(ctx, "KV_vanishing")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteMsg(ctx, gone); err != nil { // no marker left
		t.Fatal(err)
	}
	close(kv.gate)
	select {
	case got := <-changed:
		if got != alice+" docs" || m.SignedIn(alice, "docs") || !m.SignedIn(alice, "mail") {
			t.Fatalf("told %q; docs signed in %v, mail %v", got, m.SignedIn(alice, "docs"), m.SignedIn(alice, "mail"))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the sign-in whose record vanished while the watch was down was not ended")
	}
}
