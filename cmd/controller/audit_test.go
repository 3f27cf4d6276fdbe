package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/natsnode"
)

func TestAudit(t *testing.T) {
	node, lg, w := auditFleet(t)
	ctx := context.Background()
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for i, ev := range []func() error{
		func() error {
			_, err := w.Publish(ctx, events.NewBackendAdded(at, "default", "alpha", events.BackendConfig{URL: "http://a/mcp", Transport: "streamable-http"}), "1")
			return err
		},
		func() error {
			_, err := w.Publish(ctx, events.NewHealthChanged(at, "default", "alpha", "unknown", "healthy", true, "ok"), "2")
			return err
		},
		func() error {
			_, err := w.Publish(ctx, events.NewBackendAdded(at, "default", "beta", events.BackendConfig{URL: "http://b/mcp"}), "3")
			return err
		},
		func() error {
			_, err := w.Publish(ctx, events.NewHealthChanged(at, "default", "alpha", "healthy", "unhealthy", false, "down"), "4")
			return err
		},
	} {
		if err := ev(); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	run := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := audit(append(args, "--nats-url", node.ClientURL()), &out, &errb)
		return out.String(), errb.String(), code
	}

	out, errs, code := run("state", "--generation", "2")
	if code != 0 {
		t.Fatalf("state: %d %s", code, errs)
	}
	var st events.State
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if st.Generation != 2 || st.Backend("default", "alpha").Status != "healthy" || st.Backend("default", "beta") != nil {
		t.Fatalf("state at 2: %s", out)
	}

	out, _, code = run("history", "--backend", "alpha")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.Contains(lines[2], `"generation":4`) || !strings.Contains(lines[2], "healthy -> unhealthy") {
		t.Fatalf("history: %d\n%s", code, out)
	}

	out, _, code = run("export", "--from", "2", "--to", "3")
	sc := bufio.NewScanner(strings.NewReader(out))
	var gens []uint64
	for sc.Scan() {
		var e events.EventJSON
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("export line %q: %v", sc.Text(), err)
		}
		gens = append(gens, e.Generation)
	}
	if code != 0 || fmt.Sprint(gens) != "[2 3]" {
		t.Fatalf("export: %d %v", code, gens)
	}

	// Purged events fail clearly.
	if err := lg.Stream().Purge(ctx, jetstream.WithPurgeSequence(3)); err != nil {
		t.Fatal(err)
	}
	if _, errs, code = run("state", "--generation", "2"); code == 0 || !strings.Contains(errs, "purged") {
		t.Fatalf("state of a purged generation: %d %q", code, errs)
	}
	if _, errs, code = run("export", "--from", "1"); code == 0 || !strings.Contains(errs, "purged") && !strings.Contains(errs, "starts at") {
		t.Fatalf("export of purged events: %d %q", code, errs)
	}
	if _, _, code = run("bogus"); code != 2 {
		t.Fatalf("unknown subcommand exit %d", code)
	}
}

// The audit works on a stopped fleet: it opens the controller's data dir.
func TestAuditStoppedFleet(t *testing.T) {
	dir := t.TempDir()
	node, err := natsnode.Start(&natsnode.Options{DataDir: filepath.Join(dir, "nats"), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(node.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	lg, err := events.OpenLog(ctx, js, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := events.NewWriter(ctx, lg, "ctl")
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	if _, err := w.Publish(ctx, events.NewBackendAdded(at, "default", "alpha", events.BackendConfig{URL: "http://a/mcp"}), "1"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Publish(ctx, events.NewHealthChanged(at, "default", "alpha", "unknown", "healthy", true, "ok"), "2"); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	node.Shutdown() // the fleet is stopped

	var out, errb bytes.Buffer
	if code := audit([]string{"state", "--generation", "2", "--data-dir", dir}, &out, &errb); code != 0 {
		t.Fatalf("audit of a stopped fleet: %d %s", code, errb.String())
	}
	var st events.State
	if err := json.Unmarshal(out.Bytes(), &st); err != nil || st.Backend("default", "alpha").Status != "healthy" {
		t.Fatalf("state: %v %s", err, out.String())
	}
}

// auditFleet starts an embedded NATS node (stopped at the test's end) with
// the event log on it, and a writer of the log.
func auditFleet(t *testing.T) (*natsnode.Node, *events.Log, *events.Writer) {
	t.Helper()
	node, err := natsnode.Start(&natsnode.Options{DataDir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Shutdown)
	nc, err := nats.Connect(node.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	lg, err := events.OpenLog(context.Background(), js, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := events.NewWriter(context.Background(), lg, "ctl")
	if err != nil {
		t.Fatal(err)
	}
	return node, lg, w
}
