package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/internal/h1"
	"github.com/fleetgate/fleetgate/pkg/events"
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

// Request is one request of the stateless revision to a backend that
// speaks it (Pool.Stateless): no session, the revision's headers (Mcp-Name
// is Name: a tool's or prompt's name, a resource's URI), Params as the
// request's params (their members as the client sent them, the name the
// backend's own).
type Request struct {
	Backend  string
	Config   events.BackendConfig
	Revision string
	Method   string
	Name     string
	Params   map[string]any
	// ParamHeaders are the client's Mcp-Param-* headers.
	ParamHeaders http.Header
	Later        *Closings
	Relay        Relay
}

// Stateless sends r and returns the backend's result as it came, or its
// JSON-RPC error. It is never retried: with no session, nothing tells that
// a failed exchange did not run the request.
func (p *Pool) Stateless(ctx context.Context, r Request) (json.RawMessage, error) {
	var user *userAuth // a per-caller backend's: the caller's token (percaller.go)
	if perCaller(r.Config) {
		c, err := p.connOf(ctx, r.Backend, r.Config) // before detach drops the caller
		if err != nil {
			return nil, callError(r.Backend, r.Method, err)
		}
		user = c.user
	}
	ctx, cancel := detach(ctx, p.timeout, r.Later != nil)
	defer cancel()
	start := time.Now()
	raw, err := p.statelessExchange(ctx, r, user)
	var st *errHTTPStatus
	if user != nil && errors.As(err, &st) && st.code == http.StatusUnauthorized {
		// The caller's token refused: not run, so sent once more with a
		// new one (exchanged again, or refreshed).
		user.forget()
		raw, err = p.statelessExchange(ctx, r, user)
	}
	if p.obs != nil {
		p.obs.BackendCall(r.Backend, r.Method, time.Since(start), err)
	}
	if err != nil {
		return nil, callError(r.Backend, r.Method, err) // a caller's token not obtained: its kind
	}
	return raw, nil
}

// callStateless is CallTool for call.Stateless.
func (p *Pool) callStateless(ctx context.Context, call Call) (Reply, error) {
	st := call.Stateless
	params := map[string]any{"name": call.Tool, "arguments": json.RawMessage("{}")}
	if t := bytes.TrimSpace(call.Args); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		params["arguments"] = call.Args
	}
	st.AddTo(params)
	raw, err := p.Stateless(ctx, Request{Backend: call.Backend, Config: call.Config, Revision: st.Revision, Method: "tools/call",
		Name: call.Tool, Params: params, ParamHeaders: st.ParamHeaders, Later: call.Later, Relay: call.Relay})
	if err != nil {
		return Reply{}, err
	}
	return Reply{Raw: raw, Stateless: true}, nil
}

// AddTo sets the members of st (the client's _meta, input responses and
// the backend's state) in params.
func (st *Stateless) AddTo(params map[string]any) {
	if len(st.Meta) > 0 {
		params["_meta"] = st.Meta
	}
	if len(st.InputResponses) > 0 {
		params["inputResponses"] = st.InputResponses
	}
	if st.RequestState != "" {
		params["requestState"] = st.RequestState
	}
}

func (p *Pool) statelessExchange(ctx context.Context, r Request, user *userAuth) (json.RawMessage, error) {
	id := "fleetgate-" + strconv.FormatUint(p.ids.Add(1), 10)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": r.Method, "params": r.Params})
	if err != nil {
		return nil, fmt.Errorf("encode stateless %s: %w", r.Method, err)
	}
	if err := mcpwire.Check(body, mcpwire.MaxDepth); err != nil {
		return nil, fmt.Errorf("encode stateless %s: %w", r.Method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.Config.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = http.Header{
		"Content-Type":         jsonContentType,
		"Accept":               acceptBoth,
		"Mcp-Protocol-Version": {r.Revision},
		"Mcp-Method":           {r.Method},
	}
	if r.Name != "" && h1.ASCII(r.Name) {
		req.Header["Mcp-Name"] = []string{r.Name}
	}
	for k, v := range r.ParamHeaders {
		if strings.HasPrefix(http.CanonicalHeaderKey(k), "Mcp-Param-") {
			req.Header[http.CanonicalHeaderKey(k)] = v
		}
	}
	if len(r.Config.Headers) > 0 {
		if err := p.conn(r.Backend, r.Config).creds.Apply(req.Header); err != nil {
			return nil, err
		}
	}
	if user != nil {
		v, err := user.authorization(ctx)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", v)
	}
	resp, err := p.send(ctx, req)
	if err != nil {
		return nil, err
	}
	defer closeLater(r.Later, resp.Body)
	to := peer{url: r.Config.URL, relay: r.Relay}
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
