package edge

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/edge/internal/h1"
	"github.com/fleetgate/fleetgate/pkg/edge/internal/jsontest"
)

// percentile returns the q-quantile (0..1) of sorted durations.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

func benchSessions(b *testing.B) int {
	n := 1000
	if s := os.Getenv("FLEETGATE_BENCH_SESSIONS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			b.Fatalf("FLEETGATE_BENCH_SESSIONS=%q: want a positive integer", s)
		}
		n = v
	}
	return n
}

// BenchmarkToolCall makes the same tools/call to a demo backend directly
// and through the edge, alternately, and reports the latencies and the
// ratio to direct.
func BenchmarkToolCall(b *testing.B) {
	f := newFleet(b)
	be := startBackend(b, "alpha", nil)
	f.healthyBackend("default", be)
	e := startEdge(b, f, nil)
	via := connect(b, e.MCPURL(), "2025-11-25")
	call(b, via.cs, "alpha_echo") // the edge's pooled backend session is made lazily
	compareToolCalls(b, be, via, "alpha_echo", "edge", "2025-11-25", "2025-11-25")
}

// BenchmarkToolCallStateless is BenchmarkToolCall with go-sdk clients of
// protocol 2026-07-28 (stateless requests), direct to a backend that
// serves that protocol (the go-sdk's stateless handler) and through the
// edge (which forwards on its pooled 2025-11-25 session to the same
// backend): the same requests on both legs (the same client work before
// sending, measured), answered as an event stream direct and as JSON
// through the edge.
func BenchmarkToolCallStateless(b *testing.B) {
	compareNewProtocolCalls(b, &demobackend.Options{NewProtocol: true}, newProtocol)
}

// BenchmarkToolCallStatelessFallback is BenchmarkToolCallStateless with a
// backend that serves sessions only (the go-sdk's stateful handler): the
// direct client falls back to 2025-11-25, while through the edge it keeps
// 2026-07-28. The legs differ in the client's own work as well: a
// 2026-07-28 go-sdk client decodes its request's params again for each
// header it sets, and decodes the result's _meta (the server's info).
func BenchmarkToolCallStatelessFallback(b *testing.B) {
	compareNewProtocolCalls(b, nil, "2025-11-25")
}

// compareNewProtocolCalls compares go-sdk clients of the default protocol
// (2026-07-28) calling a backend of options o directly, where they must
// get protocol direct, and through the edge (where they must get
// 2026-07-28), with each client's time before sending.
func compareNewProtocolCalls(b *testing.B, o *demobackend.Options, direct string) {
	f := newFleet(b)
	be := startBackend(b, "alpha", o)
	f.healthyBackend("default", be)
	e := startEdge(b, f, nil)
	via := connectTimed(b, e.MCPURL(), "")
	if got := via.cs.InitializeResult().ProtocolVersion; got != newProtocol {
		b.Fatalf("client through the edge: protocol %s, want %s", got, newProtocol)
	}
	call(b, via.cs, "alpha_echo")
	dc := connectTimed(b, be.URL(), "")
	compareToolCallsOn(b, dc, via, "alpha_echo", "edge", direct)
	b.ReportMetric(dc.clock.p50(), "direct-send-p50-µs")
	b.ReportMetric(via.clock.p50(), "edge-send-p50-µs")
}

// connectTimed is connect with a sendClock on the client's requests.
func connectTimed(b *testing.B, url, version string) *client {
	c := &sendClock{}
	cl := connectWith(b, url, version, &http.Client{Transport: c})
	cl.clock = c
	return cl
}

// sendClock is an HTTP transport that records, for each tools/call a
// client posts, the time from the call's start (set by compareToolCallsOn)
// to the request leaving the client's MCP code: the client's own work
// before sending.
type sendClock struct {
	mu    sync.Mutex
	start time.Time
	sends []time.Duration
}

func (c *sendClock) begin() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.start = time.Now()
	c.mu.Unlock()
}

