package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/valyala/fastjson"
)

// fastCall answers a plain tools/call POST of an initialized session
// without the go-sdk server: the go-sdk decodes each message several times
// with a decoder that allocates tens of KB per value, which made up most
// of the edge's cost of a call. The call runs exactly what the session's
// middleware would run for it (the call trail, Edge.callTool), and the
// response is one application/json JSON-RPC response (a streamable HTTP
// server may answer a POST with JSON or an event stream).
//
// Anything else is left to the go-sdk, which then gets r unchanged (its
// body readable again) and fastCall reports false: other methods, batches,
// requests with _meta (progress tokens), members the go-sdk would reject,
// headers it would refuse, an optimizer edge (its meta-tools), and edges
// with Options.SessionTimeout (the go-sdk's idle timer is renewed only by
// requests it serves). A notifications/cancelled naming a call answered
// here cancels it and still goes on to the go-sdk, which ignores it.
func (e *Edge) fastCall(w http.ResponseWriter, r *http.Request, s *session) bool {
	if e.opts.Mode != ModePassthrough || e.opts.SessionTimeout != 0 || s.kind != kindSession ||
		s.flags.Load() != flagBound|flagInitialized || !fastHeaders(r, s.protocolVersion()) {
		return false
	}
	var data []byte
	var err error
	if lb, ok := r.Body.(*wholeBody); ok { // read whole already (the gate, a lane)
		data = lb.data
	} else {
		data, err = io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	}
	restore := func() bool {
		if _, ok := r.Body.(*wholeBody); ok {
			r.Body = newWholeBody(data) // unread, whole: the go-sdk reads it next
			return false
		}
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(data), r.Body), r.Body}
		return false
	}
	if err != nil || len(data) > maxBody {
		return restore()
	}
	msg, ok := parseFastMessage(data)
	if !ok {
		return restore()
	}
	if msg.method == "notifications/cancelled" {
		if cancel, ok := e.fastCalls.Load(fastKey(s.id, msg.cancelID)); ok {
			cancel.(context.CancelFunc)()
		}
		return restore()
	}
	var ss *mcp.ServerSession
	for x := range s.srv.Sessions() {
		ss = x
	}
	if ss == nil { // ended: the go-sdk answers 404
		return restore()
	}
	ctx, cancel := context.WithCancel(r.Context())
	key := fastKey(s.id, msg.id)
	if _, dup := e.fastCalls.LoadOrStore(key, cancel); dup { // an id still in flight
		cancel()
		return restore()
	}
	defer func() {
		e.fastCalls.Delete(key)
		cancel()
	}()
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: msg.name, Arguments: msg.args},
		Extra: &mcp.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context()), Header: r.Header}, Session: ss}
	reply, err := e.answerCall(ctx, s, req)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if err == nil && reply.raw != nil {
		// The backend's result as it came (validated when it arrived).
		body := make([]byte, 0, len(`{"jsonrpc":"2.0","id":,"result":}`)+len(msg.id)+len(reply.raw))
		body = append(body, `{"jsonrpc":"2.0","id":`...)
		body = append(body, msg.id...)
		body = append(body, `,"result":`...)
		body = append(body, reply.raw...)
		_, _ = w.Write(append(body, '}'))
		return true
	}
	var res mcp.Result
	if err == nil {
		res = reply.decoded()
	}
	out := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  mcp.Result      `json:"result,omitempty"`
		Error   *jsonrpc.Error  `json:"error,omitempty"`
	}{JSONRPC: "2.0", ID: msg.id, Result: res}
	if err != nil {
		out.Result = nil
		if !errors.As(err, &out.Error) {
			out.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
	}
	body, err := json.Marshal(out)
	if err != nil {
		body, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": msg.id,
			"error": &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encode result: " + err.Error()}})
	}
	_, _ = w.Write(body)
	return true
}

// answerCall runs a tools/call as the session's middleware chain does
// (Edge.evidence, then Edge.receiving).
func (e *Edge) answerCall(ctx context.Context, s *session, req *mcp.CallToolRequest) (toolReply, error) {
	if e.opts.CallTrail == nil {
		return e.forwardTool(ctx, req.Params.Name, req.Params.Arguments), nil
	}
	var reply toolReply
	next := func(ctx context.Context, _ string, r mcp.Request) (mcp.Result, error) {
		p := r.(*mcp.CallToolRequest).Params
		reply = e.forwardTool(ctx, p.Name, p.Arguments)
		if reply.raw != nil && !reply.isError {
			// The audit reads only IsError and an error's text: the
			// result is not decoded for it.
			return &mcp.CallToolResult{}, nil
		}
		return reply.decoded(), nil
	}
	_, err := e.audited(ctx, s, req, "tools/call", next)
	return reply, err
}

func fastKey(sid string, id json.RawMessage) string { return sid + "\x00" + string(id) }

// fastHeaders reports whether the go-sdk would accept r's headers for a
// POST of a session of protocol version: the same version, JSON, both
// response kinds accepted, no resumption, and a Host its DNS-rebinding
// protection lets through.
func fastHeaders(r *http.Request, version string) bool {
	if version == "" || r.Header.Get("Mcp-Protocol-Version") != version || len(r.Header.Values("Last-Event-ID")) > 0 {
		return false
	}
	return jsonPostHeaders(r)
}

