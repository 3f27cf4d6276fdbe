package h1

import (
	"bufio"
	"io"
	"maps"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// Every request head ParseLaneHead takes, http.ReadRequest reads the same
// (method, path, host, length, header and the body after it); the others
// are left to http.ReadRequest.
func TestParseLaneHeadMatchesReadRequest(t *testing.T) {
	const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a_b"}}`
	plain := "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: application/json\r\n" +
		"Accept: application/json, text/event-stream\r\nMcp-Session-Id: S1\r\nMcp-Protocol-Version: 2025-11-25\r\n" +
		"Content-Length: 70\r\n\r\n" + body
	for _, tc := range []struct {
		name string
		raw  string
		ok   bool
	}{
		{"plain", plain, true},
		{"lower-case names, spaces around values", strings.NewReplacer("Content-Type: ", "content-type:   ",
			"Mcp-Session-Id: S1", "mcp-session-id:S1\t").Replace(plain), true},
		{"keep-alive", strings.Replace(plain, "Accept:", "Connection: Keep-Alive\r\nAccept:", 1), true},
		{"a header repeated", strings.Replace(plain, "Accept:", "X-A: 1\r\nX-A: 2\r\nAccept:", 1), true},
		{"zero length", strings.Replace(plain, "Content-Length: 70", "Content-Length: 0", 1), true},
		{"incomplete head", plain[:40], false},
		{"GET", strings.Replace(plain, "POST", "GET", 1), false},
		{"another path", strings.Replace(plain, "/mcp", "/mcp/", 1), false},
		{"a query", strings.Replace(plain, "/mcp", "/mcp?x=1", 1), false},
		{"HTTP/1.0", strings.Replace(plain, "HTTP/1.1", "HTTP/1.0", 1), false},
		{"chunked", strings.Replace(plain, "Content-Length: 70", "Transfer-Encoding: chunked", 1), false},
		{"two lengths", strings.Replace(plain, "Content-Length: 70", "Content-Length: 70\r\nContent-Length: 70", 1), false},
		{"length not a number", strings.Replace(plain, "Content-Length: 70", "Content-Length: 7e1", 1), false},
		{"no length", strings.Replace(plain, "Content-Length: 70\r\n", "", 1), false},
		{"no host", strings.Replace(plain, "Host: 127.0.0.1:8080\r\n", "", 1), false},
		{"two hosts", strings.Replace(plain, "Host: 127.0.0.1:8080", "Host: a\r\nHost: b", 1), false},
		{"odd host", strings.Replace(plain, "127.0.0.1:8080", "a/b", 1), false},
		{"folded line", strings.Replace(plain, "Accept: application/json,", "Accept: application/json,\r\n ", 1), false},
		{"space in a name", strings.Replace(plain, "Content-Type:", "Content Type:", 1), false},
		{"no colon", strings.Replace(plain, "Accept:", "Accept", 1), false},
		{"control character", strings.Replace(plain, "S1", "S\x011", 1), false},
		{"expect", strings.Replace(plain, "Accept:", "Expect: 100-continue\r\nAccept:", 1), false},
		{"connection close", strings.Replace(plain, "Accept:", "Connection: close\r\nAccept:", 1), false},
		{"upgrade", strings.Replace(plain, "Accept:", "Upgrade: h2c\r\nAccept:", 1), false},
		{"bare LF", strings.ReplaceAll(plain, "\r\n", "\n"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if ok := checkLaneHead(t, tc.raw); ok != tc.ok {
				t.Fatalf("ok %v, want %v", ok, tc.ok)
			}
		})
	}
}

// checkLaneHead parses raw with ParseLaneHead and, when it takes it,
// compares the result with http.ReadRequest's.
func checkLaneHead(t *testing.T, raw string) bool {
	t.Helper()
	req, n, ok := ParseLaneHead([]byte(raw))
	if !ok {
		return false
	}
	want, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
	if err != nil {
		t.Fatalf("ReadRequest refuses what ParseLaneHead took: %v", err)
	}
	wantHeader := maps.Clone(want.Header)
	delete(wantHeader, "Host")
	if req.Method != want.Method || req.URL.String() != want.URL.String() || req.Host != want.Host ||
		req.ContentLength != want.ContentLength || req.RequestURI != want.RequestURI || req.Proto != want.Proto ||
		!reflect.DeepEqual(req.Header, wantHeader) {
		t.Fatalf("parsed\n%+v\nReadRequest\n%+v", req, want)
	}
	wantBody, _ := io.ReadAll(want.Body)
	if rest := raw[n:]; int64(len(rest)) >= req.ContentLength && rest[:req.ContentLength] != string(wantBody) {
		t.Fatalf("body %q, ReadRequest's %q", rest[:req.ContentLength], wantBody)
	}
	return true
}

// ReadPostResponse reads every response as http.ReadResponse does: the
// status, header, framing and body, and it leaves the reader at the next
// response (a chunked body's trailer read).
func TestReadPostResponseMatchesReadResponse(t *testing.T) {
	event := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{}}\n\n"
	chunk := func(s string) string { return strings.ToLower(strconvHex(len(s))) + "\r\n" + s + "\r\n" }
	sse := "HTTP/1.1 200 OK\r\nCache-Control: no-cache, no-transform\r\nConnection: keep-alive\r\n" +
		"Content-Type: text/event-stream\r\nMcp-Session-Id: S1\r\nDate: Mon, 30 Nov 2026 02:00:00 GMT\r\n" +
		"Transfer-Encoding: chunked\r\n\r\n" + chunk(event) + "0\r\n\r\n"
	for _, tc := range []struct {
		name string
		raw  string
		lean bool // parsed in place, not by ReadResponse
	}{
		{"event stream", sse, true},
		{"two chunks and a trailer", strings.Replace(sse, "0\r\n\r\n", chunk("x")+"0\r\nX-T: 1\r\n\r\n", 1), true},
		{"JSON with a length", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", true},
		{"empty 202", "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n", true},
		{"404 closing", "HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 9\r\n\r\nnot found", true},
		{"no reason phrase", "HTTP/1.1 200\r\nContent-Length: 2\r\n\r\n{}", true},
		{"interim then final", "HTTP/1.1 100 Continue\r\n\r\n" + sse, false},
		{"204", "HTTP/1.1 204 No Content\r\n\r\n", false},
		{"HTTP/1.0", strings.Replace(sse, "HTTP/1.1", "HTTP/1.0", 1), false},
		{"length and chunks", strings.Replace(sse, "Transfer-Encoding", "Content-Length: 5\r\nTransfer-Encoding", 1), false},
		{"until close", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{}", false},
		{"folded header", strings.Replace(sse, "no-cache,", "no-cache,\r\n ", 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := tc.raw + "NEXT"
			if _, _, ok := ParseResponseHead([]byte(raw)); ok != tc.lean {
				t.Fatalf("parsed in place: %v, want %v", ok, tc.lean)
			}
			read := func(f func(*bufio.Reader) (*http.Response, error)) (*http.Response, string, string) {
				br := bufio.NewReader(strings.NewReader(raw))
				resp, err := f(br)
				for err == nil && resp.StatusCode < 200 {
					resp, err = f(br)
				}
				if err != nil {
					t.Fatal(err)
				}
				body, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				rest, _ := io.ReadAll(br)
				return resp, string(body), string(rest)
			}
			got, gotBody, gotRest := read(ReadPostResponse)
			want, wantBody, wantRest := read(func(br *bufio.Reader) (*http.Response, error) { return http.ReadResponse(br, postRequest) })
			if got.StatusCode != want.StatusCode || got.Status != want.Status || got.Close != want.Close ||
				got.ContentLength != want.ContentLength || !reflect.DeepEqual(got.TransferEncoding, want.TransferEncoding) ||
				!reflect.DeepEqual(got.Header, want.Header) {
				t.Fatalf("read\n%+v\nReadResponse\n%+v", got, want)
			}
			if gotBody != wantBody || gotRest != wantRest {
				t.Fatalf("body %q then %q; ReadResponse: %q then %q", gotBody, gotRest, wantBody, wantRest)
			}
		})
	}
}

// A body cut short is an error, not an end; a transfer coding other than
// chunked is refused, as by http.ReadResponse.
func TestReadPostResponseCut(t *testing.T) {
	if _, err := ReadPostResponse(bufio.NewReader(strings.NewReader(
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"))); err == nil {
		t.Error("gzip, chunked: no error")
	}
	for _, raw := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n",
	} {
		resp, err := ReadPostResponse(bufio.NewReader(strings.NewReader(raw)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAll(resp.Body); err == nil {
			t.Errorf("%q: body read to its end without an error", raw)
		}
	}
}

func strconvHex(n int) string {
	const digits = "0123456789abcdef"
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 16 {
		b = append([]byte{digits[n%16]}, b...)
	}
	return string(b)
}
