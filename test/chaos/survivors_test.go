package chaos

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
)

// goroutineSlack is how many goroutines more than at its baseline an edge
// may run once its sessions are gone: pooled keep-alive connections to
// the three backends (two goroutines each) and the admin requests of the
// check itself. A goroutine left per session would be hundreds.
const goroutineSlack = 20

// edgeFigures are a process's goroutines and, of an edge, its live
// sessions, from /metrics (go_goroutines, and fleetgate_edge_sessions
// summed over its kinds).
type edgeFigures struct {
	goroutines, sessions int
}

func (f edgeFigures) String() string {
	return fmt.Sprintf("%d goroutines, %d sessions", f.goroutines, f.sessions)
}

func readEdgeFigures(p *proc) (edgeFigures, error) {
	resp, err := httpc.Get(p.admin + "/metrics")
	if err != nil {
		return edgeFigures{}, fmt.Errorf("metrics of %s: %w", p.name, err)
	}
	defer resp.Body.Close()
	var f edgeFigures
	found := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 {
			continue
		}
		v, err := strconv.ParseFloat(fields[1], 64)
		if err != nil {
			continue
		}
		name, _, _ := strings.Cut(fields[0], "{")
		switch name {
		case "go_goroutines":
			f.goroutines, found = int(v), true
		case "fleetgate_edge_sessions":
			f.sessions += int(v)
		}
	}
	if err := sc.Err(); err != nil {
		return edgeFigures{}, fmt.Errorf("metrics of %s: %w", p.name, err)
	}
	if !found {
		return edgeFigures{}, fmt.Errorf("metrics of %s: no go_goroutines", p.name)
	}
	return f, nil
}

// figuresOf reads every edge's figures, polling while an edge does not
// answer.
func figuresOf(t *testing.T, ctx context.Context, edges []*proc) []edgeFigures {
	t.Helper()
	out := make([]edgeFigures, len(edges))
	for i, e := range edges {
		var err error
		if !poll(ctx, 10*time.Second, func() bool { out[i], err = readEdgeFigures(e); return err == nil }) {
			t.Fatalf("figures of %s: %v", e.name, err)
		}
	}
	return out
}

// survivors is everything of the fleet still running when the checks are
// done, shut down by shutDown in the order a careful operator would.
type survivors struct {
	backends []*demobackend.Backend
	sched    *schedule
	clients  []*client
	edges    []*proc
	ctls     []*proc
	proxies  []*switchProxy
	cluster  *cluster
	// baseline is each edge's figures before any session connected;
	// loaded is them at the schedule's end.
	baseline, loaded []edgeFigures
	// ctlBaseline is the goroutines of the leading and of the standby
	// controller before the schedule: every controller running at the end
	// (restarted ones too) is held to the baseline of the role it has
	// then, so that a prober, relay or watcher left behind by a change of
	// leader shows.
	ctlBaseline struct{ leading, standby edgeFigures }
}

