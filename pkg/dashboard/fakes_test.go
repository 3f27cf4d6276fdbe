package dashboard

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// fakeLog is a log and its follower in memory: append adds an event and
// signals the watchers.
type fakeLog struct {
	mu       sync.Mutex
	first    uint64
	evs      []events.EventJSON // generation first+i
	err      error              // returned by Events while set
	watchers map[chan struct{}]struct{}
}

func newFakeLog() *fakeLog { return &fakeLog{first: 1, watchers: map[chan struct{}]struct{}{}} }

func (l *fakeLog) last() uint64 { return l.first + uint64(len(l.evs)) - 1 }

func (l *fakeLog) append(kind, backend string, health *events.HealthChangeJSON) uint64 {
	l.mu.Lock()
	gen := l.last() + 1
	l.evs = append(l.evs, events.EventJSON{Generation: gen, Kind: kind, Group: "default", Backend: backend, Health: health,
		Time: time.Now().UTC()})
	for ch := range l.watchers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	l.mu.Unlock()
	return gen
}

// purge drops the events below gen.
func (l *fakeLog) purge(gen uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = l.evs[gen-l.first:]
	l.first = gen
}

func (l *fakeLog) setErr(err error) {
	l.mu.Lock()
	l.err = err
	l.mu.Unlock()
}

func (l *fakeLog) Watch() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	l.mu.Lock()
	l.watchers[ch] = struct{}{}
	l.mu.Unlock()
	return ch, func() {
		l.mu.Lock()
		delete(l.watchers, ch)
		l.mu.Unlock()
	}
}

func (l *fakeLog) State() *events.State {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := events.NewState()
	s.Generation = l.last()
	return s
}

func (l *fakeLog) Bounds(context.Context) (uint64, uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first, l.last(), nil
}

// Event answers a direct get; its events carry only their generation,
// kind and time, enough for ToJSON (a direct get of an event whose JSON
// has more is refused, so the dashboard falls back to Events).
func (l *fakeLog) Event(_ context.Context, gen uint64) (*eventspb.Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return nil, l.err
	}
	if gen < l.first {
		return nil, events.ErrPurged
	}
	if gen > l.last() {
		return nil, errors.New("no such event")
	}
	return nil, errors.New("fake: direct gets unsupported") // exercise the fallback
}

func (l *fakeLog) Events(_ context.Context, from uint64, limit int) ([]events.EventJSON, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return nil, l.err
	}
	if from < l.first {
		return nil, events.ErrPurged
	}
	var out []events.EventJSON
	for g := from; g <= l.last() && len(out) < limit; g++ {
		out = append(out, l.evs[g-l.first])
	}
	return out, nil
}

// sink is a ResponseWriter a test reads while the handler writes. With
// gate set, every Write waits for a value on it (a client that does not
// read).
type sink struct {
	mu   sync.Mutex
	hdr  http.Header
	code int
	buf  bytes.Buffer
	gate chan struct{}
}

func newSink() *sink { return &sink{hdr: http.Header{}} }

func (s *sink) Header() http.Header { return s.hdr }

func (s *sink) WriteHeader(code int) {
	s.mu.Lock()
	s.code = code
	s.mu.Unlock()
}

func (s *sink) Write(b []byte) (int, error) {
	if s.gate != nil {
		<-s.gate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.code == 0 {
		s.code = 200
	}
	return s.buf.Write(b)
}

func (s *sink) Flush() {}

func (s *sink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func (s *sink) status() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.code
}

// frames splits what was written into frames ("event: x\n...").
func (s *sink) frames() []string {
	var out []string
	for _, f := range strings.Split(s.String(), "\n\n") {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

func mustNew(t testing.TB, o *Options) *Dashboard {
	t.Helper()
	d, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
