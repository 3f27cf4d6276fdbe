package test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Hostile clients and backends against a real edge process: nothing they
// send crashes it or grows it without bound, and a live session of each
// protocol generation keeps working through every case.
func TestHostile(t *testing.T) {
	if testing.Short() {
		t.Skip("hostile inputs take a while")
	}
	node := startNATS(t)
	alpha := startBackend(t, "alpha", nil)
	beta := startBackend(t, "beta", nil)
	startController(t, node.ClientURL(), "c1", fleetYAMLAt(200*time.Millisecond, 100*time.Millisecond,
		[2]string{"alpha", alpha.URL()}, [2]string{"beta", hostileBackend(t, beta.URL())}))
	e := startHostileEdge(t, node.ClientURL(), "--header-timeout", "2s", "--idle-timeout", "3s")
	live := connectMCP(t, e.mcp, "2025-11-25")
	live2 := connectMCP(t, e.mcp, "")
	eventually(t, 20*time.Second, "tools listed", func() bool {
		tools := live.tools(t)
		return slices.Contains(tools, "alpha_echo") && slices.Contains(tools, "beta_echo")
	})
	alive := func(what string) {
		t.Helper()
		for i, c := range []*mcpClient{live, live2} {
			res, err := c.call("alpha_echo", map[string]any{"text": "still"})
			if err != nil || res.IsError || !strings.Contains(text(res), "still") {
				t.Fatalf("after %s, live session %d: %v %+v %q", what, i, err, res, text(res))
			}
		}
	}
	alive("start")

	t.Run("client bodies on every path", func(t *testing.T) {
		sid := rawSession(t, e.mcp, nil)
		session := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
		paths := []struct {
			name    string
			headers map[string]string
		}{
			{"initialize", nil},
			{"session POST (fast call)", session},
			{"2026-07-28 tools/call", map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "alpha_echo"}},
			{"2026-07-28 tools/list", map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}},
			{"2026-07-28 subscriptions/listen", map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"}},
			{"version not a date", map[string]string{"Mcp-Protocol-Version": "9", "Mcp-Method": "tools/call"}},
		}
		bodies := map[string][]byte{
			"4 MiB of [":             bytes.Repeat([]byte("["), 4<<20),
			"200,000 deep, balanced": append(bytes.Repeat([]byte("["), 200000), bytes.Repeat([]byte("]"), 200000)...),
		}
		call := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"alpha_echo","arguments":{"text":"lane"}}}`)
		for bname, body := range bodies {
			for _, p := range paths {
				code, _, resp := rawRequest(t, e.mcp, body, p.headers)
				if code < 400 || code > 499 {
					t.Fatalf("%s on %s: %d %.200s, want a 4xx", bname, p.name, code, resp)
				}
				t.Logf("%s on %s: %d", bname, p.name, code)
			}
			// On a call lane: a plain call makes the connection one, then
			// the hostile body follows on it.
			lc := dialEdge(t, e.mcp)
			if code, resp := lc.post(call, session); code != http.StatusOK || !strings.Contains(resp, "lane") {
				t.Fatalf("plain call: %d %s", code, resp)
			}
			if code, resp := lc.post(body, session); code < 400 || code > 499 {
				t.Fatalf("%s on a lane: %d %.200s, want a 4xx", bname, code, resp)
			}
			alive(bname)
		}
	})

	t.Run("backend results", func(t *testing.T) {
		for what, kind := range map[string]string{"deep": "nested too deep", "huge": "too large", "endless": "timed out"} {
			for i, c := range []*mcpClient{live, live2} {
				res, err := c.call("beta_echo", map[string]any{"text": what})
				if err != nil || !res.IsError || !strings.Contains(text(res), `backend "beta"`) || !strings.Contains(text(res), kind) {
					t.Fatalf("%s result, session %d: %v %+v, want an error naming beta and %q", what, i, err, res, kind)
				}
				if strings.Contains(text(res), "127.0.0.1") {
					t.Fatalf("the backend's address reached the client: %s", text(res))
				}
			}
			alive("a " + what + " backend result")
		}
	})

	t.Run("initialize flood", func(t *testing.T) {
		flood := func(n, size int) (refused int) {
			var mu sync.Mutex
			var wg sync.WaitGroup
			sem := make(chan struct{}, 10)
			for range n {
				wg.Go(func() {
					sem <- struct{}{}
					defer func() { <-sem }()
					pad := strings.Repeat("x", size)
					body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","clientInfo":{"name":"f","version":"1"},"capabilities":{"experimental":{"pad":{"v":"` + pad + `"}}}}}`
					code, _, _ := rawRequest(t, e.mcp, []byte(body), nil)
					mu.Lock()
					defer mu.Unlock()
					if code == http.StatusRequestEntityTooLarge {
						refused++
					}
				})
			}
			wg.Wait()
			return refused
		}
		rss0 := e.metric(t, "process_resident_memory_bytes")
		if n := flood(150, 1<<20); n != 150 {
			t.Fatalf("%d of 150 initializes of 1 MiB refused with 413", n)
		}
		rss1 := e.metric(t, "process_resident_memory_bytes")
		if n := flood(150, 60<<10); n != 0 {
			t.Fatalf("%d of 150 initializes of 60 KiB refused", n)
		}
		rss2 := e.metric(t, "process_resident_memory_bytes")
		t.Logf("edge RSS %.1f MiB; after 150 initializes of 1 MiB +%.1f MiB; after 150 sessions of 60 KiB +%.1f MiB",
			rss0/(1<<20), (rss1-rss0)/(1<<20), (rss2-rss1)/(1<<20))
		if rss1-rss0 > 64<<20 || rss2-rss1 > 64<<20 {
			t.Fatalf("edge grew %.1f MiB and %.1f MiB, want under 64 MiB each", (rss1-rss0)/(1<<20), (rss2-rss1)/(1<<20))
		}
		alive("initialize flood")
	})

	t.Run("slow clients", func(t *testing.T) {
		g0 := e.metric(t, "go_goroutines")
		addr := strings.TrimSuffix(strings.TrimPrefix(e.mcp, "http://"), "/mcp")
		conns := make([]net.Conn, 0, 1000)
		for range 1000 {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, _ = io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: x\r\n")
			conns = append(conns, c)
		}
		start := time.Now()
		stop := make(chan struct{})
		var trickle sync.WaitGroup
		trickle.Go(func() { // one header byte per connection every 200ms
			for {
				select {
				case <-stop:
					return
				case <-time.After(200 * time.Millisecond):
				}
				for _, c := range conns {
					_ = c.SetWriteDeadline(time.Now().Add(10 * time.Millisecond))
					_, _ = c.Write([]byte("X"))
				}
			}
		})
		alive("1,000 slow clients connected")
		closed := 0
		for _, c := range conns {
			_ = c.SetReadDeadline(start.Add(8 * time.Second))
			if _, err := io.Copy(io.Discard, c); err == nil || !isTimeout(err) {
				closed++
			}
		}
		close(stop)
		trickle.Wait()
		t.Logf("%d of 1000 trickling connections closed by the edge %v after they began", closed, time.Since(start).Round(100*time.Millisecond))
		if closed != 1000 {
			t.Fatalf("%d of 1000 trickling connections closed by the header deadline", closed)
		}
		eventually(t, 10*time.Second, "goroutines back to baseline", func() bool { return e.metric(t, "go_goroutines") <= g0+20 })
		t.Logf("goroutines: %.0f before, %.0f after", g0, e.metric(t, "go_goroutines"))
		alive("slow clients")
	})

	t.Run("idle keep-alive connections", func(t *testing.T) {
		const n = 10000
		var lim syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < n+2000 {
			t.Skipf("open-file limit %d: %d connections need at least %d", lim.Cur, n, n+2000)
		}
		g0 := e.metric(t, "go_goroutines")
		addr := strings.TrimSuffix(strings.TrimPrefix(e.mcp, "http://"), "/mcp")
		conns := make(chan net.Conn, n)
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				for range n / 50 {
					c, err := net.Dial("tcp", addr)
					if err != nil {
						t.Error(err)
						return
					}
					conns <- c
					_, _ = io.WriteString(c, "GET /favicon.ico HTTP/1.1\r\nHost: x\r\n\r\n")
					buf := make([]byte, 512)
					_, _ = c.Read(buf) // the 404, kept alive
				}
			})
		}
		wg.Wait()
		close(conns)
		var open []net.Conn
		for c := range conns {
			open = append(open, c)
			defer c.Close()
		}
		gIdle := e.metric(t, "go_goroutines")
		alive(fmt.Sprintf("%d idle keep-alive connections", len(open)))
		eventually(t, 15*time.Second, "idle connections closed", func() bool { return e.metric(t, "go_goroutines") <= g0+20 })
		t.Logf("goroutines: %.0f before, %.0f with %d idle connections, %.0f after the idle timeout", g0, gIdle, len(open), e.metric(t, "go_goroutines"))
		alive("idle connections closed")
	})
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
