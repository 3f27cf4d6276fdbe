package backend

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/auth"
)

// userResources is a go-sdk backend whose resource inbox://mine is each
// user's own: one server per user (the user the exchanged token was
// issued for), so an update of one user's inbox reaches only the sessions
// of that user subscribed to it.
type userResources struct {
	f       *exchangeFixture
	mu      sync.Mutex
	servers map[string]*mcp.Server
	subs    map[string][]string // user -> URIs subscribed, in order (unsubscribed: "-uri")
}

func (u *userResources) server(user string) *mcp.Server {
	u.mu.Lock()
	defer u.mu.Unlock()
	if s := u.servers[user]; s != nil {
		return s
	}
	note := func(uri string) {
		u.mu.Lock()
		u.subs[user] = append(u.subs[user], uri)
		u.mu.Unlock()
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "mail", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler:   func(_ context.Context, r *mcp.SubscribeRequest) error { note(r.Params.URI); return nil },
		UnsubscribeHandler: func(_ context.Context, r *mcp.UnsubscribeRequest) error { note("-" + r.Params.URI); return nil },
	})
	s.AddResource(&mcp.Resource{URI: "inbox://mine", Name: "inbox"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: user + "'s inbox"}}}, nil
	})
	u.servers[user] = s
	return s
}

func (u *userResources) subscribed(user string) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.subs[user]...)
}

// TestPerCallerSubscriptions: a backend with per-caller credentials gets
// each user's resource subscriptions on that user's own session, with
// that user's token; an update on one user's session names that user
// only; the unsubscription goes to the same session; a per-caller session
// holding subscriptions is neither closed as idle nor chosen first when
// the bound closes one.
func TestPerCallerSubscriptions(t *testing.T) {
	f := newExchangeFixture(t, CallerOptions{MaxSessions: 2, Idle: time.Hour})
	u := &userResources{f: f, servers: map[string]*mcp.Server{}, subs: map[string][]string{}}
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		user, ok := f.iss.Subject(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		if !ok {
			return nil
		}
		return u.server(user)
	}, nil)
	be := httptest.NewServer(h)
	t.Cleanup(func() { f.p.CloseAll(); be.Close() }) // the sessions' streams first
	f.cfg.URL = be.URL + "/mcp"
	type update struct{ backend, caller, uri string }
	heard := make(chan update, 8)
	f.p.OnResourceUpdated(func(backend, caller, uri string) { heard <- update{backend, caller, uri} })

	alice, bob := f.identity(t, "alice"), f.identity(t, "bob")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := f.p.Subscribe(WithCaller(ctx, alice), "mail", f.cfg, "inbox://mine"); err != nil {
		t.Fatal(err)
	}
	if got := u.subscribed("alice"); len(got) != 1 || got[0] != "inbox://mine" {
		t.Fatalf("alice's backend subscriptions: %v", got)
	}
	// Bob has a session (a call) but no subscription.
	if _, err := Do(WithCaller(ctx, bob), f.p, "mail", f.cfg, "resources/read", nil, func(ctx context.Context, cs *mcp.ClientSession) (*mcp.ReadResourceResult, error) {
		return cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "inbox://mine"})
	}); err != nil {
		t.Fatal(err)
	}
	if got := u.subscribed("bob"); len(got) != 0 {
		t.Fatalf("bob's backend subscriptions: %v (alice's subscription went to bob's session)", got)
	}
	if err := u.server("bob").ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "inbox://mine"}); err != nil {
		t.Fatal(err)
	}
	if err := u.server("alice").ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "inbox://mine"}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-heard:
		if want := (update{"mail", CallerKey(alice), "inbox://mine"}); got != want {
			t.Fatalf("update heard: %+v, want %+v", got, want)
		}
	case <-ctx.Done():
		t.Fatal("alice's update not heard")
	}

	// Idle (both last used an hour and a second ago): bob's session
	// closes, alice's, which holds a subscription, stays.
	f.p.callers.mu.Lock()
	for _, c := range f.p.callers.conns {
		c.user.used.Store(time.Now().Add(-time.Hour - time.Second).UnixNano())
	}
	f.p.callers.mu.Unlock()
	f.p.sweepCallers()
	f.p.callers.mu.Lock()
	_, aliceOpen := f.p.callers.conns[callerConnKey{"mail", CallerKey(alice)}]
	_, bobOpen := f.p.callers.conns[callerConnKey{"mail", CallerKey(bob)}]
	f.p.callers.mu.Unlock()
	if !aliceOpen || bobOpen {
		t.Fatalf("after the idle sweep: alice's session open %v, bob's %v; want true, false", aliceOpen, bobOpen)
	}
	// The bound (2): carol and dave's sessions; the one closed for dave is
	// carol's, used after alice's, since alice's holds a subscription.
	for _, sub := range []string{"carol", "dave"} {
		if _, err := Do(WithCaller(ctx, f.identity(t, sub)), f.p, "mail", f.cfg, "resources/list", nil, func(ctx context.Context, cs *mcp.ClientSession) (*mcp.ListResourcesResult, error) {
			return cs.ListResources(ctx, nil)
		}); err != nil {
			t.Fatal(err)
		}
	}
	f.p.callers.mu.Lock()
	_, aliceOpen = f.p.callers.conns[callerConnKey{"mail", CallerKey(alice)}]
	n := len(f.p.callers.conns)
	f.p.callers.mu.Unlock()
	if !aliceOpen || n != 2 {
		t.Fatalf("after the bound closed one: alice's session open %v, %d sessions", aliceOpen, n)
	}

	// Unsubscribed on alice's session; bob's unsubscription, who has none,
	// sends nothing.
	if err := f.p.Unsubscribe(ctx, "mail", f.cfg, CallerKey(alice), "inbox://mine"); err != nil {
		t.Fatal(err)
	}
	if err := f.p.Unsubscribe(ctx, "mail", f.cfg, CallerKey(bob), "inbox://mine"); err != nil {
		t.Fatal(err)
	}
	if got := u.subscribed("alice"); len(got) != 2 || got[1] != "-inbox://mine" {
		t.Fatalf("alice's backend subscriptions: %v", got)
	}
	if got := u.subscribed("bob"); len(got) != 0 {
		t.Fatalf("bob's backend subscriptions: %v", got)
	}
}

