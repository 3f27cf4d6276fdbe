package edge

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/session"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/policy"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// Resource subscriptions (resources/subscribe, 2025-11-25 sessions): the
// edge subscribes once per resource on the owning backend's pooled
// session (backend.Pool.Subscribe) and keeps here which of its sessions
// subscribed. A backend's notifications/resources/updated is owed to each
// of them and written on its standalone stream (stream.go), merged per
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

// resourceKey is a backend's resource, by the backend's own URI.
type resourceKey struct{ backend, uri string }

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
func (t *subscriptions) drop(e *Edge, s *session.Session) {
	for _, u := range t.uris(s) {
		if k := t.remove(s, u); k != nil {
			e.unsubscribeBackend(*k)
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
func (t *subscriptions) sessionsOf(backend, uri string) []subscriber {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []subscriber
	for s, exposed := range t.byResource[resourceKey{backend, uri}] {
		out = append(out, subscriber{s, exposed})
	}
	return out
}

// subscribe serves resources/subscribe of session s: the resource must be
// one the caller may see, of an advertisable backend.
func (e *Edge) subscribe(ctx context.Context, s *session.Session, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	if uri == "" || len(uri) > sessionstore.MaxSubscriptionURI {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("resources/subscribe: a URI of 1 to %d bytes", sessionstore.MaxSubscriptionURI)}
	}
	cur := e.current()
	entry, ok := cur.Catalog.Resource(uri)
	cfg, ok := e.calls.Reachable(cur, entry.Backend, ok, req.GetExtra(), policy.KindResource, uri)
	if !ok {
		return mcp.ResourceNotFoundError(uri)
	}
	own := entry.OriginalURI
	if own == "" {
		own = uri
	}
	first, full := e.subs.add(s, uri, resourceKey{entry.Backend, own})
	if full {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("resources/subscribe: at most %d subscriptions per session", sessionstore.MaxSubscriptions)}
	}
	if first {
		if err := e.pool.Subscribe(ctx, entry.Backend, cfg, own); err != nil {
			e.subs.remove(s, uri)
			return fmt.Errorf("resources/subscribe %q: %w", uri, err)
		}
	}
	e.subscriptionsChanged(s)
	return nil
}

// unsubscribe serves resources/unsubscribe of session s.
func (e *Edge) unsubscribe(_ context.Context, s *session.Session, req *mcp.UnsubscribeRequest) error {
	if k := e.subs.remove(s, req.Params.URI); k != nil {
		e.unsubscribeBackend(*k)
	}
	e.subscriptionsChanged(s)
	return nil
}

// unsubscribeBackend ends the edge's subscription to a backend's resource,
// in the background (a session that ends does not wait for it).
func (e *Edge) unsubscribeBackend(k resourceKey) {
	cfg, ok := e.calls.BackendConfig(k.backend)
	if !ok || !e.hj.Hold() {
		return // gone from the view: its pooled session goes with it
	}
	go func() {
		defer e.hj.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.pool.Unsubscribe(ctx, k.backend, cfg, k.uri); err != nil {
			e.log.Debug().Err(err).Str("backend", k.backend).Msg("resource unsubscribe failed")
		}
	}()
}

// subscriptionsChanged keeps s's record's subscriptions current.
func (e *Edge) subscriptionsChanged(s *session.Session) {
	if s.Kind() != session.KindSession {
		return // a listen stream has no record
	}
	uris := e.subs.uris(s)
	if s.Record().SetSubscriptions(uris) {
		e.recs.Enqueue(s)
	}
}

// resourceUpdated passes a backend's notifications/resources/updated (of
// its own URI) to every session of the edge subscribed to the resource,
// under the URI the session knows it by.
func (e *Edge) resourceUpdated(backend, uri string) {
	for _, sub := range e.subs.sessionsOf(backend, uri) {
		s, exposed := sub.s, sub.uri
		if s.Kind() == session.KindListen {
			// The go-sdk knows the stream it subscribed for.
			_ = s.Server().ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: exposed})
			continue
		}
		s.OweUpdate(exposed)
	}
}
