package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
	"github.com/fleetgate/fleetgate/pkg/region"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// BenchmarkFleetScale is the fleet-scale simulation of docs/scale.md: a
// fleet of FLEETGATE_SIM_SESSIONS sessions (default 100,000) over
// FLEETGATE_SIM_EDGES edges (default 10), in one region or in two (the
// edges split between them, each following both regions' logs as a
// regional edge does), all in this process. Each simulated edge has its
// own NATS connection and reads the real event log (events.Reader, or
// region.Follower over the regional logs); each new state is built into
// the served view and applied to its sessions as the edge's resync does
// (view.Build, view.Between, session.Registry.Swap, Session.Apply on one
// worker per CPU), and each session's stream is a real taken-over stream
// (Session.Attach) on a synthetic connection that stamps the time it is
// written the list_changed. A backend of the group is killed (its
// health_changed published) and revived, once per iteration; it reports
// the time from the kill's publication to each session's list_changed
// (p50, p99 and the last), and the bytes each edge's connection read from
// NATS per event.
func BenchmarkFleetScale(b *testing.B) {
	sessions, edges := simEnv(b, "FLEETGATE_SIM_SESSIONS", 100_000), simEnv(b, "FLEETGATE_SIM_EDGES", 10)
	b.Run("1-region", func(b *testing.B) { benchFleetScale(b, sessions, edges, nil) })
	b.Run("2-regions", func(b *testing.B) { benchFleetScale(b, sessions, edges, []string{"east", "west"}) })
}

func simEnv(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

// simSource is what a simulated edge follows (events.Reader or
// region.Follower).
type simSource interface {
	Run(ctx context.Context) error
	Watch() (<-chan struct{}, func())
	State() *events.State
}

// simEdge is one simulated edge: its NATS connection, what it follows,
// its sessions.
type simEdge struct {
	nc      *nats.Conn
	src     simSource
	reg     *session.Registry
	last    *events.Group
	applied chan struct{} // a state was applied; capacity 1
}

// resync is the edge's resync of one state: the served view built once
// and applied to every session (resync.go's path without the pacing,
// which a kill, urgent, skips).
func (e *simEdge) resync(group string) {
	st := e.src.State()
	g := st.Group(group)
	if g == e.last {
		return
	}
	e.last = g
	prev := e.reg.Current()
	next := view.Build(st.Generation, g, "_", prev)
	next.Regions = st.Regions
	ch := view.Between(prev, next)
	targets := e.reg.Swap(next)

	if ch.None() {
		return
	}
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(targets); i += workers {
				targets[i].Apply(next, ch, time.Time{})
			}
		})
	}
	wg.Wait()
}

// simConn is a synthetic client's connection: reads block until it is
// closed; a write carrying a tools list_changed is stamped once per
// event (armed).
type simConn struct {
	armed  atomic.Bool
	at     *int64 // the stamp's slot
	told   *sync.WaitGroup
	closed chan struct{}
	once   sync.Once
}

var listChangedMark = []byte("notifications/tools/list_changed")

func (c *simConn) Write(p []byte) (int, error) {

	if bytes.Contains(p, listChangedMark) && c.armed.CompareAndSwap(true, false) {
		atomic.StoreInt64(c.at, time.Now().UnixNano())
		c.told.Done()
	}
	return len(p), nil
}

func (c *simConn) Read([]byte) (int, error) { <-c.closed; return 0, io.EOF }
func (c *simConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}
func (c *simConn) LocalAddr() net.Addr                { return &net.TCPAddr{} }
func (c *simConn) RemoteAddr() net.Addr               { return &net.TCPAddr{} }
func (c *simConn) SetDeadline(time.Time) error        { return nil }
func (c *simConn) SetReadDeadline(time.Time) error    { return nil }
func (c *simConn) SetWriteDeadline(time.Time) error   { return nil }
func (c *simConn) armFor(wg *sync.WaitGroup) *simConn { c.told = wg; c.armed.Store(true); return c }

// simCatalog is a catalog of n tools named prefix0..prefix(n-1), each
// with a small object schema.
func simCatalog(b *testing.B, prefix string, n int) *events.Catalog {
	c := &events.Catalog{Digest: "sim-" + prefix}
	for i := range n {
		raw, err := json.Marshal(map[string]any{"name": fmt.Sprintf("%s%d", prefix, i), "description": "a simulated tool of the fleet-scale benchmark",
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}})
		if err != nil {
			b.Fatal(err)
		}
		c.Tools = append(c.Tools, raw)
	}
	return c
}

