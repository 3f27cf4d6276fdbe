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
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/valyala/fastjson"
	"go.opentelemetry.io/otel/propagation"

	"github.com/fleetgate/fleetgate/pkg/edge/internal/callstages"
	"github.com/fleetgate/fleetgate/pkg/edge/internal/h1"
	"github.com/fleetgate/fleetgate/pkg/mcpwire"
	"github.com/fleetgate/fleetgate/pkg/tracing"
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
	// postHeader is what the direct posts carry besides the transport's own
	// headers.
	postHeader = "Mcp-Protocol-Version: " + backendProtocol + "\r\n"
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

// callStreamable forwards call (the tool's own name, the raw arguments
// and _meta) to its backend with the retry rules of do:
// a session the backend no longer knows (404) is replaced and the call
// sent again once, as is one that could not be sent.
// A backend with headers (credentials) gets them on every raw request,
// resolved by its connection's credential transport.
func (p *Pool) callStreamable(ctx context.Context, call Call) (Reply, error) {
	callstages.Mark(callstages.Routed)
	cfg, later := call.Config, call.Later
	params := encodeCallParams(call.Tool, call.Args, call.Meta)
	var c *backendConn
	if len(cfg.Headers) > 0 {
		c = p.conn(call.Backend, cfg)
	}
	return Do(ctx, p, call.Backend, cfg, "tools/call", later, func(ctx context.Context, cs *mcp.ClientSession) (Reply, error) {
		to := peer{url: cfg.URL, sid: cs.ID(), relay: call.Relay}
		if c != nil {
			to.creds = http.Header{}
			if err := c.creds.Apply(to.creds); err != nil {
				return Reply{}, err
			}
		}
		raw, shape, err := p.rawCall(ctx, to, "tools/call", params, later)
		if err != nil {
			return Reply{}, err
		}
		if shape.plain {
			return Reply{Raw: raw, IsError: shape.isError, HasMeta: shape.meta}, nil // decoded when needed
		}
		// Another shape is decoded (validated) and sent re-encoded, as the
		// go-sdk path would: encoding/json is lenient about member names.
		res, err := decodeToolResult(raw)
		if err != nil {
			return Reply{}, fmt.Errorf("decode result: %w", err)
		}
		return Reply{Res: res}, nil
	})
}

// encodeCallParams is the JSON of tools/call params. args and meta come
// from a decoded message (valid JSON); empty args are sent as {}, as the
// go-sdk client does, and an empty meta not at all.
func encodeCallParams(name string, args, meta json.RawMessage) json.RawMessage {
	var quoted []byte
	if mcpwire.PlainString(name) {
		quoted = append(append(append(make([]byte, 0, len(name)+2), '"'), name...), '"')
	} else {
		quoted, _ = json.Marshal(name) // a string always encodes
	}
	if len(bytes.TrimSpace(args)) == 0 || bytes.Equal(bytes.TrimSpace(args), []byte("null")) {
		args = json.RawMessage("{}")
	}
	if t := bytes.TrimSpace(meta); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		meta = nil
	}
	b := make([]byte, 0, len(`{"name":,"arguments":,"_meta":}`)+len(quoted)+len(args)+len(meta))
	b = append(b, `{"name":`...)
	b = append(b, quoted...)
	b = append(b, `,"arguments":`...)
	b = append(b, args...)
	if meta != nil {
		b = append(b, `,"_meta":`...)
		b = append(b, meta...)
	}
	return append(b, '}')
}

// peer is where a raw request goes: the backend's URL, the pooled
// session's id, and the headers the backend's config asks for (its
// resolved credentials; nil for none); and who hears what the backend
// sends on the call's stream besides its response (nil: nobody).
type peer struct {
	url, sid string
	creds    http.Header
	relay    Relay
}

