package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

// Stateless is a tools/call of a client of the stateless protocol
// generation (2026-07-28), forwarded in that revision to a backend that
// speaks it (its catalog's protocol version): with no session, the
// revision's headers, and the client's own _meta (its protocol version,
// info and capabilities: what the backend may ask of it depends on them),
// input responses and the backend's requestState of a retry.
type Stateless struct {
	// Revision is the revision both the client and the backend speak.
	Revision string
	// Meta is the client's _meta (an object), InputResponses its input
	// responses (an object; nil for none), RequestState the backend's own
	// state ("" for none).
	Meta           json.RawMessage
	InputResponses json.RawMessage
	RequestState   string
	// ParamHeaders are the client's Mcp-Param-* headers: the backend
	// checks them against the arguments, as the edge did.
	ParamHeaders http.Header
}

// maxErrorBody bounds the body of a refused stateless request read for
// its JSON-RPC error.
const maxErrorBody = 64 << 10

// callStateless is CallTool for call.Stateless: one POST, the result or
// the backend's JSON-RPC error as it came. It is never retried: with no
// session, nothing tells that a failed exchange did not run the call.
func (p *Pool) callStateless(ctx context.Context, call Call) (Reply, error) {
	ctx, cancel := detach(ctx, p.timeout, call.Later != nil)
	defer cancel()
	start := time.Now()
	raw, err := p.statelessExchange(ctx, call)
	if p.obs != nil {
		p.obs.BackendCall(call.Backend, "tools/call", time.Since(start), err)
	}
	if err != nil {
		return Reply{}, backendError(call.Backend, "tools/call", err)
	}
	return Reply{Raw: raw, Stateless: true}, nil
}

func (p *Pool) statelessExchange(ctx context.Context, call Call) (json.RawMessage, error) {
	st := call.Stateless
	id := "fleetgate-" + strconv.FormatUint(p.ids.Add(1), 10)
	body, err := statelessBody(id, call.Tool, call.Args, st)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, call.Config.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = http.Header{
		"Content-Type":         jsonContentType,
		"Accept":               acceptBoth,
		"Mcp-Protocol-Version": {st.Revision},
		"Mcp-Method":           {"tools/call"},
		"Mcp-Name":             {call.Tool},
	}
	for k, v := range st.ParamHeaders {
		if strings.HasPrefix(http.CanonicalHeaderKey(k), "Mcp-Param-") {
			req.Header[http.CanonicalHeaderKey(k)] = v
		}
	}
	if len(call.Config.Headers) > 0 {
		if err := p.conn(call.Backend, call.Config).creds.Apply(req.Header); err != nil {
			return nil, err
		}
	}
	resp, err := p.send(ctx, req)
	if err != nil {
		return nil, err
	}
	defer closeLater(call.Later, resp.Body)
	to := peer{url: call.Config.URL, relay: call.Relay}
	var msg *wireMessage
	switch {
	case resp.StatusCode/100 == 2:
		msg, err = p.readResponse(ctx, resp, to, id)
	case mediaType(resp.Header.Get("Content-Type")) == "application/json":
		// A refusal of the revision (400, 404) carries its JSON-RPC error.
		data, rerr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody+1))
		if rerr != nil || len(data) > maxErrorBody {
			return nil, &errHTTPStatus{code: resp.StatusCode}
		}
		msg, err = p.findResponse(ctx, data, to, id)
		if err == nil && msg.Error == nil {
			return nil, &errHTTPStatus{code: resp.StatusCode}
		}
	default:
		return nil, &errHTTPStatus{code: resp.StatusCode}
	}
	if err != nil {
		return nil, err
	}
	if msg.Error != nil {
		return nil, msg.Error
	}
	return msg.Result, nil
}

// statelessBody is the JSON-RPC request of a stateless tools/call: the
// backend's tool name, the arguments, and the client's _meta, input
// responses and state (each passed as the client sent it).
func statelessBody(id, tool string, args json.RawMessage, st *Stateless) ([]byte, error) {
	params := map[string]any{"name": tool}
	if t := bytes.TrimSpace(args); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		params["arguments"] = json.RawMessage("{}")
	} else {
		params["arguments"] = args
	}
	if len(st.Meta) > 0 {
		params["_meta"] = st.Meta
	}
	if len(st.InputResponses) > 0 {
		params["inputResponses"] = st.InputResponses
	}
	if st.RequestState != "" {
		params["requestState"] = st.RequestState
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
	if err != nil {
		return nil, fmt.Errorf("encode stateless call of %q: %w", tool, err)
	}
	if err := mcpwire.Check(body, mcpwire.MaxDepth); err != nil {
		return nil, fmt.Errorf("encode stateless call of %q: %w", tool, err)
	}
	return body, nil
}
