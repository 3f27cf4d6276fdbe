package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/events"
)

// ErrRawUnsupported: the backend's pooled session is a go-sdk one (an SSE
// backend, or one with a link-local allowance), which sends only the
// methods the go-sdk knows; Request cannot reach it.
var ErrRawUnsupported = errors.New("the backend's transport takes only the go-sdk's methods")

// Request sends one JSON-RPC request, method with params (one encoded
// JSON value), on backend's pooled session and returns the raw result:
// for the methods the go-sdk client has no call for (tasks/*, a tools/call
// with a task). The retry rules are Do's; a JSON-RPC error of the backend
// comes back as a *Error of KindRPCError with its code and message.
// Notifications and requests of the backend during the request go to
// relay (nil: dropped, each request answered with an error).
func (p *Pool) Request(ctx context.Context, backend string, cfg events.BackendConfig, method string, params json.RawMessage, relay Relay) (json.RawMessage, error) {
	if isSSE(cfg) || isStdio(cfg) || cfg.AllowLinkLocal {
		return nil, backendError(backend, method, fmt.Errorf("%s: %w", method, ErrRawUnsupported))
	}
	if !json.Valid(params) {
		return nil, backendError(backend, method, fmt.Errorf("%s: params are not one JSON value", method))
	}
	if perCaller(cfg) {
		return p.requestAs(ctx, backend, cfg, method, params, relay) // callas.go
	}
	var c *backendConn
	if len(cfg.Headers) > 0 {
		c = p.conn(backend, cfg)
	}
	return Do(ctx, p, backend, cfg, method, nil, func(ctx context.Context, cs *mcp.ClientSession) (json.RawMessage, error) {
		to := peer{url: cfg.URL, sid: cs.ID(), relay: relay}
		if c != nil {
			to.creds = http.Header{}
			if err := c.creds.Apply(to.creds); err != nil {
				return nil, err
			}
		}
		raw, _, err := p.rawCall(ctx, to, method, params, nil)
		return raw, err
	})
}
