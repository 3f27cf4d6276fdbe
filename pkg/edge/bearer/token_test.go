package bearer

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/calls"

	goauth "github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/fleetgate/fleetgate/pkg/auth"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

type otherKey struct{}

// TestTokenContext checks what a request's context with a verified token
// answers: the go-sdk's TokenInfo, the verifiedToken, the request's own
// values, and the request's cancellation (without a goroutine of
// context's own to carry it).
func TestTokenContext(t *testing.T) {
	id := &auth.Identity{Issuer: "https://issuer.example", Subject: "alice", Expiry: time.Now().Add(time.Hour)}
	owners, err := sessionstore.NewOwnerKey([]byte("a fleet's owner key, 32 bytes at least"))
	if err != nil {
		t.Fatal(err)
	}
	vt := verifiedTokenOf(id, owners)
	if vt == nil {
		t.Fatal("no verifiedToken")
	}
	if again := verifiedTokenOf(id, owners); again != vt {
		t.Fatal("a second lookup made another verifiedToken")
	}
	if other := verifiedTokenOf(&auth.Identity{Issuer: id.Issuer, Subject: "bob"}, owners); other == vt || other.ti.UserID == vt.ti.UserID {
		t.Fatal("two identities share a verifiedToken")
	}
	if vt.ti.UserID != tokenUser(id) || calls.TokenIdentity(vt.ti) != id {
		t.Fatalf("TokenInfo %+v does not name %+v", vt.ti, id)
	}
	if vt.owner != owners.Hash(tokenUser(id)) || vt.owner == sessionstore.OwnerHash(tokenUser(id)) {
		t.Fatal("owner hash is not the edge's keyed one")
	}

	parent, cancel := context.WithCancel(context.WithValue(context.Background(), otherKey{}, "mine"))
	ctx := withVerified(parent, vt)
	if got := goauth.TokenInfoFromContext(ctx); got != vt.ti {
		t.Fatalf("go-sdk TokenInfo %v, want %v", got, vt.ti)
	}
	if verifiedOf(ctx) != vt || verifiedOf(parent) != nil {
		t.Fatal("verifiedOf answers wrong")
	}
	if ctx.Value(otherKey{}) != "mine" {
		t.Fatal("the request's own value is lost")
	}
	if goauth.TokenInfoFromContext(vt.ctx) != vt.ti || vt.ctx.Value(otherKey{}) != nil ||
		vt.ctx.Value(http.ServerContextKey) != nil || vt.ctx.Value(http.LocalAddrContextKey) != nil {
		t.Fatal("the token's context carries more than its TokenInfo")
	}

	before := runtime.NumGoroutine()
	child, stop := context.WithCancel(ctx)
	defer stop()
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("WithCancel on a token context started %d goroutines", n-before)
	}
	cancel()
	select {
	case <-child.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the request's cancellation did not reach a child context")
	}
	if !errors.Is(child.Err(), context.Canceled) {
		t.Fatalf("child error %v", child.Err())
	}

	// ownerOf takes the token's hash only for the token's own user.
	r, _ := http.NewRequestWithContext(ctx, http.MethodPost, "/mcp", nil)
	if got := OwnerOf(r, vt.ti.UserID, owners); got != vt.owner {
		t.Fatalf("OwnerOf the token's user %q", got)
	}
	if got := OwnerOf(r, "someone else", owners); got != owners.Hash("someone else") {
		t.Fatalf("OwnerOf another identity %q", got)
	}
}
