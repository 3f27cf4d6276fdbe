package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fleetgate/fleetgate/pkg/events"
)

// harness runs a dashboard on a fake log inside a synctest bubble.
type harness struct {
	t      *testing.T
	log    *fakeLog
	d      *Dashboard
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T, o Options) *harness {
	t.Helper()
	h := &harness{t: t, log: newFakeLog(), reg: prometheus.NewRegistry(), done: make(chan error, 1)}
	h.log.append("backend_added", "alpha", nil)
	o.Reader, o.Log, o.Registerer = h.log, h.log, h.reg
	h.d = mustNew(t, &o)
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- h.d.Run(ctx) }()
	synctest.Wait()
	return h
}

func (h *harness) stop() {
	h.cancel()
	if err := <-h.done; err != nil {
		h.t.Errorf("Run: %v", err)
	}
}

// open starts a stream; the returned func cancels its request.
func (h *harness) open(s *sink) (cancel func(), ended chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	r := httptest.NewRequestWithContext(ctx, "GET", "/v1/stream", nil)
	ended = make(chan struct{})
	go func() { defer close(ended); h.d.serveStream(s, r) }()
	synctest.Wait()
	return cancel, ended
}

func frameData[T any](t *testing.T, f string) (typ string, v T) {
	t.Helper()
	for _, line := range strings.Split(f, "\n") {
		if s, ok := strings.CutPrefix(line, "event: "); ok {
			typ = s
		}
		if s, ok := strings.CutPrefix(line, "data: "); ok {
			if err := json.Unmarshal([]byte(s), &v); err != nil {
				t.Fatalf("frame %q: %v", f, err)
			}
		}
	}
	return typ, v
}

func isEnded(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// A stream opens with a hello at the current generation, then carries
// every new event in order with its id, and a heartbeat comment every
// Heartbeat; it ends when its request does.
func TestStreamEventsAndHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, Options{Heartbeat: 10 * time.Second})
		defer h.stop()
		s := newSink()
		cancel, ended := h.open(s)
		if got := s.Header().Get("Content-Type"); got != "text/event-stream" {
			t.Errorf("Content-Type %q", got)
		}
		if got := s.Header().Get("Content-Security-Policy"); !strings.Contains(got, "frame-ancestors 'none'") {
			t.Errorf("CSP %q", got)
		}
		typ, hello := frameData[helloJSON](t, s.frames()[0])
		if typ != FrameHello || hello.Generation != 1 || hello.HeartbeatMS != 10000 {
			t.Fatalf("hello %s %+v", typ, hello)
		}
		h.log.append("health_changed", "alpha", &events.HealthChangeJSON{From: "unknown", To: "healthy", Advertisable: true, Reason: "probe succeeded"})
		h.log.append("health_changed", "alpha", &events.HealthChangeJSON{From: "healthy", To: "unhealthy", Reason: "connection refused"})
		synctest.Wait()
		fs := s.frames()
		if len(fs) != 3 {
			t.Fatalf("frames %q", fs)
		}
		for i, want := range []string{"unknown → healthy: probe succeeded", "healthy → unhealthy: connection refused"} {
			typ, ev := frameData[StreamEvent](t, fs[i+1])
			if typ != FrameEvent || ev.Generation != uint64(i+2) || ev.Summary != want || ev.Health == nil || ev.Backend != "alpha" {
				t.Errorf("frame %d: %s %+v", i+1, typ, ev)
			}
			if !strings.Contains(fs[i+1], "\nid: "+string(rune('2'+i))+"\n") {
				t.Errorf("frame %d has no id: %q", i+1, fs[i+1])
			}
		}
		time.Sleep(10*time.Second + time.Millisecond)
		synctest.Wait()
		if fs := s.frames(); len(fs) != 4 || fs[3] != ": ping" {
			t.Fatalf("no heartbeat after 10s: %q", fs)
		}
		cancel()
		synctest.Wait()
		if !isEnded(ended) || h.d.hub.count() != 0 {
			t.Fatalf("the stream outlived its request (ended %v, open %d)", isEnded(ended), h.d.hub.count())
		}
	})
}

