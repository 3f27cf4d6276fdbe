package h1

import (
	"bytes"
	"net/http"
	"net/textproto"
	"net/url"
)

// A lane reads the head of a plain request itself: http.ReadRequest,
// which handles every form HTTP/1.1 allows, was the largest part of a
// lane's own work on a call. ParseLaneHead takes only the form a client
// library sends for a tools/call (request line "POST /mcp HTTP/1.1",
// one Host, a Content-Length, no folded lines, no Transfer-Encoding,
// Expect, Upgrade or Connection other than keep-alive) and leaves
// anything else, unread, to http.ReadRequest.

// laneRequestLine is the only request line ParseLaneHead takes.
const laneRequestLine = "POST /mcp HTTP/1.1"

// ParseLaneHead parses the request head at the start of buf. It returns
// the request (its Body unset) and the head's length, or ok false when the
// head is incomplete or of another form.
func ParseLaneHead(buf []byte) (req *http.Request, n int, ok bool) {
	end := bytes.Index(buf, []byte("\r\n\r\n"))
	if end < 0 {
		return nil, 0, false
	}
	line, rest, _ := bytes.Cut(buf[:end+2], []byte("\r\n"))
	if string(line) != laneRequestLine {
		return nil, 0, false
	}
	h := make(http.Header, 8) // a call's head: 8 kept at most in one group of the map
	length, host := int64(-1), ""
	ok = parseHeaderLines(rest, h, func(key string, value []byte) (keep, ok bool) {
		switch key {
		case "Transfer-Encoding", "Expect", "Upgrade", "Te", "Trailer", "Pragma":
			return false, false // Pragma: ReadRequest would add a Cache-Control
		case "Connection":
			return true, bytes.EqualFold(value, []byte("keep-alive"))
		case "Content-Length":
			if length >= 0 {
				return false, false
			}
			length, ok = contentLength(value)
			return true, ok
		case "Host":
			if host != "" || len(value) == 0 || !hostChars(value) {
				return false, false
			}
			host = string(value)
			return false, true // kept in req.Host, not in the header, as ReadRequest does
		}
		return true, true
	})
	if !ok {
		return nil, 0, false
	}
	if length < 0 || host == "" {
		return nil, 0, false
	}
	req = &http.Request{Method: http.MethodPost, URL: &url.URL{Path: "/mcp"}, Proto: "HTTP/1.1",
		ProtoMajor: 1, ProtoMinor: 1, Header: h, ContentLength: length, Host: host, RequestURI: "/mcp"}
	return req, end + 4, true
}

// parseHeaderLines parses block, header lines each ended by CRLF, into h.
// special sees each line's canonical name and value first: keep false
// leaves it out of h, ok false makes the block refused. Folded lines,
// names that are not tokens and values with control characters are
// refused.
//
// The values kept are substrings of one copy of block, each in a slice
// of one backing array (capacity 1: an append to it copies): a head's
// values cost two allocations, not two per line.
func parseHeaderLines(block []byte, h http.Header, special func(key string, value []byte) (keep, ok bool)) bool {
	text := string(block)
	vals := make([]string, 0, bytes.Count(block, []byte("\r\n")))
	for off := 0; off < len(block); {
		line, _, _ := bytes.Cut(block[off:], []byte("\r\n"))
		start := off
		off += len(line) + 2
		name, raw, found := bytes.Cut(line, []byte(":"))
		if !found || !headerToken(name) {
			return false
		}
		lead := len(raw) - len(bytes.TrimLeft(raw, " \t"))
		value := bytes.TrimRight(raw[lead:], " \t")
		at := start + len(name) + 1 + lead // value's offset in block and text
		if !HeaderValue(value) {
			return false
		}
		key := laneHeaderKey(name, text[start:start+len(name)])
		keep, ok := special(key, value)
		if !ok {
			return false
		}
		if !keep {
			continue
		}
		v := text[at : at+len(value)]
		if prev, ok := h[key]; ok {
			h[key] = append(prev, v)
			continue
		}
		vals = append(vals, v)
		h[key] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	return true
}

// contentLength parses a Content-Length value.
func contentLength(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 12 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// laneHeaderKey is the canonical form of a header name, without an
// allocation for the names a call carries or any other name already in
// canonical form (text is name as a string).
func laneHeaderKey(name []byte, text string) string {
	switch string(name) {
	case "Host":
		return "Host"
	case "Content-Type":
		return "Content-Type"
	case "Content-Length":
		return "Content-Length"
	case "Accept":
		return "Accept"
	case "Accept-Encoding":
		return "Accept-Encoding"
	case "User-Agent":
		return "User-Agent"
	case "Mcp-Session-Id":
		return "Mcp-Session-Id"
	case "Mcp-Protocol-Version":
		return "Mcp-Protocol-Version"
	case "Transfer-Encoding":
		return "Transfer-Encoding"
	case "Date":
		return "Date"
	case "Cache-Control":
		return "Cache-Control"
	case "Connection":
		return "Connection"
	case "Authorization":
		return "Authorization"
	}
	if k := textproto.CanonicalMIMEHeaderKey(text); k != text {
		return k
	}
	return text
}

// headerToken reports whether b is a header name (an RFC 9110 token).
func headerToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), c) >= 0:
		default:
			return false
		}
	}
	return true
}

// HeaderValue reports whether b is a header value without control
// characters (tab aside).
func HeaderValue(b []byte) bool {
	for _, c := range b {
		if c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// hostChars reports whether b has only the bytes of a host[:port] of a
// name or an IP address.
func hostChars(b []byte) bool {
	for _, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.' || c == '-' || c == ':' || c == '[' || c == ']' || c == '_':
		default:
			return false
		}
	}
	return true
}
