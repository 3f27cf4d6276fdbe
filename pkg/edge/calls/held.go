package calls

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/backend"
	"github.com/fleetgate/fleetgate/pkg/edge/inputstate"
)

// A client of the stateless generation (2026-07-28) cannot be asked
// anything during a call: it has no stream for a server's requests. When
// its call goes to a backend of the session-based revisions, which asks
// its client on the call's stream (elicitation, sampling, roots), the edge
// holds the backend call open and answers the client with the backend's
// request as an input request (an input-required result); the client's
// retry, with its answer and the sealed requestState, gives the answer to
// the held call, which goes on to its result or to its next request.
//
// The held call lives on the edge that started it. A retry that reaches
// another edge of the group is forwarded to that edge over NATS when the
// edges have a relay (Options.Peers: heldpeer.go), which answers it; with
// none, or when the holder does not answer, it is refused with an error
// naming that edge (the call is never run twice, and the retry never
// hangs); a retry that comes after its input request expired is refused
// likewise. Bounds: held calls per edge and per caller, how long an input
// request waits for its retry (Options.HeldWait), and the pool's call
// timeout over the whole call.

// Bounds of held calls.
const (
	maxHeld            = 256
	maxHeldPerIdentity = 16
	// DefaultHeldWait is Options.HeldWait's default.
	DefaultHeldWait = 60 * time.Second
)

// heldWait is how long a held call's input request waits for the retry
// that answers it (then the backend is answered with an error), and how
// long its result waits for a request to take it (then the call ends,
// recorded in the call trail).
func (pl *Plane) heldWait() time.Duration {
	if pl.o.HeldWait > 0 {
		return pl.o.HeldWait
	}
	return DefaultHeldWait
}

// heldPrefix marks the inner requestState of a held call:
// "held\x00<edge>\x00<id>\x00<round>".
const heldPrefix = "held\x00"

// errHeldExpired answers a backend's request whose retry did not come.
var errHeldExpired = errors.New("the client's retry with the answer did not come in time")

// heldCalls are the calls held open on this edge.
type heldCalls struct {
	mu    sync.Mutex
	calls map[string]*heldCall
	per   map[string]int // by identity
}

// heldCall is one held backend call.
type heldCall struct {
	id, ident string
	// who is the caller the call's states are issued to (stateIdentity);
	// call, rt and start are the call as it started, which a retry
	// forwarded by another edge continues (heldpeer.go).
	who     string
	call    Call
	rt      Route
	start   time.Time
	wait    time.Duration // Options.HeldWait
	caps    clientCaps
	asks    chan *heldAsk      // from the backend's stream to the request waiting
	done    chan backend.Reply // the call's end
	taken   chan struct{}      // closed by the request that took the end
	mu      sync.Mutex
	pending *heldAsk // the input request the client was given
	round   int
}

// heldAsk is one request of the backend to the client.
type heldAsk struct {
	method string
	params json.RawMessage
	answer chan heldAnswer
}

type heldAnswer struct {
	result json.RawMessage
	err    error
}

// clientCaps are the capabilities a stateless client declared in its
// _meta: which of the backend's requests it can be given.
type clientCaps struct{ sampling, elicitation, roots bool }

func capsOf(meta json.RawMessage) clientCaps {
	var m struct {
		Caps map[string]json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
	}
	if json.Unmarshal(meta, &m) != nil {
		return clientCaps{}
	}
	has := func(k string) bool { v, ok := m.Caps[k]; return ok && string(v) != "null" }
	return clientCaps{sampling: has("sampling"), elicitation: has("elicitation"), roots: has("roots")}
}

func (c clientCaps) any() bool { return c.sampling || c.elicitation || c.roots }

// start registers a new held call of ident; nil when a bound is reached
// (the call then runs as one whose requests are refused).
func (hc *heldCalls) start(ident string, caps clientCaps, wait time.Duration) *heldCall {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if hc.calls == nil {
		hc.calls, hc.per = map[string]*heldCall{}, map[string]int{}
	}
	if len(hc.calls) >= maxHeld || hc.per[ident] >= maxHeldPerIdentity {
		return nil
	}
	h := &heldCall{id: rand.Text(), ident: ident, caps: caps, wait: wait, asks: make(chan *heldAsk, 1), done: make(chan backend.Reply, 1),
		taken: make(chan struct{})}
	hc.calls[h.id] = h
	hc.per[ident]++
	return h
}

func (hc *heldCalls) get(id string) *heldCall {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	return hc.calls[id]
}

