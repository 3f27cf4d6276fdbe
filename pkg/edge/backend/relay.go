package backend

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/events"
)

// A backend may send, on the event stream of a call's response, messages
// other than the response: notifications about the call (progress, log
// messages) and requests to the client that made it (sampling,
// elicitation, roots). The pooled backend session is shared by every
// client of the edge, but each call's stream belongs to one call: what
// comes on it is passed to that call's Relay, and a request's answer is
// posted back to the backend on the pooled session under the backend's
// own request id. Nothing per client is kept in the backend session, so a
// session that moves to another edge loses nothing there.
//
// A call without a Relay (the edge's fast paths, for clients that cannot
// be asked anything) drops the notifications and answers each request
// with an error at once, so that the backend never waits for an answer
// that cannot come.

// Relay carries to the client that made a call what the call's backend
// sends on the call's stream besides the response.
type Relay interface {
	// Notify passes on a notification of the call: one of
	// RelayedNotifications. params is one bounded, valid JSON value (nil
	// when the notification had none).
	Notify(method string, params json.RawMessage)
	// Ask passes on a request of the backend (one of RelayedRequests) to
	// the client and returns the client's result. An error that is a
	// *jsonrpc.Error is the backend's answer as it is; any other error is
	// answered as an internal error naming only the method. Ask returns
	// when ctx ends.
	Ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// RelayedNotifications and RelayedRequests are the methods a Relay is
// given; other notifications on a call's stream are dropped and other
// requests refused (ping is answered by the edge).
var (
	RelayedNotifications = []string{"notifications/progress", "notifications/message"}
	RelayedRequests      = []string{"sampling/createMessage", "elicitation/create", "roots/list"}
)

// Call is one tools/call to forward: to which backend, the tool's own
// name there and the client's arguments (an object; nil for none).
type Call struct {
	Backend string
	Config  events.BackendConfig
	Tool    string
	Args    json.RawMessage
	// Meta is the client's _meta of the call (an object; nil for none),
	// passed on as sent: its progressToken is what the backend's progress
	// notifications name.
	Meta json.RawMessage
	// Later, when not nil, takes the backend bodies the caller closes
	// after answering its client.
	Later *Closings
	// Relay hears the notifications and requests of the call's stream;
	// nil drops and refuses them.
	Relay Relay
	// Stateless, when set, forwards the call in the stateless revision
	// (stateless.go) instead of on the pooled session.
	Stateless *Stateless
}

// relayCapabilities are the client capabilities the pooled sessions
// declare to backends: every one a Relay can pass on, so that a backend
// asks; whether the client behind a call has the capability is decided
// per call (a client that lacks it gets the backend's request refused at
// once by the edge).
func relayCapabilities() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{
		RootsV2:     &mcp.RootCapabilities{ListChanged: true},
		Sampling:    &mcp.SamplingCapabilities{},
		Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
	}
}

// relayed reports whether method is one of list.
func relayed(method string, list []string) bool {
	for _, m := range list {
		if m == method {
			return true
		}
	}
	return false
}

// notified handles a notification on the stream of a call to peer to.
func notified(to peer, method string, params json.RawMessage) {
	if to.relay != nil && relayed(method, RelayedNotifications) {
		to.relay.Notify(method, params)
	}
}

// asked answers a request of the backend on the stream of a call to peer
// to: relayed to the caller's client when the call has a Relay, answered
// here when it is a ping, and refused otherwise. It returns once the
// answer is posted (the backend waits for it before it goes on).
func (p *Pool) asked(ctx context.Context, to peer, id json.RawMessage, method string, params json.RawMessage) {
	switch {
	case method == "ping":
		p.answer(ctx, to, id, json.RawMessage(`{}`), nil)
	case to.relay != nil && relayed(method, RelayedRequests):
		res, err := to.relay.Ask(ctx, method, params)
		if err == nil && !json.Valid(res) {
			err = errors.New("the client's result is not JSON")
		}
		p.answer(ctx, to, id, res, err)
	default:
		p.answer(ctx, to, id, nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: "method " + strconv.Quote(method) + " not supported by the fleetgate edge for this call"})
	}
}

// answer posts the response to the backend's request id on the call's
// session: res, or err (a *jsonrpc.Error as it is, any other error as an
// internal error without its text, which may carry the client's words).
func (p *Pool) answer(ctx context.Context, to peer, id, res json.RawMessage, err error) {
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	if err != nil {
		var je *jsonrpc.Error
		if !errors.As(err, &je) {
			je = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the client could not be asked"}
			if ctx.Err() != nil {
				je.Message = "the call ended before the client answered"
			}
		}
		msg["error"] = je
	} else {
		msg["result"] = res
	}
	body, merr := json.Marshal(msg)
	if merr != nil {
		return
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.timeout)
	defer cancel()
	if resp, err := p.post(actx, to, body); err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
	}
}
