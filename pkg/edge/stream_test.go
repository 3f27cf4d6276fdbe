package edge

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/session"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

// The standalone stream the edge serves answers GETs as the go-sdk would:
// refusals for what the go-sdk refuses, one stream per session.
func TestStandaloneStreamRequests(t *testing.T) {
	// serve runs check on an edge serving alpha, in a bubble of its own.
	serve := func(t *testing.T, check func(t *testing.T, url string)) {
		synctest.Test(t, func(t *testing.T) {
			e := serveMemoryEdge(t, nil)
			e.up("alpha", "echo")
			e.settle()
			check(t, e.MCPURL())
		})
	}
	cases := []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"no event-stream in Accept", map[string]string{"Accept": "application/json"}, http.StatusBadRequest},
		{"a Last-Event-ID of no stream of this edge", map[string]string{"Last-Event-ID": "_0"}, http.StatusOK},
		{"a Last-Event-ID too long", map[string]string{"Last-Event-ID": strings.Repeat("x", 65)}, http.StatusBadRequest},
		{"unsupported protocol version", map[string]string{"Mcp-Protocol-Version": "1999-01-01"}, http.StatusBadRequest},
		{"foreign Host on a loopback listener", map[string]string{"Host": "evil.example"}, http.StatusForbidden},
		{"unknown session", map[string]string{"Mcp-Session-Id": "AAAAAAAAAAAAAAAAAAAAAAAAAA"}, http.StatusNotFound},
		{"wildcard Accept, no protocol header", map[string]string{"Accept": "*/*", "Mcp-Protocol-Version": ""}, http.StatusOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			serve(t, func(t *testing.T, url string) {
				sid := rawInitialize(t, url, "")
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				req.Header.Set("Accept", "text/event-stream")
				req.Header.Set("Mcp-Session-Id", sid)
				req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
				for k, v := range c.hdr {
					switch {
					case k == "Host":
						req.Host = v
					case v == "":
						req.Header.Del(k)
					default:
						req.Header.Set(k, v)
					}
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				if resp.StatusCode != c.want {
					t.Fatalf("status %d, want %d", resp.StatusCode, c.want)
				}
				if c.want == http.StatusOK && resp.Header.Get("Content-Type") != "text/event-stream" {
					t.Fatalf("Content-Type %q", resp.Header.Get("Content-Type"))
				}
			})
		})
	}

	t.Run("second stream of a session", func(t *testing.T) {
		serve(t, func(t *testing.T, url string) {
			sid := rawInitialize(t, url, "")
			if r := rawGET(t, url, sid, nil); r.StatusCode != http.StatusOK {
				t.Fatalf("first stream: status %d", r.StatusCode)
			}
			if r := rawGET(t, url, sid, nil); r.StatusCode != http.StatusConflict {
				t.Fatalf("second stream: status %d, want 409", r.StatusCode)
			}
		})
	})
}

// readEvents returns a channel of the data lines of an SSE body.
func readEvents(body interface{ Read([]byte) (int, error) }) <-chan string {
	ch := make(chan string, 16)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				ch <- data
			}
		}
	}()
	return ch
}

func nextEvent(t *testing.T, ch <-chan string, d time.Duration) (string, bool) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		return ev, ok
	case <-time.After(d):
		t.Fatalf("no event or end of stream within %v", d)
		return "", false
	}
}

// timedReader reads r, failing t when a read waits 5 s (of the bubble's
// clock) for data.
func timedReader(t *testing.T, r io.Reader) io.Reader {
	return readFunc(func(p []byte) (int, error) {
		type result struct {
			n   int
			err error
		}
		done := make(chan result, 1)
		go func() {
			n, err := r.Read(p)
			done <- result{n, err}
		}()
		select {
		case res := <-done:
			return res.n, res.err
		case <-time.After(5 * time.Second):
			t.Fatal("no event or end of stream within 5s")
			return 0, nil
		}
	})
}

type readFunc func([]byte) (int, error)

func (f readFunc) Read(p []byte) (int, error) { return f(p) }

