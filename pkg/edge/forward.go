package edge

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
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/valyala/fastjson"

	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

// A tools/call is forwarded to its backend as raw JSON-RPC over HTTP on
// the pooled session (its Mcp-Session-Id), not through the go-sdk client:
// the request is written once from the client's raw arguments and the
// response's result is passed on as it came or decoded (toolresult.go).
// The go-sdk client's connection machinery and decoding cost a call about
// as much as the whole edge hop otherwise. Prompts and resources still go
// through the go-sdk client (pool.do).

// backendProtocol is the protocol version of the pooled backend sessions.
const backendProtocol = "2025-11-25"

// Header values of the requests post sends.
var (
	jsonContentType       = []string{"application/json"}
	acceptBoth            = []string{"application/json, text/event-stream"}
	backendProtocolHeader = []string{backendProtocol}
)

// errNotSent wraps the errors of an HTTP exchange that failed before a
// response arrived (the go-sdk client's "rejected by transport"): the call
// is retried once on a new session, as do does for the go-sdk client.
var errNotSent = errors.New("request not sent")

// wireMessage is one JSON-RPC message read from a backend.
type wireMessage struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *jsonrpc.Error  `json:"error,omitempty"`
	shape  resultShape
}

// resultShape is what the edge learnt of a tools/call result while it
// parsed the response: whether it has the common shape (plainToolValue)
// and whether it is an isError result.
type resultShape struct{ plain, isError, meta bool }

// callTool forwards a tools/call of tool name with the raw arguments args
// (an object; nil for none) to backend at url with the retry rules of do:
// a session the backend no longer knows (404) is replaced and the call
// sent again once, as is one that could not be sent.
func (p *pool) callTool(ctx context.Context, backend, url, name string, args json.RawMessage) (toolReply, error) {
	params := encodeCallParams(name, args)
	return do(ctx, p, backend, url, "tools/call", func(ctx context.Context, cs *mcp.ClientSession) (toolReply, error) {
		raw, shape, err := p.rawCall(ctx, url, cs.ID(), "tools/call", params)
		if err != nil {
			return toolReply{}, err
		}
		if shape.plain {
			return toolReply{raw: raw, isError: shape.isError, hasMeta: shape.meta}, nil // decoded when needed
		}
		// Another shape is decoded (validated) and sent re-encoded, as the
		// go-sdk path would: encoding/json is lenient about member names.
		res, err := decodeToolResult(raw)
		if err != nil {
			return toolReply{}, fmt.Errorf("decode result: %w", err)
		}
		return toolReply{res: res}, nil
	})
}

// encodeCallParams is the JSON of tools/call params. args comes from a
// decoded message (valid JSON); an empty one is sent as {}, as the go-sdk
// client does.
func encodeCallParams(name string, args json.RawMessage) json.RawMessage {
	var quoted []byte
	if plainName(name) {
		quoted = append(append(append(make([]byte, 0, len(name)+2), '"'), name...), '"')
	} else {
		quoted, _ = json.Marshal(name) // a string always encodes
	}
	if len(bytes.TrimSpace(args)) == 0 || bytes.Equal(bytes.TrimSpace(args), []byte("null")) {
		args = json.RawMessage("{}")
	}
	b := make([]byte, 0, len(`{"name":,"arguments":}`)+len(quoted)+len(args))
	b = append(b, `{"name":`...)
	b = append(b, quoted...)
	b = append(b, `,"arguments":`...)
	b = append(b, args...)
	return append(b, '}')
}

// plainName reports whether name is JSON-encoded as itself in quotes:
// printable ASCII without '"', '\\' or the characters encoding/json
// escapes for HTML ('<', '>', '&').
func plainName(name string) bool {
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// rawCall sends one JSON-RPC request on the backend session sid and
// returns the raw result of its response (and its shape, for a tools/call
// result). params is JSON already encoded
// (json.RawMessage) or a value to encode. The request gets an id of its
// own (the session is shared by every caller, and its go-sdk client uses
// numeric ids). When ctx ends first the backend is sent
// notifications/cancelled, as the go-sdk client would.
func (p *pool) rawCall(ctx context.Context, url, sid, method string, params any) (json.RawMessage, resultShape, error) {
	id := "fleetgate-" + strconv.FormatUint(p.ids.Add(1), 10)
	enc, ok := params.(json.RawMessage)
	if !ok {
		var err error
		if enc, err = json.Marshal(params); err != nil {
			return nil, resultShape{}, fmt.Errorf("encode request: %w", err)
		}
	}
	// The id and method are the edge's own: no escaping needed.
	body := make([]byte, 0, 64+len(method)+len(enc))
	body = append(body, `{"jsonrpc":"2.0","id":"`...)
	body = append(body, id...)
	body = append(body, `","method":"`...)
	body = append(body, method...)
	body = append(body, `","params":`...)
	body = append(body, enc...)
	body = append(body, '}')
	resp, err := p.post(ctx, url, sid, body)
	if err != nil {
		if ctx.Err() != nil {
			p.cancelled(ctx, url, sid, id)
		}
		return nil, resultShape{}, err
	}
	defer closeLater(ctx, resp.Body)
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, resultShape{}, fmt.Errorf("session %s: %w", sid, mcp.ErrSessionMissing)
	case resp.StatusCode/100 != 2:
		// The body is the backend's own text: never passed on or logged.
		return nil, resultShape{}, &errHTTPStatus{code: resp.StatusCode}
	}
	msg, err := p.readResponse(ctx, resp, url, sid, id)
	if err != nil {
		if ctx.Err() != nil {
			p.cancelled(ctx, url, sid, id)
			return nil, resultShape{}, ctx.Err()
		}
		return nil, resultShape{}, err
	}
	if msg.Error != nil {
		return nil, resultShape{}, msg.Error
	}
	return msg.Result, msg.shape, nil
}

