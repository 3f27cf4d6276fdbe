package test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/events"
)

// BenchmarkBackendRestartProcesses measures a backend killed and restarted
// with every part a process of its own: the demo backend (the demo
// command's backend mode), a controller probing it every 500 ms (timeout
// 400 ms, debounce = interval) and an edge with its default --coalesce,
// against one NATS; a go-sdk client session on the edge times each
// notifications/tools/list_changed. The backend is killed with SIGKILL
// (killed-ms: from the kill to the client's list_changed) and started
// again on its port (restarted-ms: from the moment the new process
// listens, the line it prints once its listener is bound, to the
// client's list_changed). In back-to-back the restart follows the
// withdrawal at once; in paced it comes 1 to 1.5 s (seeded) after it,
// past every window. It reports the medians and maxima, and with
// FLEETGATE_BENCH_TRACE the time of each event in the log against the
// steps.
func BenchmarkBackendRestartProcesses(b *testing.B) {
	b.Run("back-to-back", func(b *testing.B) { benchBackendRestart(b, 0, true) })
	b.Run("paced", func(b *testing.B) { benchBackendRestart(b, time.Second, true) })
	b.Run("paced-open-nats", func(b *testing.B) { benchBackendRestart(b, time.Second, false) })
}

// backendProc is the demo backend run as a process that can be killed
// and started again on the same address.
type backendProc struct {
	b      testing.TB
	listen string
	cmd    *exec.Cmd
	logf   *os.File
}

// start runs the backend and returns when it reported that it listens,
// with that moment.
func (p *backendProc) start() time.Time {
	p.b.Helper()
	for range 50 { // the port may linger briefly after a kill
		cmd := exec.Command(binaryOf(p.b, "demo", "./demo"), "backend", "--name", "alpha", "--listen", p.listen)
		cmd.Stderr = p.logf
		out, err := cmd.StdoutPipe()
		if err != nil {
			p.b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			p.b.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		if sc.Scan() && strings.HasPrefix(sc.Text(), "listening ") {
			at := time.Now()
			go func() { _, _ = bufio.NewReader(out).WriteTo(p.logf) }()
			p.cmd = cmd
			return at
		}
		_ = cmd.Wait() // exited without listening: the port is not free yet
		time.Sleep(20 * time.Millisecond)
	}
	p.b.Fatalf("backend on %s: never listened", p.listen)
	return time.Time{}
}

// kill ends the backend with SIGKILL and returns the moment it was sent.
func (p *backendProc) kill() time.Time {
	at := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
	return at
}

// benchBackendRestart runs the fleet with the controller's embedded NATS
// (the edge a user of the edge account, with the seed the controller
// wrote: the deployment of the README) or, with embedded false, against a
// NATS server without accounts.
func benchBackendRestart(b *testing.B, pause time.Duration, embedded bool) {
	logf, err := os.Create(filepath.Join(b.TempDir(), "backend.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer logf.Close()
	be := &backendProc{b: b, listen: freeAddr(b), logf: logf}
	be.start()
	b.Cleanup(func() { be.kill() })
	cfg := filepath.Join(b.TempDir(), "fleet.yaml")
	yaml := fmt.Sprintf("groups:\n  - name: default\n    backends:\n      - name: alpha\n        url: http://%s/mcp\n"+
		"health:\n  interval: 500ms\n  timeout: 400ms\n  unhealthy_after: 2\n", be.listen)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		b.Fatal(err)
	}
	var natsURL string
	var ctl *proc
	edgeEnv := os.Environ()
	if embedded {
		natsAddr, dataDir := freeAddr(b), b.TempDir()
		natsURL = "nats://" + natsAddr
		ctl = startEmbeddedControllerProc(b, natsAddr, dataDir, cfg)
		edgeEnv = append(edgeEnv, "FLEETGATE_NATS_NKEY_SEED="+filepath.Join(dataDir, "nats", "edge.seed"))
	} else {
		natsURL = startNATS(b).ClientURL()
		ctl = startControllerProc(b, natsURL, "ctl-bench", cfg)
	}
	eventually(b, 30*time.Second, "controller leads", ctl.leading)
	listen, edgeAdmin := freeAddr(b), freeAddr(b)
	edge := exec.Command(binary(b, "edge"), "--nats-url", natsURL, "--listen", listen,
		"--admin-listen", edgeAdmin, "--id", "bench-edge", "--log-format", "json")
	edge.Env = edgeEnv
	startProc(b, "edge", edge)
	waitEdgeReady(b, edgeAdmin)
	var el *eventLog
	if !embedded {
		el = followLog(b, natsURL) // the embedded server admits only its own users
	}

	changed := make(chan time.Time, 64)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- time.Now() },
	}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: "http://" + listen + "/mcp"},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	has := func(name string) bool {
		res, err := cs.ListTools(context.Background(), nil)
		return err == nil && slices.ContainsFunc(res.Tools, func(t *mcp.Tool) bool { return t.Name == name })
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
	notified := func(what string) time.Time {
		select {
		case at := <-changed:
			return at
		case <-time.After(20 * time.Second):
			b.Fatalf("%s: no list_changed", what)
		}
		return time.Time{}
	}
	rng := rand.New(rand.NewPCG(30, 2))
	var marks []string
	var killed, restarted []time.Duration
	for b.Loop() {
		drain()
		at := be.kill()
		marks = append(marks, at.Format("05.000")+" killed")
		killed = append(killed, notified("killed").Sub(at))
		eventually(b, 20*time.Second, "alpha withdrawn", func() bool { return !has("alpha_echo") })
		if pause > 0 {
			time.Sleep(pause + time.Duration(rng.Int64N(int64(pause/2))))
		}
		drain()
		at = be.start()
		marks = append(marks, at.Format("05.000")+" listening")
		restarted = append(restarted, notified("restarted").Sub(at))
		eventually(b, 20*time.Second, "alpha back", func() bool { return has("alpha_echo") })
	}
	if os.Getenv("FLEETGATE_BENCH_TRACE") != "" && el != nil {
		for _, m := range marks {
			fmt.Println("step ", m)
		}
		el.mu.Lock()
		for i, ev := range el.evs {
			fmt.Printf("event %s (read %s) %s %s %v\n", ev.GetTime().AsTime().Format("05.000"), el.at[i].Format("05.000"),
				events.Kind(ev), ev.GetBackend(), ev.GetHealthChanged().GetAdvertisable())
		}
		el.mu.Unlock()
	}
	med := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds()) / 1000
	}
	b.ReportMetric(med(killed), "killed-ms")
	b.ReportMetric(med(restarted), "restarted-ms")
	b.ReportMetric(float64(slices.Max(restarted).Microseconds())/1000, "restarted-max-ms")
	reportHopAges(b, ctl.admin+"/metrics", "http://"+edgeAdmin+"/metrics")
}

// startEmbeddedControllerProc runs a controller process with its embedded
// NATS on natsAddr and its data in dataDir (the edges' seed in
// dataDir/nats/edge.seed).
func startEmbeddedControllerProc(t testing.TB, natsAddr, dataDir, configPath string) *proc {
	t.Helper()
	admin := freeAddr(t)
	cmd := exec.Command(binary(t, "controller"), "--config", configPath, "--data-dir", dataDir, "--nats-listen", natsAddr,
		"--admin-listen", admin, "--id", "c1", "--log-format", "json")
	startProc(t, "controller", cmd)
	return &proc{cmd: cmd, admin: "http://" + admin}
}
