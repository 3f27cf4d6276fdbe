package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The edge posts its JSON-RPC requests to a plain-HTTP backend with
// Transport's own wire code, without an http.Request: the request
// head is built once per backend URL and each post writes it, the session
// id, the length and the body. http.NewRequest and Request.Write parsed
// the URL, checked the proxy settings and sorted and escaped the headers
// on every call.

// PostTarget is a backend URL that Transport posts to itself.
type PostTarget struct {
	addr string // host:port dialed
	head []byte // request line, Host and the headers every post has
}

// maxTargets bounds the post targets a Transport keeps (backend URLs
// are few; a config that keeps changing them starts the cache over).
const maxTargets = 1024

// postRequest is what the responses to posts are read for.
var postRequest = &http.Request{Method: http.MethodPost, ProtoMajor: 1, ProtoMinor: 1}

// targetKey names a post target: a URL and the header lines every post to
// it carries.
type targetKey struct{ url, header string }

// Target returns the post target of rawURL, or nil when RoundTrip would
// not send it over its own connections (https, a proxy, an odd host).
// header holds the header lines (each "Name: value\r\n", as FormatHeader
// makes them) every post to the target carries besides Host, User-Agent,
// Accept and Content-Type.
func (t *Transport) Target(rawURL, header string) *PostTarget {
	key := targetKey{rawURL, header}
	t.tmu.Lock()
	defer t.tmu.Unlock()
	if pt, ok := t.targets[key]; ok {
		return pt
	}
	if len(t.targets) >= maxTargets || t.targets == nil {
		t.targets = map[targetKey]*PostTarget{}
	}
	var pt *PostTarget
	u, err := url.Parse(rawURL)
	if err == nil && u.Scheme == "http" && u.User == nil && u.Host != "" && ASCII(u.Host) &&
		!t.proxied(&http.Request{Method: http.MethodPost, URL: u, Header: http.Header{}}) {
		head := "POST " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\n" +
			"User-Agent: Go-http-client/1.1\r\nAccept: application/json, text/event-stream\r\n" +
			"Content-Type: application/json\r\n" + header
		pt = &PostTarget{addr: HostPort(u), head: []byte(head)}
	}
	t.targets[key] = pt
	return pt
}

