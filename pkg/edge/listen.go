package edge

import (
	"crypto/rand"
	"encoding/json"
	"net/http"

	"github.com/fleetgate/fleetgate/pkg/edge/session"

	goauth "github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/fleetgate/fleetgate/pkg/edge/fastpath"
)

// A 2026-07-28 client hears of list changes on a subscriptions/listen
// stream: a POST whose event stream stays open. view.Served by the go-sdk, each
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
	ack = session.Chunk([]byte(`event: message` + "\n" + `data: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":` +
		meta + `,"notifications":{` + string(allowed) + `}}}` + "\n\n"))
	frames = new([3][]byte)
	for i, m := range session.ListMethods {
		frames[i] = session.Chunk([]byte(`event: message` + "\n" + `data: {"jsonrpc":"2.0","method":"` + m + `","params":{"_meta":` + meta + `}}` + "\n\n"))
	}
	return ack, frames
}

// takeOverListen serves the listen request body on a hijacked connection.
// It reports false, having written nothing, when the go-sdk is to serve
// it.
func (e *Edge) takeOverListen(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if !fastpath.ListenHeaders(r) {
		return false
	}
	lr, ok := fastpath.ParseListen(body, newProtocol)
	if !ok {
		return false
	}
	if !e.hj.Hold() { // before the hijack: see Edge.takeOver
		return false
	}
	defer e.hj.Done()
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	ack, frames := listenFrames(lr.ID, lr.Subs)
	if brw.Reader.Buffered() > 0 {
		session.Refuse(conn, http.StatusBadRequest, "no request may follow a stream's request on its connection")
		return true
	}
	ident, _ := e.identity(r)
	s := e.reg.New("listen-"+rand.Text(), session.KindListen, newProtocol, ident)
	s.Listen(lr.Subs)
	s.SetSubject(e.calls.Subject(goauth.TokenInfoFromContext(r.Context()), ident)) // a policy change is compared for it
	e.reg.OpenReserved(s, admittedOf(r).reservation())
	if !s.Attach(conn, append(session.StreamHead(), ack...), frames) {
		e.reg.Forget(s) // refused: the edge is shutting down
	}
	return true
}
