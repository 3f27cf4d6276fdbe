package h1

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// The fuzz targets of the hand-written HTTP/1.1 parsers: each compares the
// parser with net/http on the same bytes. Run one at a time:
//
//	go test -run '^$' -fuzz '^FuzzLaneHead$' -fuzztime 15s ./pkg/edge/internal/h1/

// FuzzLaneHead: a request head ParseLaneHead takes, http.ReadRequest
// takes too, and reads the same: method, URL, proto, Host, Content-Length,
// every header value, a connection kept alive, and the same length of
// head (so the body starts at the same byte).
func FuzzLaneHead(f *testing.F) {
	head := "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: application/json\r\n" +
		"Accept: application/json, text/event-stream\r\nMcp-Session-Id: S1\r\nMcp-Protocol-Version: 2025-11-25\r\n" +
		"Content-Length: 2\r\n\r\n{}"
	for _, s := range []string{
		head,
		"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nX: y\r\n\r\n{}",
		"POST /mcp HTTP/1.1\r\nhost:h:1\r\ncontent-length:0\r\n\r\n",
		"POST /mcp HTTP/1.1\r\nHost: [::1]:80\r\nConnection: keep-alive\r\nContent-Length: 000\r\nX-A: 1\r\nx-a:\t2 \r\n\r\nPOST",
		"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nX:\r\nÿ-\x7e: \x80\xff\r\n\r\n",
		"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n X: folded\r\n\r\n",
		"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
		"POST /mcp HTTP/1.1\nHost: h\nContent-Length: 0\n\n",
		"GET /mcp HTTP/1.1\r\nHost: h\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, n, ok := ParseLaneHead(raw)
		if !ok {
			return
		}
		// The head read by ReadRequest is the same length: what it leaves
		// unread (in its buffer or in the source) is the rest.
		src := bytes.NewReader(raw)
		br := bufio.NewReaderSize(src, len(raw)+16)
		want, err := http.ReadRequest(br)
		if err != nil {
			t.Fatalf("ReadRequest refuses what ParseLaneHead took: %v\n%q", err, raw)
		}
		if consumed := len(raw) - br.Buffered() - src.Len(); consumed != n {
			t.Fatalf("head of %d bytes, ReadRequest read %d\n%q", n, consumed, raw)
		}
		if want.Close || want.TransferEncoding != nil {
			t.Fatalf("ReadRequest reads Close %v, TransferEncoding %q\n%q", want.Close, want.TransferEncoding, raw)
		}
		// checkLaneHead compares method, URL, proto, Host, length, every
		// header and the body.
		checkLaneHead(t, string(raw))
		// The head alone is the same head.
		if _, m, ok := ParseLaneHead(raw[:n]); !ok || m != n {
			t.Fatalf("the head alone: %d, %v; want %d\n%q", m, ok, n, raw)
		}
	})
}

// FuzzReadPostResponse: a backend's response head ParseResponseHead
// takes, http.ReadResponse takes too and reads the same (status, framing,
// Close, every header value); the body reads the same, or fails with both,
// and leaves the reader at the same next byte.
func FuzzReadPostResponse(f *testing.F) {
	event := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{}}\n\n"
	sse := "HTTP/1.1 200 OK\r\nCache-Control: no-cache, no-transform\r\nConnection: keep-alive\r\n" +
		"Content-Type: text/event-stream\r\nMcp-Session-Id: S1\r\nDate: Mon, 30 Nov 2026 02:00:00 GMT\r\n" +
		"Transfer-Encoding: chunked\r\n\r\n" + strconv.FormatInt(int64(len(event)), 16) + "\r\n" + event + "\r\n0\r\n\r\n"
	for _, s := range []string{
		sse,
		strings.Replace(sse, "0\r\n\r\n", "1;ext=1\r\nx\r\n0\r\nX-T: 1\r\n\r\n", 1),
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
		"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 9\r\n\r\nnot found",
		"HTTP/1.1 200\r\nContent-Length: 2\r\n\r\n{}",
		"HTTP/1.1 999 X\r\ntransfer-encoding: Chunked\r\n\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\ngarbage\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\n" + sse,
	} {
		f.Add([]byte(s + "NEXT"))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if _, _, ok := ParseResponseHead(raw); !ok {
			return // read by http.ReadResponse itself
		}
		gbr, wbr := bufio.NewReader(bytes.NewReader(raw)), bufio.NewReader(bytes.NewReader(raw))
		got, err := ReadPostResponse(gbr)
		if err != nil {
			t.Fatalf("parsed head, then %v", err)
		}
		want, err := http.ReadResponse(wbr, postRequest)
		if err != nil {
			t.Fatalf("ReadResponse refuses what ParseResponseHead took: %v\n%q", err, raw)
		}
		if got.StatusCode != want.StatusCode || got.Status != want.Status || got.Close != want.Close || got.Proto != want.Proto ||
			got.ContentLength != want.ContentLength || !reflect.DeepEqual(got.TransferEncoding, want.TransferEncoding) ||
			!reflect.DeepEqual(got.Header, want.Header) {
			t.Fatalf("read\n%+v\nReadResponse\n%+v\n%q", got, want, raw)
		}
		gotBody, gerr := io.ReadAll(got.Body)
		wantBody, werr := io.ReadAll(want.Body)
		switch {
		case gerr == nil && werr != nil:
			t.Fatalf("body %q read, ReadResponse's fails: %v\n%q", gotBody, werr, raw)
		case gerr != nil && werr == nil && !strings.Contains(gerr.Error(), "more than"):
			t.Fatalf("body fails (%v), ReadResponse's reads %q\n%q", gerr, wantBody, raw)
		case gerr == nil && werr == nil:
			gotRest, _ := io.ReadAll(gbr)
			wantRest, _ := io.ReadAll(wbr)
			if !bytes.Equal(gotBody, wantBody) || !bytes.Equal(gotRest, wantRest) {
				t.Fatalf("body %q then %q; ReadResponse: %q then %q", gotBody, gotRest, wantBody, wantRest)
			}
		}
	})
}
