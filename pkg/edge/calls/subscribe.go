package calls

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/backend"
	"github.com/fleetgate/fleetgate/pkg/edge/session"

	goauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/policy"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// Resource subscriptions (resources/subscribe, 2025-11-25 sessions): the
// edge subscribes once per resource on the owning backend's pooled
// session (backend.Pool.Subscribe) and keeps here which of its sessions
// subscribed. A backend's notifications/resources/updated is owed to each
// of them and written on its standalone stream (package session), merged per
// URI while the client is not reading. A session's subscriptions are in
// its record: an edge that rebuilds a moved session subscribes again.
// A 2026-07-28 subscriptions/listen with resourceSubscriptions is served
// by the go-sdk, which calls the same handlers for each URI when the
// stream opens and when it ends; its updates are sent through the
// listen session's go-sdk server, on the listen stream.

// subscriptions are the resource subscriptions of an edge's sessions.
type subscriptions struct {
	mu         sync.Mutex
	bySession  map[*session.Session]map[string]resourceKey // exposed URI -> the backend's resource
	byResource map[resourceKey]map[*session.Session]string // who is subscribed, by the exposed URI
}

// resourceKey is a backend's resource, by the backend's own URI, as one
// caller sees it: caller is the CallerKey of the session's identity for a
// backend with per-caller credentials (its resources are that user's, and
// subscribed on that user's backend session), "" otherwise.
type resourceKey struct{ backend, caller, uri string }

// add notes that s subscribed to the resource exposed as uri, resource k
// of its backend; first says no other session of the edge is, and full
// that s has its maximum.
func (t *subscriptions) add(s *session.Session, uri string, k resourceKey) (first, full bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bySession == nil {
		t.bySession, t.byResource = map[*session.Session]map[string]resourceKey{}, map[resourceKey]map[*session.Session]string{}
	}
	own := t.bySession[s]
	if _, ok := own[uri]; !ok && len(own) >= sessionstore.MaxSubscriptions {
		return false, true
	}
	if own == nil {
		own = map[string]resourceKey{}
		t.bySession[s] = own
	}
	own[uri] = k
	if t.byResource[k] == nil {
		t.byResource[k] = map[*session.Session]string{}
	}
	first = len(t.byResource[k]) == 0
	t.byResource[k][s] = uri
	return first, false
}

// remove notes that s no longer subscribes to uri; last names the
// backend's resource no session of the edge subscribes to any more.
func (t *subscriptions) remove(s *session.Session, uri string) (last *resourceKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k, ok := t.bySession[s][uri]
	if !ok {
		return nil
	}
	delete(t.bySession[s], uri)
	if len(t.bySession[s]) == 0 {
		delete(t.bySession, s)
	}
	delete(t.byResource[k], s)
	if len(t.byResource[k]) == 0 {
		delete(t.byResource, k)
		return &k
	}
	return nil
}

// uris are s's subscriptions, sorted.
func (t *subscriptions) uris(s *session.Session) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for u := range t.bySession[s] {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

// drop ends every subscription of s (its session is over).
func (t *subscriptions) drop(pl *Plane, s *session.Session) {
	for _, u := range t.uris(s) {
		if k := t.remove(s, u); k != nil {
			pl.unsubscribeBackend(*k)
		}
	}
}

// subscriber is a session subscribed to a resource, and the URI it knows
// the resource by.
type subscriber struct {
	s   *session.Session
	uri string
}

// sessionsOf are the sessions subscribed to uri of backend (the backend's
// own URI).
func (t *subscriptions) sessionsOf(k resourceKey) []subscriber {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []subscriber
	for s, exposed := range t.byResource[k] {
		out = append(out, subscriber{s, exposed})
	}
	return out
}

// subscribe serves resources/subscribe of session s: the resource must be
// one the caller may see, of an advertisable backend.
func (pl *Plane) Subscribe(ctx context.Context, s *session.Session, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	if uri == "" || len(uri) > sessionstore.MaxSubscriptionURI {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("resources/subscribe: a URI of 1 to %d bytes", sessionstore.MaxSubscriptionURI)}
	}
	x := pl.subscriberOf(ctx, s, req)
	cur := pl.o.View()
	entry, ok := cur.Catalog.Resource(uri)
	cfg, ok := pl.Reachable(cur, entry.Backend, ok, x, policy.KindResource, uri)
	if !ok {
		return mcp.ResourceNotFoundError(uri)
	}
	own := entry.OriginalURI
	if own == "" {
		own = uri
	}
	caller := ""
	if cfg.Auth.PerCaller() {
		id := TokenIdentity(x.TokenInfo)
		if id == nil { // the backend acts for each user: no user, no subscription
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("resources/subscribe %q: the backend acts for each user, and this request has no verified user", uri)}
		}
		caller = backend.CallerKey(id)
		ctx = backend.WithCaller(ctx, id)
	}
	first, full := pl.subs.add(s, uri, resourceKey{entry.Backend, caller, own})
	if full {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("resources/subscribe: at most %d subscriptions per session", sessionstore.MaxSubscriptions)}
	}
	if first {
		if err := pl.o.Pool.Subscribe(ctx, entry.Backend, cfg, own); err != nil {
			pl.subs.remove(s, uri)
			return fmt.Errorf("resources/subscribe %q: %w", uri, err)
		}
	}
	pl.subscriptionsChanged(s)
	return nil
}

