package calls

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	goauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/backend"
	"github.com/fleetgate/fleetgate/pkg/edge/inputstate"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/events"
)

// Calls of clients of the stateless generation (2026-07-28) to a backend
// that speaks the same revision go to it in that revision, so that the
// backend may answer with input requests (an input-required result) and
// take the client's input responses on the retry. The requestState the
// client is handed is the backend's sealed (package inputstate): bound to
// the caller and the tool, with an expiry, under the key of the edge's
// group, so that the retry completes on any edge of the group.

// serverInfoKey is the _meta key of a server's info in a result: the
// edge's, not the backend's, reaches the client.
const serverInfoKey = "io.modelcontextprotocol/serverInfo"

// StatelessOf is what a tools/call r of a client of the stateless
// generation carries for a backend of the same revision: its _meta, input
// responses, requestState (as the client sent it: Forward opens it) and
// Mcp-Param-* headers.
func StatelessOf(r *mcp.CallToolRequest) (*backend.Stateless, error) {
	return statelessOf(r.Params.Meta, r.Params.InputResponses, r.Params.RequestState, r.GetExtra())
}

// statelessOf is StatelessOf of any request's members.
func statelessOf(meta mcp.Meta, responses mcp.InputResponseMap, state string, x *mcp.RequestExtra) (*backend.Stateless, error) {
	st := &backend.Stateless{RequestState: state}
	if v, ok := meta[mcp.MetaKeyProtocolVersion].(string); ok {
		st.Revision = v
	}
	var err error
	if len(meta) > 0 {
		if st.Meta, err = json.Marshal(meta); err != nil {
			return nil, fmt.Errorf("encode _meta: %w", err)
		}
	}
	if responses != nil {
		if st.InputResponses, err = json.Marshal(responses); err != nil {
			return nil, fmt.Errorf("encode inputResponses: %w", err)
		}
	}
	if x != nil {
		for k, v := range x.Header {
			if strings.HasPrefix(http.CanonicalHeaderKey(k), "Mcp-Param-") {
				if st.ParamHeaders == nil {
					st.ParamHeaders = http.Header{}
				}
				st.ParamHeaders[http.CanonicalHeaderKey(k)] = v
			}
		}
	}
	return st, nil
}

// SpeaksStateless reports whether the backend of exposed tool name, in
// the view served now, speaks the stateless generation: its calls take
// the go-sdk's path, which passes input requests and responses.
func (pl *Plane) SpeaksStateless(name string) bool {
	cur := pl.o.View().Era(view.FirstStateless) // asked of calls of that generation

	entry, ok := cur.Catalog.Tool(name)
	return ok && cur.Revisions[entry.Backend] != ""
}

// revisionOf is the stateless revision the edge speaks to backend b (cfg
// its config) in view cur: the one it was discovered in, or none for a
// backend that acts for each caller (its calls take the caller's own
// session and token: backend.Pool.CallTool).
func revisionOf(cur *view.Served, b string, cfg events.BackendConfig) string {
	if cfg.Auth.PerCaller() {
		return ""
	}
	return cur.Revisions[b]
}

// binding is what the requestState of call c by route rt is issued for.
func binding(c Call, rt Route) inputstate.Binding {
	return inputstate.Binding{Identity: stateIdentity(c.TokenInfo, c.Ident), Method: "tools/call", Target: c.Name + "\x00" + rt.Tool.Backend}
}

// stateIdentity is the caller a state is issued to: the verified token's
// issuer and subject, or the identity (header) without one.
func stateIdentity(ti *goauth.TokenInfo, ident string) string {
	if id := TokenIdentity(ti); id != nil {
		return "token\x00" + id.Issuer + "\x00" + id.Subject
	}
	return "ident\x00" + ident
}

// stateRefused is the error of a retry whose requestState the edge does
// not take: invalid params, as a server refuses a state that fails its
// integrity check.
func stateRefused(name string, err error) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("tool %q: %v", name, err)}
}