// post sends one JSON-RPC message on the backend session sid.
func (p *pool) post(ctx context.Context, url, sid string, body []byte) (*http.Response, error) {
	if p.direct != nil && ascii(sid) {
		if pt := p.direct.target(url); pt != nil {
			resp, err := p.direct.post(ctx, pt, sid, body)
			if err != nil && ctx.Err() == nil && errors.Is(err, errUndelivered) {
				return nil, fmt.Errorf("%w: %w", errNotSent, err)
			}
			return resp, err
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = http.Header{ // canonical keys; the shared values are only read
		"Content-Type":         jsonContentType,
		"Accept":               acceptBoth,
		"Mcp-Session-Id":       {sid},
		"Mcp-Protocol-Version": backendProtocolHeader,
	}
	var resp *http.Response
	if p.direct != nil {
		// The edge's own client: no redirects, cookies or timeout to apply.
		resp, err = p.direct.RoundTrip(req)
	} else {
		resp, err = p.http.Do(req)
	}
	if err != nil {
		// The edge's own transport tells a request the backend cannot
		// have received (retried on a new session) from one it may have
		// run (not retried). Another client cannot tell: as the go-sdk
		// client does ("rejected by transport"), any failed exchange
		// counts as not delivered.
		if ctx.Err() == nil && (p.direct == nil || errors.Is(err, errUndelivered)) {
			return nil, fmt.Errorf("%w: %w", errNotSent, err)
		}
		return nil, err
	}
	return resp, nil
}

// cancelled tells the backend that request id was given up.
func (p *pool) cancelled(ctx context.Context, url, sid, id string) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
		"params": map[string]any{"requestId": id, "reason": context.Cause(ctx).Error()}})
	if err != nil {
		return
	}
	// Not once closeAll began: a call still ending then may not add to
	// the WaitGroup closeAll waits on.
	p.bgMu.Lock()
	defer p.bgMu.Unlock()
	if p.ctx.Err() != nil {
		return
	}
	p.bg.Go(func() {
		nctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
		defer cancel()
		if resp, err := p.post(nctx, url, sid, body); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
		}
	})
}

// readResponse finds the response to id in an application/json body (one
// message or a batch) or a text/event-stream body (one message per event).
// Notifications on the stream are skipped; requests from the backend are
// refused (the edge offers backends no client features).
func (p *pool) readResponse(ctx context.Context, resp *http.Response, url, sid, id string) (*wireMessage, error) {
	ct := mediaType(resp.Header.Get("Content-Type"))
	body := mcpwire.Guard(resp.Body, ct == "text/event-stream", mcpwire.Limits{MaxMessage: p.maxResponse})
	switch ct {
	case "application/json":
		data, err := io.ReadAll(body)
		if err != nil {
			return nil, fmt.Errorf("read response: %w", err)
		}
		return p.findResponse(ctx, data, url, sid, id)
	case "text/event-stream":
		return p.readEvents(ctx, body, url, sid, id)
	default:
		return nil, fmt.Errorf("%w: unexpected Content-Type", errBadResponse)
	}
}

// mediaType is the media type of a Content-Type value, lower case,
// without parameters.
func mediaType(v string) string {
	if i := strings.IndexByte(v, ';'); i >= 0 {
		v = v[:i]
	}
	return strings.ToLower(strings.TrimSpace(v))
}

// readEvents reads server-sent events until the one carrying the response.
func (p *pool) readEvents(ctx context.Context, r io.Reader, url, sid, id string) (*wireMessage, error) {
	er := eventReaders.Get().(*mcpwire.EventReader)
	er.Reset(r, int(p.maxResponse))
	defer func() { er.Reset(nil, 0); eventReaders.Put(er) }() // the messages are copied out
	for {
		ev, err := er.Next()
		if err == io.EOF {
			return nil, errNoResponse
		}
		if err != nil {
			return nil, fmt.Errorf("read event stream: %w", err)
		}
		if len(bytes.TrimSpace(ev.Data)) == 0 {
			continue // a priming event
		}
		msg, err := p.findResponse(ctx, ev.Data, url, sid, id)
		if msg != nil || err != nil && !errors.Is(err, errNoResponse) {
			return msg, err
		}
	}
}

