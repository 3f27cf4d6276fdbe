package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/internal/h1"
	"github.com/fleetgate/fleetgate/pkg/events"
)

// A backend configured with `transport: sse` speaks the legacy HTTP+SSE
// transport: a long-lived GET stream that names a message endpoint in its
// first event, POSTs of requests to that endpoint (answered 202), and the
// responses as events on the stream. The edge's raw tools/call fast path
// (forward.go) reads each response from its POST, so it cannot serve such
// a backend: every call to one goes through the pooled go-sdk client
// session (mcp.SSEClientTransport), tools/call included.
//
// The session's GET stream lives on a context of its backendConn (a child
// of the pool's), not on the context of the call that opened it: it ends
// when the session is dropped or forgotten, when the backend leaves the
// view or is reconfigured (pool.prune, pool.conn: backendConn.close) and
// at pool.closeAll. A stream the backend ends (a restart) ends the
// session; its watcher (pool.session) forgets it and the next call
// reconnects.

// isSSE reports whether cfg is a backend of the legacy HTTP+SSE transport.
func isSSE(cfg events.BackendConfig) bool { return cfg.Transport == events.TransportSSE }

// CallTool forwards a tools/call by the backend's transport: to a
// streamable HTTP backend on the raw fast path (pool.callTool), to an SSE
// backend through the go-sdk client session (callToolSSE). The retry rules
// are do's either way.
//
// Only the raw path relays (call.Relay): through the go-sdk client
// session, the backend's messages of a call are not told apart from those
// of other calls, so its notifications are dropped and its requests
// refused (the pooled client has no handlers for them).
func (p *Pool) CallTool(ctx context.Context, call Call) (Reply, error) {
	if perCaller(call.Config) && !isSSE(call.Config) && !call.Config.AllowLinkLocal {
		return p.callAs(ctx, call) // callas.go: the caller's session and token
	}
	if call.Stateless != nil && !isSSE(call.Config) && !isStdio(call.Config) {
		return p.callStateless(ctx, call)
	}
	if !isSSE(call.Config) && !isStdio(call.Config) && !call.Config.AllowLinkLocal { // (a link-local allowance marks the go-sdk client's dials)
		return p.callStreamable(ctx, call)
	}
	// An SSE backend, or one with a link-local allowance (its go-sdk
	// client's dials are marked with it): through its go-sdk session.
	return p.callToolSSE(ctx, call.Backend, call.Config, call.Tool, call.Args)
}

// callToolSSE is callBackendTool for an SSE backend. The go-sdk decodes
// (and so validates) the result, as forward.go does with a result not of
// the plain shape.
func (p *Pool) callToolSSE(ctx context.Context, backend string, cfg events.BackendConfig, name string, args json.RawMessage) (Reply, error) {
	if t := bytes.TrimSpace(args); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		args = json.RawMessage("{}") // as encodeCallParams: never null
	}
	return Do(ctx, p, backend, cfg, "tools/call", nil, func(ctx context.Context, cs *mcp.ClientSession) (Reply, error) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			return Reply{}, err
		}
		return Reply{Res: res}, nil
	})
}

// connectSSE opens an SSE session of c. ctx bounds the connect (the GET
// until its endpoint event, initialize, initialized); the stream then
// lives until end is called, c is closed or the pool is closed.
func (p *Pool) connectSSE(ctx context.Context, c *backendConn) (cs *mcp.ClientSession, end context.CancelFunc, err error) {
	// mcp.SSEClientTransport would put a URL it cannot parse in its error.
	if _, err := url.Parse(c.url); err != nil {
		return nil, nil, fmt.Errorf("sse endpoint: %w", scrubURL(err))
	}
	sctx, end := context.WithCancel(c.ctx)
	stop := context.AfterFunc(ctx, end)
	t := &sseTransport{SSEClientTransport: mcp.SSEClientTransport{Endpoint: c.url, HTTPClient: c.sdk},
		anyFailure: p.direct == nil}
	cs, err = p.client.Connect(sctx, t, &mcp.ClientSessionOptions{ProtocolVersion: backendProtocol})
	if !stop() {
		// ctx ended during the connect and cut the stream with it.
		if err == nil {
			_ = cs.Close()
		}
		return nil, nil, fmt.Errorf("sse: %w", context.Cause(ctx))
	}
	if err != nil {
		end()
		if c.ctx.Err() != nil {
			err = errConnClosed
		}
		return nil, nil, fmt.Errorf("sse: %w", err)
	}
	return cs, end, nil
}