// A client that stops reading is dropped once its queue is full; the
// other streams get every event, and the follower never waits for it.
func TestStreamSlowClientDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, Options{StreamBuffer: 4})
		defer h.stop()
		fast := newSink()
		_, fastEnded := h.open(fast)
		slow := newSink()
		slow.gate = make(chan struct{})
		_, slowEnded := h.open(slow) // blocked writing its hello
		for range 10 {
			h.log.append("catalog_changed", "alpha", nil)
			synctest.Wait()
		}
		if n := len(fast.frames()); n != 11 {
			t.Errorf("the fast client got %d frames, want 11", n)
		}
		if h.d.hub.count() != 1 {
			t.Errorf("%d streams open, want the slow one dropped", h.d.hub.count())
		}
		if got := testutil.ToFloat64(h.d.metrics.drops); got != 1 {
			t.Errorf("dropped counter %v", got)
		}
		close(slow.gate) // the blocked write returns (as its write deadline would end it)
		synctest.Wait()
		if !isEnded(slowEnded) {
			t.Error("the dropped stream did not end")
		}
		if isEnded(fastEnded) {
			t.Error("the fast stream ended")
		}
	})
}

// At most MaxStreams streams are open at once; the next is 503 with
// Retry-After, and a slot frees when a stream ends.
func TestStreamLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, Options{MaxStreams: 2})
		defer h.stop()
		c1, _ := h.open(newSink())
		_, _ = h.open(newSink())
		third := newSink()
		_, ended := h.open(third)
		if !isEnded(ended) || third.status() != 503 || third.Header().Get("Retry-After") == "" {
			t.Fatalf("third stream: status %d, ended %v", third.status(), isEnded(ended))
		}
		if got := testutil.ToFloat64(h.d.metrics.refusals); got != 1 {
			t.Errorf("refused counter %v", got)
		}
		c1()
		synctest.Wait()
		again := newSink()
		_, _ = h.open(again)
		if again.status() != 200 {
			t.Errorf("after one ended: status %d", again.status())
		}
	})
}

// Stopping the dashboard ends every stream and refuses new ones.
func TestStreamEndsWithRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, Options{})
		_, e1 := h.open(newSink())
		_, e2 := h.open(newSink())
		h.stop()
		synctest.Wait()
		if !isEnded(e1) || !isEnded(e2) {
			t.Fatal("streams outlived Run")
		}
		late := newSink()
		_, _ = h.open(late)
		if late.status() != 503 {
			t.Errorf("a stream after Run: status %d", late.status())
		}
	})
}

// A run of more than MaxCatchUp events, or events purged before they were
// read, is sent as one reset; an unreadable log is retried after
// RetryDelay and the events then arrive in order.
func TestStreamResetAndRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var errs []error
		h := start(t, Options{RetryDelay: time.Second, OnError: func(err error) { errs = append(errs, err) }})
		defer h.stop()
		s := newSink()
		_, _ = h.open(s)

		h.log.setErr(errors.New("nats: timeout"))
		h.log.append("catalog_changed", "alpha", nil)
		synctest.Wait()
		if len(s.frames()) != 1 || len(errs) != 1 || !strings.Contains(errs[0].Error(), "read events from 2") {
			t.Fatalf("frames %q, errors %v", s.frames(), errs)
		}
		h.log.setErr(nil)
		time.Sleep(time.Second)
		synctest.Wait()
		if fs := s.frames(); len(fs) != 2 || !strings.Contains(fs[1], "id: 2\n") {
			t.Fatalf("after the retry: %q", fs)
		}

		// Many events at once: one reset, not MaxCatchUp+1 frames.
		h.log.mu.Lock()
		for range MaxCatchUp + 1 {
			h.log.evs = append(h.log.evs, events.EventJSON{Generation: h.log.last() + 1, Kind: "catalog_changed"})
		}
		h.log.mu.Unlock()
		h.log.append("catalog_changed", "alpha", nil)
		synctest.Wait()
		fs := s.frames()
		if typ, r := frameData[map[string]uint64](t, fs[len(fs)-1]); len(fs) != 3 || typ != FrameReset || r["generation"] != h.log.last() {
			t.Fatalf("after a long run: %d frames, last %q", len(fs), fs[len(fs)-1])
		}

		// Purged before it was read: a reset.
		h.log.mu.Lock()
		h.log.evs = append(h.log.evs, events.EventJSON{Generation: h.log.last() + 1})
		h.log.mu.Unlock()
		h.log.purge(h.log.last() + 1)
		h.log.append("catalog_changed", "alpha", nil)
		synctest.Wait()
		fs = s.frames()
		if typ, _ := frameData[map[string]uint64](t, fs[len(fs)-1]); len(fs) != 4 || typ != FrameReset {
			t.Fatalf("after a purge: %q", fs)
		}
	})
}
