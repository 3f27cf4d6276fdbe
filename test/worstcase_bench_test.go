package test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/admission"
	"github.com/fleetgate/fleetgate/pkg/natsnode"
)

// BenchmarkEdgeWorstCaseSessions fills an edge process, given a memory
// budget of 1 GiB (the chart's limit) and its default caps, with
// worst-case sessions: as many as its default --max-sessions lets in,
// each an initialize of almost the whole --max-initialize-bytes (64 KiB,
// the padding in an experimental capability the session keeps). It
// reports the sessions held, the edge's RSS against its budget, and the
// RSS per session. FLEETGATE_BENCH_WORST_BUDGET sets another budget.
func BenchmarkEdgeWorstCaseSessions(b *testing.B) {
	budget := int64(1 << 30)
	if v := os.Getenv("FLEETGATE_BENCH_WORST_BUDGET"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		budget = n
	}
	n, err := natsnode.Start(&natsnode.Options{DataDir: b.TempDir(), Listen: "127.0.0.1:0", MaxStore: 8 << 30})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(n.Shutdown)
	backend := startBackendProc(b, "alpha")
	startController(b, n.ClientURL(), "ctl", fleetYAMLAt(time.Second, 100*time.Millisecond, [2]string{"alpha", backend}))
	listen, admin := freeAddr(b), freeAddr(b)
	cmd := exec.Command(binary(b, "edge"), "--nats-url", n.ClientURL(), "--listen", listen, "--admin-listen", admin,
		"--id", "worst", "--log-format", "json", "--log-level", "warn", "--memory-budget", strconv.FormatInt(budget, 10))
	startProc(b, "worst", cmd)
	waitEdgeReady(b, admin)
	limit := admission.DefaultMaxInitializeBytes
	want := admission.SessionsFor(budget, int64(limit))
	pad := strings.Repeat("x", limit-1024)
	url := "http://" + listen + "/mcp"
	hc := &http.Client{Timeout: 30 * time.Second}
	var rss, base int64
	for b.Loop() {
		base = vmRSS(b, cmd.Process.Pid)
		opened := 0
		for i := range want + 10 {
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",`+
				`"capabilities":{"experimental":{"pad":{"v":%q}}},"clientInfo":{"name":"worst-%d","version":"1"}}}`, pad, i)
			req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(body)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := hc.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				opened++
			}
		}
		if opened > want {
			b.Fatalf("%d sessions opened, the default cap is %d", opened, want)
		}
		rss = vmRSS(b, cmd.Process.Pid)
		b.ReportMetric(float64(opened), "sessions")
	}
	b.ReportMetric(float64(want), "default-cap")
	b.ReportMetric(float64(rss)/(1<<20), "rss-MiB")
	b.ReportMetric(float64(budget)/(1<<20), "budget-MiB")
	b.ReportMetric(float64(rss-base)/float64(want)/1024, "rss-KiB/session")
}

// vmRSS is the resident set size of process pid, in bytes.
func vmRSS(t testing.TB, pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}
