package events

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// verifyInOrder checks that the stream holds exactly n events, "step 0" to
// "step n-1" in generation order, with unique msg ids.
func verifyInOrder(t *testing.T, ctx context.Context, l *Log, n int) {
	t.Helper()
	gens, ids, evs := readAll(t, ctx, l)
	if len(gens) != n {
		t.Fatalf("stream holds %d events, want %d", len(gens), n)
	}
	seen := map[string]bool{}
	for i, ev := range evs {
		if want := fmt.Sprintf("step %d", i); ev.GetHealthChanged().GetReason() != want {
			t.Fatalf("generation %d holds %q, want %q", gens[i], ev.GetHealthChanged().GetReason(), want)
		}
		if seen[ids[i]] {
			t.Fatalf("msg id %s stored twice", ids[i])
		}
		seen[ids[i]] = true
	}
}

func TestOutboxWhileServerStopped(t *testing.T) {
	f, node := singleNode(t)
	ctx := testContext(t)
	l := f.openLog(t, ctx)
	ob, err := OpenOutbox(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	w, err := NewWriter(ctx, l, "ctl")
	if err != nil {
		t.Fatal(err)
	}
	node.Shutdown()
	relay := NewRelay(ob, w, &RelayOptions{MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, AttemptTimeout: 500 * time.Millisecond})
	stop := runRelay(t, ctx, relay)
	const n = 1000
	for i := range n {
		if err := ob.Append(healthEvent("alpha", i)); err != nil {
			t.Fatal(err)
		}
	}
	if d := ob.Depth(); d != n {
		t.Fatalf("outbox depth %d with the server stopped, want %d", d, n)
	}
	if err := node.Restart(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "outbox drained", func() bool { return ob.Depth() == 0 })
	stop()
	verifyInOrder(t, ctx, l, n)
	if g := ob.LastGeneration(); g != n {
		t.Fatalf("outbox last generation %d, want %d", g, n)
	}
}

const crashChildEnv = "FLEETGATE_OUTBOX_CRASH_CHILD"

// TestOutboxCrashChild is the subprocess of TestOutboxCrashRecovery: it
// appends 200 events, then dies (os.Exit, no cleanup) right after the
// 120th is stored and before the relay removes it from the outbox.
func TestOutboxCrashChild(t *testing.T) {
	if os.Getenv(crashChildEnv) == "" {
		t.Skip("subprocess of TestOutboxCrashRecovery")
	}
	ctx := context.Background()
	nc, err := nats.Connect(os.Getenv("NATS_URL"))
	if err != nil {
		os.Exit(10)
	}
	js, _ := jetstream.New(nc)
	l, err := OpenLog(ctx, js, &LogOptions{Stream: testStream})
	if err != nil {
		os.Exit(11)
	}
	ob, err := OpenOutbox(os.Getenv("OUTBOX_DIR"), nil)
	if err != nil {
		os.Exit(12)
	}
	for i := range 200 {
		if err := ob.Append(healthEvent("alpha", i)); err != nil {
			os.Exit(13)
		}
	}
	w, err := NewWriter(ctx, l, "child")
	if err != nil {
		os.Exit(14)
	}
	relay := NewRelay(ob, w, &RelayOptions{Batch: 64, OnPublished: func(ev *eventspb.Event, _ *State) {
		if ev.Generation == 120 {
			os.Exit(3) // crash between the publish and the outbox removal
		}
	}})
	_ = relay.Run(ctx)
	os.Exit(15)
}

func TestOutboxCrashRecovery(t *testing.T) {
	f, _ := singleNode(t)
	ctx := testContext(t)
	l := f.openLog(t, ctx)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOutboxCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"=1", "NATS_URL="+f.url, "OUTBOX_DIR="+dir)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("child: %v (want exit 3)\n%s", err, out)
	}
	if _, last, _ := l.Bounds(ctx); last != 120 {
		t.Fatalf("stream holds %d events after the crash, want 120", last)
	}
	ob, err := OpenOutbox(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	if d := ob.Depth(); d <= 80 {
		t.Fatalf("outbox depth %d after the crash: the stored-but-not-removed entries should still be there", d)
	}
	w, err := NewWriter(ctx, l, "restarted")
	if err != nil {
		t.Fatal(err)
	}
	stop := runRelay(t, ctx, NewRelay(ob, w, nil))
	eventually(t, 30*time.Second, "outbox drained", func() bool { return ob.Depth() == 0 })
	stop()
	verifyInOrder(t, ctx, l, 200)
}