// rawCall sends one JSON-RPC request on the backend session sid and
// returns the raw result of its response (and its shape, for a tools/call
// result). params is JSON already encoded
// (json.RawMessage) or a value to encode. The request gets an id of its
// own (the session is shared by every caller, and its go-sdk client uses
// numeric ids). When ctx ends first the backend is sent
// notifications/cancelled, as the go-sdk client would.
func (p *Pool) rawCall(ctx context.Context, to peer, method string, params any, later *Closings) (json.RawMessage, resultShape, error) {
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
	callstages.Mark(callstages.Sending)
	resp, err := p.post(ctx, to, body)
	if err != nil {
		if ctx.Err() != nil {
			p.cancelled(ctx, to, id)
		}
		return nil, resultShape{}, err
	}
	defer closeLater(later, resp.Body)
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, resultShape{}, fmt.Errorf("session %s: %w", to.sid, mcp.ErrSessionMissing)
	case resp.StatusCode/100 != 2:
		// The body is the backend's own text: never passed on or logged.
		return nil, resultShape{}, &errHTTPStatus{code: resp.StatusCode}
	}
	msg, err := p.readResponse(ctx, resp, to, id)
	callstages.Mark(callstages.Answered)
	if err != nil {
		if ctx.Err() != nil {
			p.cancelled(ctx, to, id)
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
func (p *Pool) post(ctx context.Context, to peer, body []byte) (*http.Response, error) {
	if p.direct != nil && h1.ASCII(to.sid) && (to.sid != "" || !traced(ctx)) { // trace.go: traceSID
		head := postHeader
		if len(to.creds) > 0 {
			extra, err := h1.FormatHeader(to.creds)
			if err != nil {
				return nil, fmt.Errorf("%w: backend headers: %w", errNotSent, err)
			}
			head += extra
		}
		if pt := p.direct.Target(to.url, head); pt != nil {
			resp, err := p.direct.Post(ctx, pt, traceSID(ctx, to.sid), body) // trace.go
			if err != nil && ctx.Err() == nil && errors.Is(err, h1.ErrUndelivered) {
				return nil, fmt.Errorf("%w: %w", errNotSent, err)
			}
			return resp, err
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, to.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = http.Header{ // canonical keys; the shared values are only read
		"Content-Type":         jsonContentType,
		"Accept":               acceptBoth,
		"Mcp-Session-Id":       {to.sid},
		"Mcp-Protocol-Version": backendProtocolHeader,
	}
	for k, v := range to.creds {
		req.Header[k] = v
	}
	return p.send(ctx, req)
}

// send sends req, its headers set, with the edge's own client (or the
// pool's HTTP client), its trace context added.
func (p *Pool) send(ctx context.Context, req *http.Request) (*http.Response, error) {
	tracing.Inject(ctx, propagation.HeaderCarrier(req.Header)) // trace.go
	var resp *http.Response
	var err error
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
		if ctx.Err() == nil && (p.direct == nil || errors.Is(err, h1.ErrUndelivered)) {
			return nil, fmt.Errorf("%w: %w", errNotSent, err)
		}
		return nil, err
	}
	return resp, nil
}

// cancelled tells the backend that request id was given up.
func (p *Pool) cancelled(ctx context.Context, to peer, id string) {
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
		if resp, err := p.post(nctx, to, body); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
		}
	})
}

