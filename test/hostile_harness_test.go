package test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// edgeProc is an edge binary started by a test, with its admin address.
type edgeProc struct {
	mcp, admin string
}

// startHostileEdge runs the edge binary against natsURL with extra flags.
func startHostileEdge(t testing.TB, natsURL string, extra ...string) *edgeProc {
	t.Helper()
	listen, admin := freeAddr(t), freeAddr(t)
	args := append([]string{"--nats-url", natsURL, "--listen", listen, "--admin-listen", admin, "--id", "hostile-edge",
		"--log-format", "json", "--call-timeout", "3s"}, extra...)
	startProc(t, "edge", exec.Command(binary(t, "edge"), args...))
	waitEdgeReady(t, admin)
	return &edgeProc{mcp: "http://" + listen + "/mcp", admin: "http://" + admin}
}

// metric reads one unlabelled metric of the edge's /metrics.
func (p *edgeProc) metric(t testing.TB, name string) float64 {
	t.Helper()
	resp, err := http.Get(p.admin + "/metrics")
	if err != nil {
		t.Fatalf("edge metrics: %v (the edge is gone?)", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == name {
			v, _ := strconv.ParseFloat(f[1], 64)
			return v
		}
	}
	t.Fatalf("metric %s not found", name)
	return 0
}

// hostileBackend fronts a demo backend and answers tools/call of echo with
// text "deep", "huge" or "endless" with a result nested a million deep, a
// 100 MiB result, or an event stream that never ends; everything else
// passes through.
func hostileBackend(t testing.TB, backendURL string) string {
	t.Helper()
	u, _ := url.Parse(backendURL)
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Arguments struct{ Text string } `json:"arguments"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		if msg.Method != "tools/call" {
			rp.ServeHTTP(w, r)
			return
		}
		head := `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"content":[{"type":"text","text":"x"}],"structuredContent":{"v":`
		switch msg.Params.Arguments.Text {
		case "deep":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, head)
			writeRepeated(w, "[", 1_000_000)
			writeRepeated(w, "]", 1_000_000)
			_, _ = io.WriteString(w, "}}}")
		case "huge":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, head+`"`)
			writeRepeated(w, "x", 100<<20)
			_, _ = io.WriteString(w, `"}}}`)
		case "endless":
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			for {
				if _, err := io.WriteString(w, ": still here\n\n"); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
		default:
			rp.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// writeRepeated writes s n times, in chunks, without holding it all.
func writeRepeated(w io.Writer, s string, n int) {
	chunk := strings.Repeat(s, 64<<10)
	for n > 0 {
		k := min(n, 64<<10)
		if _, err := io.WriteString(w, chunk[:k*len(s)]); err != nil {
			return
		}
		n -= k
	}
}

// rawRequest is one POST to the edge with headers and a body.
func rawRequest(t testing.TB, mcpURL string, body []byte, headers map[string]string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, mcpURL, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		return 0, nil, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, resp.Header, string(b)
}

// rawSession initializes a 2025-11-25 session with extra headers and
// returns its id.
func rawSession(t testing.TB, mcpURL string, headers map[string]string) string {
	t.Helper()
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"hostile","version":"1"}}}`
	code, h, body := rawRequest(t, mcpURL, []byte(init), headers)
	sid := h.Get("Mcp-Session-Id")
	if code != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", code, body)
	}
	hs := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	for k, v := range headers {
		hs[k] = v
	}
	if code, _, body := rawRequest(t, mcpURL, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), hs); code != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", code, body)
	}
	return sid
}

// laneConn is a keep-alive connection to the edge written by hand, so
// that a hostile request follows a plain call on one connection (a call
// lane).
type laneConn struct {
	t    testing.TB
	conn net.Conn
	br   *bufio.Reader
	host string
}

func dialEdge(t testing.TB, mcpURL string) *laneConn {
	t.Helper()
	u, _ := url.Parse(mcpURL)
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &laneConn{t: t, conn: c, br: bufio.NewReader(c), host: u.Host}
}

// post writes a POST with headers and body and reads its response.
func (l *laneConn) post(body []byte, headers map[string]string) (int, string) {
	l.t.Helper()
	var sb strings.Builder
	fmt.Fprintf(&sb, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n", l.host, len(body))
	for k, v := range headers {
		fmt.Fprintf(&sb, "%s: %s\r\n", k, v)
	}
	sb.WriteString("\r\n")
	_ = l.conn.SetDeadline(time.Now().Add(30 * time.Second))
	go func() { _, _ = l.conn.Write(append([]byte(sb.String()), body...)) }()
	resp, err := http.ReadResponse(l.br, nil)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(b)
}
