package edge

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/events"
)

// mailBackend is a go-sdk backend whose resource inbox://mine is each
// user's own: one server per user the bearer token was issued for, so
// an update of one user's inbox goes to that user's sessions subscribed
// to it, as a hosted server acting for each user does.
type mailBackend struct {
	url     string
	mu      sync.Mutex
	servers map[string]*mcp.Server // by user; "" is the catalog's lister's
}

func startMailBackend(t testing.TB, idp *issuertest.Issuer) *mailBackend {
	t.Helper()
	mb := &mailBackend{servers: map[string]*mcp.Server{}}
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		user, ok := idp.Subject(tok)
		if !ok && r.Header.Get("X-Probe-Key") != docsProbeKey {
			return nil
		}
		return mb.server(user)
	}, nil)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	mb.url = srv.URL + "/mcp"
	return mb
}

func (mb *mailBackend) server(user string) *mcp.Server {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if s := mb.servers[user]; s != nil {
		return s
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "mail", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	s.AddResource(&mcp.Resource{URI: "inbox://mine", Name: "inbox"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: user + "'s inbox"}}}, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "whoami"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: user}}}, nil, nil
	})
	mb.servers[user] = s
	return s
}

// TestPerCallerResourceSubscriptions: two users of a backend with
// per-caller credentials (token exchange) subscribe through the edge to
// the same resource URI, which is each one's own: each subscription goes
// to that user's own backend session, and an update of one user's
// resource is heard by that user only.
func TestPerCallerResourceSubscriptions(t *testing.T) {
	f := newSharedFleet(t)
	idp := issuertest.New(t, nil)
	idp.SetClient("fleetgate-edge", "sts-secret")
	t.Setenv("PERCALLER_SUBSCRIBE_STS_SECRET", "sts-secret")
	mail := startMailBackend(t, idp)
	cfg := events.BackendConfig{URL: mail.url, Transport: "streamable-http",
		Auth: &credential.Auth{Type: credential.AuthTokenExchange, TokenURL: idp.TokenURL(), Audience: "https://mail.example",
			ClientID: "fleetgate-edge", ClientSecret: credential.Ref{Env: "PERCALLER_SUBSCRIBE_STS_SECRET"}}}
	f.publish(events.NewBackendAdded(time.Now(), "default", "mail", cfg))
	f.catalog("default", "mail", listCatalogVia(t, &mcp.StreamableClientTransport{Endpoint: mail.url, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: probeTransport{}}}))
	f.health("default", "mail", true)
	e := startRecordEdge(t, f, "edge-a", nil, func(o *Options) {
		o.IdentityHeader = ""
		o.Auth = &AuthOptions{Issuer: idp.URL(), Audience: signInAudience, HTTPClient: idp.Client()}
	})
	eventually(t, 10*time.Second, "mail served", func() bool { return len(e.current().Catalog.Tools) == 1 })
	user := func(name string) *askedClient {
		tok := idp.Mint(idp.Claims(name, signInAudience))
		return connectAskedWith(t, e.MCPURL(), false, tokenHTTP(func() string { return tok }))
	}
	alice, bob := user("alice"), user("bob")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	list, err := alice.cs.ListResources(ctx, nil)
	if err != nil || len(list.Resources) != 1 {
		t.Fatalf("resources: %+v %v", list, err)
	}
	uri := list.Resources[0].URI
	for _, c := range []*askedClient{alice, bob} {
		if err := c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range []string{"alice", "bob"} {
		if err := mail.server(u).ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "inbox://mine"}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, "each user's update", func() bool {
		return len(alice.updatesHeard()) >= 1 && len(bob.updatesHeard()) >= 1
	})
	if err := mail.server("alice").ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "inbox://mine"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "alice's second update", func() bool { return len(alice.updatesHeard()) == 2 })
	if got := bob.updatesHeard(); len(got) != 1 {
		t.Fatalf("bob heard %v: alice's update reached him", got)
	}
	if got := e.calls.Subscribers("mail", "", "inbox://mine"); got != 0 {
		t.Fatalf("%d subscribers on the shared session, want 0", got)
	}

	// A 2026-07-28 client subscribes on its subscriptions/listen stream
	// (the go-sdk makes the subscription without the request's extra: the
	// stream's verified token is the caller): carol's update reaches her
	// stream, and no one else.
	tok := idp.Mint(idp.Claims("carol", signInAudience))
	var carolHeard atomic.Int64
	carol, err := mcp.NewClient(&mcp.Implementation{Name: "listener"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(context.Context, *mcp.ResourceUpdatedNotificationRequest) { carolHeard.Add(1) }}).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: e.MCPURL(), MaxRetries: -1, HTTPClient: tokenHTTP(func() string { return tok })},
		&mcp.ClientSessionOptions{ProtocolVersion: newProtocol})
	if err != nil {
		t.Fatal(err)
	}
	defer carol.Close()
	if err := carol.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("carol's 2026-07-28 subscription: %v", err)
	}
	if err := mail.server("carol").ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "inbox://mine"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "carol's update on her listen stream", func() bool { return carolHeard.Load() == 1 })
	if a, b := len(alice.updatesHeard()), len(bob.updatesHeard()); a != 2 || b != 1 {
		t.Fatalf("alice heard %d, bob %d after carol's update", a, b)
	}
}