// readResponse finds the response to id in an application/json body (one
// message or a batch) or a text/event-stream body (one message per event).
// Notifications and requests of the backend on the stream go to the
// call's Relay (relay.go).
func (p *Pool) readResponse(ctx context.Context, resp *http.Response, to peer, id string) (*wireMessage, error) {
	ct := mediaType(resp.Header.Get("Content-Type"))
	body := mcpwire.Guard(resp.Body, ct == "text/event-stream", mcpwire.Limits{MaxMessage: p.maxResponse})
	switch ct {
	case "application/json":
		data, err := io.ReadAll(body)
		if err != nil {
			return nil, fmt.Errorf("read response: %w", err)
		}
		return p.findResponse(ctx, data, to, id)
	case "text/event-stream":
		return p.readResumable(ctx, body, to, id)
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
// last is the stream's last event id (nil for none), for a resumption of
// a stream that ended first (resume.go).
func (p *Pool) readEvents(ctx context.Context, r io.Reader, to peer, id string) (msg *wireMessage, last []byte, err error) {
	er := eventReaders.Get().(*mcpwire.EventReader)
	er.Reset(r, int(p.maxResponse))
	defer func() { er.Reset(nil, 0); eventReaders.Put(er) }() // the messages are copied out
	for {
		ev, err := er.Next()
		if err == io.EOF {
			return nil, last, errNoResponse
		}
		if err != nil {
			return nil, last, fmt.Errorf("read event stream: %w", err)
		}
		if !bytes.Equal(last, ev.ID) {
			last = append(last[:0], ev.ID...)
		}
		if len(bytes.TrimSpace(ev.Data)) == 0 {
			continue // a priming event
		}
		msg, err := p.findResponse(ctx, ev.Data, to, id)
		if msg != nil || err != nil && !errors.Is(err, errNoResponse) {
			return msg, last, err
		}
	}
}

// eventReaders are readEvents' event readers, kept with their buffers.
var eventReaders = sync.Pool{New: func() any { return mcpwire.NewEventReader(nil, 0) }}

// errNoResponse: a body or event without the response sought.
var errNoResponse = errors.New("response: no JSON-RPC response to the request")

// findResponse returns the response to id among the messages of data
// (one message or a batch).
func (p *Pool) findResponse(ctx context.Context, data []byte, to peer, id string) (*wireMessage, error) {
	// The depth is checked first, in one pass without recursion: a
	// response deeper than fastjson parses is read with encoding/json.
	if err := mcpwire.Check(data, fastjson.MaxDepth); err != nil {
		if !errors.Is(err, mcpwire.ErrTooDeep) {
			return nil, fmt.Errorf("decode response: %w", err)
		}
		if err := mcpwire.Check(data, mcpwire.MaxDepth); err != nil {
			return nil, fmt.Errorf("decode response: %w", err)
		}
		return p.findDeepResponse(ctx, data, to, id)
	}
	if !json.Valid(data) {
		return nil, fmt.Errorf("decode response: %w", errBadResponse)
	}
	fp := parsers.Get()
	defer parsers.Put(fp)
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
		if dup := mcpwire.DuplicateMember(m.GetObject()); dup != "" {
			return nil, fmt.Errorf("decode response: member %q twice", dup)
		}
		if method := m.Get("method"); method != nil {
			var params json.RawMessage
			if pv := m.Get("params"); pv != nil {
				params = pv.MarshalTo(nil)
			}
			if reqID := m.Get("id"); reqID != nil {
				p.asked(ctx, to, reqID.MarshalTo(nil), string(method.GetStringBytes()), params)
			} else {
				notified(to, string(method.GetStringBytes()), params)
			}
			continue
		}
		if got := m.Get("id"); got == nil || got.Type() != fastjson.TypeString || string(got.GetStringBytes()) != id {
			continue
		}
		// The id and the result are written into one buffer the size of
		// the message (they fit in it but for escapes the backend left
		// out): not grown from nothing, value by value.
		buf := m.Get("id").MarshalTo(make([]byte, 0, len(data)+64))
		msg := &wireMessage{ID: buf[:len(buf):len(buf)]}
		if r := m.Get("result"); r != nil {
			msg.Result = r.MarshalTo(buf[len(buf):])
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

// Closings are the backend bodies a caller closes after its response: a
// call lane answers its client first and then closes them (reading the end
// of a backend's event stream, which comes after the response, is then off
// the call's path). A call without Closings closes its bodies at once.
// They also hold what else of a call waits for its response (After): the
// queueing of its call trail entry.
type Closings struct {
	bodies []io.Closer
	after  []func()
}

// After runs f after the response, before the bodies are closed (at once
// for nil Closings).
func (c *Closings) After(f func()) {
	if c == nil {
		f()
		return
	}
	c.after = append(c.after, f)
}

// closeLater closes body, or leaves it to c.
func closeLater(c *Closings, body io.ReadCloser) {
	if c != nil {
		if d, ok := body.(h1.Detacher); ok {
			d.Detach()
			c.bodies = append(c.bodies, body)
			return
		}
	}
	body.Close()
}

// Close runs what waits (After), then closes the bodies left.
func (c *Closings) Close() {
	for i, f := range c.after {
		c.after[i] = nil // (what it holds is not kept with the lane)
		f()
	}
	c.after = c.after[:0]
	for _, b := range c.bodies {
		b.Close()
	}
	c.bodies = c.bodies[:0]
}