// shutDown brings every backend back up, closes the client sessions,
// waits for each edge's sessions and goroutines to return to their
// baseline, stops the edges and controllers with SIGTERM (each must exit
// cleanly), then the proxies, NATS nodes and backends, and finally checks
// that no goroutine of the test process outlived them. It returns the
// line reporting the figures.
func (s *survivors) shutDown(t *testing.T) string {
	t.Helper()
	// A hung backend holds its requests' handlers until it is unhung, and
	// the baseline was taken with every backend up.
	s.sched.restore()
	closeClients(s.clients)
	http.DefaultTransport.(*http.Transport).CloseIdleConnections() // the clients' transport

	after := make([]edgeFigures, len(s.edges))
	var last error
	back := poll(t.Context(), 30*time.Second, func() bool {
		last = nil
		for i, e := range s.edges {
			f, err := readEdgeFigures(e)
			if err != nil {
				last = err
				return false
			}
			after[i] = f
			var listed []sessionJSON
			if err := getJSON(e.admin+"/v1/sessions", &listed); err != nil {
				last = err
				return false
			}
			if f.sessions != s.baseline[i].sessions || len(listed) != 0 || f.goroutines > s.baseline[i].goroutines+goroutineSlack {
				last = fmt.Errorf("%s: %s, %d listed (baseline %s)", e.name, f, len(listed), s.baseline[i])
				return false
			}
		}
		return true
	})
	if !back {
		t.Errorf("an edge did not return to its baseline within 30s after its sessions closed: %v", last)
	}
	ctlAfter := make([]string, len(s.ctls))
	back = poll(t.Context(), 30*time.Second, func() bool {
		last = nil
		for i, c := range s.ctls {
			f, err := readEdgeFigures(c)
			if err != nil {
				last = err
				return false
			}
			role, base := "standby", s.ctlBaseline.standby
			if c.leading() {
				role, base = "leading", s.ctlBaseline.leading
			}
			ctlAfter[i] = fmt.Sprintf("%s (%s) goroutines %d/%d", c.name, role, base.goroutines, f.goroutines)
			if f.goroutines > base.goroutines+goroutineSlack {
				last = fmt.Errorf("%s, %s: %d goroutines (baseline of the role %d)", c.name, role, f.goroutines, base.goroutines)
				return false
			}
		}
		return true
	})
	if !back {
		t.Errorf("a controller did not return to the goroutines of its role within 30s: %v", last)
	}
	var parts []string
	for i, e := range s.edges {
		parts = append(parts, fmt.Sprintf("%s goroutines %d/%d/%d sessions %d/%d/%d", e.name,
			s.baseline[i].goroutines, s.loaded[i].goroutines, after[i].goroutines,
			s.baseline[i].sessions, s.loaded[i].sessions, after[i].sessions))
	}
	parts = append(parts, ctlAfter...)

	var wg sync.WaitGroup
	for _, p := range append(append([]*proc(nil), s.edges...), s.ctls...) {
		wg.Go(func() {
			if err := p.terminate(20 * time.Second); err != nil {
				t.Errorf("surviving %v", err)
			}
		})
	}
	wg.Wait()
	for _, p := range append(append([]*proc(nil), s.edges...), s.ctls...) {
		if err := raceReports(p); err != nil {
			t.Error(err)
		}
	}
	httpc.CloseIdleConnections()
	for _, sp := range s.proxies {
		sp.close()
	}
	for i := range s.cluster.srvs {
		s.cluster.stop(i)
	}
	for _, b := range s.backends {
		b.Stop() // its MCP sessions too, as a killed process's
	}
	// No option ignores a library's goroutine: once the fleet is shut
	// down, none is left, and any would be a finding.
	if err := goleak.Find(); err != nil {
		t.Errorf("goroutines outlived the fleet: %v", err)
		parts = append(parts, "test process leaked goroutines")
	} else {
		parts = append(parts, "test process leaked 0 goroutines")
	}
	return "survivors (baseline/loaded/after): " + strings.Join(parts, "; ")
}

// raceReports fails if the race detector reported anything in the log
// of p (every run of it, the killed ones too, append to the one log).
func raceReports(p *proc) error {
	b, err := os.ReadFile(filepath.Join(p.logs, p.name+".log"))
	if err != nil {
		return fmt.Errorf("log of %s: %w", p.name, err)
	}
	if n := bytes.Count(b, []byte("WARNING: DATA RACE")); n > 0 {
		return fmt.Errorf("%s: %d data races in %s", p.name, n, filepath.Join(p.logs, p.name+".log"))
	}
	return nil
}

// restore restarts the killed backends and unhangs the hung ones. It is
// not a scripted transition: it comes after the audit was checked.
func (s *schedule) restore() {
	for i, b := range s.backends {
		switch s.state[i] {
		case "killed":
			if err := b.Restart(); err != nil {
				panic(fmt.Sprintf("restart %s: %v", b.Name(), err))
			}
		case "hung":
			b.SetHang(false)
		}
		s.state[i] = "up"
	}
}

// closeClients closes every session not closed yet.
func closeClients(clients []*client) {
	var wg sync.WaitGroup
	for _, c := range clients {
		if c == nil || c.closed {
			continue
		}
		c.closed = true
		wg.Go(func() { _ = c.cs.Close() })
	}
	wg.Wait()
}
