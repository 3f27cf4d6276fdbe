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

// The raw requests (tools/call, and Request's methods) of a per-caller
// backend go on the caller's session with the caller's exchanged token,
// as callStreamable's go on the shared session with the static headers.

// callAs is callStreamable for a per-caller backend.
func (p *Pool) callAs(ctx context.Context, call Call) (Reply, error) {
	params := encodeCallParams(call.Tool, call.Args, call.Meta)
	return rawAs(ctx, p, call.Backend, call.Config, "tools/call", call.Later, func(ctx context.Context, to peer) (Reply, error) {
		raw, shape, err := p.rawCall(ctx, to, "tools/call", params, call.Later)
		if err != nil {
			return Reply{}, err
		}
		if shape.plain {
			return Reply{Raw: raw, IsError: shape.isError, HasMeta: shape.meta}, nil
		}
		res, err := decodeToolResult(raw)
		if err != nil {
			return Reply{}, fmt.Errorf("decode result: %w", err)
		}
		return Reply{Res: res}, nil
	}, call.Relay)
}

// requestAs is Request for a per-caller backend.
func (p *Pool) requestAs(ctx context.Context, backend string, cfg events.BackendConfig, method string, params json.RawMessage, relay Relay) (json.RawMessage, error) {
	return rawAs(ctx, p, backend, cfg, method, nil, func(ctx context.Context, to peer) (json.RawMessage, error) {
		raw, _, err := p.rawCall(ctx, to, method, params, nil)
		return raw, err
	}, relay)
}

// rawAs runs op by Do's rules on the caller's session of backend with its
// headers: the static ones and the caller's exchanged token. A backend
// answering 401 makes the next call exchange the token again; for a
// signed-in user's token (user_oauth), the request is sent once more at
// once with a refreshed token.
func rawAs[T any](ctx context.Context, p *Pool, backend string, cfg events.BackendConfig, method string, later *Closings,
	op func(context.Context, peer) (T, error), relay Relay) (T, error) {
	var zero T
	c, err := p.connOf(ctx, backend, cfg)
	if err != nil {
		return zero, callError(backend, method, err)
	}
	return Do(ctx, p, backend, cfg, method, later, func(ctx context.Context, cs *mcp.ClientSession) (T, error) {
		to := peer{url: cfg.URL, sid: cs.ID(), relay: relay, creds: http.Header{}}
		if err := c.creds.Apply(to.creds); err != nil {
			return zero, err
		}
		v, err := c.user.authorization(ctx)
		if err != nil {
			return zero, err
		}
		to.creds["Authorization"] = []string{v}
		res, err := op(ctx, to)
		if st := (*errHTTPStatus)(nil); errors.As(err, &st) && st.code == http.StatusUnauthorized {
			c.user.forget()
			if c.user.auth.SignIn() {
				// The backend refused the user's access token before
				// running anything: once more with a refreshed one.
				if v, err = c.user.authorization(ctx); err != nil {
					return zero, err
				}
				to.creds["Authorization"] = []string{v}
				return op(ctx, to)
			}
		}
		return res, err
	})
}
