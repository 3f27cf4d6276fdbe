package edge

import (
	"net/http"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// With an owner key, a session's record holds the keyed owner, not the
// hash anyone can compute from the identity; a record an edge without
// the key wrote is still its owner's on a keyed edge (and nobody
// else's), and is rewritten keyed when that edge takes the session over.
// An edge of another key does not serve a keyed record.
func TestOwnerKeyedRecords(t *testing.T) {
	key, err := sessionstore.NewOwnerKey([]byte("the fleet's session owner secret, 32+ bytes"))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := sessionstore.NewOwnerKey([]byte("another fleet's owner secret, 32+ bytes!!"))
	keyed := func(k *sessionstore.OwnerKey) func(*Options) { return func(o *Options) { o.OwnerKey = k } }
	f := newSharedFleet(t)
	old := startRecordEdge(t, f, "old", nil, nil)
	a := startRecordEdge(t, f, "a", nil, keyed(key))
	b := startRecordEdge(t, f, "b", nil, keyed(key))
	c := startRecordEdge(t, f, "c", nil, keyed(other))

	fresh := connectAs(t, a.MCPURL(), "alice", true).cs.ID()
	if rec := stored(t, a.Edge, fresh); rec == nil || rec.Owner != key.Hash("alice") || rec.Owner == sessionstore.OwnerHash("alice") {
		t.Fatalf("record of a keyed edge's session: %+v", rec)
	}
	if code := rawRequest(t, http.MethodPost, b.MCPURL(), fresh, "alice", pingBody()); code != http.StatusOK {
		t.Fatalf("alice on b, same key: %d", code)
	}
	if code := rawRequest(t, http.MethodPost, c.MCPURL(), fresh, "alice", pingBody()); code != http.StatusForbidden {
		t.Fatalf("alice on c, another key: %d, want 403", code)
	}

	legacy := connectAs(t, old.MCPURL(), "alice", true).cs.ID()
	if rec := stored(t, old.Edge, legacy); rec == nil || rec.Owner != sessionstore.OwnerHash("alice") {
		t.Fatalf("record of an edge without a key: %+v", rec)
	}
	if code := rawRequest(t, http.MethodPost, a.MCPURL(), legacy, "mallory", pingBody()); code != http.StatusForbidden {
		t.Fatalf("mallory on a with an unkeyed record: %d, want 403", code)
	}
	if code := rawRequest(t, http.MethodDelete, a.MCPURL(), legacy, "mallory", ""); code != http.StatusForbidden {
		t.Fatalf("mallory's DELETE on a with an unkeyed record: %d, want 403", code)
	}
	if code := rawRequest(t, http.MethodPost, a.MCPURL(), legacy, "alice", pingBody()); code != http.StatusOK {
		t.Fatalf("alice on a with an unkeyed record: %d", code)
	}
	if rec := stored(t, a.Edge, legacy); rec == nil || rec.Owner != key.Hash("alice") || rec.Edge != "a" {
		t.Fatalf("record after a took the session over: %+v, want the keyed owner", rec)
	}
	if code := rawRequest(t, http.MethodPost, b.MCPURL(), legacy, "alice", pingBody()); code != http.StatusOK {
		t.Fatalf("alice on b after the migration: %d", code)
	}
}
