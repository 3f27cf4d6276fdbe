package session

import (
	"bufio"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/internal/h1"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// recordingObserver notes what the registry tells it.
type recordingObserver struct {
	mu     sync.Mutex
	events []string
}

func (o *recordingObserver) note(what string, s *Session) {
	o.mu.Lock()
	o.events = append(o.events, what+" "+s.ID())
	o.mu.Unlock()
}

func (o *recordingObserver) Signalled(s *Session)      { o.note("signalled", s) }
func (o *recordingObserver) StreamAttached(s *Session) { o.note("attached", s) }
func (o *recordingObserver) Forgotten(s *Session)      { o.note("forgotten", s) }
func (o *recordingObserver) IdleEnded(s *Session)      { o.note("idle", s) }

func (o *recordingObserver) seen() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(o.events, ", ")
}

// A session opened gets the current view; Swap returns it to be given the
// next; counts follow Open and Forget, per identity.
func TestRegistryOpenSwapForget(t *testing.T) {
	obs := &recordingObserver{}
	g := NewRegistry(&Options{Observer: obs})
	first := &view.Served{Gen: 1}
	if got := g.Swap(first); len(got) != 0 {
		t.Fatalf("swap on an empty registry returned %d sessions", len(got))
	}
	a := g.New("a", KindSession, "2025-11-25", "alice")
	g.Open(a)
	b := g.New("b", KindSession, "2025-11-25", "alice")
	g.Open(b)
	shared := g.New("", KindStateless, "2026-07-28", "")
	g.Open(shared)
	if a.Served() != first || shared.Served() != first {
		t.Fatal("opened sessions do not serve the current view")
	}
	if all, mine := g.Counts("alice"); all != 2 || mine != 2 {
		t.Fatalf("counts %d/%d, want 2/2 (the stateless server is not counted)", all, mine)
	}
	next := &view.Served{Gen: 2}
	if got := g.Swap(next); len(got) != 2 || g.Current() != next {
		t.Fatalf("swap returned %d sessions, current %v", len(got), g.Current().Gen)
	}
	g.Forget(a)
	g.Forget(a) // twice: counted once
	if all, mine := g.Counts("alice"); all != 1 || mine != 1 || g.Lookup("a") != nil || g.Lookup("b") != b {
		t.Fatalf("after forgetting a: counts %d/%d, lookup a %v", all, mine, g.Lookup("a"))
	}
	if got := obs.seen(); got != "forgotten a, forgotten a" {
		t.Fatalf("observer saw %q", got)
	}
}

// The sweep ends a session idle past the timeout at the time it is given,
// not one with its stream open, and tells the observer; a session not yet
// bound is never swept.
func TestRegistrySweepIdle(t *testing.T) {
	obs := &recordingObserver{}
	hj := &h1.Hijacks{}
	g := NewRegistry(&Options{Observer: obs, IdleTimeout: time.Minute, Hijacks: hj})
	t0 := time.Now()
	s := g.New("idle", KindListen, "2026-07-28", "") // no go-sdk server: live while its stream is attached
	s.Listen(PendingTools)
	s.Record().Create(sessionstore.Record{ID: "idle"}, t0)
	g.Open(s)
	server, client := net.Pipe()
	go func() { _, _ = io.Copy(io.Discard, client) }()
	if !s.Attach(server, StreamHead(), nil) {
		t.Fatal("stream not attached")
	}
	g.Sweep(t0.Add(time.Hour))
	if g.Lookup("idle") == nil {
		t.Fatal("an unbound session was swept")
	}
	g.Track(s) // bound: its stream is attached
	g.Sweep(t0.Add(time.Hour))
	if g.Lookup("idle") == nil {
		t.Fatal("a listen session was ended as idle (only sessions of KindSession idle)")
	}
	client.Close() // the stream ends, and with it the listen session
	hj.Wait()
	if g.Lookup("idle") != nil {
		t.Fatal("a listen session outlived its stream")
	}
	if got := obs.seen(); !strings.Contains(got, "forgotten idle") {
		t.Fatalf("observer saw %q", got)
	}
}