// ASCII reports whether s is printable ASCII.
func ASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// Post posts the JSON-RPC message body on the backend session sid (a
// header-safe value: see ascii).
func (t *Transport) Post(ctx context.Context, pt *PostTarget, sid string, body []byte) (*http.Response, error) {
	return t.exchange(ctx, pt.addr, postRequest, ReadPostResponse, func(bw *bufio.Writer) error {
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

// targetCache is Transport's cache of post targets.
type targetCache struct {
	tmu     sync.Mutex
	targets map[targetKey]*PostTarget // nil values: URLs not posted to directly
}

// A post's response head is parsed in place when it has the form a
// backend's HTTP server writes (ParseResponseHead); anything else is read
// by http.ReadResponse.

// ReadPostResponse reads the response to a post from br.
func ReadPostResponse(br *bufio.Reader) (*http.Response, error) {
	if _, err := br.Peek(1); err != nil {
		return http.ReadResponse(br, postRequest) // its error for a cut connection
	}
	buf, _ := br.Peek(br.Buffered())
	resp, n, ok := ParseResponseHead(buf)
	if !ok {
		return http.ReadResponse(br, postRequest)
	}
	_, _ = br.Discard(n)
	switch {
	case resp.ContentLength < 0:
		resp.Body = &chunkedBody{cr: httputil.NewChunkedReader(br), br: br}
	case resp.ContentLength == 0:
		resp.Body = http.NoBody
	default:
		resp.Body = &lengthBody{br: br, n: resp.ContentLength}
	}
	return resp, nil
}

// ParseResponseHead parses the response head at the start of buf when it
// is HTTP/1.1 with a status that has a body (not 1xx, 204 or 304), framed
// by chunks or a Content-Length (ContentLength -1: chunked). ok false:
// incomplete or another form.
func ParseResponseHead(buf []byte) (resp *http.Response, n int, ok bool) {
	end := bytes.Index(buf, []byte("\r\n\r\n"))
	if end < 0 {
		return nil, 0, false
	}
	line, rest, _ := bytes.Cut(buf[:end+2], []byte("\r\n"))
	status, found := bytes.CutPrefix(line, []byte("HTTP/1.1 "))
	// A control character in the line (a bare LF ends it for ReadResponse)
	// leaves it to ReadResponse.
	if !found || len(status) < 3 || len(status) > 3 && status[3] != ' ' || !HeaderValue(status) {
		return nil, 0, false
	}
	code := 0
	for _, c := range status[:3] {
		if c < '0' || c > '9' {
			return nil, 0, false
		}
		code = code*10 + int(c-'0')
	}
	if code < 200 || code == http.StatusNoContent || code == http.StatusNotModified {
		return nil, 0, false
	}
	h := make(http.Header, 8)
	length, chunked, closing := int64(-1), false, false
	ok = parseHeaderLines(rest, h, func(key string, value []byte) (keep, ok bool) {
		switch key {
		case "Transfer-Encoding":
			if chunked || !bytes.EqualFold(value, []byte("chunked")) {
				return false, false
			}
			chunked = true
			return false, true // as ReadResponse: in TransferEncoding, not the header
		case "Content-Length":
			if length >= 0 {
				return false, false
			}
			length, ok = contentLength(value)
			return true, ok
		case "Connection":
			switch {
			case bytes.EqualFold(value, []byte("close")):
				closing = true
				return false, true // as ReadResponse: in Close, not the header
			case !bytes.EqualFold(value, []byte("keep-alive")):
				return false, false
			}
		case "Trailer":
			return false, false
		}
		return true, true
	})
	if !ok || chunked == (length >= 0) { // framed one way exactly
		return nil, 0, false
	}
	resp = &http.Response{Status: string(status), StatusCode: code, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, ContentLength: length, Close: closing, Request: postRequest}
	if chunked {
		resp.TransferEncoding = []string{"chunked"}
		delete(h, "Content-Length")
	}
	return resp, end + 4, true
}

// maxTrailerLines bounds the trailer of a chunked body.
const maxTrailerLines = 32

// chunkedBody is a chunked response body: at the last chunk it reads the
// trailer (discarded), so that the connection is at the next response.
type chunkedBody struct {
	cr  io.Reader
	br  *bufio.Reader
	err error
}

func (b *chunkedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.cr.Read(p)
	if err == io.EOF {
		err = b.readTrailer()
	}
	b.err = err
	return n, err
}

func (b *chunkedBody) readTrailer() error {
	for range maxTrailerLines {
		line, err := b.br.ReadSlice('\n')
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("chunked body trailer: %w", err)
		}
		// Refused as http.ReadResponse refuses it: a line not ended by
		// CRLF, or not a header.
		line, crlf := bytes.CutSuffix(line, []byte("\r\n"))
		if !crlf {
			return fmt.Errorf("chunked body trailer: a line not ended by CRLF")
		}
		if len(line) == 0 {
			return io.EOF
		}
		if name, value, found := bytes.Cut(line, []byte(":")); !found || !headerToken(name) || !HeaderValue(bytes.Trim(value, " \t")) {
			return fmt.Errorf("chunked body trailer: malformed line %q", line)
		}
	}
	return fmt.Errorf("chunked body trailer: more than %d lines", maxTrailerLines)
}

func (b *chunkedBody) Close() error { return nil }

// lengthBody is a response body of n bytes.
type lengthBody struct {
	br *bufio.Reader
	n  int64
}

func (b *lengthBody) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.br.Read(p)
	b.n -= int64(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF // cut before its length
	}
	return n, err
}

func (b *lengthBody) Close() error { return nil }

// ErrBadHeader is returned by FormatHeader for a header name that is not
// an HTTP token or a value with bytes HTTP forbids.
var ErrBadHeader = errors.New("invalid header")

// FormatHeader formats h as the header lines of a post target, sorted by
// name: "Name: value\r\n" each. Names are canonicalized; a name that is
// not a token or a value with a control byte is an error naming the
// header (never its value, which may be a credential).
func FormatHeader(h http.Header) (string, error) {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, k := range names {
		if !headerToken([]byte(k)) {
			return "", fmt.Errorf("header %q: %w name", k, ErrBadHeader)
		}
		for _, v := range h[k] {
			if !HeaderValue([]byte(v)) {
				return "", fmt.Errorf("header %s: %w value", http.CanonicalHeaderKey(k), ErrBadHeader)
			}
			b.WriteString(http.CanonicalHeaderKey(k))
			b.WriteString(": ")
			b.WriteString(v)
			b.WriteString("\r\n")
		}
	}
	return b.String(), nil
}
