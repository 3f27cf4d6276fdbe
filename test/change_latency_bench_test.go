package test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkChangeLatency measures, from the outside, how long a change
// takes to reach a client's notifications/tools/list_changed through a
// controller process and an edge process (probe interval 500 ms, timeout
// 400 ms, debounce = interval, the edge's default --coalesce): the
// backend's own tools/list_changed, the backend killed, the backend
// restarted. In back-to-back each change is made right after the client
// saw the previous one, as changes come close together in real incidents
// (the kill right after the tool change, which came right after the
// restart); in paced each comes 1 to 1.5 s (seeded) after the previous
// one (longer than every window: the leading edge of each stage); in after-edge-start
// the tool change comes right after a new edge's first batch. It reports
// the median of each, and the median age of the changes at each hop from
// the controller's and the edge's change-age histograms.
func BenchmarkChangeLatency(b *testing.B) {
	b.Run("back-to-back", func(b *testing.B) { benchChangeLatency(b, 0) })
	b.Run("paced", func(b *testing.B) { benchChangeLatency(b, time.Second) })
	b.Run("after-edge-start", benchOwnAfterEdgeStart)
}

// benchFleet starts NATS, the demo backend alpha and a controller process
// probing it every 500 ms with a 400 ms timeout.
func benchFleet(b *testing.B) (natsURL string, alpha *demobackend.Backend, ctl *proc) {
	node := startNATS(b)
	alpha = startBackend(b, "alpha", nil)
	cfg := filepath.Join(b.TempDir(), "fleet.yaml")
	yaml := fmt.Sprintf("groups:\n  - name: default\n    backends:\n      - name: alpha\n        url: %s\n"+
		"health:\n  interval: 500ms\n  timeout: 400ms\n  unhealthy_after: 2\n", alpha.URL())
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		b.Fatal(err)
	}
	ctl = startControllerProc(b, node.ClientURL(), "ctl-bench", cfg)
	eventually(b, 30*time.Second, "controller leads", ctl.leading)
	return node.ClientURL(), alpha, ctl
}

// benchOwnAfterEdgeStart: the backend's own list_changed right after a
// new edge's first batch, one new edge per iteration.
func benchOwnAfterEdgeStart(b *testing.B) {
	natsURL, alpha, _ := benchFleet(b)
	schema := &jsonschema.Schema{Type: "object"}
	var own []time.Duration
	for i := range b.N {
		listen, admin := freeAddr(b), freeAddr(b)
		startProc(b, "edge", exec.Command(binary(b, "edge"), "--nats-url", natsURL, "--listen", listen,
			"--admin-listen", admin, "--id", fmt.Sprintf("bench-edge-%d", i), "--log-format", "json"))
		waitEdgeReady(b, admin)
		changed := make(chan time.Time, 64)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- time.Now() },
		}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: "http://" + listen + "/mcp"}, nil)
		if err != nil {
			b.Fatal(err)
		}
		at := time.Now()
		alpha.AddTool(&mcp.Tool{Name: fmt.Sprintf("fresh%d", i), InputSchema: schema})
		select {
		case got := <-changed:
			own = append(own, got.Sub(at))
		case <-time.After(20 * time.Second):
			b.Fatal("no list_changed")
		}
		cs.Close()
	}
	slices.Sort(own)
	b.ReportMetric(float64(own[len(own)/2].Microseconds())/1000, "own-ms")
}

