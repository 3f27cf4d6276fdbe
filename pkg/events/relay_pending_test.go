package events

import (
	"testing"
	"time"
)

// A new term starts from the log's state with the entries its outbox
// still holds folded in (the relay publishes them first): a status they
// carry is already expected, so the term does not publish it again.
func TestRelayExpectedFoldsPending(t *testing.T) {
	ob, err := OpenOutbox(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	s := NewState()
	added := NewBackendAdded(time.Now(), "default", "alpha", BackendConfig{URL: "http://alpha.test/mcp"})
	added.Generation = 1
	if s, err = Apply(s, added); err != nil {
		t.Fatal(err)
	}
	if err := ob.Append(NewHealthChanged(time.Now(), "default", "alpha", "unknown", "healthy", true, "probe succeeded")); err != nil {
		t.Fatal(err)
	}
	r := &Relay{outbox: ob}
	got := r.withPending(s)
	if b := got.Backend("default", "alpha"); b == nil || b.Status != "healthy" || !b.Advertisable {
		t.Fatalf("expected state of alpha: %+v, want the pending healthy", b)
	}
	if b := s.Backend("default", "alpha"); b.Status == "healthy" {
		t.Fatal("the published state was changed in place")
	}
}
