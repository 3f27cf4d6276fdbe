package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingServer is an HTTP/1.1 server that counts the connections it
// accepted.
type countingServer struct {
	*httptest.Server
	conns, closed atomic.Int64
}

func newCountingServer(t *testing.T, h http.HandlerFunc) *countingServer {
	cs := &countingServer{}
	cs.Server = httptest.NewUnstartedServer(h)
	cs.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			cs.conns.Add(1)
		case http.StateClosed:
			cs.closed.Add(1)
		}
	}
	cs.Start()
	t.Cleanup(cs.Close)
	return cs
}

func post(t *testing.T, rt http.RoundTripper, ctx context.Context, url, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return rt.RoundTrip(req)
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return string(b)
}

// transports are the round trippers the suite runs against: the edge's
// own and net/http's, which it must behave like.
func transports() map[string]func() http.RoundTripper {
	return map[string]func() http.RoundTripper{
		"Transport": func() http.RoundTripper {
			return NewTransport(http.DefaultTransport.(*http.Transport).Clone())
		},
		"net/http": func() http.RoundTripper { return http.DefaultTransport.(*http.Transport).Clone() },
	}
}

func TestBackendTransport(t *testing.T) {
	for name, mk := range transports() {
		t.Run(name, func(t *testing.T) {
			t.Run("keep-alive", func(t *testing.T) { testKeepAlive(t, mk()) })
			t.Run("backend closed idle connection", func(t *testing.T) { testClosedIdle(t, mk()) })
			t.Run("event stream read as it comes", func(t *testing.T) { testStreaming(t, mk()) })
			t.Run("cancel while reading", func(t *testing.T) { testCancel(t, mk()) })
			t.Run("Connection close", func(t *testing.T) { testConnectionClose(t, mk()) })
			t.Run("concurrent", func(t *testing.T) { testConcurrent(t, mk()) })
			t.Run("refused", func(t *testing.T) { testRefused(t, mk()) })
		})
	}
}

func echoHandler(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, "%s %s", r.Method, b)
}

// Sequential exchanges share one connection, also when the caller only
// closes a body whose end was near (an event stream the backend ends).
func testKeepAlive(t *testing.T, rt http.RoundTripper) {
	srv := newCountingServer(t, echoHandler)
	for i := range 5 {
		resp, err := post(t, rt, context.Background(), srv.URL, fmt.Sprint(i))
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, resp); got != fmt.Sprintf("POST %d", i) {
			t.Fatalf("body %q", got)
		}
	}
	// The stream ends only once the client has its event (release), so
	// Close finds the end on the way rather than read.
	release := make(chan struct{}, 1)
	sse := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message\ndata: {}\n\n")
		w.(http.Flusher).Flush()
		<-release
	})
	for range 3 {
		resp, err := post(t, rt, context.Background(), sse.URL, "{}")
		if err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(resp.Body).ReadString('\n')
		if line != "event: message\n" {
			t.Fatalf("first line %q", line)
		}
		release <- struct{}{}
		resp.Body.Close() // the stream's end is not read yet
	}
	if n := srv.conns.Load(); n != 1 {
		t.Fatalf("%d connections for 5 sequential exchanges, want 1", n)
	}
	if _, own := rt.(*Transport); own && sse.conns.Load() != 1 {
		t.Fatalf("%d connections for 3 event streams closed before their end, want 1", sse.conns.Load())
	}
}

// An idle connection the backend closed (a restart) is not used: the next
// exchange succeeds on a new one.
func testClosedIdle(t *testing.T, rt http.RoundTripper) {
	if _, own := rt.(*Transport); !own {
		t.Skip("net/http notices a closed idle connection on its own read goroutine, some time after the close")
	}
	srv := newCountingServer(t, echoHandler)
	for i := range 3 {
		resp, err := post(t, rt, context.Background(), srv.URL, "x")
		if err != nil {
			t.Fatalf("exchange %d: %v", i, err)
		}
		readAll(t, resp)
		srv.CloseClientConnections() // on loopback the FIN is queued to the client socket at once
	}
	if n := srv.conns.Load(); n != 3 {
		t.Fatalf("%d connections, want 3", n)
	}
}

// A body is read as the backend writes it, not when it ends.
func testStreaming(t *testing.T, rt http.RoundTripper) {
	release := make(chan struct{})
	srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		<-release
		fmt.Fprint(w, "data: two\n\n")
	})
	resp, err := post(t, rt, context.Background(), srv.URL, "{}")
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "data: one\n" {
		t.Fatalf("first event: %q, %v", line, err)
	}
	close(release)
	rest, _ := io.ReadAll(br)
	resp.Body.Close()
	if string(rest) != "\ndata: two\n\n" {
		t.Fatalf("rest %q", rest)
	}
}

