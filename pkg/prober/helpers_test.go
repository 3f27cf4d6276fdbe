package prober

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/health"
)

func TestMain(m *testing.M) {
	code := m.Run()
	// A killed demo backend keeps its server-side sessions (nobody can
	// DELETE them): those goroutines belong to the backend, not the prober.
	opts := []goleak.Option{goleak.IgnoreTopFunction("github.com/modelcontextprotocol/go-sdk/mcp.(*streamableServerConn).Read")}
	// A go-sdk client's stream reader still reading what a hostile
	// backend sent ends on its own once it reaches the end: on a loaded
	// machine that takes longer than goleak's own retries (about 2s), so
	// it is given up to waitFor.
	deadline := time.Now().Add(waitFor)
	err := goleak.Find(opts...)
	for err != nil && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		err = goleak.Find(opts...)
	}
	if code == 0 && err != nil {
		fmt.Fprintf(os.Stderr, "goleak: Errors on successful test run: %v\n", err)
		code = 1
	}
	os.Exit(code)
}

// waitFor is the generous deadline of every I/O wait in these tests; the
// timing assertions themselves are separate and explicit.
const waitFor = 60 * time.Second // generous: a loaded 2-core machine under -race

// recorder is a Sink that keeps everything and lets a test wait for it.
type recorder struct {
	mu   sync.Mutex
	obs  []stamped[health.Observation]
	cats []stamped[Catalog]
	kick chan struct{}
}

type stamped[T any] struct {
	v  T
	at time.Time // wall clock of arrival, for latency assertions
}

func newRecorder() *recorder { return &recorder{kick: make(chan struct{}, 1)} }

func (r *recorder) sink() Sink {
	return Sink{
		Observe: func(_ Target, o health.Observation) {
			r.mu.Lock()
			r.obs = append(r.obs, stamped[health.Observation]{o, time.Now()})
			r.mu.Unlock()
			r.poke()
		},
		Catalog: func(_ Target, c Catalog) {
			r.mu.Lock()
			r.cats = append(r.cats, stamped[Catalog]{c, time.Now()})
			r.mu.Unlock()
			r.poke()
		},
	}
}

func (r *recorder) poke() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// mark returns the current counts, to wait for what comes after.
func (r *recorder) mark() (obs, cats int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.obs), len(r.cats)
}

// waitObs waits for an observation after index from that satisfies ok and
// returns it with its index.
func (r *recorder) waitObs(t *testing.T, from int, what string, ok func(health.Observation) bool) (stamped[health.Observation], int) {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		r.mu.Lock()
		for i := from; i < len(r.obs); i++ {
			if ok(r.obs[i].v) {
				o := r.obs[i]
				r.mu.Unlock()
				return o, i
			}
		}
		r.mu.Unlock()
		select {
		case <-r.kick:
		case <-deadline:
			t.Fatalf("no %s observation within %v; got %+v", what, waitFor, r.snapshotObs())
		}
	}
}

// waitCatalog waits for a catalog after index from that satisfies ok.
func (r *recorder) waitCatalog(t *testing.T, from int, what string, ok func(Catalog) bool) stamped[Catalog] {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		r.mu.Lock()
		for i := from; i < len(r.cats); i++ {
			if ok(r.cats[i].v) {
				c := r.cats[i]
				r.mu.Unlock()
				return c
			}
		}
		n := len(r.cats)
		r.mu.Unlock()
		select {
		case <-r.kick:
		case <-deadline:
			t.Fatalf("no %s catalog within %v (%d catalogs delivered)", what, waitFor, n)
		}
	}
}

func (r *recorder) snapshotObs() []health.Observation {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]health.Observation, len(r.obs))
	for i, o := range r.obs {
		out[i] = o.v
	}
	return out
}

func isResult(res health.Result) func(health.Observation) bool {
	return func(o health.Observation) bool { return o.Result == res }
}

func anyCatalog(Catalog) bool { return true }

// startBackend starts a demo backend on a loopback port, stopped at cleanup.
func startBackend(t testing.TB, name string, o *demobackend.Options) *demobackend.Backend {
	t.Helper()
	b := demobackend.New(name, o)
	if err := b.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.SetHang(false)
		b.Stop()
	})
	return b
}

// run starts a Prober and stops it at cleanup, checking that Run returns
// promptly. Every test gets its own http.Transport so that no idle
// connection outlives it.
func run(t testing.TB, target Target, sink Sink, o *Options) *Prober {
	t.Helper()
	tr := &http.Transport{}
	if o == nil {
		o = &Options{}
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Transport: tr}
	}
	p := New(target, sink, o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(waitFor):
			t.Errorf("Run did not return within %v of cancel", waitFor)
		}
		tr.CloseIdleConnections()
	})
	return p
}

func target(b *demobackend.Backend, transport string) Target {
	return Target{Group: "default", Name: b.Name(), URL: b.URL(), Transport: transport}
}
