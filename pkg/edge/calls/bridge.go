package calls

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/backend"
)

// A backend that speaks only the stateless generation (it refused
// initialize: view.Served.StatelessOnly) has no session for the edge's
// pool. A client of the session-based revisions reaches it through a
// bridge: its tools/call, prompts/get and resources/read go to the backend
// as stateless requests of the backend's revision, and the result comes
// back in the client's revision: without resultType, ttlMs, cacheScope,
// requestState or the backend's server info. A tools/call declares the
// capabilities the client may be asked for on the call's stream, and the
// backend's input requests (an input_required result) are asked of the
// client there, the call retried with its answers (bridge); a prompts/get
// or resources/read declares none, and a backend asking for input anyway
// fails it with ErrInputNotRelayed. A backend refusing a request for a
// missing client capability (-32021) fails it with its error.

// ErrInputNotRelayed is wrapped by the failure of a bridged request whose
// backend asked for input.
var ErrInputNotRelayed = errors.New("the backend speaks only protocol 2026-07-28 and asked for input, " +
	"which the edge relays to a client of an older protocol only on a tools/call's stream, to a client that can be asked; " +
	"connect with protocol 2026-07-28 to answer it")

// reservedMeta are the _meta members of a stateless request that say who
// the client is: a bridged request sets them itself.
var reservedMeta = []string{mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities}

// bridgeOf is the stateless form, in revision rev, of a request of a
// client of the session-based revisions carrying _meta meta (its other
// members, a progress token for one, passed on), declaring capabilities
// caps (nil: none).
func bridgeOf(meta map[string]any, rev string, caps map[string]any) (*backend.Stateless, error) {
	m := make(map[string]any, len(meta)+2)
	for k, v := range meta {
		if !slices.Contains(reservedMeta, k) {
			m[k] = v
		}
	}
	m[mcp.MetaKeyProtocolVersion] = rev
	if caps == nil {
		caps = map[string]any{}
	}
	m[mcp.MetaKeyClientCapabilities] = caps
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode _meta: %w", err)
	}
	return &backend.Stateless{Revision: rev, Meta: raw}, nil
}

// bridgeCall is bridgeOf for call c: its _meta as it came, and the
// capabilities its client declared (it is asked on its own stream:
// bridge).
func bridgeCall(c Call, rev string) (*backend.Stateless, error) {
	var meta map[string]any
	if len(c.Meta) > 0 {
		if err := json.Unmarshal(c.Meta, &meta); err != nil {
			return nil, fmt.Errorf("decode _meta: %w", err)
		}
	}
	st, err := bridgeOf(meta, rev, capabilitiesOf(c.Relay))
	return st, err
}

// capabilitiesOf are the capabilities the client of relay r declared
// that it may be asked for during a call; none when it may not be asked.
func capabilitiesOf(r backend.Relay) map[string]any {
	cr, ok := r.(*clientRelay)
	if !ok || !cr.asks {
		return map[string]any{}
	}
	out := map[string]any{}
	if ip := cr.ss.InitializeParams(); ip != nil && ip.Capabilities != nil {
		caps := ip.Capabilities
		if caps.Sampling != nil {
			out["sampling"] = caps.Sampling
		}
		if caps.Elicitation != nil {
			out["elicitation"] = caps.Elicitation
		}
		if caps.RootsV2 != nil || caps.Roots.ListChanged {
			out["roots"] = map[string]any{}
		}
	}
	return out
}

// Bounds of a bridged call's input requests.
const (
	// maxBridgeRounds bounds the retries of one call with input responses.
	maxBridgeRounds = 8
	// maxBridgeRequests bounds the input requests of one round.
	maxBridgeRequests = 16
)

