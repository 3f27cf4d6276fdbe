package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a Backend. A nil *Options means defaults.
type Options struct {
	// TrimPrefix is cut from the front of every tool and prompt name the
	// suite calls ("test_simple_text" becomes "simple_text" with
	// "test_"), for an edge that puts "<backend>_" back in front. Empty
	// keeps the suite's names. Names without the prefix stay as they are.
	TrimPrefix string
	// RetryAfter is the reconnection delay test_reconnection asks for
	// when it closes its stream mid-call (SEP-1699); default 500ms.
	RetryAfter time.Duration
	// Logger receives the go-sdk's own log; default discards it.
	Logger *slog.Logger
	// Stateless serves without sessions (the go-sdk's stateless
	// streamable HTTP, no event store), as a server of the 2026-07-28
	// revision is served.
	Stateless bool
}

// Backend is the conformance MCP server on a real listener.
type Backend struct {
	opts Options
	srv  *mcp.Server

	subMu sync.Mutex
	subs  map[string]int // URI -> subscribe count minus unsubscribe count

	mu   sync.Mutex
	ln   net.Listener
	http *http.Server
	done chan struct{}
}

// serverName is the implementation name the backend reports.
const serverName = "fleetgate-conformance-backend"

// New returns a backend with every feature the suite's server scenarios
// use; Start serves it.
func New(o *Options) *Backend {
	b := &Backend{subs: map[string]int{}}
	if o != nil {
		b.opts = *o
	}
	if b.opts.RetryAfter <= 0 {
		b.opts.RetryAfter = 500 * time.Millisecond
	}
	if b.opts.Logger == nil {
		b.opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	b.srv = mcp.NewServer(&mcp.Implementation{Name: serverName, Version: "1.0.0"}, &mcp.ServerOptions{
		Logger: b.opts.Logger,
		Capabilities: &mcp.ServerCapabilities{
			Tools:       &mcp.ToolCapabilities{ListChanged: true},
			Resources:   &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Prompts:     &mcp.PromptCapabilities{ListChanged: true},
			Logging:     &mcp.LoggingCapabilities{},
			Completions: &mcp.CompletionCapabilities{},
		},
		CompletionHandler:  complete,
		SubscribeHandler:   b.subscribe,
		UnsubscribeHandler: b.unsubscribe,
	})
	b.srv.AddReceivingMiddleware(defaultLogLevel)
	b.addTools()
	b.addResources()
	b.addPrompts()
	return b
}

// name is the backend's own name for a tool or prompt the suite calls.
func (b *Backend) name(suiteName string) string {
	if b.opts.TrimPrefix == "" {
		return suiteName
	}
	if rest, ok := strings.CutPrefix(suiteName, b.opts.TrimPrefix); ok && rest != "" {
		return rest
	}
	return suiteName
}

// Handler is the streamable HTTP handler (with an event store, so a
// stream closed mid-call can be resumed with Last-Event-ID, and the
// go-sdk's DNS rebinding protection on).
func (b *Backend) Handler() http.Handler {
	o := &mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil), Logger: b.opts.Logger}
	if b.opts.Stateless {
		o = &mcp.StreamableHTTPOptions{Stateless: true, Logger: b.opts.Logger}
	}
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return b.srv }, o)
}

// Start serves the backend on addr (host:port; port 0 picks one).
func (b *Backend) Start(addr string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ln != nil {
		return fmt.Errorf("start conformance backend on %s: already serving on %s", addr, b.ln.Addr())
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("start conformance backend on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", b.Handler())
	b.ln = ln
	b.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	b.done = make(chan struct{})
	go func(srv *http.Server, done chan struct{}) {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			b.opts.Logger.Error("conformance backend serve", "err", err)
		}
	}(b.http, b.done)
	return nil
}

// URL is the MCP endpoint, http://HOST:PORT/mcp; empty before Start.
func (b *Backend) URL() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ln == nil {
		return ""
	}
	return "http://" + b.ln.Addr().String() + "/mcp"
}

// Stop closes the listener and every connection, and waits for the
// server goroutine. Safe to call more than once.
func (b *Backend) Stop() {
	b.mu.Lock()
	srv, done := b.http, b.done
	b.http, b.ln, b.done = nil, nil, nil
	b.mu.Unlock()
	if srv == nil {
		return
	}
	_ = srv.Close()
	<-done
	for ss := range b.srv.Sessions() {
		_ = ss.Close()
	}
}

// Subscribed reports how many more subscribes than unsubscribes the
// backend has seen for uri.
func (b *Backend) Subscribed(uri string) int {
	b.subMu.Lock()
	defer b.subMu.Unlock()
	return b.subs[uri]
}

func (b *Backend) subscribe(_ context.Context, r *mcp.SubscribeRequest) error {
	b.subMu.Lock()
	defer b.subMu.Unlock()
	b.subs[r.Params.URI]++
	return nil
}

func (b *Backend) unsubscribe(_ context.Context, r *mcp.UnsubscribeRequest) error {
	b.subMu.Lock()
	defer b.subMu.Unlock()
	if b.subs[r.Params.URI] > 0 {
		b.subs[r.Params.URI]--
	}
	if b.subs[r.Params.URI] == 0 {
		delete(b.subs, r.Params.URI)
	}
	return nil
}

// complete answers every completion with an empty list, as the suite's
// reference server does (the scenario checks the shape only).
func complete(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
}

// defaultLogLevel gives each session the log level "debug" once it is
// initialized, until the client sets its own: the go-sdk sends no log
// message to a session that never set a level, while the suite's
// tools-call-with-logging expects messages without setting one (its
// reference server does not filter).
func defaultLogLevel(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method == "notifications/initialized" && err == nil {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
				_, _ = next(ctx, "logging/setLevel", &mcp.ServerRequest[*mcp.SetLoggingLevelParams]{Session: ss,
					Params: &mcp.SetLoggingLevelParams{Level: "debug"}})
			}
		}
		return res, err
	}
}
