package sessionstore

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A bucket made by an earlier version (a plain KV with subject delete
// markers, roll-ups allowed) is hardened and bounded by Provision, and a
// Nats-Rollup: all header no longer wipes it.
func TestProvisionHardensOlderBucket(t *testing.T) {
	node := startNode(t)
	ctx := testContext(t)
	js := connect(t, node)
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: DefaultBucket, History: 1, LimitMarkerTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := Provision(ctx, js, &ProvisionOptions{MaxBytes: 8 << 20}); err != nil {
		t.Fatalf("provision over an older bucket: %v", err)
	}
	st, err := js.Stream(ctx, "KV_"+DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	if cfg.AllowRollup || !cfg.DenyPurge || cfg.MaxBytes != 8<<20 || cfg.Discard != jetstream.DiscardOld ||
		cfg.MaxMsgSize != int32(RecordLimit(8<<20)+recordOverhead) {
		t.Fatalf("config after provision: rollup %v deny purge %v max bytes %d discard %v max message %d",
			cfg.AllowRollup, cfg.DenyPurge, cfg.MaxBytes, cfg.Discard, cfg.MaxMsgSize)
	}
	s, err := Open(ctx, js, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecord(newID(), time.Now())
	if _, err := s.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	m := &nats.Msg{Subject: "$KV." + DefaultBucket + ".zzzzzzzz", Header: nats.Header{"Nats-Rollup": []string{"all"}}}
	if _, err := js.PublishMsg(ctx, m); err == nil {
		t.Fatal("a roll-up of the whole bucket was accepted")
	}
	if _, _, err := s.Get(ctx, rec.ID); err != nil {
		t.Fatalf("record after the refused roll-up: %v", err)
	}
	// Provision again: nothing to change.
	if err := Provision(ctx, js, &ProvisionOptions{MaxBytes: 8 << 20}); err != nil {
		t.Fatal(err)
	}
}

// A full bucket takes every new record and evicts the least recently
// written ones: a flood of sessions never locks new ones out. An Update
// of an evicted record fails with ErrLost (not ErrNotFound, which means
// the client deleted it), and the record can be created again.
func TestFullBucketEvictsLeastRecent(t *testing.T) {
	node := startNode(t)
	ctx := testContext(t)
	js := connect(t, node)
	const bucketBytes = 1 << 20
	if err := Provision(ctx, js, &ProvisionOptions{MaxBytes: bucketBytes}); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, js, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.RecordLimit(), bucketBytes/MinRecords; got != want {
		t.Fatalf("record limit of a %d-byte bucket: %d, want %d", bucketBytes, got, want)
	}
	// The limit holds for every writer: the server refuses a larger
	// message, and the store says so before sending one.
	big := newRecord(newID(), t0)
	big.RegistryDigest = strings.Repeat("x", s.RecordLimit())
	var tl *TooLargeError
	if _, err := s.Create(ctx, big); !errors.As(err, &tl) || tl.Limit != s.RecordLimit() {
		t.Fatalf("record over the bucket's limit: %v, want a *TooLargeError at %d", err, s.RecordLimit())
	}

	// Twice the bucket's size in records of half the limit: every create
	// succeeds.
	n := 2 * bucketBytes / (s.RecordLimit() / 2)
	ids := make([]string, n)
	revs := make([]uint64, n)
	recs := make([]*Record, n)
	for i := range n {
		recs[i] = newRecord(newID(), t0)
		recs[i].RegistryDigest = strings.Repeat("d", s.RecordLimit()/2)
		ids[i] = recs[i].ID
		if revs[i], err = s.Create(ctx, recs[i]); err != nil {
			t.Fatalf("create %d of %d in a full bucket: %v", i, n, err)
		}
	}
	if _, _, err := s.Get(ctx, ids[0]); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the oldest record after the bucket filled twice over: %v, want ErrNotFound", err)
	}
	if _, _, err := s.Get(ctx, ids[n-1]); err != nil {
		t.Fatalf("the newest record: %v", err)
	}
	if _, err := s.Update(ctx, recs[0], revs[0]); !errors.Is(err, ErrLost) || errors.Is(err, ErrNotFound) {
		t.Fatalf("update of an evicted record: %v, want ErrLost", err)
	}
	if _, err := s.Create(ctx, recs[0]); err != nil {
		t.Fatalf("create an evicted record again: %v", err)
	}
	if err := s.Delete(ctx, ids[n-1]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, recs[n-1], revs[n-1]); !errors.Is(err, ErrNotFound) || errors.Is(err, ErrLost) {
		t.Fatalf("update of a deleted record: %v, want ErrNotFound", err)
	}
	if _, err := s.Update(ctx, recs[n-2], revs[n-2]); err != nil {
		t.Fatalf("update of a live record in the full bucket: %v", err)
	}
}

func TestRecordLimit(t *testing.T) {
	for _, c := range []struct {
		bucket int64
		want   int
	}{
		{DefaultMaxBytes, MaxRecordSize},
		{MinRecords * MaxRecordSize, MaxRecordSize},
		{1 << 20, 16 << 10},
		{1 << 10, 1 << 10},
	} {
		if got := RecordLimit(c.bucket); got != c.want {
			t.Errorf("RecordLimit(%d) = %d, want %d", c.bucket, got, c.want)
		}
	}
}