func benchChangeLatency(b *testing.B, pause time.Duration) {
	natsURL, alpha, ctlProc := benchFleet(b)
	node := struct{ url string }{natsURL}
	listen, edgeAdmin := freeAddr(b), freeAddr(b)
	startProc(b, "edge", exec.Command(binary(b, "edge"), "--nats-url", node.url, "--listen", listen,
		"--admin-listen", edgeAdmin, "--id", "bench-edge", "--log-format", "json"))
	waitEdgeReady(b, edgeAdmin)
	url := "http://" + listen + "/mcp"

	el := followLog(b, node.url)
	rng := rand.New(rand.NewPCG(16, 1))
	var marks []string
	changed := make(chan time.Time, 64)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- time.Now() },
	}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	has := func(name string) bool {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			return false
		}
		return slices.ContainsFunc(res.Tools, func(t *mcp.Tool) bool { return t.Name == name })
	}
	eventually(b, 30*time.Second, "alpha served", func() bool { return has("alpha_echo") })
	drain := func() {
		for {
			select {
			case <-changed:
			default:
				return
			}
		}
	}
	// step makes a change and returns the time to the first list_changed
	// after it, then waits until the list shows it.
	step := func(what string, change func(), done func() bool) time.Duration {
		if pause > 0 {
			// pause to 1.5 pause, seeded: the change falls at every phase
			// of the probe interval alike.
			time.Sleep(pause + time.Duration(rng.Int64N(int64(pause/2))))
		}
		drain()
		at := time.Now()
		marks = append(marks, fmt.Sprintf("%s %s", at.Format("05.000"), what))
		change()
		var d time.Duration
		select {
		case got := <-changed:
			d = got.Sub(at)
		case <-time.After(20 * time.Second):
			b.Fatalf("%s: no list_changed", what)
		}
		eventually(b, 20*time.Second, what+" listed", done)
		return d
	}
	var own, killed, restarted []time.Duration
	schema := &jsonschema.Schema{Type: "object"}
	b.ResetTimer()
	for i := range b.N {
		name := fmt.Sprintf("extra%d", i)
		own = append(own, step("tool added", func() {
			alpha.AddTool(&mcp.Tool{Name: name, InputSchema: schema})
		}, func() bool { return has("alpha_" + name) }))
		killed = append(killed, step("killed", alpha.Stop, func() bool { return !has("alpha_echo") }))
		restarted = append(restarted, step("restarted", func() {
			if err := alpha.Restart(); err != nil {
				b.Fatal(err)
			}
		}, func() bool { return has("alpha_echo") }))
	}
	b.StopTimer()
	if os.Getenv("FLEETGATE_BENCH_TRACE") != "" {
		for _, m := range marks {
			fmt.Println("step ", m)
		}
		el.mu.Lock()
		for i, ev := range el.evs {
			fmt.Printf("event %s (read %s) %s %s %v\n", ev.GetTime().AsTime().Format("05.000"), el.at[i].Format("05.000"), events.Kind(ev), ev.GetBackend(), ev.GetHealthChanged().GetAdvertisable())
		}
		el.mu.Unlock()
	}
	med := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds()) / 1000
	}
	b.ReportMetric(med(own), "own-ms")
	b.ReportMetric(med(killed), "killed-ms")
	b.ReportMetric(med(restarted), "restarted-ms")
	reportHopAges(b, ctlProc.admin+"/metrics", "http://"+edgeAdmin+"/metrics")
}

// reportHopAges reports the median of each fleetgate_change_age_seconds
// histogram found at the metrics URLs, per hop, estimated from the
// buckets.
func reportHopAges(b *testing.B, urls ...string) {
	for _, u := range urls {
		resp, err := http.Get(u)
		if err != nil {
			b.Logf("metrics %s: %v", u, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for hop, p50 := range histogramMedians(string(body), "fleetgate_change_age_seconds", "hop") {
			b.ReportMetric(p50*1000, hop+"-p50-ms")
		}
		// The edge's event-to-notification histogram (no labels) is the
		// notified hop.
		for _, p50 := range histogramMedians(string(body), "fleetgate_edge_event_to_notification_seconds", "hop") {
			b.ReportMetric(p50*1000, "notified-p50-ms")
		}
	}
}

// histogramMedians estimates the median of each series of the histogram
// name in a Prometheus text exposition, keyed by the value of label.
func histogramMedians(text, name, label string) map[string]float64 {
	type bucket struct{ le, n float64 }
	series := map[string][]bucket{}
	for line := range strings.Lines(text) {
		if !strings.HasPrefix(line, name+"_bucket{") {
			continue
		}
		lbl, rest, ok := strings.Cut(strings.TrimPrefix(line, name+"_bucket{"), "} ")
		if !ok {
			continue
		}
		var key string
		var le float64
		for kv := range strings.SplitSeq(lbl, ",") {
			k, v, _ := strings.Cut(kv, "=")
			v = strings.Trim(v, `"`)
			switch k {
			case label:
				key = v
			case "le":
				if v == "+Inf" {
					le = 1e9
				} else {
					fmt.Sscan(v, &le)
				}
			}
		}
		var n float64
		fmt.Sscan(strings.TrimSpace(rest), &n)
		series[key] = append(series[key], bucket{le, n})
	}
	out := map[string]float64{}
	for key, bs := range series {
		slices.SortFunc(bs, func(a, b bucket) int {
			if a.le < b.le {
				return -1
			}
			return 1
		})
		total := bs[len(bs)-1].n
		if total == 0 {
			continue
		}
		prevLe, prevN := 0.0, 0.0
		for _, bk := range bs {
			if bk.n >= total/2 {
				// Linear interpolation inside the bucket.
				frac := (total/2 - prevN) / max(bk.n-prevN, 1)
				out[key] = prevLe + frac*(bk.le-prevLe)
				break
			}
			prevLe, prevN = bk.le, bk.n
		}
	}
	return out
}
