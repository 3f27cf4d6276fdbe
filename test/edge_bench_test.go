package test

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startProc starts cmd with its output in a log file (name.log) and
// interrupts it, and waits for it, at cleanup.
func startProc(t testing.TB, name string, cmd *exec.Cmd) {
	t.Helper()
	logf, _ := os.Create(filepath.Join(t.TempDir(), name+".log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		logf.Close()
	})
}

// startEdgeProc runs the edge binary against natsURL and returns its MCP
// URL once it is ready. extra adds flags.
func startEdgeProc(t testing.TB, natsURL string, extra ...string) string {
	t.Helper()
	listen, admin := freeAddr(t), freeAddr(t)
	args := append([]string{"--nats-url", natsURL, "--listen", listen, "--admin-listen", admin, "--id", "bench-edge",
		"--log-format", "json"}, extra...)
	startProc(t, "edge", exec.Command(binary(t, "edge"), args...))
	waitEdgeReady(t, admin)
	return "http://" + listen + "/mcp"
}

// waitEdgeReady waits for an edge process's /readyz at admin.
func waitEdgeReady(t testing.TB, admin string) {
	t.Helper()
	eventually(t, 30*time.Second, "edge ready", func() bool {
		resp, err := http.Get("http://" + admin + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// BenchmarkToolCallEdgeProcess is the tool-call overhead with the edge as
// the process it is in production (the edge binary, its default options:
// session records and call trail on), the controller, NATS, the backend
// and the client in this process: the same tools/call directly and through
// the edge, alternately.
func BenchmarkToolCallEdgeProcess(b *testing.B) {
	benchEdgeProcess(b, startBackend(b, "alpha", nil).URL())
}

// BenchmarkToolCallProcesses is BenchmarkToolCallEdgeProcess with the
// backend in a process of its own as well, as deployed: a direct call
// crosses from the client's process to the backend's, a call through the
// edge from the client's to the edge's to the backend's.
func BenchmarkToolCallProcesses(b *testing.B) {
	benchEdgeProcess(b, startBackendProc(b, "alpha"))
}

// startBackendProc runs a demo backend as its own process (the demo
// command's backend mode) and returns its MCP URL once it accepts
// connections.
func startBackendProc(t testing.TB, name string) string {
	t.Helper()
	listen := freeAddr(t)
	startProc(t, name, exec.Command(binaryOf(t, "demo", "./demo"), "backend", "--name", name, "--listen", listen))
	eventually(t, 30*time.Second, "backend "+name+" listening", func() bool {
		c, err := net.Dial("tcp", listen)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return "http://" + listen + "/mcp"
}

// benchEdgeProcess measures tools/call directly to the backend at
// backendURL (named alpha) and through an edge process.
func benchEdgeProcess(b *testing.B, backendURL string) {
	n := startNATS(b)
	startController(b, n.ClientURL(), "ctl", fleetYAMLAt(time.Second, 100*time.Millisecond, [2]string{"alpha", backendURL}))
	// FLEETGATE_BENCH_EDGE_FLAGS adds edge flags, e.g. --no-call-trail.
	url := startEdgeProc(b, n.ClientURL(), strings.Fields(os.Getenv("FLEETGATE_BENCH_EDGE_FLAGS"))...)
	compareProcessCalls(b, backendURL, url, "edge", "alpha_echo")
}

// compareProcessCalls makes the same tools/call (echo) directly to the
// backend at directURL and through the hop at viaURL (as viaName),
// alternately, with 2025-11-25 sessions, and reports the latencies, calls/s
// and the p50 ratio.
func compareProcessCalls(b *testing.B, directURL, viaURL, via, viaName string) {
	connectAt := func(u string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: u}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		return cs
	}
	direct, through := connectAt(directURL), connectAt(viaURL)
	args := map[string]any{"text": "bench"}
	call := func(cs *mcp.ClientSession, name string) time.Duration {
		start := time.Now()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		d := time.Since(start)
		if err != nil || res.IsError {
			b.Fatalf("call %s: %v %+v", name, err, res)
		}
		return d
	}
	eventually(b, 30*time.Second, viaName+" served", func() bool {
		res, err := through.CallTool(context.Background(), &mcp.CallToolParams{Name: viaName, Arguments: args})
		return err == nil && !res.IsError
	})
	var ds, vs []time.Duration
	for b.Loop() {
		ds = append(ds, call(direct, "echo"))
		vs = append(vs, call(through, viaName))
	}
	slices.Sort(ds)
	slices.Sort(vs)
	var sumD, sumV time.Duration
	for i := range ds {
		sumD += ds[i]
		sumV += vs[i]
	}
	q := func(s []time.Duration, p float64) float64 {
		return float64(s[min(len(s)-1, int(p*float64(len(s))))].Microseconds())
	}
	b.ReportMetric(q(ds, 0.5), "direct-p50-µs")
	b.ReportMetric(q(ds, 0.99), "direct-p99-µs")
	b.ReportMetric(q(vs, 0.5), via+"-p50-µs")
	b.ReportMetric(q(vs, 0.99), via+"-p99-µs")
	b.ReportMetric(float64(len(ds))/sumD.Seconds(), "direct-calls/s")
	b.ReportMetric(float64(len(vs))/sumV.Seconds(), via+"-calls/s")
	b.ReportMetric(q(vs, 0.5)/q(ds, 0.5), "p50-ratio")
}
