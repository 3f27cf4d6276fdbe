package bearer

import (
	"context"
	"net/http"

	"github.com/fleetgate/fleetgate/pkg/edge/calls"

	goauth "github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/fleetgate/fleetgate/pkg/auth"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// A verified token travels with each of its requests as a verifiedToken
// on the request's context: the go-sdk's TokenInfo (which its handlers
// give method handlers as RequestExtra.TokenInfo and its session binding
// compares) and what the edge derives from it. All of it is made once
// per token the verifier caches, not once per request: a cached caller's
// request pays an atomic load and one context wrapper.

// verifiedToken is what one verified token gives its requests.
type verifiedToken struct {
	ti    *goauth.TokenInfo
	owner string          // ti.UserID's owner hash (the edge's OwnerKey): the owner of the sessions it opens
	ctx   context.Context // carries ti under the go-sdk's own key, and nothing else
}

// newVerifiedToken makes id's verifiedToken; nil if the go-sdk would not
// take its TokenInfo.
func newVerifiedToken(id *auth.Identity, owners *sessionstore.OwnerKey) *verifiedToken {
	ti := &goauth.TokenInfo{UserID: tokenUser(id), Scopes: id.Scopes, Expiration: id.Expiry,
		Extra: map[string]any{calls.ClaimsKey: id}}
	vt := &verifiedToken{ti: ti, owner: owners.Hash(ti.UserID)}
	// The go-sdk's context key is unexported: its RequireBearerToken
	// middleware is the one way to set it. It runs here once, on a
	// request of its own, with a verifier that answers ti (the token was
	// verified already, expiry included: the verifier's cache lets go of
	// an identity when its token expires).
	r, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "/", nil)
	if err != nil {
		return nil
	}
	r.Header.Set("Authorization", "Bearer verified")
	goauth.RequireBearerToken(func(context.Context, string, *http.Request) (*goauth.TokenInfo, error) { return ti, nil },
		&goauth.RequireBearerTokenOptions{AllowMissingExpiration: true, ClockSkew: tokenInfoSkew})(
		http.HandlerFunc(func(_ http.ResponseWriter, r2 *http.Request) { vt.ctx = r2.Context() })).ServeHTTP(discardWriter{}, r)
	if vt.ctx == nil || goauth.TokenInfoFromContext(vt.ctx) != ti {
		return nil
	}
	return vt
}

// tokenInfoSkew is the go-sdk middleware's clock skew for a verified
// token's expiry: the verifier decided it, with its own leeway.
const tokenInfoSkew = 1 << 62

// verifiedTokenOf is id's verifiedToken: made on first use and kept with
// the identity (auth.Identity.Memo), which the verifier shares among the
// requests of one token while it caches it; nil as newVerifiedToken.
func verifiedTokenOf(id *auth.Identity, owners *sessionstore.OwnerKey) *verifiedToken {
	vt, _ := id.Memo(func(id *auth.Identity) any { return newVerifiedToken(id, owners) }).(*verifiedToken)
	return vt
}

// verifiedKey is the context key of a request's verifiedToken.
type verifiedKey struct{}

// tokenContext is a request's context with its verifiedToken: the
// go-sdk finds the TokenInfo under its key, the edge the verifiedToken
// under verifiedKey, and every other value, the deadline and the
// cancellation are the request's own.
type tokenContext struct {
	context.Context
	vt *verifiedToken
}

func (c tokenContext) Value(k any) any {
	if _, ok := k.(verifiedKey); ok {
		return c.vt
	}
	if v := c.vt.ctx.Value(k); v != nil { // only the go-sdk's TokenInfo is there
		return v
	}
	return c.Context.Value(k)
}

// withVerified returns ctx carrying vt.
func withVerified(ctx context.Context, vt *verifiedToken) context.Context {
	return tokenContext{Context: ctx, vt: vt}
}

// verifiedOf is the verifiedToken ctx carries; nil without one.
func verifiedOf(ctx context.Context) *verifiedToken {
	vt, _ := ctx.Value(verifiedKey{}).(*verifiedToken)
	return vt
}

// OwnerOf is owners.Hash(ident) for request r, taken from its verified
// token when ident is the token's user (computed once per token, with the
// Authenticator's key: the edge's, the same as owners).
func OwnerOf(r *http.Request, ident string, owners *sessionstore.OwnerKey) string {
	if vt := verifiedOf(r.Context()); vt != nil && vt.ti.UserID == ident {
		return vt.owner
	}
	return owners.Hash(ident)
}
