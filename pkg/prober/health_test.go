package prober

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/health"
)

// TestKillRestart: killing the backend is a Failure within Policy.Timeout
// even though the next ping is far away; a restart brings OK observations
// and a fresh discovery.
func TestKillRestart(t *testing.T) {
	for _, transport := range []string{TransportStreamable, TransportSSE} {
		t.Run(transport, func(t *testing.T) {
			b := startBackend(t, "alpha", &demobackend.Options{SSE: transport == TransportSSE})
			rec := newRecorder()
			pol := health.Policy{Interval: time.Hour, Timeout: 2 * time.Second}
			run(t, target(b, transport), rec.sink(), &Options{Policy: pol, MaxBackoff: 200 * time.Millisecond})
			rec.waitObs(t, 0, "first OK", isResult(health.OK))
			first := rec.waitCatalog(t, 0, "first", anyCatalog)

			from, cats := rec.mark()
			killed := time.Now()
			b.Stop()
			fail, _ := rec.waitObs(t, from, "failure after kill", isResult(health.Failure))
			if d := fail.at.Sub(killed); d >= pol.Timeout {
				t.Errorf("failure reported %v after the kill, want < timeout %v", d, pol.Timeout)
			}
			t.Logf("kill detected after %v: %q", fail.at.Sub(killed), fail.v.Reason)

			// Change the tools while the backend is down: only a fresh
			// discovery after the restart can see it.
			b.AddTool(&mcp.Tool{Name: "late", InputSchema: json.RawMessage(`{"type":"object"}`)})
			from, _ = rec.mark()
			if err := b.Restart(); err != nil {
				t.Fatal(err)
			}
			rec.waitObs(t, from, "OK after restart", isResult(health.OK))
			c := rec.waitCatalog(t, cats, "post-restart", func(c Catalog) bool { return c.Digest != first.v.Digest })
			if len(c.v.Tools) != 3 {
				t.Errorf("after restart: %d tools, want 3", len(c.v.Tools))
			}
		})
	}
}

// TestHungBackend: a backend that accepts but never answers yields a ping
// Failure each interval, and OK again once it answers.
func TestHungBackend(t *testing.T) {
	b := startBackend(t, "hung", nil)
	rec := newRecorder()
	pol := health.Policy{Interval: 300 * time.Millisecond, Timeout: 100 * time.Millisecond}
	run(t, target(b, ""), rec.sink(), &Options{Policy: pol})
	rec.waitObs(t, 0, "first OK", isResult(health.OK))
	rec.waitCatalog(t, 0, "first", anyCatalog)

	from, _ := rec.mark()
	b.SetHang(true)
	var fails []stamped[health.Observation]
	for len(fails) < 3 {
		o, i := rec.waitObs(t, from, "failure while hung", isResult(health.Failure))
		if !strings.Contains(o.v.Reason, "ping") || !strings.Contains(o.v.Reason, "deadline exceeded") {
			t.Errorf("reason %q, want a ping deadline", o.v.Reason)
		}
		fails = append(fails, o)
		from = i + 1
	}
	// One failure per interval: consecutive failures are spaced by about
	// the interval (never by less than half of it).
	for i := 1; i < len(fails); i++ {
		if d := fails[i].at.Sub(fails[i-1].at); d < pol.Interval/2 {
			t.Errorf("failures %d and %d only %v apart, want about one interval (%v)", i-1, i, d, pol.Interval)
		}
	}
	from, _ = rec.mark()
	b.SetHang(false)
	rec.waitObs(t, from, "OK after unhang", isResult(health.OK))
}

// TestAuthFailure: HTTP 401 is an AuthFailure; with the right token the
// same backend is OK.
func TestAuthFailure(t *testing.T) {
	for _, transport := range []string{TransportStreamable, TransportSSE} {
		t.Run(transport, func(t *testing.T) {
			b := startBackend(t, "locked", &demobackend.Options{SSE: transport == TransportSSE})
			b.RequireToken("s3cret")
			rec := newRecorder()
			run(t, target(b, transport), rec.sink(), &Options{Policy: health.Policy{Interval: time.Hour}})
			o, _ := rec.waitObs(t, 0, "auth failure", func(health.Observation) bool { return true })
			if o.v.Result != health.AuthFailure || !strings.Contains(o.v.Reason, "401") {
				t.Fatalf("first observation %+v, want AuthFailure naming HTTP 401", o.v)
			}

			rec2 := newRecorder()
			hc := &http.Client{Transport: bearer{"s3cret", &http.Transport{}}}
			t.Cleanup(hc.CloseIdleConnections)
			run(t, target(b, transport), rec2.sink(), &Options{Policy: health.Policy{Interval: time.Hour}, HTTPClient: hc})
			o, _ = rec2.waitObs(t, 0, "OK with token", func(health.Observation) bool { return true })
			if o.v.Result != health.OK {
				t.Fatalf("with token: %+v, want OK", o.v)
			}
		})
	}
}

// bearer adds an Authorization header.
type bearer struct {
	token string
	next  *http.Transport
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func (b bearer) CloseIdleConnections() { b.next.CloseIdleConnections() }

// TestConnectRefused: a backend that is not there yields Failures from
// failed connects, retried with backoff, until it appears.
func TestConnectRefused(t *testing.T) {
	b := startBackend(t, "late", nil)
	b.Stop()
	rec := newRecorder()
	run(t, target(b, ""), rec.sink(), &Options{Policy: health.Policy{Interval: time.Hour}, MaxBackoff: 100 * time.Millisecond})
	from := 0
	for range 3 {
		o, i := rec.waitObs(t, from, "connect failure", func(health.Observation) bool { return true })
		if o.v.Result != health.Failure || !strings.Contains(o.v.Reason, "connect") {
			t.Fatalf("observation %+v, want a connect Failure", o.v)
		}
		from = i + 1
	}
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	rec.waitObs(t, from, "OK once up", isResult(health.OK))
}

// TestRunStops: Run returns promptly on cancel, also while its backend is
// hung; TestMain's goleak check covers the goroutines.
func TestRunStops(t *testing.T) {
	b := startBackend(t, "stop", nil)
	rec := newRecorder()
	p := New(target(b, ""), rec.sink(), &Options{Policy: health.Policy{Interval: 50 * time.Millisecond, Timeout: 5 * time.Second}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	rec.waitObs(t, 0, "first OK", isResult(health.OK))
	if err := p.Run(ctx); err == nil || !strings.Contains(err.Error(), ErrRunning.Error()) {
		t.Errorf("second Run: %v, want ErrRunning", err)
	}
	b.SetHang(true) // the next ping blocks for up to 5s
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(waitFor):
		t.Fatal("Run did not return")
	}
	// Generous bound for a loaded machine; the point is that it does not
	// wait for the 5s ping timeout or the SDK's 5s DELETE timeout.
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Run took %v to return after cancel", d)
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
}

func TestRunRejectsBadTarget(t *testing.T) {
	p := New(Target{Name: "x", URL: "http://127.0.0.1:1/mcp", Transport: "carrier-pigeon"}, Sink{}, nil)
	if err := p.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "carrier-pigeon") {
		t.Fatalf("Run: %v, want an unknown-transport error", err)
	}
	p = New(Target{Name: "x", URL: "http://127.0.0.1:1/mcp"}, Sink{}, &Options{Policy: health.Policy{Timeout: -1}})
	if err := p.Run(context.Background()); err == nil {
		t.Fatal("Run with a negative timeout: nil error")
	}
}
