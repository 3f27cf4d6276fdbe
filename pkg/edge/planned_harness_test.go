package edge

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/planner"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/policy"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// memorySource is a planner.Memory as the edge's source: nothing to run.
type memorySource struct{ *planner.Memory }

func (memorySource) Run(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// memoryEdge is an edge whose resync loop follows an in-memory source,
// run inside a synctest bubble: only the loop runs (no listener is
// served), and its sessions are the registry's, their streams in-memory
// pipes.
type memoryEdge struct {
	*Edge
	src   *planner.Memory
	fleet *memoryFleet
	net   *memNet // its listeners' network (serveMemoryEdge); nil if not served
}

// newMemoryEdge makes the edge of o over an in-memory source holding the
// fleet's first state, not yet caught up nor run.
func newMemoryEdge(t *testing.T, o *Options) *memoryEdge {
	t.Helper()
	opts := Options{}
	if o != nil {
		opts = *o
	}
	opts.Listen, opts.AdminListen = "127.0.0.1:0", "127.0.0.1:0"
	fl := &memoryFleet{backends: map[string]*events.Backend{}}
	src := planner.NewMemory(fl.next(nil))
	e, err := newEdge(&opts, func(*Edge) source { return memorySource{src} })
	if err != nil {
		t.Fatal(err)
	}
	return &memoryEdge{Edge: e, src: src, fleet: fl}
}

// startMemoryEdge makes the edge of o over an in-memory source holding
// the fleet's first state, runs its resync loop until the test ends, and
// waits for it to be ready. Call it inside a synctest bubble.
func startMemoryEdge(t *testing.T, o *Options) *memoryEdge {
	t.Helper()
	m := newMemoryEdge(t, o)
	e := m.Edge
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		_ = e.loop.Run(ctx)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		e.mcpLn.Close()
		e.adminLn.Close()
		e.calls.Close()
		e.hj.Wait()
	})
	m.catchUp(t)
	return m
}

// catchUp marks m's source caught up and waits for the edge to be ready.
func (m *memoryEdge) catchUp(t *testing.T) {
	t.Helper()
	m.src.MarkCaughtUp()
	synctest.Wait()
	if !m.Ready() {
		t.Fatal("edge not ready once its source caught up")
	}
}

// up makes backend name advertisable with tools (none: its last ones;
// each "name" or "name:description")
// and publishes the state.
func (m *memoryEdge) up(name string, tools ...string) uint64 {
	return m.publish(m.withBackend(m.next(), name, true, tools))
}

// down makes backend name unadvertisable and publishes the state.
func (m *memoryEdge) down(name string) uint64 {
	return m.publish(m.withBackend(m.next(), name, false, nil))
}

// publishEvent makes st the source's state, noting ev (its event, of
// the edge's group) first, as the event log's reader does.
func (m *memoryEdge) publishEvent(st *events.State, ev *eventspb.Event) uint64 {
	ev.Generation = st.Generation
	m.onEvent("", ev)
	m.src.Set(st)
	return st.Generation
}

// upCatalog makes backend name advertisable with catalog c and publishes
// the state.
func (m *memoryEdge) upCatalog(name string, c *events.Catalog) uint64 {
	m.fleet.backends[name] = &events.Backend{Catalog: c}
	return m.up(name)
}

// demoCatalog is the catalog a demo backend named name lists (tools,
// prompts and resources), listed over HTTP: call it outside the bubble.
func demoCatalog(t *testing.T, name string) *events.Catalog {
	t.Helper()
	return listCatalog(t, startBackend(t, name, nil))
}

// settle lets every batch due be applied: a window's time passes (the
// bubble's clock), and the loop is idle again.
func (m *memoryEdge) settle() {
	time.Sleep(m.opts.Coalesce + time.Millisecond)
	synctest.Wait()
}

// next is the state after the published one, sharing its groups and
// policy.
func (m *memoryEdge) next() *events.State { return m.fleet.next(m.src.State()) }

// publish makes st the source's state and returns its generation,
// noting its event (one of the edge's group, read now) first, as the
// event log's reader does.
func (m *memoryEdge) publish(st *events.State) uint64 {
	m.loop.Note(planner.Event{Generation: st.Generation, At: time.Now()})
	m.src.Set(st)
	return st.Generation
}

