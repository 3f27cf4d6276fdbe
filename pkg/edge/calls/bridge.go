package calls

import (
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
// as stateless requests of the backend's revision, declaring no client
// capability (a session's client is not there to answer input requests
// within the request), and the result comes back in the client's
// revision: without resultType, ttlMs, cacheScope, requestState or the
// backend's server info. A backend that asks for input anyway (an
// input_required result) fails the request with ErrInputNotRelayed; one
// that refuses the request for a missing client capability (-32021)
// fails it with its error.

// ErrInputNotRelayed is wrapped by the failure of a bridged request whose
// backend asked for input.
var ErrInputNotRelayed = errors.New("the backend speaks only protocol 2026-07-28 and asked for input " +
	"(elicitation, sampling or roots), which the edge does not relay to a client of an older protocol; " +
	"connect with protocol 2026-07-28 to answer it")

// reservedMeta are the _meta members of a stateless request that say who
// the client is: a bridged request sets them itself.
var reservedMeta = []string{mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities}

// bridgeOf is the stateless form, in revision rev, of a request of a
// client of the session-based revisions carrying _meta meta (its other
// members, a progress token for one, passed on).
func bridgeOf(meta map[string]any, rev string) (*backend.Stateless, error) {
	m := make(map[string]any, len(meta)+2)
	for k, v := range meta {
		if !slices.Contains(reservedMeta, k) {
			m[k] = v
		}
	}
	m[mcp.MetaKeyProtocolVersion] = rev
	m[mcp.MetaKeyClientCapabilities] = map[string]any{}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode _meta: %w", err)
	}
	return &backend.Stateless{Revision: rev, Meta: raw}, nil
}

// bridgeCall is bridgeOf for call c: its _meta as it came.
func bridgeCall(c Call, rev string) (*backend.Stateless, error) {
	var meta map[string]any
	if len(c.Meta) > 0 {
		if err := json.Unmarshal(c.Meta, &meta); err != nil {
			return nil, fmt.Errorf("decode _meta: %w", err)
		}
	}
	return bridgeOf(meta, rev)
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

// bridgedReply is the result of a bridged call c (routed by rt) as the
// client's revision has it, or its failure.
func (pl *Plane) bridgedReply(c Call, rt Route, reply backend.Reply) (backend.Reply, error) {
	res := reply.Decoded()
	if res.NeedsInput() {
		err := inputAsked(rt.Tool.Backend, res.InputRequests)
		return pl.failed(c, rt, err), err
	}
	return backend.Reply{Res: &mcp.CallToolResult{Meta: withoutServerInfo(res.Meta), Content: res.Content,
		StructuredContent: res.StructuredContent, IsError: res.IsError}}, nil
}