// A change made while a session has no stream is sent when one attaches;
// a stream that ends leaves nothing behind; DELETE ends the stream.
func TestStandaloneStreamLifecycle(t *testing.T) {
	cat := demoCatalog(t, "alpha")
	synctest.Test(t, func(t *testing.T) {
		e := serveMemoryEdge(t, &Options{Coalesce: time.Millisecond})
		e.upCatalog("alpha", cat)
		e.settle()
		testStandaloneStreamLifecycle(t, e)
	})
}

// testStandaloneStreamLifecycle is TestStandaloneStreamLifecycle on e,
// serving alpha (the demo backend's catalog).
func testStandaloneStreamLifecycle(t *testing.T, e *memoryEdge) {
	url := e.MCPURL()
	sid := rawInitialize(t, url, "")
	if e.reg.Lookup(sid) == nil {
		t.Fatal("session not registered")
	}

	e.down("alpha") // no stream yet: pending
	e.settle()
	if n := len(e.View().Tools); n != 0 {
		t.Fatalf("%d tools served once alpha is down", n)
	}
	resp := rawGET(t, url, sid, nil)
	evs := readEvents(resp.Body)
	// One list_changed per changed kind (the demo backend has prompts and
	// resources too), tools among them, none twice.
	batch := func(what string) {
		t.Helper()
		seen := map[string]int{}
		ev, _ := nextEvent(t, evs, 5*time.Second)
		for ok := true; ok; {
			seen[ev]++
			select {
			case ev, ok = <-evs:
			case <-time.After(300 * time.Millisecond):
				ok = false
			}
		}
		if seen[`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}`] != 1 {
			t.Fatalf("%s: events %v, want one tools list_changed", what, seen)
		}
		for ev, n := range seen {
			if n != 1 || !strings.Contains(ev, "/list_changed") {
				t.Fatalf("%s: events %v, want each list_changed once", what, seen)
			}
		}
	}
	batch("change made before the stream attached")
	e.up("alpha")
	batch("change made while attached")

	// The client drops its stream: the edge notices, a change meanwhile is
	// pending, and the next stream (not a conflict) gets it.
	resp.Body.Close()
	synctest.Wait()
	if n := testutil.ToFloat64(e.m.streams); n != 0 {
		t.Fatalf("%v streams once the client dropped its own", n)
	}
	e.down("alpha")
	e.settle()
	if n := len(e.View().Tools); n != 0 {
		t.Fatalf("%d tools served once alpha is down", n)
	}
	resp = rawGET(t, url, sid, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream after the first dropped: status %d", resp.StatusCode)
	}
	evs = readEvents(resp.Body)
	batch("change made while the client had no stream")

	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	del, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	del.Body.Close()
	if ev, ok := nextEvent(t, evs, 5*time.Second); ok {
		t.Fatalf("event %q after DELETE, want the stream to end", ev)
	}
	synctest.Wait()
	if n := testutil.ToFloat64(e.m.streams); n != 0 {
		t.Fatalf("%v streams after DELETE", n)
	}
}

// An HTTP/1.0 GET (no chunked encoding) cannot be taken over: the request
// goroutine holds the stream, and it carries list_changed all the same.
func TestStandaloneStreamHeld(t *testing.T) {
	synctest.Test(t, testStandaloneStreamHeld)
}

