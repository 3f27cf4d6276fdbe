package calls

import (
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/backend"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
)

// A backend may list different definitions to each protocol generation
// (view.Served.Stateless): every request is routed in the view of its
// client's era, so that a tool, prompt or resource the backend does not
// give that era is unknown to its clients, as it is at the backend.

// era is the revision whose view routes call c: the stateless
// generation's for a client of it (a stateless request, or one on a
// listen or the shared stateless server's session), "" otherwise.
func (c Call) era() string {
	if c.Stateless != nil || c.Session != nil && c.Session.Kind() != session.KindSession {
		return view.FirstStateless
	}
	return ""
}

// metaRevision is the revision a request of the stateless generation
// names in its _meta ("" for a request of the session-based revisions,
// which carries none).
func metaRevision(meta mcp.Meta) string {
	rev, _ := meta[mcp.MetaKeyProtocolVersion].(string)
	return rev
}

// statelessCall is what a call_tool r of a client of the stateless
// generation (s not a session of the session-based revisions) carries for
// the tool it calls (StatelessOf): a tool that its era alone has is
// called in that generation, as a tools/call of it is; nil for a client
// of the session-based revisions.
func statelessCall(s *session.Session, r *mcp.CallToolRequest) (*backend.Stateless, error) {
	if s == nil || s.Kind() == session.KindSession {
		return nil, nil
	}
	st, err := StatelessOf(r)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	return st, nil
}
