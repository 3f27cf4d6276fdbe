package test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkControllerRestart measures the change-path row of a controller
// restart: a controller with its embedded NATS (same --id, --data-dir and
// NATS address) is killed with SIGKILL, its backend is stopped while it is
// down, and it is started again; the time is from the new process's start
// to the client's tools/list_changed through an edge that reconnects to
// the restarted NATS. Probe interval 500 ms, timeout 400 ms.
func BenchmarkControllerRestart(b *testing.B) {
	alpha := startBackend(b, "alpha", nil)
	dir := b.TempDir()
	cfg := filepath.Join(dir, "fleet.yaml")
	yaml := fmt.Sprintf("groups:\n  - name: default\n    backends:\n      - name: alpha\n        url: %s\n"+
		"health:\n  interval: 500ms\n  timeout: 400ms\n  unhealthy_after: 2\n", alpha.URL())
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		b.Fatal(err)
	}
	natsAddr, ctlAdmin, dataDir := freeAddr(b), freeAddr(b), filepath.Join(dir, "controller")
	logf, _ := os.Create(filepath.Join(dir, "controller.log"))
	defer logf.Close()
	var ctl *exec.Cmd
	start := func() time.Time {
		ctl = exec.Command(binary(b, "controller"), "--config", cfg, "--data-dir", dataDir, "--nats-listen", natsAddr,
			"--admin-listen", ctlAdmin, "--id", "c1", "--log-format", "json")
		ctl.Stdout, ctl.Stderr = logf, logf
		at := time.Now()
		if err := ctl.Start(); err != nil {
			b.Fatal(err)
		}
		return at
	}
	kill := func() {
		_ = ctl.Process.Signal(syscall.SIGKILL)
		_ = ctl.Wait()
	}
	start()
	b.Cleanup(kill)
	eventually(b, 30*time.Second, "the controller ready", func() bool {
		resp, err := http.Get("http://" + ctlAdmin + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	seed := filepath.Join(dataDir, "nats", "edge.seed")
	listen, admin := freeAddr(b), freeAddr(b)
	edge := exec.Command(binary(b, "edge"), "--nats-url", "nats://"+natsAddr, "--listen", listen, "--admin-listen", admin,
		"--id", "bench-edge", "--log-format", "json")
	edge.Env = append(os.Environ(), "FLEETGATE_NATS_NKEY_SEED="+seed)
	startProc(b, "edge", edge)
	waitEdgeReady(b, admin)
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
	var took []time.Duration
	for b.Loop() {
		kill()
		alpha.Stop() // the change made while the controller is down
		drain()
		at := start()
		select {
		case got := <-changed:
			took = append(took, got.Sub(at))
		case <-time.After(30 * time.Second):
			b.Fatal("no list_changed after the restart")
		}
		eventually(b, 20*time.Second, "alpha withdrawn", func() bool { return !has("alpha_echo") })
		if err := alpha.Restart(); err != nil {
			b.Fatal(err)
		}
		eventually(b, 30*time.Second, "alpha back", func() bool { return has("alpha_echo") })
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "restart-to-notified-ms")
	b.ReportMetric(float64(took[len(took)-1].Microseconds())/1000, "max-ms")
}