// A controller whose outbox holds entries from before another controller
// led must not publish them over the new leader's events.
func TestOutboxDropsStaleTermEntries(t *testing.T) {
	f, _ := singleNode(t)
	ctx := testContext(t)
	l := f.openLog(t, ctx)
	ob, err := OpenOutbox(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	w, _ := NewWriter(ctx, l, "old")
	stop := runRelay(t, ctx, NewRelay(ob, w, nil))
	if err := ob.Append(healthEvent("alpha", 0)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "first event stored", func() bool { return ob.Depth() == 0 })
	stop()
	// Another leader publishes; meanwhile the old one queued events.
	other, _ := NewWriter(ctx, l, "new")
	if _, err := other.Publish(ctx, healthEvent("alpha", 1), "new-1"); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := ob.Append(healthEvent("alpha", 10+i)); err != nil {
			t.Fatal(err)
		}
	}
	w2, _ := NewWriter(ctx, l, "old")
	stop = runRelay(t, ctx, NewRelay(ob, w2, nil))
	eventually(t, 30*time.Second, "stale entries settled", func() bool { return ob.Depth() == 0 })
	stop()
	if _, last, _ := l.Bounds(ctx); last != 2 {
		t.Fatalf("stream at %d: stale entries were published", last)
	}
}

// An oversized event never refuses the batch it came in: a catalog is
// replaced by an empty catalog and a health change saying why, another
// kind is dropped, and the other events of the batch are queued.
func TestOutboxReplacesOversizedEvent(t *testing.T) {
	ob, err := OpenOutbox(t.TempDir(), &OutboxOptions{MaxEventBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	big := NewHealthChanged(time.Now(), "g", "b", "a", "b", true, string(make([]byte, 4096)))
	tools := []json.RawMessage{json.RawMessage(fmt.Sprintf(`{"name":"t","description":%q}`, noise(8<<10)))}
	cat, err := NewCatalogChanged(time.Now(), "g", "huge", &Catalog{Tools: tools, Digest: "d"})
	if err != nil {
		t.Fatal(err)
	}
	small := NewHealthChanged(time.Now(), "g", "other", "unknown", "healthy", true, "")
	if err := ob.Append(big, cat, small); err != nil {
		t.Fatalf("append: %v", err)
	}
	if ob.Depth() != 3 || ob.TooLarge() != 2 {
		t.Fatalf("depth %d, too large %d; want 3 (empty catalog, reason, small) and 2", ob.Depth(), ob.TooLarge())
	}
	got, err := ob.peek(10)
	if err != nil {
		t.Fatal(err)
	}
	if cc := got[0].entry.Event.GetCatalogChanged(); cc == nil || len(cc.Tools) != 0 || got[0].entry.Event.Backend != "huge" {
		t.Fatalf("entry 0 = %v, want an empty catalog of huge", got[0].entry.Event)
	}
	if hc := got[1].entry.Event.GetHealthChanged(); hc == nil || hc.Advertisable || !strings.HasPrefix(hc.Reason, ReasonTooLarge) {
		t.Fatalf("entry 1 = %v, want an unadvertisable health change with reason %s", got[1].entry.Event, ReasonTooLarge)
	}
	if got[2].entry.Event.Backend != "other" {
		t.Fatalf("entry 2 = %v, want the small event", got[2].entry.Event)
	}
}

// noise is n bytes of random text, which compression cannot shrink much.
func noise(n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(rand.Text())
	}
	return b.String()
}
