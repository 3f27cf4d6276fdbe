package chaos

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
)

// transition is one change the test caused to a backend.
type transition struct {
	// at is when the test began to cause the change: read before the
	// call that makes it, so that nothing the change causes can be
	// stamped earlier. (Read after the call, it could be: closing a
	// server's connections wakes the controller's probe, which may
	// publish its event before the test's goroutine runs again.)
	at      time.Time
	backend string
	kind    string // "down" (kill or hang), "up" (restart or unhang), "tools"
	how     string
	tool    string // for "tools": the tool added or removed
	added   bool
}

type fault struct {
	at   time.Time
	what string
}

// groundTruth records every transition and fault the test caused, and when.
type groundTruth struct {
	mu     sync.Mutex
	start  time.Time
	trans  []transition
	faults []fault
}

// record adds tr, whose at the caller read before causing it.
func (g *groundTruth) record(tr transition) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.trans = append(g.trans, tr)
}

func (g *groundTruth) fault(what string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.faults = append(g.faults, fault{at: time.Now(), what: what})
}

// schedule drives the backends: each step it picks, with its seeded
// source, one backend whose state has held at least minHold and changes
// it: an up backend is killed, hung, or gets a tool added or removed; a
// down one is restarted or unhung.
type schedule struct {
	r        *rand.Rand
	backends []*demobackend.Backend
	gt       *groundTruth
	state    []string // "up", "killed", "hung"
	since    []time.Time
	extra    []map[string]bool
	n        int
	restart  *proc
}

func newSchedule(seed uint64, bs []*demobackend.Backend, gt *groundTruth) *schedule {
	s := &schedule{r: rng(seed), backends: bs, gt: gt}
	for range bs {
		s.state = append(s.state, "up")
		s.since = append(s.since, time.Now())
		s.extra = append(s.extra, map[string]bool{})
	}
	return s
}

func (s *schedule) step() {
	var ready []int
	for i := range s.backends {
		if time.Since(s.since[i]) >= minHold {
			ready = append(ready, i)
		}
	}
	if len(ready) == 0 {
		return
	}
	i := ready[s.r.IntN(len(ready))]
	b := s.backends[i]
	at := time.Now()
	switch s.state[i] {
	case "killed":
		if err := b.Restart(); err != nil {
			panic(fmt.Sprintf("restart %s: %v", b.Name(), err))
		}
		s.gt.record(transition{at: at, backend: b.Name(), kind: "up", how: "restart"})
		s.state[i] = "up"
	case "hung":
		b.SetHang(false)
		s.gt.record(transition{at: at, backend: b.Name(), kind: "up", how: "unhang"})
		s.state[i] = "up"
	default:
		switch s.r.IntN(4) {
		case 0:
			b.Stop()
			s.gt.record(transition{at: at, backend: b.Name(), kind: "down", how: "kill"})
			s.state[i] = "killed"
		case 1:
			b.SetHang(true)
			s.gt.record(transition{at: at, backend: b.Name(), kind: "down", how: "hang"})
			s.state[i] = "hung"
		default:
			s.toolChange(i, at)
		}
	}
	s.since[i] = time.Now()
}

// toolChange removes an added tool or adds a new one.
func (s *schedule) toolChange(i int, at time.Time) {
	b := s.backends[i]
	for name := range s.extra[i] {
		if s.r.IntN(2) == 0 {
			b.RemoveTools(name)
			delete(s.extra[i], name)
			s.gt.record(transition{at: at, backend: b.Name(), kind: "tools", how: "remove", tool: name})
			return
		}
	}
	s.n++
	name := fmt.Sprintf("extra%d", s.n)
	b.AddTool(&mcp.Tool{Name: name, Description: "added by the schedule", InputSchema: map[string]any{"type": "object"}})
	s.extra[i][name] = true
	s.gt.record(transition{at: at, backend: b.Name(), kind: "tools", how: "add", tool: name, added: true})
}

// settle waits until every backend's last state has held minHold.
func (s *schedule) settle() {
	for i := range s.backends {
		if d := minHold - time.Since(s.since[i]); d > 0 {
			time.Sleep(d)
		}
	}
}

// tools is the number of tools each backend serves now.
func (s *schedule) up(i int) bool { return s.state[i] == "up" }
