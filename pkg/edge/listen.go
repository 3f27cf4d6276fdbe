package edge

import (
	"crypto/rand"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/valyala/fastjson"
)

// A 2026-07-28 client hears of list changes on a subscriptions/listen
// stream: a POST whose event stream stays open. Served by the go-sdk, each
// such stream held a go-sdk server and session, four goroutines with deep
// stacks and their buffers (66 KiB at 5,000 streams). The edge takes the
// common request over, as it does a standalone GET stream (streamconn.go):
// it answers with the acknowledgement the go-sdk sends, then with one
// list_changed per changed kind the client subscribed to, each carrying
// the listen request's id as the go-sdk stamps it.
//
// Only a request the go-sdk would take the same way is taken over: HTTP/1.1,
// the go-sdk's header checks, exactly the members below, the protocol
// version of the header repeated in _meta, valid client capabilities and
// info, and list_changed subscriptions only. Anything else (resource
// subscriptions, an empty subscription, a batch) goes to the go-sdk.

// listenRequest is a subscriptions/listen request the edge takes over.
type listenRequest struct {
	id   json.RawMessage // the request's id, as sent
	subs uint8           // pendingTools, pendingPrompts, pendingResources
}

// parseListen parses body as a listen request for protocol version.
func parseListen(body []byte, version string) (listenRequest, bool) {
	var lr listenRequest
	ok := parseNewRequest(body, "subscriptions/listen", version, func(id json.RawMessage, params *fastjson.Value) bool {
		lr.id = id
		if params.GetObject().Len() != 2 {
			return false
		}
		subs := params.Get("notifications")
		if subs == nil || subs.Type() != fastjson.TypeObject || duplicateMember(subs.GetObject()) != "" {
			return false
		}
		ok := true
		subs.GetObject().Visit(func(k []byte, v *fastjson.Value) {
			var bit uint8
			switch string(k) {
			case "toolsListChanged":
				bit = pendingTools
			case "promptsListChanged":
				bit = pendingPrompts
			case "resourcesListChanged":
				bit = pendingResources
			default: // resourceSubscriptions and anything else: the go-sdk's
				ok = false
				return
			}
			switch v.Type() {
			case fastjson.TypeTrue:
				lr.subs |= bit
			case fastjson.TypeFalse:
			default:
				ok = false
			}
		})
		return ok && lr.subs != 0 // no subscription: the go-sdk answers at once
	})
	return lr, ok
}

// parseNewRequest parses body as one request of the new protocol: exactly
// jsonrpc "2.0", an id the edge echoes as sent (validID), method and
// params, params an object without a member twice whose _meta listenMeta
// takes for version. check sees the id and params (valid only during the
// call) and judges the rest.
func parseNewRequest(body []byte, method, version string, check func(id json.RawMessage, params *fastjson.Value) bool) bool {
	if !fastJSON(body) { // bounded, linear, and what encoding/json takes
		return false
	}
	p := fastParsers.Get()
	defer fastParsers.Put(p)
	v, err := p.ParseBytes(body)
	if err != nil || v.Type() != fastjson.TypeObject {
		return false
	}
	top := v.GetObject()
	if jv := v.Get("jsonrpc"); duplicateMember(top) != "" || top.Len() != 4 || jv == nil || jv.Type() != fastjson.TypeString ||
		string(jv.GetStringBytes()) != "2.0" || string(v.GetStringBytes("method")) != method || v.Get("id") == nil {
		return false
	}
	id := v.Get("id").MarshalTo(nil)
	params := v.Get("params")
	if !validID(id) || params == nil || params.Type() != fastjson.TypeObject || duplicateMember(params.GetObject()) != "" ||
		!listenMeta(params.Get("_meta"), version) {
		return false
	}
	return check(id, params)
}

// listenMeta checks a listen request's _meta as the go-sdk does: the
// protocol version of the header, client capabilities, and client info and
// log level when present.
func listenMeta(meta *fastjson.Value, version string) bool {
	if meta == nil || meta.Type() != fastjson.TypeObject {
		return false
	}
	// A client sends the same _meta with every request: one already found
	// good is not decoded again.
	key := append(append([]byte(version), 0), meta.MarshalTo(nil)...)
	if good, ok := goodMetas.get(key); ok && good {
		return true
	}
	if !checkMeta(meta, version) {
		return false
	}
	goodMetas.put(key, true)
	return true
}

