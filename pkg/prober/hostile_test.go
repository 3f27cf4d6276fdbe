package prober

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/health"
)

// hostileBackend is a go-sdk MCP server behind a handler that answers
// tools/list itself, with a body that body writes (streaming it: nothing
// of that size is held in memory). It records the most bytes it got to
// write of one such answer before the client stopped reading.
type hostileBackend struct {
	sse  bool
	body func(w io.Writer, id json.RawMessage) error
	mcp  http.Handler

	mu      sync.Mutex
	answers int
	written int64 // the most bytes of one answer written
}

func newHostileBackend(t *testing.T, sse bool, body func(io.Writer, json.RawMessage) error) (*hostileBackend, string) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "hostile", Version: "1"}, nil)
	h := &hostileBackend{sse: sse, body: body,
		mcp: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)}
	ts := httptest.NewServer(h) // on 127.0.0.1
	t.Cleanup(ts.Close)         // waits for the handlers
	return h, ts.URL
}

func (h *hostileBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		h.mcp.ServeHTTP(w, r)
		return
	}
	req, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var call struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(req, &call) != nil || call.Method != methodTools {
		r.Body = io.NopCloser(bytes.NewReader(req))
		h.mcp.ServeHTTP(w, r)
		return
	}
	cw := &countingWriter{w: w}
	if h.sse {
		w.Header().Set("Content-Type", "text/event-stream")
		_, err = io.WriteString(cw, "event: message\ndata: ")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	if err == nil {
		err = h.body(cw, call.ID)
	}
	if err == nil && h.sse {
		_, _ = io.WriteString(cw, "\n\n")
	}
	h.mu.Lock()
	h.answers++
	h.written = max(h.written, cw.n)
	h.mu.Unlock()
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// repeat writes s n times, in chunks of a reused buffer.
func repeat(w io.Writer, s string, n int) error {
	chunk := []byte(strings.Repeat(s, max(1, (64<<10)/len(s))))
	per := len(chunk) / len(s)
	for n > 0 {
		k := min(n, per)
		if _, err := w.Write(chunk[:k*len(s)]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// deepTools is a tools/list response whose tool's schema is nested
// depth deep.
func deepTools(depth int) func(io.Writer, json.RawMessage) error {
	return func(w io.Writer, id json.RawMessage) error {
		if _, err := io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"tools":[{"name":"deep","inputSchema":{"type":"object","x":`); err != nil {
			return err
		}
		if err := repeat(w, "[", depth); err != nil {
			return err
		}
		if err := repeat(w, "]", depth); err != nil {
			return err
		}
		_, err := io.WriteString(w, `}}]}}`)
		return err
	}
}

// largeTools is a tools/list response of about size bytes: one tool with
// a long description.
func largeTools(size int) func(io.Writer, json.RawMessage) error {
	return func(w io.Writer, id json.RawMessage) error {
		if _, err := io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"tools":[{"name":"large","inputSchema":{"type":"object"},"description":"`); err != nil {
			return err
		}
		if err := repeat(w, "x", size); err != nil {
			return err
		}
		_, err := io.WriteString(w, `"}]}}`)
		return err
	}
}

// TestHostileBackend: a backend answering tools/list with a result nested
// 1,000,000 deep, or 100 MiB large, as JSON or as an event, fails its
// probe with a Failure naming the bound, without the prober reading the
// body whole; the process goes on, and a normal backend still probes fine.
func TestHostileBackend(t *testing.T) {
	const large = 100 << 20
	for _, tc := range []struct {
		name   string
		body   func(io.Writer, json.RawMessage) error
		reason string
	}{
		{"deep", deepTools(1_000_000), "nested deeper than " + strconv.Itoa(1000)},
		{"large", largeTools(large), "too large"},
	} {
		for _, sse := range []bool{false, true} {
			name := tc.name + "/json"
			if sse {
				name = tc.name + "/sse"
			}
			t.Run(name, func(t *testing.T) {
				h, url := newHostileBackend(t, sse, tc.body)
				rec := newRecorder()
				run(t, Target{Group: "default", Name: "hostile", URL: url + "/mcp"}, rec.sink(),
					// A timeout generous enough for 16 MiB on a loaded machine
					// under the race detector: the refusal, not a deadline,
					// must end the call.
					&Options{Policy: health.Policy{Interval: time.Hour, Timeout: waitFor / 2}})
				rec.waitObs(t, 0, "OK", isResult(health.OK))
				o, _ := rec.waitObs(t, 0, "failure", isResult(health.Failure))
				if !strings.Contains(o.v.Reason, "backend response refused") || !strings.Contains(o.v.Reason, tc.reason) {
					t.Fatalf("failure %q, want the refused response named (%q)", o.v.Reason, tc.reason)
				}
				t.Logf("reason: %s", o.v.Reason)
				if _, cats := rec.mark(); cats != 0 {
					t.Fatalf("%d catalogs delivered from a hostile backend", cats)
				}
				h.mu.Lock()
				written := h.written
				h.mu.Unlock()
				// What was written before the prober stopped reading: the
				// 16 MiB bound, and what the sockets buffer.
				if written > 48<<20 {
					t.Errorf("the backend wrote %d MiB of one answer", written>>20)
				}
			})
		}
	}
	t.Run("normal backend after", func(t *testing.T) {
		b := startBackend(t, "alpha", nil)
		rec := newRecorder()
		run(t, target(b, TransportStreamable), rec.sink(), &Options{Policy: health.Policy{Interval: time.Hour}})
		rec.waitObs(t, 0, "OK", isResult(health.OK))
		if c := rec.waitCatalog(t, 0, "first", anyCatalog).v; len(c.Tools) != 2 {
			t.Fatalf("%d tools, want 2", len(c.Tools))
		}
	})
}