// markWrites is op of a call on an SSE session, whose failure is marked
// errNotSent (do sends the call again on a new session) unless its
// request may have reached the backend. The error alone cannot tell: the
// go-sdk fails every call that awaits a response when the stream ends,
// whether its request was written, is being written or never will be (a
// backend that restarted: the stream ends and the POST is answered 404).
// So sseConn.Write notes on the call's writeMark, found in the context
// the go-sdk passes it, whether it sent the request.
func markWrites[T any](op func(context.Context, *mcp.ClientSession) (T, error)) func(context.Context, *mcp.ClientSession) (T, error) {
	return func(ctx context.Context, cs *mcp.ClientSession) (T, error) {
		m := new(writeMark)
		res, err := op(context.WithValue(ctx, writeMarkKey{}, m), cs)
		if err != nil && ctx.Err() == nil && m.state.Load() != markMaybeSent && !errors.Is(err, errNotSent) {
			err = fmt.Errorf("%w: %w", errNotSent, err)
		}
		return res, err
	}
}

// writeMarkKey is the context key of a call's *writeMark.
type writeMarkKey struct{}

// writeMark is what the writes of a call's request did: nothing yet,
// markMaybeSent (a POST began that did not fail undelivered) or
// markNotSent.
type writeMark struct{ state atomic.Int32 }

const (
	markMaybeSent = 1 + iota
	markNotSent
)

// sseTransport is mcp.SSEClientTransport whose connection tells the
// writes the backend cannot have taken (sseConn.Write) and whose errors
// carry no URL.
type sseTransport struct {
	mcp.SSEClientTransport
	// anyFailure counts any failed POST as not delivered: the client is
	// not the edge's own, which marks the undelivered ones (see post).
	anyFailure bool
}

func (t *sseTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.SSEClientTransport.Connect(ctx)
	if err != nil {
		return nil, scrubURL(err)
	}
	return &sseConn{Connection: conn, anyFailure: t.anyFailure}, nil
}

// sseConn is an SSE client connection whose Write marks with errNotSent
// the errors of messages the backend did not take: the connection had
// closed, the backend refused the POST (any status but 2xx: the
// endpoint queues a message only to answer 202; 404 is a session it
// forgot), or the POST was not delivered.
//
// Read reports the end of the stream only after the writes in progress
// ended, so that a call failed by it finds its writeMark set (markWrites).
// A write in progress is bounded by its call's context.
type sseConn struct {
	mcp.Connection
	anyFailure bool
	writing    sync.RWMutex // held for reading by each Write
}

func (c *sseConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		c.writing.Lock() // once the writes in progress ended
		c.writing.Unlock()
	}
	return msg, err
}

func (c *sseConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	c.writing.RLock()
	defer c.writing.RUnlock()
	mark, _ := ctx.Value(writeMarkKey{}).(*writeMark)
	if req, ok := msg.(*jsonrpc.Request); !ok || !req.IsCall() {
		mark = nil // a notification (notifications/cancelled) of the call
	}
	if mark != nil {
		mark.state.Store(markMaybeSent)
	}
	err := c.Connection.Write(ctx, msg)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return scrubURL(err)
	}
	if ue := (*url.Error)(nil); errors.As(err, &ue) && !c.anyFailure && !errors.Is(err, h1.ErrUndelivered) {
		// The exchange failed after the request was written: it may have
		// reached the backend.
		return scrubURL(err)
	}
	if mark != nil {
		mark.state.Store(markNotSent)
	}
	return fmt.Errorf("%w: %w", errNotSent, scrubURL(err))
}

// scrubURL replaces a *url.Error (net/http's, naming the request's URL,
// which may carry credentials) by its operation and cause.
func scrubURL(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}