// checkMeta is listenMeta without its memory.
func checkMeta(meta *fastjson.Value, version string) bool {
	if pv := meta.Get("io.modelcontextprotocol/protocolVersion"); duplicateMember(meta.GetObject()) != "" ||
		pv == nil || pv.Type() != fastjson.TypeString || string(pv.GetStringBytes()) != version {
		return false
	}
	// The go-sdk decodes the whole of _meta: a number out of float64's
	// range makes it refuse the request.
	if !float64Numbers(meta) {
		return false
	}
	var caps mcp.ClientCapabilities
	c := meta.Get("io.modelcontextprotocol/clientCapabilities")
	if c == nil || c.Type() != fastjson.TypeObject || json.Unmarshal(c.MarshalTo(nil), &caps) != nil {
		return false
	}
	if info := meta.Get("io.modelcontextprotocol/clientInfo"); info != nil {
		var impl mcp.Implementation
		if info.Type() != fastjson.TypeObject || json.Unmarshal(info.MarshalTo(nil), &impl) != nil {
			return false
		}
	}
	if level := meta.Get("io.modelcontextprotocol/logLevel"); level != nil && level.Type() != fastjson.TypeString {
		return false
	}
	return true
}

// goodMetas are the _meta values (with their protocol version) that
// listenMeta found good.
var goodMetas = &memo{}

// maxMemo bounds the entries of a memo (it forgets them all past it) and
// maxMemoKey the keys it keeps: a few KiB each at most.
const (
	maxMemo    = 1024
	maxMemoKey = 4 << 10
)

// memo remembers a bool per key, within maxMemo and maxMemoKey.
type memo struct {
	mu sync.Mutex
	m  map[string]bool
}

func (s *memo) get(key []byte) (v, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok = s.m[string(key)]
	return v, ok
}

func (s *memo) put(key []byte, v bool) {
	if len(key) > maxMemoKey {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil || len(s.m) >= maxMemo {
		s.m = map[string]bool{}
	}
	s.m[string(key)] = v
}

// float64Numbers reports whether every number in v is within float64's
// range, as decoding it into an any requires.
func float64Numbers(v *fastjson.Value) bool {
	switch v.Type() {
	case fastjson.TypeNumber:
		_, err := strconv.ParseFloat(v.String(), 64)
		return err == nil
	case fastjson.TypeArray:
		for _, x := range v.GetArray() {
			if !float64Numbers(x) {
				return false
			}
		}
	case fastjson.TypeObject:
		ok := true
		v.GetObject().Visit(func(_ []byte, x *fastjson.Value) { ok = ok && float64Numbers(x) })
		return ok
	}
	return true
}

// listenHeaders reports whether the go-sdk would take r's headers for a
// listen request of the new protocol.
func listenHeaders(r *http.Request) bool {
	if r.Header.Get("Mcp-Protocol-Version") != newProtocol || r.Header.Get("Mcp-Method") != "subscriptions/listen" ||
		len(r.Header.Values("Last-Event-ID")) > 0 || !r.ProtoAtLeast(1, 1) || r.ProtoMajor != 1 {
		return false
	}
	return jsonPostHeaders(r)
}

// listenFrames are the acknowledgement and the three list_changed events
// of a listen stream with request id, as chunks.
func listenFrames(id json.RawMessage, subs uint8) (ack []byte, frames *[3][]byte) {
	meta := `{"io.modelcontextprotocol/subscriptionId":` + string(id) + `}`
	var allowed []byte
	for i, name := range [3]string{"toolsListChanged", "promptsListChanged", "resourcesListChanged"} {
		if subs&(1<<i) != 0 {
			if len(allowed) > 0 {
				allowed = append(allowed, ',')
			}
			allowed = append(allowed, `"`+name+`":true`...)
		}
	}
	ack = chunk([]byte(`event: message` + "\n" + `data: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":` +
		meta + `,"notifications":{` + string(allowed) + `}}}` + "\n\n"))
	frames = new([3][]byte)
	for i, m := range listMethods {
		frames[i] = chunk([]byte(`event: message` + "\n" + `data: {"jsonrpc":"2.0","method":"` + m + `","params":{"_meta":` + meta + `}}` + "\n\n"))
	}
	return ack, frames
}

// takeOverListen serves the listen request body on a hijacked connection.
// It reports false, having written nothing, when the go-sdk is to serve
// it.
func (e *Edge) takeOverListen(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if !listenHeaders(r) {
		return false
	}
	lr, ok := parseListen(body, newProtocol)
	if !ok {
		return false
	}
	if !e.hold() { // before the hijack: see Edge.takeOver
		return false
	}
	defer e.wg.Done()
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	ack, frames := listenFrames(lr.id, lr.subs)
	st := &sessionStream{e: e, conn: conn, frames: frames}
	if brw.Reader.Buffered() > 0 {
		st.refuse(http.StatusBadRequest, "no request may follow a stream's request on its connection")
		return true
	}
	s := &session{id: "listen-" + rand.Text(), kind: kindListen, created: time.Now().UnixNano(), subs: lr.subs}
	protocol := newProtocol
	s.protocol.Store(&protocol)
	e.open(s)
	st.wmu.Lock()
	st.writing = true
	if code, msg := e.claim(s, st); code != 0 {
		st.wmu.Unlock()
		st.refuse(code, msg)
		e.forget(s)
		return true
	}
	err = st.writeLocked(append(streamHead(), ack...))
	st.wmu.Unlock()
	e.startConn(s, st)
	if err != nil {
		conn.Close() // readConn ends the stream and the session
	}
	return true
}
