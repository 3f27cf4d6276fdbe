package test

import (
	"bufio"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// The floor of a hop between processes: the same tools/call directly to a
// backend process and through a process that only forwards, on the same
// machine. Against BenchmarkToolCallProcesses, they tell how much of the
// edge's ratio is the extra process on the path rather than its work.

// BenchmarkToolCallTCPForwarderProcess forwards the client's connection's
// bytes to the backend and back (io.Copy each way): no HTTP at all.
func BenchmarkToolCallTCPForwarderProcess(b *testing.B) {
	backend := startBackendProc(b, "alpha")
	compareProcessCalls(b, backend, startForwarderProc(b, "tcp", backend), "forwarder", "echo")
}

// BenchmarkToolCallProxyProcess forwards through a plain
// httputil.ReverseProxy in a process of its own.
func BenchmarkToolCallProxyProcess(b *testing.B) {
	backend := startBackendProc(b, "alpha")
	compareProcessCalls(b, backend, startForwarderProc(b, "proxy", backend), "proxy", "echo")
}

// startForwarderProc runs TestHelperForwarder in a child process of this
// test binary, forwarding (mode tcp or proxy) to the MCP endpoint at
// target, and returns the endpoint's URL through it.
func startForwarderProc(b *testing.B, mode, target string) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperForwarder$", "-test.v=false")
	cmd.Env = append(os.Environ(), "FLEETGATE_HELPER_FORWARD="+mode, "FLEETGATE_HELPER_TARGET="+target)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if addr, ok := strings.CutPrefix(lines.Text(), "listening "); ok {
			go func() { _, _ = io.Copy(io.Discard, out) }()
			u, _ := url.Parse(target)
			return "http://" + addr + u.Path
		}
	}
	b.Fatalf("forwarder did not start: %v", lines.Err())
	return ""
}

// TestHelperForwarder is the child process of startForwarderProc; it does
// nothing in a normal test run. It serves until its stdin closes.
func TestHelperForwarder(t *testing.T) {
	mode, target := os.Getenv("FLEETGATE_HELPER_FORWARD"), os.Getenv("FLEETGATE_HELPER_TARGET")
	if mode == "" {
		t.Skip("helper process for the benchmarks")
	}
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	stop := ln.Close
	switch mode {
	case "tcp":
		wg.Go(func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				conns[c] = true
				mu.Unlock()
				wg.Go(func() { forward(c, u.Host) })
			}
		})
	case "proxy":
		rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
		rp.ErrorLog = log.New(io.Discard, "", 0) // a stream cut at the end of a run is no news
		srv := &http.Server{Handler: rp}
		wg.Go(func() { _ = srv.Serve(ln) })
		stop = srv.Close // its listener and connections
	default:
		ln.Close()
		t.Fatalf("FLEETGATE_HELPER_FORWARD=%q: want tcp or proxy", mode)
	}
	fmt.Printf("listening %s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = stop()
	mu.Lock()
	for c := range conns { // clients may keep idle connections open
		c.Close()
	}
	mu.Unlock()
	wg.Wait()
}

// forward copies c's bytes to a connection to addr and back until either
// side ends.
func forward(c net.Conn, addr string) {
	defer c.Close()
	up, err := net.Dial("tcp", addr)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(up, c)
		_ = up.(*net.TCPConn).CloseWrite()
		close(done)
	}()
	_, _ = io.Copy(c, up)
	c.Close()
	<-done
}