// jsonPostHeaders reports whether the go-sdk would take the rest of a
// POST's headers: a JSON body, both response kinds accepted, and a Host
// its DNS-rebinding protection lets through (a loopback name when the
// request came to a loopback address).
func jsonPostHeaders(r *http.Request) bool {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		if ct, _, err := mime.ParseMediaType(ct); err != nil || ct != "application/json" {
			return false
		}
	}
	if jsonOK, streamOK := accepts(r); !jsonOK || !streamOK {
		return false
	}
	la, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if ta, ok := la.(*net.TCPAddr); ok {
		if ta.IP.IsLoopback() {
			return loopback(r.Host)
		}
		return true
	}
	if la != nil && loopback(la.String()) {
		return loopback(r.Host)
	}
	return true
}

// loopback reports whether a host or host:port is localhost or a loopback
// address.
func loopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && ip.Unmap().IsLoopback()
}

// fastMessage is a message fastCall handles: a tools/call request, or a
// notifications/cancelled.
type fastMessage struct {
	method   string
	id       json.RawMessage // the request's id, as sent
	name     string
	args     json.RawMessage
	cancelID json.RawMessage // the requestId a cancellation names
}

// parseFastMessage parses data as a single tools/call request or
// notifications/cancelled with nothing beyond the members fastCall
// handles (member names matched exactly, none twice). It parses with
// fastjson, which allocates next to nothing: encoding/json's decoding of
// the two objects cost more than the rest of the edge's work on a call.
func parseFastMessage(data []byte) (fastMessage, bool) {
	var m fastMessage
	if !bytes.Contains(data, []byte(`"tools/call"`)) && !bytes.Contains(data, []byte(`"notifications/cancelled"`)) {
		return m, false
	}
	// fastjson's parser takes some invalid JSON (NaN, 007, raw control
	// characters); its validator does not.
	if !fastJSON(data) { // bounded, linear, and what encoding/json takes
		return m, false
	}
	p := fastParsers.Get()
	defer fastParsers.Put(p)
	v, err := p.ParseBytes(data)
	if err != nil {
		return m, false
	}
	top, err := v.Object()
	if err != nil {
		return m, false
	}
	var id, params *fastjson.Value
	ok := true
	seen := 0
	top.Visit(func(k []byte, v *fastjson.Value) {
		var bit int
		switch string(k) {
		case "jsonrpc":
			bit, ok = 1, ok && string(v.GetStringBytes()) == "2.0" && v.Type() == fastjson.TypeString
		case "method":
			bit, m.method = 2, string(v.GetStringBytes())
		case "id":
			bit, id = 4, v
		case "params":
			bit, params = 8, v
		default:
			ok = false
		}
		ok = ok && seen&bit == 0
		seen |= bit
	})
	if !ok || seen&(1|2|8) != 1|2|8 || params.Type() != fastjson.TypeObject {
		return m, false
	}
	switch m.method {
	case "notifications/cancelled":
		var reqID *fastjson.Value
		params.GetObject().Visit(func(k []byte, v *fastjson.Value) {
			if string(k) == "requestId" { // the last, as encoding/json reads it
				reqID = v
			}
		})
		if id != nil || reqID == nil {
			return m, false
		}
		m.cancelID = reqID.MarshalTo(nil)
		return m, validID(m.cancelID)
	case "tools/call":
		if id == nil {
			return m, false
		}
		m.id = id.MarshalTo(nil)
		var name, args *fastjson.Value
		params.GetObject().Visit(func(k []byte, v *fastjson.Value) {
			switch {
			case string(k) == "name" && name == nil:
				name = v
			case string(k) == "arguments" && args == nil:
				args = v
			default:
				ok = false
			}
		})
		if !ok || !validID(m.id) || name == nil || name.Type() != fastjson.TypeString {
			return m, false
		}
		// A name of other bytes (fastjson keeps invalid UTF-8 and lone
		// surrogates that encoding/json replaces) is the go-sdk's.
		if m.name = string(name.GetStringBytes()); m.name == "" || !plainName(m.name) {
			return m, false
		}
		if args != nil {
			if args.Type() != fastjson.TypeObject {
				return m, false
			}
			m.args = args.MarshalTo(nil)
		}
		return m, true
	}
	return m, false
}

// fastParsers are the parsers of parseFastMessage and of backend
// responses (forward.go).
var fastParsers fastjson.ParserPool

// validID reports whether id is a JSON-RPC request id the edge echoes
// as the go-sdk would write it: a string of printable ASCII without
// escapes, or an integer as JSON writes it (no leading zeros, no fraction
// or exponent) of at most 15 digits (the go-sdk reads ids as float64).
// Any other id is left to the go-sdk.
func validID(id json.RawMessage) bool {
	if len(id) < 2 && (len(id) == 0 || id[0] == '"') {
		return false
	}
	if id[0] == '"' {
		if id[len(id)-1] != '"' {
			return false
		}
		for _, c := range id[1 : len(id)-1] {
			if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
				return false
			}
		}
		return true
	}
	digits := strings.TrimPrefix(string(id), "-")
	if digits == "" || len(digits) > 15 || len(digits) > 1 && digits[0] == '0' || string(id) == "-0" {
		return false
	}
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
