package calls

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/backend"
	"github.com/fleetgate/fleetgate/pkg/edge/heldrelay"
	"github.com/fleetgate/fleetgate/pkg/edge/inputstate"
)

// A retry of a held call that reaches another edge of the group is
// forwarded to the holder (package heldrelay carries it over NATS). The
// edge the retry reached opens the state first (it is the group's key:
// integrity, expiry, issued to this caller for this tool), then sends the
// state as the client sent it, the caller's identity, the tool, the
// backend and the input responses; the holder opens the state again
// itself, checks the held call is that caller's call of that tool, and
// answers it as it answers a retry of its own. Its answer (the call's
// result, or its next input request sealed by the holder) goes back to
// the client from the edge it reached; the holder records the call in
// the call trail when it ends, once.

// HeldPeers forward a retry to the edge that holds its call
// (heldrelay.Relay).
type HeldPeers interface {
	Continue(ctx context.Context, edge string, r *heldrelay.Retry) (*heldrelay.Outcome, error)
}

// DefaultPeerWait is Options.PeerWait's default: the call timeout's.
const DefaultPeerWait = 60 * time.Second

// continueElsewhere continues c, a retry of a call held on edge, there.
func (pl *Plane) continueElsewhere(ctx context.Context, c Call, rt Route, edge string, now time.Time) (backend.Reply, *jsonrpc.Error) {
	if pl.o.Peers == nil {
		return backend.Reply{}, stateRefused(c.Name, fmt.Errorf("the call this requestState continues is held open on edge %q: its retry must reach that edge", edge))
	}
	wait := pl.o.PeerWait
	if wait <= 0 {
		wait = DefaultPeerWait
	}
	if dl, ok := ctx.Deadline(); ok && dl.Sub(now) < wait {
		wait = dl.Sub(now)
	}
	r := &heldrelay.Retry{Identity: stateIdentity(c.TokenInfo, c.Ident), Tool: c.Name, Backend: rt.Tool.Backend,
		State: c.Stateless.RequestState, Responses: c.Stateless.InputResponses, WaitMillis: max(wait.Milliseconds(), 1)}
	out, err := pl.o.Peers.Continue(ctx, edge, r)
	switch {
	case errors.Is(err, heldrelay.ErrHolderGone):
		return backend.Reply{}, stateRefused(c.Name, fmt.Errorf("the call this requestState continues is held open on edge %q, which does not answer (it stopped, or is not reachable): the call is lost", edge))
	case err != nil:
		return backend.Reply{}, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("tool %q: the call is held open on edge %q: %v", c.Name, edge, err)}
	case out.Code != 0:
		return backend.Reply{}, &jsonrpc.Error{Code: out.Code, Message: out.Message}
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(out.Result, &res); err != nil {
		return backend.Reply{}, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("tool %q: the answer of edge %q: %v", c.Name, edge, err)}
	}
	return backend.Reply{Res: &res}, nil
}

// ContinueForPeer answers r, a retry of a call held here that another
// edge forwarded (heldrelay.Options.Handle): the state opened here, the
// held call the caller's call of the tool r names, then the retry as
// one of this edge's own. It never logs r's responses.
func (pl *Plane) ContinueForPeer(ctx context.Context, r *heldrelay.Retry) *heldrelay.Outcome {
	now := time.Now()
	b := inputstate.Binding{Identity: r.Identity, Method: "tools/call#held", Target: r.Tool + "\x00" + r.Backend}
	inner, err := pl.sealer.Open(b, r.State, now)
	if err != nil {
		return refusal(stateRefused(r.Tool, err))
	}
	edge, id, _, err := parseHeld(inner)
	switch {
	case err != nil:
		return refusal(stateRefused(r.Tool, err))
	case edge != pl.o.Edge:
		return refusal(stateRefused(r.Tool, fmt.Errorf("the call this requestState continues is held open on edge %q, not %q", edge, pl.o.Edge)))
	}
	h := pl.held.get(id)
	switch {
	case h == nil:
		return refusal(stateRefused(r.Tool, errHeldGone))
	case h.who != r.Identity || h.call.Name != r.Tool || h.rt.Tool.Backend != r.Backend:
		return refusal(stateRefused(r.Tool, errHeldForeign))
	}
	c := h.call
	st := *c.Stateless
	st.RequestState, st.InputResponses = r.State, r.Responses
	c.Stateless = &st
	pl.inflight.Add(1)
	defer pl.inflight.Add(-1)
	reply, final, je := pl.continueHeld(ctx, c, h.rt, inner, now)
	if je != nil {
		return refusal(je)
	}
	if final && pl.record != nil {
		pl.Audit(c, h.rt, h.start, &reply, nil)
	}
	if je := ClientError(reply); je != nil {
		return refusal(je)
	}
	raw, err := json.Marshal(reply.Decoded())
	if err != nil {
		return refusal(&jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("tool %q: encode the result: %v", r.Tool, err)})
	}
	return &heldrelay.Outcome{Result: raw, Final: final}
}

func refusal(je *jsonrpc.Error) *heldrelay.Outcome {
	return &heldrelay.Outcome{Code: je.Code, Message: je.Message}
}
