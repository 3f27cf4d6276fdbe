// Package chaos is fleetgate's fault-injection suite: backends follow a
// seeded schedule of kills, restarts, hangs and tool changes while the
// controllers, edges and NATS nodes under them are killed, frozen and
// restarted; afterwards the audit log is compared with what really
// happened and every session must have converged.
package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
)

// Health settings of the fleet under test, and the detection bound they
// give: a backend's change is seen within interval*unhealthy_after+timeout.
const (
	probeInterval  = 500 * time.Millisecond
	probeTimeout   = 400 * time.Millisecond
	unhealthyAfter = 2
	detectBound    = probeInterval*unhealthyAfter + probeTimeout // 1.4 s
	leaseTTL       = time.Second
	// minHold is how long every scripted backend state lasts at least:
	// the detection bound plus a failover (2x the lease TTL) plus margin,
	// so every scripted transition must reach the log.
	minHold = 4 * time.Second
	step    = time.Second
	// cutFor is how long the leading controller is cut off NATS.
	cutFor = 30 * time.Second
)

func env(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestChaos runs the whole suite; FLEETGATE_CHAOS=1 enables it (make
// chaos), FLEETGATE_CHAOS_SEED picks the schedule, FLEETGATE_CHAOS_SESSIONS
// the number of client sessions.
func TestChaos(t *testing.T) {
	if os.Getenv("FLEETGATE_CHAOS") == "" {
		t.Skip("set FLEETGATE_CHAOS=1 (make chaos)")
	}
	seed := uint64(env("FLEETGATE_CHAOS_SEED", 16))
	nSessions := env("FLEETGATE_CHAOS_SESSIONS", 500)
	steps := env("FLEETGATE_CHAOS_STEPS", 86) // the NATS cut (steps 50 to 80) ends before the last steps
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	built := time.Now()
	ctlBin, edgeBin := bins(t)
	t.Logf("fleet binaries built in %s", time.Since(built).Round(time.Millisecond))

	t0 := time.Now()
	// Registered first, so it runs after every other cleanup.
	t.Cleanup(func() { t.Logf("cleanup done %s after the start", time.Since(t0).Round(time.Millisecond)) })
	cluster := startCluster(t, 3)
	urls := natsURLs(cluster.addrs())

	backends := make([]*demobackend.Backend, 3)
	var yaml string
	yaml = "groups:\n  - name: default\n    backends:\n"
	for i := range backends {
		b := demobackend.New(fmt.Sprintf("b%d", i), &demobackend.Options{NewProtocol: true})
		if err := b.Start("127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Stop)
		backends[i] = b
		yaml += fmt.Sprintf("      - name: %s\n        url: %s\n", b.Name(), b.URL())
	}
	yaml += fmt.Sprintf("health:\n  interval: %s\n  timeout: %s\n  unhealthy_after: %d\n  debounce: 100ms\n", probeInterval, probeTimeout, unhealthyAfter)
	cfg := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}

	// Each controller reaches NATS through proxies of its own (one per
	// node), which the schedule can cut.
	ctls := make([]*proc, 2)
	ctlNATS := make([][]*switchProxy, 2)
	for i := range ctls {
		admin := freeAddr(t)
		id := fmt.Sprintf("ctl-%c", 'a'+i)
		var via []string
		for _, a := range cluster.addrs() {
			sp := newSwitchProxy(t, a)
			ctlNATS[i] = append(ctlNATS[i], sp)
			via = append(via, sp.addr())
		}
		ctls[i] = newProc(t, id, ctlBin, admin, "--config", cfg, "--nats-url", natsURLs(via), "--id", id, "--admin-listen", admin,
			"--data-dir", t.TempDir(), "--lease-ttl", leaseTTL.String(), "--replicas", "3", "--log-format", "json")
		ctls[i].start()
		if i == 0 && !poll(ctx, 30*time.Second, ctls[0].leading) {
			t.Fatal("ctl-a does not lead")
		}
	}
	leader := func() *proc {
		for _, c := range ctls {
			if c.leading() {
				return c
			}
		}
		return nil
	}

	edges := make([]*proc, 2)
	listens := make([]string, 2)
	for i := range edges {
		admin := freeAddr(t)
		listens[i] = freeAddr(t)
		id := fmt.Sprintf("edge-%d", i+1)
		edges[i] = newProc(t, id, edgeBin, admin, "--nats-url", urls, "--listen", listens[i], "--admin-listen", admin,
			"--id", id, "--call-timeout", "3s", "--log-format", "json")
		edges[i].start()
	}
	for _, e := range edges {
		if !poll(ctx, 30*time.Second, e.ready) {
			t.Fatalf("%s not ready", e.name)
		}
	}
	proxies := []*switchProxy{newSwitchProxy(t, listens[0]), newSwitchProxy(t, listens[1])}
	if _, ok := waitView(ctx, leader, 6, 30*time.Second); !ok {
		t.Fatal("the controller's view never had every backend's tools")
	}

	surv := &survivors{backends: backends, edges: edges, ctls: ctls, proxies: proxies, cluster: cluster}
	for _, sps := range ctlNATS {
		surv.proxies = append(surv.proxies, sps...)
	}
	surv.baseline = figuresOf(t, ctx, edges)
	if ctlFigures := figuresOf(t, ctx, ctls); ctls[0].leading() {
		surv.ctlBaseline.leading, surv.ctlBaseline.standby = ctlFigures[0], ctlFigures[1]
	} else {
		t.Fatal("ctl-a lost the lead before the schedule")
	}
	t.Logf("fleet up %s after the start", time.Since(t0).Round(time.Millisecond))
	started := time.Now()
	clients := connectAll(t, ctx, proxies, nSessions)
	t.Logf("%d sessions connected in %s", len(clients), time.Since(started).Round(time.Millisecond))
	surv.clients = clients
	load := startLoad(ctx, clients, 4)

	gt := &groundTruth{start: time.Now()}
	stopWatch := watchLeader(gt, ctls)
	sched := newSchedule(seed, backends, gt)
	surv.sched = sched
	faults := map[int]func(){
		6: func() {
			gt.fault("SIGSTOP " + mustLeader(t, leader).name)
			mustLeader(t, leader).signal(syscall.SIGSTOP)
		},
		12: func() {
			gt.fault("SIGCONT all controllers")
			ctls[0].signal(syscall.SIGCONT)
			ctls[1].signal(syscall.SIGCONT)
		},
		18: func() { killStreamLeader(t, gt, cluster) },
		30: func() {
			gt.fault("kill -9 edge-1; its proxy switches to edge-2")
			edges[0].kill()
			proxies[0].switchTo(listens[1])
		},
		36: func() { gt.fault("restart edge-1"); edges[0].start() },
		42: func() {
			l := mustLeader(t, leader)
			gt.fault("kill -9 leader " + l.name)
			l.kill()
			sched.restart = l
		},
		46: func() { gt.fault("restart " + sched.restart.name + " (same id)"); sched.restart.start() },
		50: func() {
			l := mustLeader(t, leader)
			i := slices.Index(ctls, l)
			gt.fault(fmt.Sprintf("cut %s off NATS for %s", l.name, cutFor))
			for _, sp := range ctlNATS[i] {
				sp.switchTo("")
			}
			time.AfterFunc(cutFor, func() {
				gt.fault("reconnect " + l.name + " to NATS")
				for k, sp := range ctlNATS[i] {
					sp.switchTo(cluster.addrs()[k])
				}
			})
		},
	}
	for i := range steps {
		if f := faults[i]; f != nil {
			f()
		}
		sched.step()
		time.Sleep(step) // the schedule's clock: what happens is recorded, not assumed
	}
	sched.settle() // hold the last states long enough to be detected
	stopWatch()
	load.stop()
	scheduleEnd := time.Now()
	surv.loaded = figuresOf(t, ctx, edges)

	t.Logf("schedule done at %s", time.Since(gt.start).Round(time.Millisecond))
	// Checks.
	if !poll(ctx, 20*time.Second, func() bool { return leader() != nil }) {
		t.Fatal("no controller leads after the schedule")
	}
	audit := auditExport(t, ctlBin, urls)
	rep := checkAudit(t, gt, audit)
	t.Logf("audit checked at %s", time.Since(gt.start).Round(time.Millisecond))
	conv := checkConvergence(t, ctx, leader, edges, clients, scheduleEnd, 60*time.Second)
	t.Logf("convergence checked at %s", time.Since(gt.start).Round(time.Millisecond))
	calls := load.result()
	if calls.hung > 0 {
		t.Errorf("%d calls did not return within their bound", calls.hung)
	}
	for _, f := range gt.faults {
		t.Logf("fault at %6.2fs: %s", f.at.Sub(gt.start).Seconds(), f.what)
	}
	slowestDetect := time.Duration(0)
	for _, d := range rep.delays {
		slowestDetect = max(slowestDetect, d)
	}
	if t.Failed() {
		for _, tr := range gt.trans {
			t.Logf("scripted at %6.2fs: %s %s %s %s", tr.at.Sub(gt.start).Seconds(), tr.backend, tr.kind, tr.how, tr.tool)
		}
		for _, e := range audit {
			if e.Health != nil {
				t.Logf("audit generation %d at %6.2fs: %s %s -> %s advertisable %v (%s)", e.Generation, e.Time.Sub(gt.start).Seconds(),
					e.Backend, e.Health.From, e.Health.To, e.Health.Advertisable, e.Health.Reason)
			}
		}
	}
	protos := map[string]int{}
	for _, c := range clients {
		if r := c.cs.InitializeResult(); r != nil {
			protos[r.ProtocolVersion]++
		}
	}
	line := fmt.Sprintf("chaos seed=%d: transitions injected %d, in the audit %d, lost %d, duplicated %d, extra %d, slowest health detection %s; generations %d (reused %d, gaps %d); faults %d; sessions %d (2025-11-25 %d, 2026-07-28 %d), converged %d, slowest convergence %s; calls ok %d, errors %d, hung %d (slowest %s)",
		seed, rep.injected, rep.matched, rep.lost, rep.duplicated, rep.extra, slowestDetect.Round(time.Millisecond), rep.generations, rep.reused, rep.gaps, len(gt.faults),
		len(clients), protos["2025-11-25"], protos["2026-07-28"], conv.converged, conv.slowest.Round(time.Millisecond), calls.ok, calls.errors, calls.hung, calls.slowest.Round(time.Millisecond))
	fmt.Println(line)
	if rep.lost+rep.duplicated+rep.reused+rep.gaps > 0 || conv.converged != len(clients) {
		t.Error("the fleet lost, duplicated or did not converge: " + line)
	}
	shutStart := time.Now()
	fmt.Println(surv.shutDown(t))
	t.Logf("survivors shut down in %s", time.Since(shutStart).Round(time.Millisecond))
}

func mustLeader(t *testing.T, leader func() *proc) *proc {
	var l *proc
	if !poll(context.Background(), 10*time.Second, func() bool { l = leader(); return l != nil }) {
		t.Fatal("no leader")
	}
	return l
}

// killStreamLeader shuts down the node leading the event stream and
// restarts it 6 s later.
func killStreamLeader(t *testing.T, gt *groundTruth, c *cluster) {
	i := c.streamLeader()
	if i < 0 {
		t.Fatal("no stream leader")
	}
	gt.fault("kill NATS stream leader " + c.opts[i].ServerName)
	c.stop(i)
	time.AfterFunc(6*time.Second, func() {
		gt.fault("restart NATS node " + c.opts[i].ServerName)
		c.start(t, i)
	})
}

// rng is the schedule's seeded source.
func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x16)) }

// watchLeader records every change of the leading controller (as the
// controllers' admin APIs report it, polled every 100 ms) among the faults,
// so that the output shows each takeover and how long it took.
func watchLeader(gt *groundTruth, ctls []*proc) (stop func()) {
	quick := &http.Client{Timeout: 300 * time.Millisecond}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		last := "?"
		for {
			now := "none"
			for _, c := range ctls {
				var st struct {
					Leader bool `json:"leader"`
				}
				resp, err := quick.Get(c.admin + "/v1/state")
				if err != nil {
					continue
				}
				err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&st)
				resp.Body.Close()
				if err == nil && st.Leader {
					now = c.name
				}
			}
			if now != last {
				gt.fault("observed: leader " + now)
				last = now
			}
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() { close(done); <-finished; quick.CloseIdleConnections() }
}
