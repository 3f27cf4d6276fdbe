// Package demobackend is a small MCP server used by the demo fleet and by
// tests: real go-sdk server over streamable HTTP or SSE on a real listener,
// with knobs to change its tools, hang its responses, demand a token, and be
// killed and restarted on the same address.
//
//	b := demobackend.New("alpha", nil)
//	if err := b.Start("127.0.0.1:0"); err != nil { ... }
//	defer b.Stop()
//	url := b.URL() // http://127.0.0.1:PORT/mcp
package demobackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a Backend. A nil *Options means defaults.
type Options struct {
	// SSE serves the legacy SSE transport instead of streamable HTTP.
	SSE bool
	// PageSize of list results; default 1000 (the SDK's).
	PageSize int
	// ExtraTools adds this many generated tools (tool_0000 ...).
	ExtraTools int
	// NewProtocol also serves clients of protocol 2026-07-28, whose
	// requests go to the go-sdk's stateless handler (the go-sdk's stateful
	// handler serves up to 2025-11-25; such a client falls back to it).
	// Requests of older protocols keep their sessions. Not with SSE.
	NewProtocol bool
	// StatelessOnly serves protocol 2026-07-28 only, with the go-sdk's
	// stateless handler: initialize, and every request of an older
	// protocol, is refused with an unsupported-protocol-version error.
	// Not with SSE.
	StatelessOnly bool
	// Complete answers completion/complete (the completions capability);
	// nil: none.
	Complete func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error)
	// Subscribe takes resource subscriptions (Server().ResourceUpdated
	// tells the subscribers).
	Subscribe bool
}

// newProtocol is the first protocol version without sessions.
const newProtocol = "2026-07-28"

// Backend is a demo MCP server.
type Backend struct {
	name string
	opts Options
	srv  *mcp.Server

	hang  atomic.Bool
	token atomic.Value // string
	// era is the server of the stateless generation's requests when set
	// (ServeStatelessWith), srv otherwise.
	era   atomic.Pointer[mcp.Server]
	calls atomic.Int64

	mu    sync.Mutex
	addr  string
	http  *http.Server
	ln    net.Listener
	conns map[net.Conn]struct{}
	hung  chan struct{} // closed to release hung requests
}

