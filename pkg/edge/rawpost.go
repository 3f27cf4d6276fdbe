package edge

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"strconv"
	"sync"
)

// The edge posts its JSON-RPC requests to a plain-HTTP backend with
// connTransport's own wire code, without an http.Request: the request
// head is built once per backend URL and each post writes it, the session
// id, the length and the body. http.NewRequest and Request.Write parsed
// the URL, checked the proxy settings and sorted and escaped the headers
// on every call.

// postTarget is a backend URL that connTransport posts to itself.
type postTarget struct {
	addr string // host:port dialed
	head []byte // request line, Host and the headers every post has
}

// maxTargets bounds the post targets a connTransport keeps (backend URLs
// are few; a config that keeps changing them starts the cache over).
const maxTargets = 1024

// postRequest is what the responses to posts are read for.
var postRequest = &http.Request{Method: http.MethodPost, ProtoMajor: 1, ProtoMinor: 1}

// target returns the post target of rawURL, or nil when RoundTrip would
// not send it over its own connections (https, a proxy, an odd host).
func (t *connTransport) target(rawURL string) *postTarget {
	t.tmu.Lock()
	defer t.tmu.Unlock()
	if pt, ok := t.targets[rawURL]; ok {
		return pt
	}
	if len(t.targets) >= maxTargets || t.targets == nil {
		t.targets = map[string]*postTarget{}
	}
	var pt *postTarget
	u, err := url.Parse(rawURL)
	if err == nil && u.Scheme == "http" && u.User == nil && u.Host != "" && ascii(u.Host) &&
		!t.proxied(&http.Request{Method: http.MethodPost, URL: u, Header: http.Header{}}) {
		head := "POST " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\n" +
			"User-Agent: Go-http-client/1.1\r\nAccept: application/json, text/event-stream\r\n" +
			"Content-Type: application/json\r\nMcp-Protocol-Version: " + backendProtocol + "\r\n"
		pt = &postTarget{addr: hostPort(u), head: []byte(head)}
	}
	t.targets[rawURL] = pt
	return pt
}

// ascii reports whether s is printable ASCII.
func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// post posts the JSON-RPC message body on the backend session sid (a
// header-safe value: see ascii).
func (t *connTransport) post(ctx context.Context, pt *postTarget, sid string, body []byte) (*http.Response, error) {
	return t.exchange(ctx, pt.addr, postRequest, func(bw *bufio.Writer) error {
		b := bw.AvailableBuffer()
		b = append(b, pt.head...)
		if sid != "" {
			b = append(b, "Mcp-Session-Id: "...)
			b = append(b, sid...)
			b = append(b, "\r\n"...)
		}
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(body)), 10)
		b = append(b, "\r\n\r\n"...)
		if _, err := bw.Write(b); err != nil {
			return err
		}
		_, err := bw.Write(body)
		return err
	})
}

// targetCache is connTransport's cache of post targets.
type targetCache struct {
	tmu     sync.Mutex
	targets map[string]*postTarget // nil values: URLs not posted to directly
}