// eventReaders are readEvents' event readers, kept with their buffers.
var eventReaders = sync.Pool{New: func() any { return mcpwire.NewEventReader(nil, 0) }}

// errNoResponse: a body or event without the response sought.
var errNoResponse = errors.New("response: no JSON-RPC response to the request")

// findResponse returns the response to id among the messages of data
// (one message or a batch).
func (p *pool) findResponse(ctx context.Context, data []byte, url, sid, id string) (*wireMessage, error) {
	// The depth is checked first, in one pass without recursion: a
	// response deeper than fastjson parses is read with encoding/json.
	if err := mcpwire.Check(data, fastjson.MaxDepth); err != nil {
		if !errors.Is(err, mcpwire.ErrTooDeep) {
			return nil, fmt.Errorf("decode response: %w", err)
		}
		if err := mcpwire.Check(data, mcpwire.MaxDepth); err != nil {
			return nil, fmt.Errorf("decode response: %w", err)
		}
		return p.findDeepResponse(ctx, data, url, sid, id)
	}
	if !json.Valid(data) {
		return nil, fmt.Errorf("decode response: %w", errBadResponse)
	}
	fp := fastParsers.Get()
	defer fastParsers.Put(fp)
	v, err := fp.ParseBytes(data)
	if err != nil {
		return nil, fmt.Errorf("decode response: %w", err)
	}
	msgs := []*fastjson.Value{v}
	if v.Type() == fastjson.TypeArray {
		msgs = v.GetArray()
	}
	for _, m := range msgs {
		if m.Type() != fastjson.TypeObject {
			return nil, fmt.Errorf("decode response: a %s, not a JSON-RPC message", m.Type())
		}
		if dup := duplicateMember(m.GetObject()); dup != "" {
			return nil, fmt.Errorf("decode response: member %q twice", dup)
		}
		if method := m.Get("method"); method != nil {
			if reqID := m.Get("id"); reqID != nil {
				p.refuse(ctx, url, sid, &wireMessage{ID: reqID.MarshalTo(nil), Method: string(method.GetStringBytes())})
			}
			continue
		}
		if got := m.Get("id"); got == nil || got.Type() != fastjson.TypeString || string(got.GetStringBytes()) != id {
			continue
		}
		msg := &wireMessage{ID: m.Get("id").MarshalTo(nil)}
		if r := m.Get("result"); r != nil {
			msg.Result = r.MarshalTo(nil)
			msg.shape = resultShape{plain: plainToolValue(r), isError: r.GetBool("isError"), meta: r.Get("_meta") != nil}
		}
		if e := m.Get("error"); e != nil && e.Type() != fastjson.TypeNull {
			msg.Error = &jsonrpc.Error{}
			if err := json.Unmarshal(e.MarshalTo(nil), msg.Error); err != nil {
				return nil, fmt.Errorf("decode response: error: %w", err)
			}
		}
		return msg, nil
	}
	return nil, errNoResponse
}

// duplicateMember returns a member name o has twice, or "".
func duplicateMember(o *fastjson.Object) string {
	var dup string
	if o.Len() <= 8 { // a message's few members: compared pairwise
		var keys [8][]byte
		n := 0
		o.Visit(func(k []byte, _ *fastjson.Value) {
			for _, prev := range keys[:n] {
				if dup == "" && bytes.Equal(prev, k) {
					dup = string(k)
				}
			}
			keys[n] = k
			n++
		})
		return dup
	}
	seen := make(map[string]bool, o.Len())
	o.Visit(func(k []byte, _ *fastjson.Value) {
		if seen[string(k)] && dup == "" {
			dup = string(k)
		}
		seen[string(k)] = true
	})
	return dup
}

// refuse answers a backend's request with method-not-found.
func (p *pool) refuse(ctx context.Context, url, sid string, m *wireMessage) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID,
		"error": &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method " + strconv.Quote(m.Method) + " not supported by the fleetgate edge"}})
	if err != nil {
		return
	}
	if resp, err := p.post(ctx, url, sid, body); err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
	}
}

// laterKey is the context key of a *closings: the caller answers its
// client first and then closes the backend bodies it holds (reading the
// end of a backend's event stream, which comes after the response, is
// then off the call's path).
type laterKey struct{}

// closings are the bodies a caller closes after its response.
type closings struct{ bodies []io.Closer }

// closeLater closes body, or leaves it to the closings of ctx.
func closeLater(ctx context.Context, body io.ReadCloser) {
	if c, ok := ctx.Value(laterKey{}).(*closings); ok {
		if d, ok := body.(interface{ detach() }); ok {
			d.detach()
			c.bodies = append(c.bodies, body)
			return
		}
	}
	body.Close()
}

// close closes the bodies left.
func (c *closings) close() {
	for _, b := range c.bodies {
		b.Close()
	}
	c.bodies = c.bodies[:0]
}