func (c *sendClock) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	if !c.start.IsZero() && r.Method == http.MethodPost {
		c.sends = append(c.sends, time.Since(c.start))
		c.start = time.Time{}
	}
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// p50 in µs.
func (c *sendClock) p50() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	slices.Sort(c.sends)
	return float64(percentile(c.sends, 0.5).Microseconds())
}

// BenchmarkToolCallProxy is BenchmarkToolCall through a plain reverse
// proxy (httputil, on the edge's backend transport) instead of the edge:
// the cost of an HTTP hop that does nothing but forward. It runs on its
// own. In one loop of direct, edge and proxy calls, each direct call came
// right after a proxy call, which runs the same client and backend code,
// and found that code warm in the CPU caches, while each edge call came
// after a direct call: the edge's ratio was 0.05 to 0.1 higher. With a
// second direct call in the proxy's place it was as high; with a second
// edge call, or none, it was not. Alternating two kinds of call, each
// call follows one of the other kind.
func BenchmarkToolCallProxy(b *testing.B) {
	be := startBackend(b, "alpha", nil)
	target, err := url.Parse(be.URL())
	if err != nil {
		b.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	rp.Transport = h1.NewTransport(http.DefaultTransport.(*http.Transport).Clone())
	proxySrv := httptest.NewServer(rp)
	b.Cleanup(proxySrv.Close)
	proxied := connect(b, proxySrv.URL+target.Path, "2025-11-25")
	compareToolCalls(b, be, proxied, "echo", "proxy", "2025-11-25", "2025-11-25")
}

// BenchmarkToolCallAlternating alternates tools/call and tools/list on one
// session, on an edge with call lanes and on one without, in one run: a
// client whose calls alternate with other requests must not pay for the
// lanes (each request would move its connection between a lane and the
// server).
func BenchmarkToolCallAlternating(b *testing.B) {
	f := newFleet(b)
	be := startBackend(b, "alpha", nil)
	f.healthyBackend("default", be)
	lanes, plain := startEdge(b, f, nil), startEdge(b, f, &Options{CallTimeout: 10 * time.Second, paths: pathSwitches{noLanes: true}})
	list := func(cs *mcp.ClientSession) time.Duration {
		start := time.Now()
		if _, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	type leg struct {
		cs           *mcp.ClientSession
		calls, lists []time.Duration
	}
	legs := []*leg{{cs: connect(b, lanes.MCPURL(), "2025-11-25").cs}, {cs: connect(b, plain.MCPURL(), "2025-11-25").cs}}
	for _, l := range legs {
		call(b, l.cs, "alpha_echo")
	}
	for b.Loop() {
		for _, l := range legs {
			l.calls = append(l.calls, call(b, l.cs, "alpha_echo"))
			l.lists = append(l.lists, list(l.cs))
		}
	}
	p50 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(percentile(d, 0.5).Microseconds())
	}
	lc, ll, pc, pl := p50(legs[0].calls), p50(legs[0].lists), p50(legs[1].calls), p50(legs[1].lists)
	b.ReportMetric(lc, "lanes-call-p50-µs")
	b.ReportMetric(ll, "lanes-list-p50-µs")
	b.ReportMetric(pc, "nolanes-call-p50-µs")
	b.ReportMetric(pl, "nolanes-list-p50-µs")
	b.ReportMetric(lc/pc, "call-ratio")
	b.ReportMetric(ll/pl, "list-ratio")
}

// call makes one tools/call of name with cs and returns its latency.
func call(b *testing.B, cs *mcp.ClientSession, name string) time.Duration {
	start := time.Now()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": "bench"}})
	d := time.Since(start)
	if err != nil || res.IsError {
		b.Fatalf("call %s: %v %+v %s", name, err, res, text0(res))
	}
	return d
}

// compareToolCalls alternates a tools/call made directly to be, by a
// client asking for protocol ask ("": the go-sdk's default, 2026-07-28)
// that must get want, with the same call made by through (as name), and
// reports p50, p99 and calls/s of both and the p50 ratio.
func compareToolCalls(b *testing.B, be *demobackend.Backend, through *client, name, via, ask, want string) {
	compareToolCallsOn(b, connect(b, be.URL(), ask), through, name, via, want)
}

// compareToolCallsOn is compareToolCalls with the direct client given.
// Clients with a sendClock have it started at each call.
func compareToolCallsOn(b *testing.B, direct, through *client, name, via, want string) {
	if got := direct.cs.InitializeResult().ProtocolVersion; got != want {
		b.Fatalf("direct client: protocol %s, want %s", got, want)
	}
	var ds, vs []time.Duration
	for b.Loop() {
		direct.clock.begin()
		ds = append(ds, call(b, direct.cs, "echo"))
		through.clock.begin()
		vs = append(vs, call(b, through.cs, name))
	}
	rate := func(d []time.Duration) float64 {
		var sum time.Duration
		for _, x := range d {
			sum += x
		}
		return float64(len(d)) / sum.Seconds()
	}
	slices.Sort(ds)
	slices.Sort(vs)
	p50 := func(d []time.Duration) float64 { return float64(percentile(d, 0.5).Microseconds()) }
	p99 := func(d []time.Duration) float64 { return float64(percentile(d, 0.99).Microseconds()) }
	b.ReportMetric(p50(ds), "direct-p50-µs")
	b.ReportMetric(p99(ds), "direct-p99-µs")
	b.ReportMetric(rate(ds), "direct-calls/s")
	b.ReportMetric(p50(vs), via+"-p50-µs")
	b.ReportMetric(p99(vs), via+"-p99-µs")
	b.ReportMetric(rate(vs), via+"-calls/s")
	b.ReportMetric(p50(vs)/p50(ds), "p50-ratio")
}

// clientFleet is a child process holding n idle go-sdk client sessions on
// an edge (so that the edge's memory is measured alone); it prints one line
// per tools/list_changed received: "<client> <unix nanos>".
type clientFleet struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines *bufio.Scanner
}