// New returns a backend with an `echo` and an `add` tool.
func New(name string, o *Options) *Backend {
	b := &Backend{name: name, conns: map[net.Conn]struct{}{}, hung: make(chan struct{})}
	if o != nil {
		b.opts = *o
	}
	b.token.Store("")
	b.srv = mcp.NewServer(&mcp.Implementation{Name: "demo-" + name, Version: "1.0.0"}, &mcp.ServerOptions{
		PageSize:           b.opts.PageSize,
		CompletionHandler:  b.opts.Complete,
		SubscribeHandler:   subscribeIf(b.opts.Subscribe),
		UnsubscribeHandler: unsubscribeIf(b.opts.Subscribe),
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true},
			Prompts:   &mcp.PromptCapabilities{ListChanged: true},
		},
	})
	b.srv.AddReceivingMiddleware(b.hangMiddleware)
	b.AddTool(&mcp.Tool{Name: "echo", Description: "Echo the given text back, prefixed with the backend name.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"text to echo"}},"required":["text"]}`)})
	b.AddTool(&mcp.Tool{Name: "add", Description: "Add two numbers.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)})
	for i := range b.opts.ExtraTools {
		b.AddTool(&mcp.Tool{Name: fmt.Sprintf("tool_%04d", i), Description: fmt.Sprintf("Generated tool number %d of %s.", i, name),
			InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}}}`)})
	}
	b.srv.AddResource(&mcp.Resource{URI: "demo://" + name + "/readme", Name: "readme", MIMEType: "text/plain"},
		func(ctx context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "demo backend " + name}}}, nil
		})
	b.srv.AddPrompt(&mcp.Prompt{Name: "greet", Description: "Greet someone."},
		func(ctx context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello from " + name}}}}, nil
		})
	return b
}

// subscribeIf and unsubscribeIf take every subscription when on (the
// go-sdk keeps the subscribers); nil otherwise.
func subscribeIf(on bool) func(context.Context, *mcp.SubscribeRequest) error {
	if !on {
		return nil
	}
	return func(context.Context, *mcp.SubscribeRequest) error { return nil }
}

func unsubscribeIf(on bool) func(context.Context, *mcp.UnsubscribeRequest) error {
	if !on {
		return nil
	}
	return func(context.Context, *mcp.UnsubscribeRequest) error { return nil }
}

// Name is the backend's name.
func (b *Backend) Name() string { return b.name }

// Server exposes the MCP server (to add or remove tools).
func (b *Backend) Server() *mcp.Server { return b.srv }

// Calls counts tool calls served.
func (b *Backend) Calls() int64 { return b.calls.Load() }

// AddTool adds (or replaces) a tool whose handler echoes its arguments;
// connected clients get notifications/tools/list_changed.
func (b *Backend) AddTool(t *mcp.Tool) {
	name := t.Name
	b.srv.AddTool(t, func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		b.calls.Add(1)
		var args map[string]any
		_ = json.Unmarshal(r.Params.Arguments, &args)
		text := fmt.Sprintf("%s/%s", b.name, name)
		switch name {
		case "echo":
			text = fmt.Sprintf("%s: %v", b.name, args["text"])
		case "add":
			a, _ := args["a"].(float64)
			c, _ := args["b"].(float64)
			text = fmt.Sprint(a + c)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
	})
}

// AddToolFunc adds (or replaces) a tool answered by h.
func (b *Backend) AddToolFunc(t *mcp.Tool, h mcp.ToolHandler) {
	b.srv.AddTool(t, func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		b.calls.Add(1)
		return h(ctx, r)
	})
}

// RemoveTools removes tools by name.
func (b *Backend) RemoveTools(names ...string) { b.srv.RemoveTools(names...) }

// SetHang makes every request (pings included) block until SetHang(false)
// or Stop: a hung backend whose TCP connections stay open.
func (b *Backend) SetHang(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.hang.Swap(on) && !on {
		close(b.hung)
		b.hung = make(chan struct{})
	}
}

// ServeStatelessWith has srv answer the requests of the stateless
// generation (2026-07-28) of a NewProtocol backend, which then lists
// what srv holds to clients of that generation and what Server holds to
// the others: a backend whose catalog differs by protocol era. Nil
// serves them with Server again.
func (b *Backend) ServeStatelessWith(srv *mcp.Server) { b.era.Store(srv) }

// statelessServer is the server of the stateless generation's requests.
func (b *Backend) statelessServer() *mcp.Server {
	if s := b.era.Load(); s != nil {
		return s
	}
	return b.srv
}

// RequireToken makes the backend answer 401 unless the request carries
// "Authorization: Bearer <token>"; "" turns it off.
func (b *Backend) RequireToken(token string) { b.token.Store(token) }

func (b *Backend) hangMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if b.hang.Load() {
			b.mu.Lock()
			ch := b.hung
			b.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return next(ctx, method, req)
	}
}

func (b *Backend) handler() http.Handler {
	var h http.Handler
	if b.opts.SSE {
		h = mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return b.srv }, nil)
	} else {
		h = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return b.srv }, nil)
		if b.opts.StatelessOnly {
			h = statelessOnly(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return b.srv },
				&mcp.StreamableHTTPOptions{Stateless: true}))
		} else if b.opts.NewProtocol {
			stateful := h
			stateless := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return b.statelessServer() },
				&mcp.StreamableHTTPOptions{Stateless: true})
			h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Mcp-Protocol-Version") >= newProtocol {
					stateless.ServeHTTP(w, r)
					return
				}
				stateful.ServeHTTP(w, r)
			})
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok := b.token.Load().(string); tok != "" && r.Header.Get("Authorization") != "Bearer "+tok {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	return mux
}

// Start listens on addr ("127.0.0.1:0" picks a port) and serves.
func (b *Backend) Start(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("demo backend %s: listen %s: %w", b.name, addr, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ln = ln
	b.addr = ln.Addr().String()
	b.http = &http.Server{Handler: b.handler(), ReadHeaderTimeout: 5 * time.Second,
		ConnState: func(c net.Conn, s http.ConnState) {
			b.mu.Lock()
			defer b.mu.Unlock()
			switch s {
			case http.StateNew:
				b.conns[c] = struct{}{}
			case http.StateClosed, http.StateHijacked:
				delete(b.conns, c)
			}
		}}
	go func(srv *http.Server) { _ = srv.Serve(ln) }(b.http)
	return nil
}

// URL is the backend's MCP endpoint (SSE backends serve it too).
func (b *Backend) URL() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return "http://" + b.addr + "/mcp"
}

// Stop kills the backend: the listener and every open connection are
// closed at once, as when the process dies.
func (b *Backend) Stop() {
	b.mu.Lock()
	srv := b.http
	b.http = nil
	b.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
	// A killed process takes its MCP sessions with it: the server
	// outlives its HTTP listener here (Restart serves it again), so the
	// sessions its peers opened are closed too, each with the goroutine
	// that reads for it.
	for ss := range b.srv.Sessions() {
		_ = ss.Close()
	}
}

// Restart starts the backend again on the address it had.
func (b *Backend) Restart() error {
	b.Stop()
	b.mu.Lock()
	addr := b.addr
	b.mu.Unlock()
	var err error
	for range 50 { // the port may linger briefly after close
		if err = b.Start(addr); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

// ErrNotStarted is returned by Addr before Start.
var ErrNotStarted = errors.New("demo backend not started")

// Addr returns the listen address.
func (b *Backend) Addr() (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.addr == "" {
		return "", ErrNotStarted
	}
	return b.addr, nil
}
