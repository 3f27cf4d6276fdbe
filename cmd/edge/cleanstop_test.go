package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/calltrail"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/natsnode"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
	"github.com/fleetgate/fleetgate/pkg/signin"
)

// syncBuffer is a log sink written by the edge and read by the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// An edge under the embedded node's edge permissions (the controller's
// NATS) that starts and stops cleanly logs no warning and no error: in
// particular no permission violation for deleting its session-bucket
// watcher's consumer, which an edge may not delete. Run five times, as
// the violation raced the connection's close.
func TestCleanStopLogsNoWarning(t *testing.T) {
	node, err := natsnode.Start(&natsnode.Options{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Auth: true})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Shutdown()
	// The server's view too: a refused publish is logged there even when
	// the edge closes its connection before the refusal reaches it.
	var violations serverLog
	node.Server().SetLogger(&violations, false, false)
	ctlOpts, err := node.ControllerAccess().Options()
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(node.ClientURL(), ctlOpts...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The controller's part: the log in the fleet account; the session
	// bucket and the call trail in the edge account, through the
	// controller's user there.
	if _, err := events.OpenLog(ctx, js, nil); err != nil {
		t.Fatal(err)
	}
	edgeOpts, err := node.ControllerEdgeAccess().Options()
	if err != nil {
		t.Fatal(err)
	}
	nce, err := nats.Connect(node.ClientURL(), edgeOpts...)
	if err != nil {
		t.Fatal(err)
	}
	defer nce.Close()
	jse, _ := jetstream.New(nce)
	if err := sessionstore.Provision(ctx, jse, nil); err != nil {
		t.Fatal(err)
	}
	if err := calltrail.Provision(ctx, jse, nil); err != nil {
		t.Fatal(err)
	}
	if err := signin.Provision(ctx, jse, "", 1); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		admin := freeAddr(t)
		c, err := parse([]string{"--nats-url", node.ClientURL(), "--nats-nkey-seed", node.EdgeSeed(),
			"--listen", "127.0.0.1:0", "--admin-listen", admin, "--log-format", "json", "--shutdown-timeout", "2s"},
			func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		var logged syncBuffer
		c.logTo = &logged
		rctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- run(rctx, c) }()
		waitReadyOr(t, admin, &logged)
		time.Sleep(200 * time.Millisecond) // the watchers have settled
		stop()
		if err := <-done; err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		sc := bufio.NewScanner(bytes.NewReader([]byte(logged.String())))
		for sc.Scan() {
			var line struct{ Level string }
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				t.Fatalf("run %d: log line %q: %v", i, sc.Text(), err)
			}
			if line.Level != "info" && line.Level != "debug" {
				t.Errorf("run %d: a clean stop logged %s", i, sc.Text())
			}
		}
		if v := violations.String(); v != "" {
			t.Errorf("run %d: the server refused the edge: %s", i, v)
		}
	}
}

// serverLog keeps the errors a NATS server logs.
type serverLog struct{ syncBuffer }

func (l *serverLog) Noticef(string, ...any) {}
func (l *serverLog) Warnf(string, ...any)   {}
func (l *serverLog) Fatalf(f string, a ...any) {
	l.Errorf(f, a...)
}
func (l *serverLog) Errorf(f string, a ...any) {
	fmt.Fprintf(l, f+"\n", a...)
}
func (l *serverLog) Debugf(string, ...any) {}
func (l *serverLog) Tracef(string, ...any) {}

func waitReadyOr(t *testing.T, admin string, logged *syncBuffer) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + admin + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready: %v\n%s", err, logged.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitReady(t *testing.T, admin string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + admin + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