func startClientFleet(b *testing.B, url string, n int) *clientFleet {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperClientFleet$", "-test.v=false")
	cmd.Env = append(os.Environ(), "FLEETGATE_HELPER_URL="+url, fmt.Sprintf("FLEETGATE_HELPER_N=%d", n))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	cf := &clientFleet{cmd: cmd, stdin: stdin, lines: bufio.NewScanner(out)}
	b.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	for cf.lines.Scan() {
		if cf.lines.Text() == "ready" {
			return cf
		}
	}
	b.Fatalf("client fleet did not start: %v", cf.lines.Err())
	return nil
}

// TestHelperClientFleet is the child process of startClientFleet; it does
// nothing in a normal test run. FLEETGATE_BENCH_CLIENT=sdk makes its
// sessions go-sdk clients (sdk-listen: of protocol 2026-07-28, notified
// on subscriptions/listen streams; listen: minimal HTTP clients of such
// streams); the default, raw, makes them minimal HTTP
// clients (initialize, initialized, a GET stream read line by line), so
// that the figures measure the edge rather than the go-sdk client; poll
// reads those GET streams with one epoll loop (benchpoll_linux_test.go).
func TestHelperClientFleet(t *testing.T) {
	url := os.Getenv("FLEETGATE_HELPER_URL")
	if url == "" {
		t.Skip("helper process for the benchmarks")
	}
	n, _ := strconv.Atoi(os.Getenv("FLEETGATE_HELPER_N"))
	var mu sync.Mutex
	w := bufio.NewWriter(os.Stdout)
	// A notification's line is buffered and written by one flusher, many
	// lines a write: the time is taken when the notification is read,
	// and a write and a wake of the parent per notification would take
	// the two cores from the edges being measured.
	flush := make(chan struct{}, 1)
	go func() {
		for range flush {
			mu.Lock()
			w.Flush()
			mu.Unlock()
		}
	}()
	report := func(i int) {
		at := time.Now().UnixNano()
		mu.Lock()
		b := w.AvailableBuffer()
		b = strconv.AppendInt(b, int64(i), 10)
		b = strconv.AppendInt(append(b, ' '), at, 10)
		w.Write(append(b, '\n'))
		mu.Unlock()
		select {
		case flush <- struct{}{}:
		default: // a flush is due already
		}
	}
	open := openRawSession
	switch os.Getenv("FLEETGATE_BENCH_CLIENT") {
	case "sdk":
		open = func(url string, notified func()) (func(), error) { return openSDKSession(url, "2025-11-25", notified) }
	case "sdk-listen":
		open = func(url string, notified func()) (func(), error) { return openSDKSession(url, "", notified) }
	case "listen":
		open = openRawListen
	case "poll":
		p, err := newStreamPoller()
		if err != nil {
			t.Fatal(err)
		}
		open = p.openPolledSession
	}
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	closers := make([]func(), n)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c, err := open(url, func() { report(i) })
			if err != nil {
				fmt.Fprintln(os.Stderr, "client fleet:", err)
				os.Exit(1)
			}
			closers[i] = c
		})
	}
	wg.Wait()
	mu.Lock()
	fmt.Fprintln(w, "ready")
	w.Flush()
	mu.Unlock()
	profiling := startBenchProfile(fmt.Sprintf("client-%d", os.Getpid()))
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes stdin
	if profiling {
		pprof.StopCPUProfile()
	}
	for _, c := range closers {
		sem <- struct{}{}
		wg.Go(func() { defer func() { <-sem }(); c() })
	}
	wg.Wait()
}

