package backend

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/events"
)

// The edge subscribes to a backend's resource once, on the pooled session,
// however many of its clients subscribed to it (the edge keeps who did);
// the backend's notifications/resources/updated arrive on the pooled
// session's standalone stream and are passed to OnResourceUpdated. A new
// pooled session (the backend restarted, the session was lost) subscribes
// to every resource again.

// OnResourceUpdated sets what hears a backend's
// notifications/resources/updated: the backend's name and the resource's
// URI. It is set before the pool is used.
func (p *Pool) OnResourceUpdated(f func(backend, uri string)) { p.updated = f }

// resourceUpdated is the pooled client's handler of
// notifications/resources/updated.
func (p *Pool) resourceUpdated(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	if p.updated == nil || req.Params == nil || req.Params.URI == "" {
		return
	}
	if name, ok := p.sessionNames.Load(req.Session); ok {
		p.updated(name.(string), req.Params.URI)
	}
}

// Subscribe subscribes to resource uri of backend on its pooled session,
// and on every later one, until Unsubscribe.
func (p *Pool) Subscribe(ctx context.Context, backend string, cfg events.BackendConfig, uri string) error {
	c := p.conn(backend, cfg)
	c.mu.Lock()
	if c.subs == nil {
		c.subs = map[string]bool{}
	}
	c.subs[uri] = true
	c.mu.Unlock()
	_, err := Do(ctx, p, backend, cfg, "resources/subscribe", nil, func(ctx context.Context, cs *mcp.ClientSession) (struct{}, error) {
		return struct{}{}, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	})
	if err != nil {
		c.mu.Lock()
		delete(c.subs, uri)
		c.mu.Unlock()
	}
	return err
}

// Unsubscribe ends the subscription to resource uri of backend.
func (p *Pool) Unsubscribe(ctx context.Context, backend string, cfg events.BackendConfig, uri string) error {
	c := p.conn(backend, cfg)
	c.mu.Lock()
	delete(c.subs, uri)
	c.mu.Unlock()
	_, err := Do(ctx, p, backend, cfg, "resources/unsubscribe", nil, func(ctx context.Context, cs *mcp.ClientSession) (struct{}, error) {
		return struct{}{}, cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	})
	return err
}