// At the bound with every session subscribed, a new caller closes a
// subscribed session: its subscriptions are parked, and its caller's next
// session subscribes to them again, so that its updates are heard.
func TestPerCallerSubscriptionsParked(t *testing.T) {
	f := newExchangeFixture(t, CallerOptions{MaxSessions: 1, Idle: time.Hour})
	u := &userResources{f: f, servers: map[string]*mcp.Server{}, subs: map[string][]string{}}
	be := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		user, ok := f.iss.Subject(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		if !ok {
			return nil
		}
		return u.server(user)
	}, nil))
	t.Cleanup(func() { f.p.CloseAll(); be.Close() })
	f.cfg.URL = be.URL + "/mcp"
	heard := make(chan string, 8)
	f.p.OnResourceUpdated(func(_, caller, _ string) { heard <- caller })
	alice, bob := f.identity(t, "alice"), f.identity(t, "bob")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := f.p.Subscribe(WithCaller(ctx, alice), "mail", f.cfg, "inbox://mine"); err != nil {
		t.Fatal(err)
	}
	read := func(id *auth.Identity) {
		t.Helper()
		if _, err := Do(WithCaller(ctx, id), f.p, "mail", f.cfg, "resources/read", nil, func(ctx context.Context, cs *mcp.ClientSession) (*mcp.ReadResourceResult, error) {
			return cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "inbox://mine"})
		}); err != nil {
			t.Fatal(err)
		}
	}
	read(bob)   // closes alice's session, the only one
	read(alice) // her next session
	if got := u.subscribed("alice"); len(got) != 2 || got[1] != "inbox://mine" {
		t.Fatalf("alice's backend subscriptions: %v, want her next session subscribed again", got)
	}
	if err := u.server("alice").ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "inbox://mine"}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-heard:
		if got != CallerKey(alice) {
			t.Fatalf("update heard for %q", got)
		}
	case <-ctx.Done():
		t.Fatal("alice's update not heard after her session was closed and made again")
	}
	// Unsubscribed while parked: the next session does not subscribe.
	read(bob)
	if err := f.p.Unsubscribe(ctx, "mail", f.cfg, CallerKey(alice), "inbox://mine"); err != nil {
		t.Fatal(err)
	}
	read(alice)
	if got := u.subscribed("alice"); len(got) != 2 {
		t.Fatalf("alice's backend subscriptions: %v after she unsubscribed", got)
	}
}