// openSDKSession opens a go-sdk client session of protocol version ("":
// the go-sdk's default, 2026-07-28, whose list_changed rides a
// subscriptions/listen stream).
func openSDKSession(url, version string, notified func()) (func(), error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "fleet"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { notified() }})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, err
	}
	return func() { _ = cs.Close() }, nil
}

var rawHTTP = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

func openRawSession(url string, notified func()) (func(), error) {
	sid, err := initRawSession(url)
	if err != nil {
		return nil, err
	}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	// A GET stream holds its connection for good: not through rawHTTP's pool.
	get, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	if err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(get.Body)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "notifications/tools/list_changed") {
				notified()
			}
		}
	}()
	return func() {
		get.Body.Close()
		deleteRawSession(url, sid)
	}, nil
}

// initRawSession initializes a 2025-11-25 session on url with plain HTTP
// and returns its id.
func initRawSession(url string) (string, error) {
	post := func(sid, body string) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		return rawHTTP.Do(req)
	}
	resp, err := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fleet","version":"0"}}}`)
	if err != nil {
		return "", err
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if sid == "" {
		return "", fmt.Errorf("initialize: status %d", resp.StatusCode)
	}
	if resp, err = post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return "", err
	}
	resp.Body.Close()
	return sid, nil
}

// deleteRawSession ends session sid on url.
func deleteRawSession(url, sid string) {
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if resp, err := rawHTTP.Do(req); err == nil {
		resp.Body.Close()
	}
}

// openRawListen opens a 2026-07-28 subscriptions/listen stream for tools
// with plain HTTP and reads it line by line.
func openRawListen(url string, notified func()) (func(), error) {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(jsontest.ListenBody("1", `{"toolsListChanged":true}`)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	// A listen stream holds its connection for good: not through rawHTTP's pool.
	resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("subscriptions/listen: status %d", resp.StatusCode)
	}
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "notifications/tools/list_changed") {
				notified()
			}
		}
	}()
	return func() { resp.Body.Close() }, nil
}