func testStandaloneStreamHeld(t *testing.T) {
	e := serveMemoryEdge(t, &Options{Coalesce: time.Millisecond})
	e.up("alpha", "echo")
	e.settle()
	sid := rawInitialize(t, e.MCPURL(), "")
	conn, err := e.net.dial(t.Context(), "tcp", strings.TrimPrefix(strings.TrimSuffix(e.MCPURL(), "/mcp"), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /mcp HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-11-25\r\n\r\n", sid)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || len(resp.TransferEncoding) != 0 {
		t.Fatalf("status %d, transfer encoding %v: want 200, not chunked", resp.StatusCode, resp.TransferEncoding)
	}
	synctest.Wait()
	if n := testutil.ToFloat64(e.m.streams); n != 1 {
		t.Fatalf("%v streams once the HTTP/1.0 GET was answered; want 1", n)
	}
	evs := readEvents(resp.Body)
	e.down("alpha")
	for {
		ev, ok := nextEvent(t, evs, 5*time.Second)
		if !ok {
			t.Fatal("stream ended before the tools list_changed")
		}
		if strings.Contains(ev, session.ToolsChanged) {
			return
		}
	}
}

// Every event of a session's stream has an id; a client that reconnects
// with Last-Event-ID is sent again what came after that event, and
// nothing it already had.
func TestStandaloneStreamResumes(t *testing.T) {
	cat := demoCatalog(t, "alpha")
	synctest.Test(t, func(t *testing.T) {
		e := serveMemoryEdge(t, &Options{Coalesce: time.Millisecond, CallTimeout: 10 * time.Second})
		e.upCatalog("alpha", cat)
		e.settle()
		testStandaloneStreamResumes(t, e)
	})
}

// testStandaloneStreamResumes is TestStandaloneStreamResumes on e,
// serving alpha (the demo backend's catalog).
func testStandaloneStreamResumes(t *testing.T, e *memoryEdge) {
	url := e.MCPURL()
	sid := rawInitialize(t, url, "")
	s := e.reg.Lookup(sid)
	num := func(id []byte) uint64 {
		epoch, n, _ := strings.Cut(string(id), "-")
		v, err := strconv.ParseUint(n, 10, 64)
		if epoch != session.Epoch() || err != nil {
			t.Fatalf("event id %q", id)
		}
		return v
	}
	// tools reads events until a tools/list_changed.
	tools := func(er *mcpwire.EventReader) mcpwire.Event {
		t.Helper()
		for {
			ev, err := er.Next()
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			if strings.Contains(string(ev.Data), session.ToolsChanged) {
				return ev
			}
		}
	}
	detached := func() {
		t.Helper()
		synctest.Wait()
		if s.Streaming() {
			t.Fatal("the stream closed by its client still attached")
		}
	}
	r1 := rawGET(t, url, sid, nil)
	er := mcpwire.NewEventReader(timedReader(t, r1.Body), 1<<20)
	e.down("alpha")
	first := num(tools(er).ID)
	e.up("alpha")
	second := num(tools(er).ID)
	if second <= first {
		t.Fatalf("event numbers %d then %d", first, second)
	}
	r1.Body.Close()
	detached()
	// Resumed after the first: the second change's list_changed is owed
	// again, at once, as a new event.
	r2 := rawGET(t, url, sid, map[string]string{"Last-Event-ID": fmt.Sprintf("%s-%d", session.Epoch(), first)})
	if again := num(tools(mcpwire.NewEventReader(timedReader(t, r2.Body), 1<<20)).ID); again <= second {
		t.Fatalf("resumed after %d: a tools/list_changed numbered %d", first, again)
	}
	r2.Body.Close()
	detached()
	// Resumed after the last event: nothing is owed; the next event is
	// the next change's.
	last := s.LastEvent()
	r3 := rawGET(t, url, sid, map[string]string{"Last-Event-ID": fmt.Sprintf("%s-%d", session.Epoch(), last)})
	er = mcpwire.NewEventReader(timedReader(t, r3.Body), 1<<20)
	e.down("alpha")
	// Events go on from last+1, none older re-sent. A prompts or
	// resources list_changed of the previous change may come first: its
	// write failed when r2 was closed, so it was still owed.
	for want := last + 1; ; want++ {
		ev, err := er.Next()
		if err != nil {
			t.Fatal(err)
		}
		if len(ev.Data) == 0 {
			want--
			continue
		}
		if got := num(ev.ID); got != want {
			t.Fatalf("after resuming at the last event %d: event %d (want %d) %s", last, got, want, ev.Data)
		}
		if strings.Contains(string(ev.Data), session.ToolsChanged) {
			break
		}
		if want > last+2 {
			t.Fatalf("after resuming at the last event %d: no tools/list_changed by event %d", last, want)
		}
	}
}