// subscriberOf is who subscribes: the request's token and headers. A
// 2026-07-28 subscription, made by the go-sdk from a subscriptions/listen
// stream, carries none: the stream's request's verified token is in ctx,
// and the identity is the listen session's (its caller's, by the header
// or the token).
func (pl *Plane) subscriberOf(ctx context.Context, s *session.Session, req *mcp.SubscribeRequest) *mcp.RequestExtra {
	if x := req.GetExtra(); x != nil {
		return x
	}
	x := &mcp.RequestExtra{TokenInfo: goauth.TokenInfoFromContext(ctx), Header: http.Header{}}
	if pl.o.IdentityHeader != "" && s.Identity() != "" {
		x.Header.Set(pl.o.IdentityHeader, s.Identity())
	}
	return x
}

// unsubscribe serves resources/unsubscribe of session s.
func (pl *Plane) Unsubscribe(_ context.Context, s *session.Session, req *mcp.UnsubscribeRequest) error {
	if k := pl.subs.remove(s, req.Params.URI); k != nil {
		pl.unsubscribeBackend(*k)
	}
	pl.subscriptionsChanged(s)
	return nil
}

// unsubscribeBackend ends the edge's subscription to a backend's resource,
// in the background (a session that ends does not wait for it).
func (pl *Plane) unsubscribeBackend(k resourceKey) {
	cfg, ok := pl.BackendConfig(k.backend)
	if !ok || !pl.o.Background.Hold() {
		return // gone from the view: its pooled session goes with it
	}
	go func() {
		defer pl.o.Background.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := pl.o.Pool.Unsubscribe(ctx, k.backend, cfg, k.caller, k.uri); err != nil {
			pl.o.Log.Debug().Err(err).Str("backend", k.backend).Msg("resource unsubscribe failed")
		}
	}()
}

// subscriptionsChanged keeps s's record's subscriptions current.
func (pl *Plane) subscriptionsChanged(s *session.Session) {
	if s.Kind() != session.KindSession || pl.o.SubscriptionsChanged == nil {
		return // a listen stream has no record
	}
	pl.o.SubscriptionsChanged(s, pl.subs.uris(s))
}

// Forget ends the resource subscriptions of s (its session ended).
func (pl *Plane) Forget(s *session.Session) { pl.subs.drop(pl, s) }

// Subscriptions are the URIs s is subscribed to, sorted.
func (pl *Plane) Subscriptions(s *session.Session) []string { return pl.subs.uris(s) }

// resourceUpdated passes a backend's notifications/resources/updated (of
// its own URI, on the session of caller, "" for the shared one) to every
// session of the edge subscribed to the resource as that caller, under
// the URI the session knows it by.
func (pl *Plane) ResourceUpdated(backend, caller, uri string) {
	for _, sub := range pl.subs.sessionsOf(resourceKey{backend, caller, uri}) {
		s, exposed := sub.s, sub.uri
		if s.Kind() == session.KindListen {
			// The go-sdk knows the stream it subscribed for.
			_ = s.Server().ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: exposed})
			continue
		}
		s.OweUpdate(exposed)
	}
}

// Subscribers counts the sessions subscribed to a backend's resource
// (by the backend's own URI) as caller ("" for a backend without
// per-caller credentials).
func (pl *Plane) Subscribers(backend, caller, uri string) int {
	return len(pl.subs.sessionsOf(resourceKey{backend, caller, uri}))
}
