package edge

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fleetgate/fleetgate/pkg/signin"
)

// The sign-ins' writer of held rotated refresh tokens runs until the
// in-flight calls drained at shutdown (their refreshes may still hold
// tokens), and makes its last round before Run returns.
func TestSignInWriterOutlivesDrain(t *testing.T) {
	f, js := openFleet(t)
	b := startBackend(t, "alpha", nil)
	f.healthyBackend("default", b)
	key, err := signin.NewKey([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	e, sid, busy, stop := runLaneEdge(t, f, Options{ShutdownTimeout: 20 * time.Second,
		SignIns: &SignInOptions{JetStream: js, Key: key, HTTPClient: &http.Client{}}})
	<-e.signIns.Ready()
	idle := dialLane(t, e)
	idle.send(laneRequest(sid, callBody("1", "alpha_echo")))
	idle.read()
	eventually(t, 10*time.Second, "two lanes", func() bool { return testutil.ToFloat64(lanesGauge(e)) == 2 })
	b.SetHang(true)
	t.Cleanup(func() { b.SetHang(false) })
	busy.send(laneRequest(sid, callBody("2", "alpha_echo")))
	eventually(t, 10*time.Second, "call in flight", func() bool { return e.calls.Inflight() == 1 })
	stop()
	// The shutdown is under way: the idle lane is closed, the call drains.
	_ = idle.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := idle.br.Read(make([]byte, 1)); n != 0 || err == nil || isDeadline(err) {
		t.Fatalf("idle lane at shutdown: read %d, %v; want the connection closed", n, err)
	}
	if e.Ready() || e.calls.Inflight() != 1 {
		t.Fatalf("not draining: ready %v, in flight %d", e.Ready(), e.calls.Inflight())
	}
	if e.signIns.WriterStopped() {
		t.Fatal("the writer of held tokens stopped while a call was still in flight")
	}
	b.SetHang(false)
	if resp, body := busy.read(); resp.StatusCode != http.StatusOK || !strings.Contains(body, "alpha: x") {
		t.Fatalf("drained call: %d %s", resp.StatusCode, body)
	}
	eventually(t, 20*time.Second, "writer's last round", e.signIns.WriterStopped)
}
