package lane

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// bubbleLane is a call lane on one end of a net.Pipe, inside a synctest
// bubble: its deadlines run on the bubble's clock.
func bubbleLane(t *testing.T, o *Options) (*callLane, net.Conn) {
	client, server := net.Pipe()
	t.Cleanup(func() { client.Close(); server.Close() })
	opts := *o
	for _, d := range []*time.Duration{&opts.HeaderTimeout, &opts.BodyTimeout, &opts.IdleTimeout} {
		if *d == 0 {
			*d = time.Minute
		}
	}
	opts.Edge = bodyEdge{}
	l := &callLane{e: New(opts), conn: server, src: &laneSource{conn: server}}
	l.br = bufio.NewReaderSize(l.src, 4<<10)
	l.src.record(l.br, maxLaneHeader)
	return l, client
}

// An idle lane waits for its next request IdleTimeout at most, then ends,
// as the server closes an idle keep-alive connection.
func TestLaneIdleDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := bubbleLane(t, &Options{IdleTimeout: 2 * time.Minute})
		start := time.Now()
		if l.waitRequest() {
			t.Fatal("an idle lane got a request")
		}
		if d := time.Since(start); d != 2*time.Minute {
			t.Fatalf("idle lane ended after %v, want the idle timeout (2m)", d)
		}
	})
}

// A request that begins within the idle timeout is read; the lane's
// deadline does not cut it afterwards.
func TestLaneIdleThenRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, client := bubbleLane(t, &Options{IdleTimeout: time.Minute})
		go func() {
			time.Sleep(59 * time.Second) // the bubble's clock: no real wait
			_, _ = io.WriteString(client, "P")
		}()
		if !l.waitRequest() {
			t.Fatal("a request just within the idle timeout was not read")
		}
		time.Sleep(2 * time.Minute)
		go func() { _, _ = io.WriteString(client, "OST") }()
		if b, err := l.br.Peek(4); err != nil || string(b) != "POST" {
			t.Fatalf("read after the idle deadline was lifted: %q %v", b, err)
		}
	})
}

// A head that trickles is cut at HeaderTimeout, and a body that trickles at
// BodyTimeout.
func TestLaneHeadAndBodyDeadlines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, client := bubbleLane(t, &Options{HeaderTimeout: 10 * time.Second, BodyTimeout: 30 * time.Second})
		var writer sync.WaitGroup
		defer writer.Wait()
		defer client.Close()
		writer.Go(func() {
			for _, b := range []byte("POST /mcp HTTP/1.1\r\nHost: x\r\n") {
				if _, err := client.Write([]byte{b}); err != nil {
					return
				}
				time.Sleep(time.Second)
			}
		})
		start := time.Now()
		if req := l.readHead(); req != nil {
			t.Fatalf("a trickling head was read: %v", req)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("head read for %v, want at most the header timeout", d)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		l, client := bubbleLane(t, &Options{BodyTimeout: 30 * time.Second})
		req, _ := http.NewRequest(http.MethodPost, "http://x/mcp", nil)
		req.ContentLength = 100
		var writer sync.WaitGroup
		defer writer.Wait()
		defer client.Close()
		writer.Go(func() {
			for range 100 {
				if _, err := io.WriteString(client, "x"); err != nil {
					return
				}
				time.Sleep(time.Second)
			}
		})
		start := time.Now()
		if l.readBody(req) {
			t.Fatal("a body trickling past the body timeout was read")
		}
		if d := time.Since(start); d != 30*time.Second {
			t.Fatalf("body read for %v, want the body timeout (30s)", d)
		}
	})
}

// bodyEdge is an Edge whose only part used here is Body.
type bodyEdge struct{ Edge }

func (bodyEdge) Body(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }

// After a body read apart from its head, the lane can still read what
// follows (the watch's read during a long call): net.Pipe hands each write
// to one read.
func TestLaneRoomAfterBody(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	l := &callLane{e: New(Options{Edge: bodyEdge{}, HeaderTimeout: time.Minute, BodyTimeout: time.Minute, IdleTimeout: time.Minute}), conn: server, src: &laneSource{conn: server}}
	l.br = bufio.NewReaderSize(l.src, 4<<10)
	body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alpha_echo","arguments":{"text":"x"}}}`
	raw := "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
		"Mcp-Session-Id: SESSION00000\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	head := strings.Index(raw, "\r\n\r\n") + 4
	go func() {
		for _, part := range []string{raw[:head], raw[head:], "N"} {
			if _, err := io.WriteString(client, part); err != nil {
				return
			}
		}
	}()
	l.src.record(l.br, maxLaneHeader)
	if _, err := l.br.Peek(1); err != nil {
		t.Fatal(err)
	}
	req := l.readHead()
	if req == nil || !l.readBody(req) {
		t.Fatalf("request not read: %+v", req)
	}
	if b, err := l.br.Peek(1); err != nil || b[0] != 'N' {
		t.Fatalf("the read after the body: %q, %v", b, err)
	}
}