func benchFleetScale(b *testing.B, sessions, edges int, regions []string) {
	node := natstest.Start(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const group = "default"
	// One log per region (nil: the single-region log); the killed
	// backend is the first region's.
	logNames := regions
	if logNames == nil {
		logNames = []string{""}
	}
	writers := make([]*events.Writer, len(logNames))
	for i, r := range logNames {
		lg, err := events.OpenLog(ctx, jsConnect(b, node.ClientURL()), region.LogOptions(r, 0))
		if err != nil {
			b.Fatal(err)
		}
		if writers[i], err = events.NewWriter(ctx, lg, "sim"); err != nil {
			b.Fatal(err)
		}
	}
	publish := func(w *events.Writer, ev *eventspb.Event) {
		if _, err := w.Publish(ctx, ev, fmt.Sprintf("sim-%d", time.Now().UnixNano())); err != nil {
			b.Fatal(err)
		}
	}
	for i, w := range writers {
		name := fmt.Sprintf("b%d", i)
		publish(w, events.NewBackendAdded(time.Now(), group, name, events.BackendConfig{URL: "http://127.0.0.1:1/" + name}))
		ev, err := events.NewCatalogChanged(time.Now(), group, name, simCatalog(b, name+"_t", 20))
		if err != nil {
			b.Fatal(err)
		}
		publish(w, ev)
		publish(w, events.NewHealthChanged(time.Now(), group, name, "unknown", "healthy", true, "sim"))
	}

	// The edges, each with its connection, source and registry.
	sims := make([]*simEdge, edges)
	var runs sync.WaitGroup
	defer runs.Wait()
	defer cancel()
	for k := range sims {
		nc, err := nats.Connect(node.ClientURL())
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			b.Fatal(err)
		}
		var src simSource
		if regions == nil {
			lg, err := events.AttachLog(ctx, js, nil)
			if err != nil {
				b.Fatal(err)
			}
			src = events.NewReader(lg, nil)
		} else {
			// Each edge follows its own region's log first.
			order := append([]string{regions[k%len(regions)]}, slices.DeleteFunc(slices.Clone(regions), func(r string) bool { return r == regions[k%len(regions)] })...)
			if src, err = region.NewFollower(js, order, nil); err != nil {
				b.Fatal(err)
			}
		}
		e := &simEdge{nc: nc, src: src, reg: session.NewRegistry(nil), applied: make(chan struct{}, 1)}
		sims[k] = e
		watch, stop := src.Watch()
		defer stop()
		runs.Go(func() { _ = src.Run(ctx) })
		runs.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-watch:
					e.resync(group)
					select {
					case e.applied <- struct{}{}:
					default:
					}
				}
			}
		})
	}
	// The sessions, round robin over the edges, each with its stream.
	stamps := make([]int64, sessions)
	conns := make([]*simConn, sessions)
	before := memInUseTest()
	for i := range sessions {
		reg := sims[i%edges].reg
		s := reg.New(fmt.Sprintf("s%07d", i), session.KindSession, "2025-11-25", "")
		// A session-based client's go-sdk server, as the edge binds one
		// (its lists are answered from the served view, not from it).
		s.Bind(mcp.NewServer(&mcp.Implementation{Name: "fleetgate-edge", Version: "sim"}, nil))
		reg.Open(s)
		conns[i] = &simConn{at: &stamps[i], closed: make(chan struct{})}
		if !s.Attach(conns[i], nil, nil) {
			b.Fatalf("session %d: stream refused", i)
		}
	}
	perSession := float64(memInUseTest()-before) / float64(sessions)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()

	// Every edge serves every backend first.
	deadline := time.After(time.Minute)
	for _, e := range sims {
		for len(e.reg.Current().Catalog.Tools) != 20*len(writers) {
			select {
			case <-deadline:
				b.Fatalf("an edge serves %d tools, want %d", len(e.reg.Current().Catalog.Tools), 20*len(writers))
			case <-e.applied:
			}
		}
	}

	readBytes := func() (n uint64) {
		for _, e := range sims {
			n += e.nc.Stats().InBytes
		}
		return n
	}
	// event publishes ev and returns when every session was told, with
	// the time each took from the publication.
	event := func(ev *eventspb.Event) []time.Duration {
		var told sync.WaitGroup
		told.Add(sessions)
		for _, c := range conns {
			c.armFor(&told)
		}
		t0 := time.Now()
		publish(writers[0], ev)
		told.Wait()
		out := make([]time.Duration, sessions)
		for i := range stamps {
			out[i] = time.Duration(atomic.LoadInt64(&stamps[i]) - t0.UnixNano())
		}
		return out
	}
	var all, last []time.Duration
	var read uint64
	for b.Loop() {
		r0 := readBytes()
		took := event(events.NewHealthChanged(time.Now(), group, "b0", "healthy", "unhealthy", false, "killed"))
		read += readBytes() - r0
		all = append(all, took...)
		last = append(last, slices.Max(took))
		r0 = readBytes()
		event(events.NewHealthChanged(time.Now(), group, "b0", "unhealthy", "healthy", true, "back"))
		read += readBytes() - r0
	}
	slices.Sort(all)
	slices.Sort(last)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(float64(sessions), "sessions")
	b.ReportMetric(float64(edges), "edges")
	b.ReportMetric(ms(percentile(all, 0.5)), "each-p50-ms")
	b.ReportMetric(ms(percentile(all, 0.99)), "each-p99-ms")
	b.ReportMetric(ms(percentile(last, 0.5)), "last-p50-ms")
	b.ReportMetric(ms(percentile(last, 0.99)), "last-p99-ms")
	b.ReportMetric(float64(read)/float64(2*b.N*edges), "B-read/edge/event")
	b.ReportMetric(perSession, "B/session")
}

// percentile returns the q-quantile (0..1) of sorted durations.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// memInUseTest is the heap and stacks in use after two collections.
func memInUseTest() uint64 {
	var m runtime.MemStats
	for range 2 {
		runtime.GC()
	}
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}