// Cancelling the request's context ends a read in progress at once, and
// the connection is not reused.
func testCancel(t *testing.T, rt http.RoundTripper) {
	stuck := make(chan struct{})
	t.Cleanup(func() { close(stuck) })
	srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stuck" {
			w.Header().Set("Content-Type", "text/event-stream")
			w.(http.Flusher).Flush()
			select {
			case <-stuck:
			case <-r.Context().Done():
			}
			return
		}
		echoHandler(w, r)
	})
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := post(t, rt, ctx, srv.URL+"/stuck", "{}")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(resp.Body)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("read of a cancelled exchange ended without an error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("read did not end after cancel")
	}
	resp.Body.Close()
	resp, err = post(t, rt, context.Background(), srv.URL, "after")
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); got != "POST after" {
		t.Fatalf("body %q", got)
	}
	if n := srv.conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2 (the cancelled one not reused)", n)
	}
}

// A response with Connection: close leaves the connection closed.
func testConnectionClose(t *testing.T, rt http.RoundTripper) {
	srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		echoHandler(w, r)
	})
	for range 2 {
		resp, err := post(t, rt, context.Background(), srv.URL, "x")
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}
	if n := srv.conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}

func testConcurrent(t *testing.T, rt http.RoundTripper) {
	srv := newCountingServer(t, echoHandler)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			for j := range 5 {
				want := fmt.Sprintf("%d-%d", i, j)
				resp, err := post(t, rt, context.Background(), srv.URL, want)
				if err != nil {
					errs <- err
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(b) != "POST "+want {
					errs <- fmt.Errorf("body %q, want %q", b, "POST "+want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func testRefused(t *testing.T, rt http.RoundTripper) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = post(t, rt, context.Background(), "http://"+addr+"/mcp", "{}")
	var opErr *net.OpError
	if !errors.As(err, &opErr) {
		t.Fatalf("error %v, want a *net.OpError", err)
	}
}

// https goes to the fallback transport.
func TestConnTransportHTTPSFallback(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(echoHandler))
	defer srv.Close()
	rt := NewTransport(srv.Client().Transport)
	resp, err := post(t, rt, context.Background(), srv.URL, "tls")
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); got != "POST tls" {
		t.Fatalf("body %q", got)
	}
}

// Only a request the backend cannot have received is marked undelivered
// (and so retried): not one whose response never came.
func TestConnTransportDelivery(t *testing.T) {
	rt := NewTransport(http.DefaultTransport.(*http.Transport).Clone())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if _, err := post(t, rt, context.Background(), "http://"+addr+"/mcp", "{}"); !errors.Is(err, ErrUndelivered) {
		t.Fatalf("refused connection: %v, want ErrUndelivered", err)
	}
	var got atomic.Int64
	srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		got.Add(1)
		c, _, _ := http.NewResponseController(w).Hijack()
		c.Close() // took the request, answered nothing
	})
	_, err = post(t, rt, context.Background(), srv.URL, "{}")
	if err == nil || errors.Is(err, ErrUndelivered) || got.Load() != 1 {
		t.Fatalf("request taken, no response: %v (received %d), want an error not marked undelivered", err, got.Load())
	}
}

func TestHostPort(t *testing.T) {
	for raw, want := range map[string]string{
		"http://127.0.0.1:9/mcp": "127.0.0.1:9", "http://example.com/mcp": "example.com:80",
		"http://[::1]/mcp": "[::1]:80", "http://[::1]:8080/": "[::1]:8080",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := HostPort(u); got != want {
			t.Errorf("HostPort(%s) = %q, want %q", raw, got, want)
		}
	}
}

// Idle connections past idleTimeout are not reused but closed, and Close
// closes the idle ones.
func TestConnTransportIdleConnections(t *testing.T) {
	srv := newCountingServer(t, echoHandler)
	rt := NewTransport(http.DefaultTransport.(*http.Transport).Clone())
	rt.idleTimeout = time.Nanosecond
	for range 2 {
		resp, err := post(t, rt, context.Background(), srv.URL, "x")
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}
	if n := srv.conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2 (the idle one expired)", n)
	}
	rt.Close()
	eventually(t, 5*time.Second, "idle connections closed", func() bool { return srv.closed.Load() == 2 })
}

// eventually waits for cond, polling, up to d (for what a closed socket's
// far end sees, which no event announces).
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
