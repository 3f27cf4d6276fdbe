package prober

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

// errStopped fails every request of a session being torn down, so that the
// SDK's polite DELETE on Close never waits on a dead or hung backend.
var errStopped = errors.New("prober: session closing")

// wire is the per-session http.RoundTripper. It sits between the go-sdk
// transport and the real one and gives the prober what the SDK hides:
//
//   - the HTTP status of every response (401/403 become AuthFailure; the SDK
//     only keeps http.StatusText in its error strings);
//   - the death of the event stream (the streamable transport's standalone
//     GET, or the SSE transport's GET), which the SDK would retry silently
//     for several seconds;
//   - the raw bytes of tools/list, resources/list and prompts/list results,
//     which the SDK decodes into structs that drop unknown members;
//   - bounds on GET and DELETE requests, which the SDK sends on contexts
//     the prober does not control;
//   - bounds on every response body (mcpwire.Guard): the SDK decodes with a
//     recursive decoder and reads whole JSON bodies, so a message nested
//     deeper than mcpwire.MaxDepth, or a body or event over the message
//     bound, fails its read and drops the session, before the SDK or the
//     capture parser sees it.
type wire struct {
	next   http.RoundTripper
	ctx    context.Context // the session's lifetime; done when it is torn down
	bound  time.Duration   // deadline for response headers of a GET; bounds DELETE
	status atomic.Int32    // last 401/403 seen, 0 if none since reset
	lists  *capture
	limits mcpwire.Limits // of every response body

	closing atomic.Bool
	refused atomic.Bool // a response was refused since the session began
	drop    func(reason string, clean bool)
}

// RoundTrip implements http.RoundTripper.
func (w *wire) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodDelete {
		return w.deleteSession(req)
	}
	if w.closing.Load() || w.ctx.Err() != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, errStopped
	}
	listCall := false
	if req.Method == http.MethodPost && req.GetBody != nil {
		listCall = w.noteListCall(req)
	}
	var cancel context.CancelFunc
	var timer *time.Timer
	if req.Method == http.MethodGet {
		// GET streams run on the SDK's detached connection
		// context: tie them to the session and bound their headers.
		var ctx context.Context
		ctx, cancel = context.WithCancel(req.Context())
		stop := context.AfterFunc(w.ctx, cancel)
		timer = time.AfterFunc(w.bound, cancel)
		req = req.WithContext(ctx)
		prev := cancel
		cancel = func() { stop(); prev() }
	}
	resp, err := w.next.RoundTrip(req)
	if timer != nil {
		timer.Stop()
	}
	if err != nil {
		if cancel != nil {
			cancel()
		}
		return nil, err
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		w.status.Store(int32(resp.StatusCode))
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	sse := isEventStream(resp)
	b := &streamBody{body: mcpwire.Guard(resp.Body, sse, w.limits), w: w, cancel: cancel}
	switch {
	case req.Method == http.MethodGet && ok && sse:
		b.stream, b.parse = true, newParser(w.lists, false, int(w.limits.MaxMessage))
	case listCall && ok:
		b.parse = newParser(w.lists, !sse, int(w.limits.MaxMessage))
	}
	resp.Body = b
	return resp, nil
}

// deleteSessionBound bounds the SDK's session-terminating DELETE (its own
// bound is 5s), which is sent even while the prober stops: a backend
// without session timeouts would otherwise keep every abandoned session.
const deleteSessionBound = time.Second

func (w *wire) deleteSession(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(req.Context(), min(w.bound, deleteSessionBound))
	resp, err := w.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &streamBody{body: mcpwire.Guard(resp.Body, isEventStream(resp), w.limits), w: w, cancel: cancel}
	return resp, nil
}

// noteListCall registers the JSON-RPC id of an outgoing list request so that
// its raw result can be captured. It reports whether req is one.
func (w *wire) noteListCall(req *http.Request) bool {
	rc, err := req.GetBody()
	if err != nil {
		return false
	}
	body, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Contains(body, []byte(`/list"`)) {
		return false
	}
	var call struct {
		ID     mcpwire.ID `json:"id"`
		Method string     `json:"method"`
		Params struct {
			Cursor string `json:"cursor"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &call) != nil || call.ID.IsZero() {
		return false
	}
	switch call.Method {
	case methodTools, methodResources, methodPrompts, methodTemplates:
		w.lists.expect(call.ID, listKey{call.Method, call.Params.Cursor})
		return true
	}
	return false
}

// authStatus returns the last 401/403 seen since the previous call, and
// forgets it.
func (w *wire) authStatus() int { return int(w.status.Swap(0)) }

func isEventStream(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "text/event-stream"
}

// refuse drops the session for a response body that its Guard refused.
func (w *wire) refuse(err error) {
	w.refused.Store(true)
	if !w.closing.Load() && w.ctx.Err() == nil {
		w.drop(fmt.Sprintf("backend response refused: %v", err), false)
	}
}

// streamBody wraps a guarded response body: it feeds a parser (when set),
// reports a refused body, and the end of an event stream (when stream is
// set), to the session, and releases the request's bounds on Close.
type streamBody struct {
	body   io.ReadCloser
	w      *wire
	stream bool // the session's event stream
	parse  *parser
	cancel context.CancelFunc
	once   sync.Once
}

func (b *streamBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if b.parse != nil {
		b.parse.feed(p[:n], err != nil)
	}
	if err != nil && (errors.Is(err, mcpwire.ErrTooDeep) || errors.Is(err, mcpwire.ErrTooLarge)) {
		b.once.Do(func() { b.w.refuse(err) })
		return n, err
	}
	if err != nil && b.stream {
		b.once.Do(func() {
			if b.w.closing.Load() || b.w.ctx.Err() != nil {
				return
			}
			if errors.Is(err, io.EOF) {
				b.w.drop("event stream ended", true)
			} else {
				b.w.drop(fmt.Sprintf("event stream dropped: %v", err), false)
			}
		})
	}
	return n, err
}

func (b *streamBody) Close() error {
	err := b.body.Close()
	if b.cancel != nil {
		b.cancel()
	}
	if b.stream {
		b.once.Do(func() {
			if b.w.closing.Load() || b.w.ctx.Err() != nil {
				return
			}
			// The SDK gave up on the stream (decode error, retries exhausted).
			b.w.drop("event stream closed", false)
		})
	}
	return err
}