// BenchmarkFanOut measures, with N idle sessions (FLEETGATE_BENCH_SESSIONS,
// default 1000) held by a child process, the time from an event's
// publication to each session's tools/list_changed: p50 and p99 over all
// sessions, and p50 and p99 of the last session per event.
func BenchmarkFanOut(b *testing.B) {
	n := benchSessions(b)
	f := newFleet(b)
	be := startBackend(b, "alpha", &demoOpts)
	f.healthyBackend("default", be)
	e := startEdge(b, f, &Options{Coalesce: time.Millisecond})
	cf := startClientFleet(b, e.MCPURL(), n)
	eventually(b, time.Minute, "sessions registered", func() bool { return len(e.Sessions()) >= n })
	var all, last []time.Duration
	up := true
	cpu := startCPUCount(cf)
	for b.Loop() {
		up = !up
		t0 := time.Now()
		f.health("default", "alpha", up)
		seen := make(map[int]bool, n)
		var worst time.Duration
		for len(seen) < n && cf.lines.Scan() {
			i, at, ok := parseNote(cf.lines.Bytes())
			if !ok {
				b.Fatalf("client fleet: %q", cf.lines.Text())
			}
			if seen[i] {
				b.Fatalf("client %d notified twice for one event", i)
			}
			seen[i] = true
			d := time.Unix(0, at).Sub(t0)
			all = append(all, d)
			worst = max(worst, d)
		}
		if len(seen) < n {
			b.Fatalf("client fleet ended: %v", cf.lines.Err())
		}
		last = append(last, worst)
	}
	cpu.report(b)
	reportFanOut(b, n, all, last)
}

// startBenchProfile starts a CPU profile, name.prof in the directory
// FLEETGATE_BENCH_PROF names, if it names one: the fan-out benchmarks
// profile the edges during the events only, and each client fleet from
// its sessions' start to the parent's end, to tell the edges' cost from
// the synthetic clients' on the same cores. It reports whether it did.
func startBenchProfile(name string) bool {
	dir := os.Getenv("FLEETGATE_BENCH_PROF")
	if dir == "" {
		return false
	}
	f, err := os.Create(filepath.Join(dir, name+".prof"))
	return err == nil && pprof.StartCPUProfile(f) == nil
}

// cpuCount is the CPU time this process (the edges, their NATS, the
// benchmark) and the client fleets' processes have used since it was
// started: on a shared machine the time until every session is told
// depends on the other jobs, the CPU time per event much less.
type cpuCount struct {
	fleets      []*clientFleet
	self, peers time.Duration
}

func startCPUCount(fleets ...*clientFleet) *cpuCount {
	c := &cpuCount{fleets: fleets}
	c.self, c.peers = c.now()
	return c
}

// now is the CPU time of this process and of the fleets (Linux: from
// /proc, in clock ticks; elsewhere 0).
func (c *cpuCount) now() (self, peers time.Duration) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for _, cf := range c.fleets {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cf.cmd.Process.Pid))
		if err != nil {
			continue
		}
		// The fields after the command's closing parenthesis: utime and
		// stime are the 12th and 13th.
		_, rest, _ := strings.Cut(string(stat), ") ")
		if f := strings.Fields(rest); len(f) > 12 {
			ut, _ := strconv.ParseInt(f[11], 10, 64)
			st, _ := strconv.ParseInt(f[12], 10, 64)
			peers += time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ 100
		}
	}
	return self, peers
}

// report reports the CPU time per event (per benchmark iteration) of the
// edges' process and of the client fleets.
func (c *cpuCount) report(b *testing.B) {
	self, peers := c.now()
	b.ReportMetric(float64((self-c.self).Microseconds())/1000/float64(b.N), "edges-cpu-ms/event")
	if len(c.fleets) > 0 {
		b.ReportMetric(float64((peers-c.peers).Microseconds())/1000/float64(b.N), "clients-cpu-ms/event")
	}
}

// parseNote parses a client fleet's line "<client> <unix nanos>".
func parseNote(line []byte) (i int, at int64, ok bool) {
	a, b, found := strings.Cut(string(line), " ")
	i, err1 := strconv.Atoi(a)
	at, err2 := strconv.ParseInt(b, 10, 64)
	return i, at, found && err1 == nil && err2 == nil
}

// demoOpts gives the fan-out and memory benchmarks a 20-tool backend.
var demoOpts = demobackendOptions(18)

// BenchmarkIdleSessionMemory reports the edge's heap and stack growth per
// idle session (each with its GET stream open), N sessions held by a child
// process, with a 20-tool view.
func BenchmarkIdleSessionMemory(b *testing.B) {
	n := benchSessions(b)
	f := newFleet(b)
	be := startBackend(b, "alpha", &demoOpts)
	f.healthyBackend("default", be)
	reportSessionMemory(b, startEdge(b, f, nil), n)
}