// openState prepares c.Stateless for route rt: the backend's own state
// opened from the sealed one, or the call made on the pooled session when
// the backend does not speak the client's revision. It returns the
// refusal of a retry it cannot forward.
func (pl *Plane) openState(c *Call, rt Route, now time.Time) *jsonrpc.Error {
	st := c.Stateless
	if st == nil {
		return nil
	}
	if rt.Revision == "" || rt.Revision != st.Revision {
		if st.RequestState != "" || len(st.InputResponses) > 0 {
			return stateRefused(c.Name, fmt.Errorf("backend %q does not take input responses in revision %q", rt.Tool.Backend, st.Revision))
		}
		c.Stateless = nil // the backend's own revision, on the pooled session
		return nil
	}
	if st.RequestState == "" {
		return nil
	}
	inner, err := pl.sealer.Open(binding(*c, rt), st.RequestState, now)
	if err != nil {
		return stateRefused(c.Name, err)
	}
	cp := *st
	cp.RequestState = inner
	c.Stateless = &cp
	return nil
}

// sealState makes reply, the result of a stateless backend to call c, what
// the client gets: the backend's requestState sealed, its server info
// left to the edge's.
func (pl *Plane) sealState(c Call, rt Route, reply *backend.Reply, now time.Time) error {
	res := reply.Decoded()
	delete(res.Meta, serverInfoKey)
	if res.RequestState != "" {
		sealed, err := pl.sealer.Seal(binding(c, rt), res.RequestState, now.Add(inputstate.DefaultLifetime))
		if err != nil {
			*reply = backend.Reply{} // nothing of the backend's state reaches the client
			return fmt.Errorf("backend %q: %w", rt.Tool.Backend, err)
		}
		res.RequestState = sealed
	}
	*reply = backend.Reply{Res: res}
	return nil
}

// errorReply is the reply of a call refused with a JSON-RPC error: an
// isError result carrying it, which a caller of the stateless generation
// answers as the error (ClientError).
func errorReply(je *jsonrpc.Error) backend.Reply {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: je.Message}}}
	res.SetError(je)
	return backend.Reply{Res: res}
}

// item is a prompts/get or resources/read of a client of the stateless
// generation: its method, the exposed name (or URI) it asked for, the
// caller, and its members for the backend.
type item struct {
	method, name string
	ident        string
	meta         mcp.Meta
	responses    mcp.InputResponseMap
	state        string
	extra        *mcp.RequestExtra
}

// itemStateless prepares it for the backend b (revision rev): nil, nil when
// it goes on the pooled session (a client of the session-based revisions,
// or a backend of another revision and nothing to pass on); a refusal when
// its state does not open or the backend cannot take its input responses.
func (pl *Plane) itemStateless(it item, b, rev string, now time.Time) (*backend.Stateless, *jsonrpc.Error) {
	if _, ok := it.meta[mcp.MetaKeyProtocolVersion].(string); !ok {
		return nil, nil // a client of the session-based revisions
	}
	st, err := statelessOf(it.meta, it.responses, it.state, it.extra)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	if rev == "" || rev != st.Revision {
		if st.RequestState != "" || len(st.InputResponses) > 0 {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
				Message: fmt.Sprintf("%s %q: backend %q does not take input responses in revision %q", it.method, it.name, b, st.Revision)}
		}
		return nil, nil
	}
	if st.RequestState != "" {
		inner, err := pl.sealer.Open(it.binding(b), st.RequestState, now)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s %q: %v", it.method, it.name, err)}
		}
		st.RequestState = inner
	}
	return st, nil
}

func (it item) binding(b string) inputstate.Binding {
	return inputstate.Binding{Identity: stateIdentity(TokenInfoOf(it.extra), it.ident), Method: it.method, Target: it.name + "\x00" + b}
}

// sealItem seals *state, a backend's requestState for it, and leaves the
// result's server info to the edge's.
func (pl *Plane) sealItem(it item, b string, state *string, meta mcp.Meta, now time.Time) error {
	delete(meta, serverInfoKey)
	if *state == "" {
		return nil
	}
	sealed, err := pl.sealer.Seal(it.binding(b), *state, now.Add(inputstate.DefaultLifetime))
	if err != nil {
		*state = ""
		return fmt.Errorf("backend %q: %w", b, err)
	}
	*state = sealed
	return nil
}
