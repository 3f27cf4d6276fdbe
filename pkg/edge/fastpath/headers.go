package fastpath

import (
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/fleetgate/fleetgate/pkg/edge/admission"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
)

// SessionPostHeaders reports whether the go-sdk would accept r's headers for a
// POST of a session of protocol version: the same version, JSON, both
// response kinds accepted, no resumption, and a Host its DNS-rebinding
// protection lets through.
func SessionPostHeaders(r *http.Request, version string) bool {
	// "Last-Event-Id" as canonical: Values("Last-Event-ID") would make the
	// canonical key anew on every call.
	if version == "" || r.Header.Get("Mcp-Protocol-Version") != version || len(r.Header["Last-Event-Id"]) > 0 {
		return false
	}
	return JSONPostHeaders(r)
}

// JSONPostHeaders reports whether the go-sdk would take the rest of a
// POST's headers: a JSON body, both response kinds accepted, and a Host
// its DNS-rebinding protection lets through (a loopback name when the
// request came to a loopback address).
func JSONPostHeaders(r *http.Request) bool {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		if ct, _, err := mime.ParseMediaType(ct); err != nil || ct != "application/json" {
			return false
		}
	}
	if jsonOK, streamOK := Accepts(r); !jsonOK || !streamOK {
		return false
	}
	la, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if ta, ok := la.(*net.TCPAddr); ok {
		if ta.IP.IsLoopback() {
			return Loopback(r.Host)
		}
		return true
	}
	if la != nil && Loopback(la.String()) {
		return Loopback(r.Host)
	}
	return true
}

// Loopback reports whether a host or host:port is localhost or a Loopback
// address.
func Loopback(hostport string) bool {
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

// StatelessCallHeaders reports whether the go-sdk would take r's headers
// for a tools/call of the new protocol (as listenHeaders, for another
// method).
func StatelessCallHeaders(r *http.Request) bool {
	if r.Header.Get("Mcp-Protocol-Version") != admission.FirstNewProtocol || r.Header.Get("Mcp-Method") != "tools/call" ||
		len(r.Header["Last-Event-Id"]) > 0 /* canonical: Values would canonicalize "Last-Event-ID" anew each time */ || r.ProtoMajor != 1 {
		return false
	}
	return JSONPostHeaders(r)
}

// ListenHeaders reports whether the go-sdk would take r's headers for a
// listen request of the new protocol.
func ListenHeaders(r *http.Request) bool {
	if r.Header.Get("Mcp-Protocol-Version") != admission.FirstNewProtocol || r.Header.Get("Mcp-Method") != "subscriptions/listen" ||
		len(r.Header["Last-Event-Id"]) > 0 /* canonical: Values would canonicalize "Last-Event-ID" anew each time */ || !r.ProtoAtLeast(1, 1) || r.ProtoMajor != 1 {
		return false
	}
	return JSONPostHeaders(r)
}

// AcceptsEventStream is the go-sdk's Accept check for a GET.
func AcceptsEventStream(r *http.Request) bool {
	_, stream := Accepts(r)
	return stream
}

// Accepts is the go-sdk's reading of the Accept headers: whether they
// take JSON and event streams.
func Accepts(r *http.Request) (jsonOK, streamOK bool) {
	for _, v := range r.Header.Values("Accept") {
		for raw := range strings.SplitSeq(v, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK, streamOK
}

// List kinds, as bits (of a listen request's subscriptions, and of the
// list_changed notifications a session is owed).
const (
	ListTools     = view.BitTools
	ListPrompts   = view.BitPrompts
	ListResources = view.BitResources
)
