package test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/events"
)

// The admin refresh and `controller events tail`, against a real
// controller process: a refresh probes and rediscovers now (the probe
// interval is an hour), of one backend or of all, and 404 names an
// unknown one; tail prints each new event as a JSON line as it is stored.
func TestRefreshAndTail(t *testing.T) {
	node := startNATS(t)
	alpha := startBackend(t, "alpha", nil)
	cfg := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(cfg, []byte(fleetYAML(time.Hour, 100*time.Millisecond, alpha)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctl := startControllerProc(t, node.ClientURL(), "ctl-refresh", cfg)
	eventually(t, 30*time.Second, "the controller leads", ctl.leading)
	discoveries := func() float64 {
		resp, err := http.Get(ctl.admin + "/metrics")
		if err != nil {
			return -1
		}
		defer resp.Body.Close()
		var sum float64
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "fleetgate_prober_discoveries_total{") {
				f := strings.Fields(line)
				v, _ := strconv.ParseFloat(f[len(f)-1], 64)
				sum += v
			}
		}
		return sum
	}
	eventually(t, 30*time.Second, "the first discovery", func() bool { return discoveries() >= 1 })
	post := func(path string) (int, string) {
		resp, err := http.Post(ctl.admin+path, "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	n0 := discoveries()
	if code, body := post("/v1/groups/default/backends/alpha/refresh"); code != http.StatusAccepted || !strings.Contains(body, `"refreshed":1`) {
		t.Fatalf("refresh alpha: %d %s", code, body)
	}
	eventually(t, 10*time.Second, "a discovery after the refresh", func() bool { return discoveries() > n0 })
	n1 := discoveries()
	if code, body := post("/v1/refresh"); code != http.StatusAccepted || !strings.Contains(body, `"refreshed":1`) {
		t.Fatalf("refresh all: %d %s", code, body)
	}
	eventually(t, 10*time.Second, "a discovery after refreshing all", func() bool { return discoveries() > n1 })
	if code, body := post("/v1/groups/default/backends/nope/refresh"); code != http.StatusNotFound {
		t.Fatalf("refresh of an unknown backend: %d %s", code, body)
	}

	// tail: the next events, as they are stored.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tail := exec.CommandContext(ctx, binary(t, "controller"), "events", "tail", "--nats-url", node.ClientURL())
	out, err := tail.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	tail.Stderr = os.Stderr
	if err := tail.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = tail.Wait() }()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	beta := startBackend(t, "beta", nil)
	// tail starts after the head it finds: an addition made until tail is
	// seen to print it (it may have started after the first attempt).
	deadline := time.After(30 * time.Second)
	for i := 0; ; i++ {
		name := fmt.Sprintf("beta%d", i)
		if code := httpJSON(t, http.MethodPut, ctl.admin+"/v1/groups/default/backends/"+name,
			fmt.Sprintf(`{"url":%q}`, beta.URL()), nil); code != http.StatusOK && code != http.StatusAccepted {
			t.Fatalf("PUT %s: %d", name, code)
		}
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatal("tail ended")
			}
			var e events.EventJSON
			if err := json.Unmarshal([]byte(line), &e); err != nil || e.Generation == 0 || e.Kind == "" {
				t.Fatalf("tail printed %q (%v)", line, err)
			}
			return
		case <-time.After(2 * time.Second):
		case <-deadline:
			t.Fatal("tail printed nothing")
		}
	}
}
