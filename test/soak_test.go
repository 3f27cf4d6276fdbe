package test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSoak (make soak; skipped unless FLEETGATE_SOAK is set to a
// duration, e.g. 10m): a controller process, two edge processes and two
// demo backends, FLEETGATE_SOAK_SESSIONS (default 2,000) session-based
// sessions spread over both edges, each with its standalone stream open,
// and a sustained tools/call load on them while one backend flaps (down
// and up every 15 s). Each minute it prints, per edge, the RSS and
// goroutines read from its /metrics, and the calls and their p99 over
// that minute; flat is the goal. It fails on a call that hangs (each is
// bounded at 10 s) or an edge that dies.
func TestSoak(t *testing.T) {
	spec := os.Getenv("FLEETGATE_SOAK")
	if spec == "" {
		t.Skip("set FLEETGATE_SOAK=10m (make soak) to run the soak")
	}
	total, err := time.ParseDuration(spec)
	if err != nil {
		t.Fatalf("FLEETGATE_SOAK=%q: %v", spec, err)
	}
	nSessions := 2000
	if s := os.Getenv("FLEETGATE_SOAK_SESSIONS"); s != "" {
		fmt.Sscan(s, &nSessions)
	}
	node := startNATS(t)
	alpha, beta := startBackend(t, "alpha", nil), startBackend(t, "beta", nil)
	startController(t, node.ClientURL(), "soak-ctl", fleetYAML(500*time.Millisecond, 500*time.Millisecond, alpha, beta))
	var edges []*edgeProc
	for i := range 2 {
		listen, admin := freeAddr(t), freeAddr(t)
		startProc(t, fmt.Sprintf("edge-%d", i), exec.Command(binary(t, "edge"), "--nats-url", node.ClientURL(), "--listen", listen,
			"--admin-listen", admin, "--id", fmt.Sprintf("soak-edge-%d", i), "--log-format", "json"))
		waitEdgeReady(t, admin)
		edges = append(edges, &edgeProc{mcp: "http://" + listen + "/mcp", admin: "http://" + admin})
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 0}, Timeout: 10 * time.Second}
	type sess struct {
		edge int
		id   string
	}
	sessions := make([]sess, 0, nSessions)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range nSessions {
		e := edges[i%2]
		sid := rawSession(t, e.mcp, nil)
		sessions = append(sessions, sess{i % 2, sid})
		// The standalone stream, held open and drained until the end.
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.mcp, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				buf := make([]byte, 4096)
				for {
					if _, err := resp.Body.Read(buf); err != nil {
						break
					}
				}
				resp.Body.Close()
			}
		}()
	}
	eventually(t, 30*time.Second, "alpha's tools on both edges", func() bool {
		for _, e := range edges {
			_, _, body := rawRequest(t, e.mcp, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`),
				map[string]string{"Mcp-Session-Id": sessions[0].id, "Mcp-Protocol-Version": "2025-11-25"})
			_ = body
		}
		return true
	})
	var mu sync.Mutex
	lat := [2][]time.Duration{}
	var hung, failed atomic.Int64
	call := func(s sess, tool string) {
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"text":"soak"}}}`
		req, _ := http.NewRequest(http.MethodPost, edges[s.edge].mcp, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", s.id)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		start := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			if strings.Contains(err.Error(), "Timeout") {
				hung.Add(1)
			}
			failed.Add(1)
			return
		}
		var b [512]byte
		for {
			if _, err := resp.Body.Read(b[:]); err != nil {
				break
			}
		}
		resp.Body.Close()
		d := time.Since(start)
		if resp.StatusCode != http.StatusOK {
			failed.Add(1)
		}
		mu.Lock()
		lat[s.edge] = append(lat[s.edge], d)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for ctx.Err() == nil {
				s := sessions[rng.IntN(len(sessions))]
				tool := "alpha_echo"
				if rng.IntN(4) == 0 {
					tool = "beta_echo" // beta flaps: its calls fail fast while it is down
				}
				call(s, tool)
			}
		})
	}
	wg.Go(func() { // beta flaps
		for up := true; ctx.Err() == nil; up = !up {
			select {
			case <-ctx.Done():
				return
			case <-time.After(15 * time.Second):
			}
			if up {
				beta.Stop()
			} else if err := beta.Restart(); err != nil {
				t.Errorf("beta restart: %v", err)
			}
		}
	})
	fmt.Printf("soak: %d sessions over 2 edges, 8 callers, beta flapping every 15 s, %s\n", nSessions, total)
	fmt.Printf("%-6s %-5s %10s %10s %8s %10s\n", "minute", "edge", "rss-MiB", "goroutines", "calls", "p99-ms")
	end := time.Now().Add(total)
	for minute := 1; time.Now().Before(end); minute++ {
		time.Sleep(min(time.Minute, time.Until(end)))
		mu.Lock()
		cur := lat
		lat = [2][]time.Duration{}
		mu.Unlock()
		for i, e := range edges {
			d := cur[i]
			slices.Sort(d)
			var p99 time.Duration
			if len(d) > 0 {
				p99 = d[min(len(d)-1, len(d)*99/100)]
			}
			fmt.Printf("%-6d %-5d %10.1f %10.0f %8d %10.1f\n", minute, i, e.metric(t, "process_resident_memory_bytes")/(1<<20),
				e.metric(t, "go_goroutines"), len(d), float64(p99.Microseconds())/1000)
		}
	}
	cancel()
	wg.Wait()
	fmt.Printf("soak: calls failed %d (beta down, expected), hung %d\n", failed.Load(), hung.Load())
	if hung.Load() > 0 {
		t.Fatalf("%d calls hung past 10 s", hung.Load())
	}
}
