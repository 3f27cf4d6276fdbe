package records

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// A live session whose record a flood evicted from the full bucket gets
// it back at its next write (counted as lost, then created), instead of
// ending as if its client had deleted it; new sessions are stored all
// along.
func TestRecorderRecreatesEvictedRecord(t *testing.T) {
	node := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const bucketBytes = 1 << 20
	if err := sessionstore.Provision(ctx, natstest.JetStream(t, node.ClientURL()), &sessionstore.ProvisionOptions{MaxBytes: bucketBytes}); err != nil {
		t.Fatal(err)
	}
	a := openRecords(t, node.ClientURL(), "a")
	const id = "session-evicted-1"
	s := a.reg.New(id, session.KindSession, "2025-11-25", "")
	a.reg.Open(s)
	a.r.Created(s, sessionstore.Record{ID: id, Group: "default", Mode: sessionstore.ModePassthrough,
		ProtocolVersion: "2025-11-25"}, time.Now())
	if _, _, err := a.r.Store().Get(ctx, id); err != nil {
		t.Fatalf("record after create: %v", err)
	}

	// Another client fills the bucket twice over.
	flood := a.r.Store()
	pad := strings.Repeat("f", flood.RecordLimit()/2)
	for i := range 2 * bucketBytes / len(pad) {
		rec := &sessionstore.Record{ID: fmt.Sprintf("flood-%06d", i), Group: "default", Mode: sessionstore.ModePassthrough,
			RegistryDigest: pad, CreatedAt: time.Now(), LastSeen: time.Now()}
		if _, err := flood.Create(ctx, rec); err != nil {
			t.Fatalf("flood record %d: %v", i, err)
		}
	}
	if _, _, err := a.r.Store().Get(ctx, id); err == nil {
		t.Fatal("the session's record survived a flood of twice the bucket")
	}

	s.Record().ViewApplied("digest-2", 2, nil)
	if err := a.r.Write(s, false); err != nil {
		t.Fatalf("write after eviction: %v", err)
	}
	if a.reg.Lookup(id) == nil {
		t.Fatal("the session ended on its edge when its record was evicted")
	}
	rec, _, err := a.r.Store().Get(ctx, id)
	if err != nil || rec.AppliedGeneration != 2 || rec.Edge != "a" {
		t.Fatalf("record written again: %+v, %v", rec, err)
	}
	if a.writes("lost") != 1 || a.writes("create") != 2 {
		t.Fatalf("writes: lost %v, create %v; want 1 and 2", a.writes("lost"), a.writes("create"))
	}
}