// bridge runs call c of a client of the session-based revisions on the
// backend of rt, which speaks only the stateless generation: the result
// in the client's revision. An input-required result has each of its
// input requests asked of the client on the call's own stream (c.Relay,
// which answers at once for a capability the client lacks) and the call
// retried with the answers and the backend's requestState, up to
// maxBridgeRounds times; a client that cannot be asked (no relay) fails
// the call with ErrInputNotRelayed.
func (pl *Plane) bridge(ctx context.Context, c Call, rt Route) (backend.Reply, error) {
	st, err := bridgeCall(c, rt.Revision)
	if err != nil {
		return backend.Reply{}, err
	}
	c.Stateless = st
	for round := 0; ; round++ {
		reply, err := pl.callBackend(ctx, c, rt)
		if err != nil || !reply.Stateless {
			return reply, err
		}
		res := reply.Decoded()
		if !res.NeedsInput() {
			return backend.Reply{Res: &mcp.CallToolResult{Meta: withoutServerInfo(res.Meta), Content: res.Content,
				StructuredContent: res.StructuredContent, IsError: res.IsError}}, nil
		}
		switch {
		case c.Relay == nil:
			return backend.Reply{}, inputAsked(rt.Tool.Backend, res.InputRequests)
		case round+1 >= maxBridgeRounds:
			return backend.Reply{}, fmt.Errorf("backend %q: %w after %d rounds", rt.Tool.Backend, ErrTooManyRounds, maxBridgeRounds)
		case len(res.InputRequests) > maxBridgeRequests:
			return backend.Reply{}, fmt.Errorf("backend %q: %w (%d, at most %d)", rt.Tool.Backend, ErrTooManyRequests, len(res.InputRequests), maxBridgeRequests)
		}
		answers, err := askAll(ctx, c.Relay, res.InputRequests)
		if err != nil {
			return backend.Reply{}, fmt.Errorf("backend %q: %w", rt.Tool.Backend, err)
		}
		next := *st
		next.InputResponses, next.RequestState = answers, res.RequestState
		c.Stateless = &next
	}
}

// Errors of a bridged call's input requests.
var (
	ErrTooManyRounds   = errors.New("too many input rounds")
	ErrTooManyRequests = errors.New("too many input requests in one round")
)

// askAll asks the client each input request of reqs, in key order, and
// returns the answers as the inputResponses of the retry.
func askAll(ctx context.Context, r backend.Relay, reqs mcp.InputRequestMap) (json.RawMessage, error) {
	answers := make(map[string]json.RawMessage, len(reqs))
	for _, k := range slices.Sorted(maps.Keys(reqs)) {
		if reqs[k] == nil {
			continue
		}
		method := inputMethod(reqs[k])
		params, err := json.Marshal(reqs[k])
		if err != nil {
			return nil, fmt.Errorf("input request %q: encode: %w", k, err)
		}
		res, err := r.Ask(ctx, method, params)
		if err != nil {
			return nil, fmt.Errorf("input request %q (%s) not answered by the client: %w", k, method, err)
		}
		answers[k] = res
	}
	out, err := json.Marshal(answers)
	if err != nil {
		return nil, fmt.Errorf("encode input responses: %w", err)
	}
	return out, nil
}

// inputAsked is the failure of a bridged request whose backend b answered
// with input requests reqs.
func inputAsked(b string, reqs mcp.InputRequestMap) error {
	methods := make([]string, 0, len(reqs))
	for _, k := range slices.Sorted(maps.Keys(reqs)) {
		if r := reqs[k]; r != nil {
			methods = append(methods, inputMethod(r))
		}
	}
	return fmt.Errorf("backend %q asked for %s: %w", b, strings.Join(methods, ", "), ErrInputNotRelayed)
}

// inputMethod names the request an input request would be.
func inputMethod(r mcp.InputRequest) string {
	switch r.(type) {
	case *mcp.ElicitParams:
		return "elicitation/create"
	case *mcp.CreateMessageParams:
		return "sampling/createMessage"
	case *mcp.ListRootsParams:
		return "roots/list"
	}
	return "input"
}

// withoutServerInfo is meta less the backend's server info; nil when
// nothing else is left.
func withoutServerInfo(meta mcp.Meta) mcp.Meta {
	delete(meta, serverInfoKey)
	if len(meta) == 0 {
		return nil
	}
	return meta
}
