package edge

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// runLaneEdge runs an edge with options o until the test ends (or stop is
// called) and returns it with a session ready for the fast path and a
// connection that is a lane.
func runLaneEdge(t *testing.T, f *fleet, o Options) (e *Edge, sid string, lc *laneClient, stop func()) {
	t.Helper()
	o.Listen, o.AdminListen = "127.0.0.1:0", "127.0.0.1:0"
	e, err := New(f.log, &o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
		}
	}
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("edge Run: %v", err)
		}
	})
	eventually(t, 20*time.Second, "ready", e.Ready)
	eventually(t, 10*time.Second, "view served", func() bool { _, ok := e.current().Catalog.Tool("alpha_echo"); return ok })
	sid = rawInitialize(t, e.MCPURL(), "")
	fastReady(t, e, sid)
	lc = dialLane(t, e)
	lc.send(laneRequest(sid, callBody("1", "alpha_echo")))
	lc.read()
	eventually(t, 10*time.Second, "lane open", func() bool { return testutil.ToFloat64(lanesGauge(e)) == 1 })
	// The first response is read before the lane releases its count.
	eventually(t, 10*time.Second, "first call done", func() bool { return e.posting.Load() == 0 })
	return e, sid, lc, stop
}

// Shutdown closes an idle lane at once and lets a call in progress on
// another finish and be answered.
func TestLaneShutdown(t *testing.T) {
	f := newFleet(t)
	b := startBackend(t, "alpha", nil)
	f.healthyBackend("default", b)
	e, sid, busy, stop := runLaneEdge(t, f, Options{ShutdownTimeout: 20 * time.Second})
	idle := dialLane(t, e)
	idle.send(laneRequest(sid, callBody("1", "alpha_echo")))
	idle.read()
	eventually(t, 10*time.Second, "two lanes", func() bool { return testutil.ToFloat64(lanesGauge(e)) == 2 })
	b.SetHang(true)
	t.Cleanup(func() { b.SetHang(false) })
	busy.send(laneRequest(sid, callBody("2", "alpha_echo")))
	eventually(t, 10*time.Second, "call in flight", func() bool { return e.calls.Inflight() == 1 })
	stop()
	_ = idle.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := idle.br.Read(make([]byte, 1)); n != 0 || err == nil || isDeadline(err) {
		t.Fatalf("idle lane at shutdown: read %d, %v; want the connection closed", n, err)
	}
	b.SetHang(false)
	if resp, body := busy.read(); resp.StatusCode != http.StatusOK || !strings.Contains(body, "alpha: x") {
		t.Fatalf("drained call: %d %s", resp.StatusCode, body)
	}
}

// A call on a lane still running when the drain's time is up is
// cancelled, as the server's Close cancels its requests: shutdown does not
// wait for the call's own timeout.
func TestLaneShutdownCancelsCallPastDrain(t *testing.T) {
	f := newFleet(t)
	b := startBackend(t, "alpha", nil)
	f.healthyBackend("default", b)
	e, sid, lc, stop := runLaneEdge(t, f, Options{ShutdownTimeout: 300 * time.Millisecond, CallTimeout: time.Minute})
	b.SetHang(true)
	t.Cleanup(func() { b.SetHang(false) })
	lc.send(laneRequest(sid, callBody("2", "alpha_echo")))
	eventually(t, 10*time.Second, "call in flight", func() bool { return e.calls.Inflight() == 1 })
	stop()
	eventually(t, 10*time.Second, "call cancelled after the drain", func() bool { return e.calls.Inflight() == 0 })
}

// A call answered on a lane while shutdown drains says Connection: close,
// as the server's responses then do, and the connection ends after it.
func TestLaneShutdownResponseCloses(t *testing.T) {
	f := newFleet(t)
	b := startBackend(t, "alpha", nil)
	f.healthyBackend("default", b)
	e, sid, lc, stop := runLaneEdge(t, f, Options{ShutdownTimeout: 20 * time.Second})
	b.SetHang(true)
	t.Cleanup(func() { b.SetHang(false) })
	lc.send(laneRequest(sid, callBody("2", "alpha_echo")))
	eventually(t, 10*time.Second, "call in flight", func() bool { return e.calls.Inflight() == 1 })
	stop()
	eventually(t, 10*time.Second, "shutdown began", e.lanes.ShutBegun)
	b.SetHang(false)
	resp, body := lc.read()
	if resp.StatusCode != 200 || !resp.Close {
		t.Fatalf("response while draining: %d, Close %v: %s", resp.StatusCode, resp.Close, body)
	}
	if n, err := io.Copy(io.Discard, lc.br); n != 0 || err != nil {
		t.Fatalf("after the response: %d bytes, %v; want the connection closed", n, err)
	}
}

// A request whose body is still coming when shutdown begins is waited
// for, as the server waits for an active connection, and answered.
func TestLaneShutdownMidRequest(t *testing.T) {
	f := newFleet(t)
	f.healthyBackend("default", startBackend(t, "alpha", nil))
	e, sid, lc, stop := runLaneEdge(t, f, Options{ShutdownTimeout: 20 * time.Second})
	raw := laneRequest(sid, callBody("2", "alpha_echo"))
	cut := strings.Index(raw, "\r\n\r\n") + 9
	lc.send(raw[:cut])
	eventually(t, 10*time.Second, "request counted", func() bool { return e.posting.Load() == 1 })
	stop()
	eventually(t, 10*time.Second, "shutdown began", e.lanes.ShutBegun)
	lc.send(raw[cut:])
	if resp, body := lc.read(); resp.StatusCode != http.StatusOK || !resp.Close || !strings.Contains(body, "alpha: x") {
		t.Fatalf("response: %d, Close %v: %s", resp.StatusCode, resp.Close, body)
	}
}

// isDeadline reports whether err is a deadline's.
func isDeadline(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// lanesGauge and laneHandbacks are e's lane metrics.
func lanesGauge(e *Edge) prometheus.Gauge {
	g, _ := e.lanes.Metrics()
	return g
}

func laneHandbacks(e *Edge) prometheus.Counter {
	_, c := e.lanes.Metrics()
	return c
}