// withBackend gives st a new served group in which backend name is
// advertisable or not, with tools (nil: its last ones).
func (m *memoryEdge) withBackend(st *events.State, name string, adv bool, tools []string) *events.State {
	b := &events.Backend{Name: name, Group: "default", Status: "healthy", Advertisable: adv,
		Config: events.BackendConfig{URL: "http://" + name + ".test/mcp"}}
	if old := m.fleet.backends[name]; old != nil {
		b.Catalog = old.Catalog
		if old.Config.URL != "" { // its configuration as last published (headers, auth)
			b.Config = old.Config
		}
	}
	if tools != nil || b.Catalog == nil {
		c := &events.Catalog{Digest: name + fmt.Sprint(tools)}
		for _, n := range tools { // name, or name:description
			n, desc, _ := strings.Cut(n, ":")
			raw, _ := json.Marshal(map[string]any{"name": n, "description": desc, "inputSchema": map[string]string{"type": "object"}})
			c.Tools = append(c.Tools, raw)
		}
		b.Catalog = c
	}
	if !adv {
		b.Status = "unhealthy"
	}
	m.fleet.backends[name] = b
	st.Groups = maps.Clone(st.Groups)
	st.Groups["default"] = &events.Group{Name: "default", Backends: maps.Clone(m.fleet.backends)}
	return st
}

// otherGroup publishes a state that changes another group only (the
// served group's value shared, as events.State does).
func (m *memoryEdge) otherGroup() uint64 {
	st := m.next()
	st.Groups = maps.Clone(st.Groups)
	st.Groups["other"] = &events.Group{Name: "other", Backends: map[string]*events.Backend{}}
	m.src.Set(st) // an event of another group: not noted
	return st.Generation
}

// setPolicy publishes a state with the tool policy sec.
func (m *memoryEdge) setPolicy(sec *policy.Section) uint64 {
	st := m.next()
	st.Authorization = &events.Authorization{Section: sec, Generation: st.Generation}
	return m.publish(st)
}

// withPolicy gives st the tool policy of the section in JSON.
func withPolicy(t *testing.T, st *events.State, section string) *events.State {
	t.Helper()
	sec, err := policy.ParseJSON([]byte(section))
	if err != nil {
		t.Fatal(err)
	}
	st.Authorization = &events.Authorization{Section: sec, Generation: st.Generation}
	return st
}

// memoryFleet numbers the states of a memoryEdge.
type memoryFleet struct {
	backends map[string]*events.Backend
	gen      uint64
}

// next is the state after prev (nil: the first), sharing its groups and
// policy.
func (f *memoryFleet) next(prev *events.State) *events.State {
	f.gen++
	st := &events.State{Generation: f.gen, Groups: map[string]*events.Group{}}
	if prev != nil {
		st.Groups, st.Authorization = prev.Groups, prev.Authorization
	}
	return st
}

// listener is a session of a memoryEdge with its standalone stream open
// on an in-memory pipe: it counts the list_changed written to it by
// method.
type listener struct {
	s       *session.Session
	tools   atomic.Int64
	prompts atomic.Int64
}

// listen opens a session-based session on m with its stream attached.
func (m *memoryEdge) listen(t *testing.T, id string) *listener {
	t.Helper()
	s := m.reg.New(id, session.KindSession, "2025-11-25", "tester")
	// No go-sdk server here: it writes the kinds it listens to.
	s.Listen(session.PendingTools | session.PendingPrompts | session.PendingResources)
	m.reg.Open(s)
	server, client := net.Pipe()
	l := &listener{s: s}
	go func() {
		sc := bufio.NewScanner(client)
		for sc.Scan() {
			switch line := sc.Text(); {
			case strings.Contains(line, "notifications/tools/list_changed"):
				l.tools.Add(1)
			case strings.Contains(line, "notifications/prompts/list_changed"):
				l.prompts.Add(1)
			}
		}
	}()
	if !s.Attach(server, session.StreamHead(), nil) { // the reader above takes the head
		t.Fatal("stream not attached")
	}
	t.Cleanup(func() {
		client.Close()
		s.Close()
	})
	return l
}

// tools are the exposed tool names s lists now.
func (l *listener) toolNames() map[string]bool {
	names := map[string]bool{}
	for n := range l.s.Served().Tools {
		names[n] = true
	}
	return names
}

// sees reports whether the client of l may see tool under the policy in
// force (every tool without a subject).
func (m *memoryEdge) sees(l *listener, tool string) bool {
	sv := l.s.Served()
	if _, ok := sv.Tools[tool]; !ok {
		return false
	}
	sub := l.s.Subject()
	if sub == nil {
		return true
	}
	return m.calls.Visibility(m.calls.Policy(), *sub, sv.Items()).Allowed(policy.KindTool, tool)
}