func (hc *heldCalls) end(h *heldCall) {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if hc.calls[h.id] == h {
		delete(hc.calls, h.id)
		if hc.per[h.ident]--; hc.per[h.ident] <= 0 {
			delete(hc.per, h.ident)
		}
	}
}

// Notify drops the call's notifications: the client has no stream.
func (h *heldCall) Notify(string, json.RawMessage) {}

// Ask gives the backend's request to the request waiting on the call and
// waits for the client's answer (h.wait at most).
func (h *heldCall) Ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	switch {
	case method == "sampling/createMessage" && !h.caps.sampling:
		return nil, lacks(method, "sampling")
	case method == "elicitation/create" && !h.caps.elicitation:
		return nil, lacks(method, "elicitation")
	case method == "roots/list" && !h.caps.roots:
		return nil, lacks(method, "roots")
	}
	a := &heldAsk{method: method, params: params, answer: make(chan heldAnswer, 1)}
	select {
	case h.asks <- a:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	t := time.NewTimer(h.wait)
	defer t.Stop()
	select {
	case ans := <-a.answer:
		return ans.result, ans.err
	case <-t.C:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: method + ": " + errHeldExpired.Error()}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// startHeld runs call c (route rt, started at start) off the request, its
// backend's requests held for the client; nil when it cannot be held.
// The goroutine owns the held call's end: a result no request takes
// within HeldWait (the client left, or never retried) ends the call there,
// recorded in the call trail, so that an abandoned call holds no room.
func (pl *Plane) startHeld(c Call, rt Route, start time.Time) *heldCall {
	if pl.o.Background == nil || !pl.o.Background.Hold() {
		return nil
	}
	h := pl.held.start(c.Ident, capsOf(c.Stateless.Meta), pl.heldWait())
	if h == nil {
		pl.o.Background.Done()
		return nil
	}
	h.who, h.call, h.rt, h.start = stateIdentity(c.TokenInfo, c.Ident), c, rt, start
	go func() {
		defer pl.o.Background.Done()
		// The pool bounds the call by its timeout; Close ends it sooner.
		reply, err := pl.o.Pool.CallTool(backend.WithCaller(pl.heldCtx, TokenIdentity(c.TokenInfo)), backend.Call{Backend: rt.Tool.Backend, Config: rt.Config, Tool: rt.Tool.Original,
			Args: c.Args, Relay: h})
		if err != nil {
			reply = pl.failed(c, rt, err)
		}
		pl.endHeld(c, rt, h, start, reply, err)
	}()
	return h
}

// endHeld gives reply, the end of held call h, to the request waiting for
// it, or ends the call when no request takes it within h.wait (or at
// Close).
func (pl *Plane) endHeld(c Call, rt Route, h *heldCall, start time.Time, reply backend.Reply, err error) {
	h.done <- reply
	t := time.NewTimer(h.wait)
	defer t.Stop()
	select {
	case <-h.taken: // a request answered its client with it (and audits it)
	case <-t.C:
		pl.abandoned(c, rt, h, start, err)
	case <-pl.heldCtx.Done():
		pl.abandoned(c, rt, h, start, err)
	}
}

// abandoned ends held call h whose result no request took, and records it.
func (pl *Plane) abandoned(c Call, rt Route, h *heldCall, start time.Time, err error) {
	pl.held.end(h)
	select {
	case reply := <-h.done:
		if pl.record != nil {
			pl.Audit(c, rt, start, &reply, err)
		}
	default: // taken meanwhile
	}
}

// Close ends the calls held open for their clients' input (their backends
// are answered with an error): at shutdown, before Background's owner
// waits for them.
func (pl *Plane) Close() { pl.heldStop() }

// await waits for held call h's next step on behalf of a request of call
// c: its result (the call ends), or its next request to the client (an
// input-required result, the call held for the retry). The client leaving
// meanwhile leaves the call held until its input request expires.
func (pl *Plane) await(ctx context.Context, c Call, rt Route, h *heldCall, now time.Time) (backend.Reply, bool) {
	for {
		select {
		case reply := <-h.done:
			close(h.taken)
			pl.held.end(h)
			return reply, true
		case a := <-h.asks:
			if res, err := pl.askClient(c, rt, h, a, now); err == nil {
				return backend.Reply{Res: res}, false
			} else {
				a.answer <- heldAnswer{err: err} // the backend is told; its next step is awaited
			}
		case <-ctx.Done():
			return errorReply(&jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("tool %q: %v", c.Name, ctx.Err())}), false
		}
	}
}

