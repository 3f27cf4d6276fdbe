// Package test holds fleetgate's end-to-end tests: real controllers,
// edges, go-sdk backends and clients over loopback, and an embedded NATS
// server with JetStream in a temp dir.
package test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/fleetgate/fleetgate/pkg/config"
	"github.com/fleetgate/fleetgate/pkg/controller"
	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/natsnode"
	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// startNATS starts an embedded JetStream node on a free loopback port.
func startNATS(t testing.TB) *natsnode.Node { return natstest.Start(t) }

func jsConnect(t testing.TB, url string) jetstream.JetStream { return natstest.JetStream(t, url) }

// startBackend starts a demo MCP backend on a free loopback port.
func startBackend(t testing.TB, name string, o *demobackend.Options) *demobackend.Backend {
	t.Helper()
	b := demobackend.New(name, o)
	if err := b.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	return b
}

// fleetYAML renders a config with fast health settings.
func fleetYAML(interval, debounce time.Duration, backends ...*demobackend.Backend) string {
	named := make([][2]string, 0, len(backends))
	for _, b := range backends {
		named = append(named, [2]string{b.Name(), b.URL()})
	}
	return fleetYAMLAt(interval, debounce, named...)
}

// fleetYAMLAt is fleetYAML for backends given by name and URL.
func fleetYAMLAt(interval, debounce time.Duration, backends ...[2]string) string {
	var sb strings.Builder
	sb.WriteString("groups:\n  - name: default\n    backends:\n")
	for _, b := range backends {
		fmt.Fprintf(&sb, "      - name: %s\n        url: %s\n", b[0], b[1])
	}
	fmt.Fprintf(&sb, "health:\n  interval: %s\n  timeout: %s\n  unhealthy_after: 2\n  debounce: %s\n", interval, interval/2, debounce)
	return sb.String()
}

// ctl is an in-process controller with its admin API on loopback.
type ctl struct {
	c      *controller.Controller
	admin  string
	cancel context.CancelFunc
	done   chan error
	path   string
}

func startController(t testing.TB, natsURL, id, yaml string) *ctl {
	t.Helper()
	return startControllerLogged(t, natsURL, id, yaml, nil)
}

// startControllerLogged is startController logging to logger (nil: no log).
func startControllerLogged(t testing.TB, natsURL, id, yaml string, logger *zerolog.Logger) *ctl {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	fleet, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	js := jsConnect(t, natsURL)
	ctx, cancel := context.WithCancel(context.Background())
	lg, err := events.OpenLog(ctx, js, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	c, err := controller.New(controller.Options{ID: id, Fleet: fleet, ConfigPath: path, JetStream: js, Log: lg,
		OutboxDir: filepath.Join(dir, "outbox"), LeaseTTL: time.Second, Registerer: reg, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: c.Handler(reg)}
	go srv.Serve(ln)
	x := &ctl{c: c, admin: "http://" + ln.Addr().String(), cancel: cancel, done: make(chan error, 1), path: path}
	go func() { x.done <- c.Run(ctx) }()
	t.Cleanup(func() {
		x.stop(t)
		srv.Close()
	})
	return x
}

func (x *ctl) stop(t testing.TB) {
	x.cancel()
	if err := <-x.done; err != nil {
		t.Errorf("controller run: %v", err)
	}
	x.done <- nil
}

// eventLog follows the event log and records every event.
type eventLog struct {
	mu  sync.Mutex
	evs []*eventspb.Event
	at  []time.Time
	r   *events.Reader
}

func followLog(t testing.TB, natsURL string) *eventLog {
	t.Helper()
	js := jsConnect(t, natsURL)
	actx, acancel := context.WithTimeout(context.Background(), 30*time.Second)
	lg, err := events.AttachLog(actx, js, nil)
	acancel()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	el := &eventLog{}
	el.r = events.NewReader(lg, &events.ReaderOptions{OnEvent: func(ev *eventspb.Event, _ *events.State) {
		el.mu.Lock()
		el.evs = append(el.evs, ev)
		el.at = append(el.at, time.Now())
		el.mu.Unlock()
	}})
	done := make(chan struct{})
	go func() { defer close(done); _ = el.r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return el
}

// find returns the first event after index from that matches, and its index.
func (el *eventLog) find(from int, match func(*eventspb.Event) bool) (int, *eventspb.Event, time.Time) {
	el.mu.Lock()
	defer el.mu.Unlock()
	for i := from; i < len(el.evs); i++ {
		if match(el.evs[i]) {
			return i, el.evs[i], el.at[i]
		}
	}
	return -1, nil, time.Time{}
}

func (el *eventLog) len() int {
	el.mu.Lock()
	defer el.mu.Unlock()
	return len(el.evs)
}

func (el *eventLog) all() []*eventspb.Event {
	el.mu.Lock()
	defer el.mu.Unlock()
	return append([]*eventspb.Event(nil), el.evs...)
}

// waitEvent polls for a matching event after index from.
func (el *eventLog) waitEvent(t testing.TB, from int, d time.Duration, what string, match func(*eventspb.Event) bool) (int, *eventspb.Event, time.Time) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if i, ev, at := el.find(from, match); ev != nil {
			return i, ev, at
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s event within %s", what, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func healthOf(backend string, advertisable bool) func(*eventspb.Event) bool {
	return func(ev *eventspb.Event) bool {
		h := ev.GetHealthChanged()
		return ev.Backend == backend && h != nil && h.Advertisable == advertisable
	}
}

func catalogOf(backend string) func(*eventspb.Event) bool {
	return func(ev *eventspb.Event) bool { return ev.Backend == backend && ev.GetCatalogChanged() != nil }
}

func kindOf(kind, backend string) func(*eventspb.Event) bool {
	return func(ev *eventspb.Event) bool { return ev.Backend == backend && events.Kind(ev) == kind }
}

// httpJSON does a request and decodes a JSON answer.
func httpJSON(t testing.TB, method, url, body string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s %s: decode: %v", method, url, err)
		}
	}
	return resp.StatusCode
}

// eventually polls cond.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func decodeJSON(resp *http.Response, out any) error {
	return json.NewDecoder(resp.Body).Decode(out)
}