// A taken-over stream writes each owed kind once, with ids that go on, and
// tells the observer around the tools signal; a second stream is refused
// 409 and, once the registry is closed, a new one 503.
func TestStreamWritesOwedKinds(t *testing.T) {
	obs := &recordingObserver{}
	hj := &h1.Hijacks{}
	g := NewRegistry(&Options{Observer: obs, Hijacks: hj})
	s := g.New("s1", KindSession, "2025-11-25", "")
	s.Listen(PendingTools | PendingPrompts) // no go-sdk server here: it writes the kinds it listens to
	g.Open(s)
	server, client := net.Pipe()
	head := append(StreamHead(), Chunk([]byte(": ok\n\n"))...)
	lines := make(chan string, 64)
	go func() { // a client reading its stream
		defer close(lines)
		br := bufio.NewReader(client)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			lines <- line
		}
	}()
	readUntil := func(marker string) string {
		t.Helper()
		var b strings.Builder
		for !strings.Contains(b.String(), marker) {
			line, ok := <-lines
			if !ok {
				t.Fatalf("stream ended (so far %q)", b.String())
			}
			b.WriteString(line)
		}
		return b.String()
	}
	if !s.Attach(server, head, nil) {
		t.Fatal("stream not attached")
	}
	readUntil(": ok")
	sv := &view.Served{Gen: 1}
	g.Swap(sv)
	g.Confirm(5, nil) // a later state found sv current
	s.Apply(sv, view.Change{Tools: true, Prompts: true}, time.Now())
	got := readUntil("prompts/list_changed")
	if !strings.Contains(got, "id: "+Epoch()+"-1\n") || !strings.Contains(got, ToolsChanged) ||
		!strings.Contains(got, "id: "+Epoch()+"-2\n") {
		t.Fatalf("stream wrote %q: want tools then prompts, ids 1 and 2", got)
	}
	if s.Pending() != 0 {
		t.Fatalf("pending %b after the writes", s.Pending())
	}
	if s.LastEvent() != 2 {
		t.Fatalf("last event %d, want 2", s.LastEvent())
	}
	// The session recorded the signal in its evidence itself, for the
	// generation the registry confirmed its view at.
	if c := s.Record().Convergence(); c.LastSignal.Generation != 5 || c.CurrentGeneration != 5 || c.LastSignal.At.IsZero() {
		t.Fatalf("evidence after the signal: last signal %+v, current generation %d; want both at 5",
			c.LastSignal, c.CurrentGeneration)
	}
	second, other := net.Pipe()
	go func() { _, _ = io.Copy(io.Discard, other) }()
	if s.Attach(second, head, nil) {
		t.Fatal("a second stream attached")
	}
	client.Close()
	hj.Wait()
	if s.Streaming() {
		t.Fatal("stream still attached after its client left")
	}
	g.Close()
	third, peer := net.Pipe()
	refusal := make(chan string, 1)
	go func() { b, _ := io.ReadAll(peer); refusal <- string(b) }()
	if s.Attach(third, head, nil) {
		t.Fatal("a stream attached after Close")
	}
	if r := <-refusal; !strings.HasPrefix(r, "HTTP/1.1 503") {
		t.Fatalf("refusal after Close: %q", r)
	}
	if got, want := obs.seen(), "attached s1, signalled s1"; got != want {
		t.Fatalf("observer saw %q, want %q", got, want)
	}
}

// The evidence of a served value names the state last confirmed while it
// is the one confirmed, and its own generation otherwise.
func TestRegistryEvidence(t *testing.T) {
	g := NewRegistry(nil)
	old := &view.Served{Gen: 3, Regions: map[string]uint64{"a": 3}}
	if gen, regions := g.Evidence(old); gen != 3 || regions["a"] != 3 {
		t.Fatalf("before any confirmation: %d %v; want the value's own", gen, regions)
	}
	g.Swap(old)
	g.Confirm(7, map[string]uint64{"a": 5, "b": 2})
	if gen, regions := g.Evidence(old); gen != 7 || regions["b"] != 2 {
		t.Fatalf("confirmed: %d %v; want 7 and the confirmed vector", gen, regions)
	}
	next := &view.Served{Gen: 8}
	g.Swap(next) // not confirmed yet: each value names its own
	if gen, _ := g.Evidence(next); gen != 8 {
		t.Fatalf("new value before its confirmation: %d; want 8", gen)
	}
	if gen, regions := g.Evidence(old); gen != 3 || regions["b"] != 0 {
		t.Fatalf("old value once replaced: %d %v; want its own", gen, regions)
	}
	if gen, _ := g.Confirmed(); gen != 7 {
		t.Fatalf("Confirmed %d; want 7", gen)
	}
}