// askClient makes a, the backend's request, the client's input request of
// h's next round: the input-required result, its state sealed.
func (pl *Plane) askClient(c Call, rt Route, h *heldCall, a *heldAsk, now time.Time) (*mcp.CallToolResult, error) {
	req, err := inputRequest(a.method, a.params)
	if err != nil {
		return nil, badParams(a.method, err)
	}
	h.mu.Lock()
	h.pending = a
	h.round++
	round := strconv.Itoa(h.round)
	h.mu.Unlock()
	inner := heldPrefix + pl.o.Edge + "\x00" + h.id + "\x00" + round
	state, err := pl.sealer.Seal(heldBinding(c, rt), inner, now.Add(h.wait))
	if err != nil {
		return nil, err
	}
	return inputRequired(mcp.InputRequestMap{"input-" + round: req}, state)
}

// heldBinding is what the state of a held call's round is issued for:
// apart from a stateless backend's own states (binding), so that neither
// is ever taken for the other.
func heldBinding(c Call, rt Route) inputstate.Binding {
	b := binding(c, rt)
	b.Method += "#held"
	return b
}

// continueHeld answers the pending input request of the held call the
// requestState inner names with the retry's input responses, and waits
// for the call's next step. A call held on another edge is continued
// there (continueElsewhere); its reply is not final here (the holder
// records the call).
func (pl *Plane) continueHeld(ctx context.Context, c Call, rt Route, inner string, now time.Time) (backend.Reply, bool, *jsonrpc.Error) {
	edge, id, round, err := parseHeld(inner)
	if err != nil {
		return backend.Reply{}, false, stateRefused(c.Name, err)
	}
	if edge != pl.o.Edge {
		reply, je := pl.continueElsewhere(ctx, c, rt, edge, now)
		return reply, false, je
	}
	h := pl.held.get(id)
	if h == nil {
		return backend.Reply{}, false, stateRefused(c.Name, errHeldGone)
	}
	if h.who != stateIdentity(c.TokenInfo, c.Ident) {
		return backend.Reply{}, false, stateRefused(c.Name, errHeldForeign)
	}
	h.mu.Lock()
	a := h.pending
	ok := a != nil && strconv.Itoa(h.round) == round
	if ok {
		h.pending = nil
	}
	h.mu.Unlock()
	if !ok {
		return backend.Reply{}, false, stateRefused(c.Name, errors.New("requestState names an input request already answered"))
	}
	var responses map[string]json.RawMessage
	if err := json.Unmarshal(c.Stateless.InputResponses, &responses); err != nil || responses["input-"+round] == nil {
		a.answer <- heldAnswer{err: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: a.method + ": the client gave no answer"}}
	} else {
		a.answer <- heldAnswer{result: responses["input-"+round]}
	}
	reply, final := pl.await(ctx, c, rt, h, now)
	return reply, final, nil
}

// Refusals of a retry of a held call.
var (
	errHeldGone    = errors.New("the call this requestState continues is no longer held (it ended, or its input request expired)")
	errHeldForeign = errors.New("requestState was issued to another caller")
)

// parseHeld splits the inner state of a held call's round.
func parseHeld(inner string) (edge, id, round string, err error) {
	parts := strings.Split(strings.TrimPrefix(inner, heldPrefix), "\x00")
	if !strings.HasPrefix(inner, heldPrefix) || len(parts) != 3 {
		return "", "", "", errors.New("requestState malformed")
	}
	return parts[0], parts[1], parts[2], nil
}

// inputRequired is the input-required result asking reqs with state (the
// result's type is set as decoding a backend's would: the go-sdk keeps it
// unexported).
func inputRequired(reqs mcp.InputRequestMap, state string) (*mcp.CallToolResult, error) {
	raw, err := json.Marshal(map[string]any{"resultType": "input_required", "inputRequests": reqs, "requestState": state})
	if err != nil {
		return nil, fmt.Errorf("encode input requests: %w", err)
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("decode input requests: %w", err)
	}
	return &res, nil
}

// inputRequest is the backend's request method/params as an input
// request of the stateless revision.
func inputRequest(method string, params json.RawMessage) (mcp.InputRequest, error) {
	var p mcp.InputRequest
	switch method {
	case "elicitation/create":
		p = &mcp.ElicitParams{}
	case "sampling/createMessage":
		p = &mcp.CreateMessageParams{}
	case "roots/list":
		p = &mcp.ListRootsParams{}
	default:
		return nil, fmt.Errorf("method %q is not an input request", method)
	}
	if len(params) > 0 {
		if err := json.Unmarshal(params, p); err != nil {
			return nil, err
		}
	}
	return p, nil
}