// reportSessionMemory opens n idle sessions on e from a child process,
// once per benchmark iteration, and reports the edge's heap and stack
// growth per session.
func reportSessionMemory(b *testing.B, e *Edge, n int) {
	var perSession float64
	for b.Loop() {
		before := memInUse()
		cf := startClientFleet(b, e.MCPURL(), n)
		eventually(b, time.Minute, "sessions registered", func() bool { return len(e.Sessions()) >= n })
		after := memInUse()
		perSession = float64(after-before) / float64(n)
		cf.stdin.Close()
		_ = cf.cmd.Wait()
		eventually(b, time.Minute, "sessions gone", func() bool { return len(e.Sessions()) == 0 })
	}
	b.ReportMetric(float64(n), "sessions")
	b.ReportMetric(perSession/1024, "KiB/session")
}

func memInUse() uint64 {
	var m runtime.MemStats
	for range 2 {
		runtime.GC()
	}
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

func demobackendOptions(extra int) demobackend.Options { return demobackend.Options{ExtraTools: extra} }

// text0 is res's first text content ("" without one).
func text0(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

// BenchmarkFanOutTwoEdges is BenchmarkFanOut with the N sessions split
// over two edges following one event log (each with its own client
// fleet): the time from an event's publication to each session's
// tools/list_changed, on whichever edge holds it.
func BenchmarkFanOutTwoEdges(b *testing.B) {
	n := benchSessions(b)
	f := newFleet(b)
	be := startBackend(b, "alpha", &demoOpts)
	f.healthyBackend("default", be)
	type note struct {
		i  int
		at int64
	}
	notes := make(chan note, 1024)
	var fleets []*clientFleet
	for k := range 2 {
		e := startEdge(b, f, &Options{Coalesce: time.Millisecond, CallTimeout: 10 * time.Second})
		cf := startClientFleet(b, e.MCPURL(), n/2)
		fleets = append(fleets, cf)
		eventually(b, time.Minute, "sessions registered", func() bool { return len(e.Sessions()) >= n/2 })
		go func() {
			for cf.lines.Scan() {
				if i, at, ok := parseNote(cf.lines.Bytes()); ok {
					notes <- note{k*n + i, at}
				}
			}
		}()
	}
	total := 2 * (n / 2)
	var all, last []time.Duration
	up := true
	if startBenchProfile("edges") {
		defer pprof.StopCPUProfile()
	}
	cpu := startCPUCount(fleets...)
	for b.Loop() {
		up = !up
		t0 := time.Now()
		f.health("default", "alpha", up)
		seen := make(map[int]bool, total)
		var worst time.Duration
		timeout := time.After(time.Minute)
		for len(seen) < total {
			select {
			case nt := <-notes:
				if seen[nt.i] {
					b.Fatalf("client %d notified twice for one event", nt.i)
				}
				seen[nt.i] = true
				d := time.Unix(0, nt.at).Sub(t0)
				all = append(all, d)
				worst = max(worst, d)
			case <-timeout:
				b.Fatalf("%d of %d sessions notified", len(seen), total)
			}
		}
		last = append(last, worst)
	}
	cpu.report(b)
	reportFanOut(b, total, all, last)
}

// reportFanOut reports a fan-out's figures: the sessions, p50 and p99 of
// every session's notification and of the last one per event.
func reportFanOut(b *testing.B, sessions int, all, last []time.Duration) {
	slices.Sort(all)
	slices.Sort(last)
	b.ReportMetric(float64(sessions), "sessions")
	b.ReportMetric(float64(percentile(all, 0.5).Microseconds())/1000, "each-p50-ms")
	b.ReportMetric(float64(percentile(all, 0.99).Microseconds())/1000, "each-p99-ms")
	b.ReportMetric(float64(percentile(last, 0.5).Microseconds())/1000, "last-p50-ms")
	b.ReportMetric(float64(percentile(last, 0.99).Microseconds())/1000, "last-p99-ms")
}
