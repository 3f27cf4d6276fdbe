package calltrail

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// runTrail starts Run and returns a function that cancels it and returns
// its result.
func runTrail(t *testing.T, tr *Trail) func() error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tr.Run(ctx) }()
	return func() error {
		cancel()
		return <-done
	}
}

func TestTrailPublishesInOrder(t *testing.T) {
	for _, include := range []bool{false, true} {
		t.Run(map[bool]string{false: "arguments omitted", true: "arguments included"}[include], func(t *testing.T) {
			e := newEnv(t)
			reg := prometheus.NewRegistry()
			tr, err := Open(t.Context(), e.js, &Options{IncludeArguments: include, Registerer: reg})
			if err != nil {
				t.Fatal(err)
			}
			stop := runTrail(t, tr)
			const n = 200
			var want []Entry
			for i := range n {
				en := sample(i)
				if i%2 == 1 {
					en.Group = "blue.team"
				}
				tr.Record(en)
				if !include {
					en.Arguments = nil
				}
				// The session id is published as its hash only.
				en.SessionID, en.SessionHash = "", sessionstore.IDHash(en.SessionID)
				want = append(want, en)
			}
			got, subjects := e.read(t, DefaultStream, n)
			for i := range n {
				if !got[i].Time.Equal(want[i].Time) {
					t.Fatalf("entry %d: time %v, want %v", i, got[i].Time, want[i].Time)
				}
				got[i].Time = want[i].Time
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Fatalf("entry %d:\n got %+v\nwant %+v", i, got[i], want[i])
				}
				wantSubj := map[bool]string{false: "fleetgate.calls.default", true: "fleetgate.calls.blue_team"}[i%2 == 1]
				if subjects[i] != wantSubj {
					t.Fatalf("entry %d on %s, want %s", i, subjects[i], wantSubj)
				}
			}
			if err := stop(); err != nil {
				t.Fatalf("Run: %v", err)
			}
			if s := tr.Stats(); s.Published != n || s.Dropped+s.Failed+s.Abandoned != 0 || s.Queued != 0 {
				t.Errorf("stats %+v", s)
			}
			if c := counter(t, reg, "fleetgate_calltrail_published_total", ""); c != n {
				t.Errorf("published_total %v", c)
			}
			raw, _ := json.Marshal(got[0])
			if strings.Contains(string(raw), `"arguments"`) != include {
				t.Errorf("arguments in %s: want %v", raw, include)
			}
		})
	}
}

func TestOpenStreamConfig(t *testing.T) {
	e := newEnv(t)
	if _, err := Open(t.Context(), e.js, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(t.Context(), e.js, &Options{Stream: "AUDIT", SubjectPrefix: "acme.audit", MaxAge: time.Hour, MaxBytes: -1}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		stream, subject string
		maxAge          time.Duration
		maxBytes        int64
	}{
		{DefaultStream, "fleetgate.calls.>", 7 * 24 * time.Hour, 256 << 20},
		{"AUDIT", "acme.audit.>", time.Hour, -1},
	} {
		st, err := e.js.Stream(t.Context(), tc.stream)
		if err != nil {
			t.Fatal(err)
		}
		c := st.CachedInfo().Config
		if c.Retention != jetstream.LimitsPolicy || c.Discard != jetstream.DiscardOld || c.Replicas != 1 ||
			!reflect.DeepEqual(c.Subjects, []string{tc.subject}) || c.MaxAge != tc.maxAge || c.MaxBytes != tc.maxBytes {
			t.Errorf("stream %s config %+v", tc.stream, c)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name string
		o    *Options
		is   error  // errors.Is target, or nil
		text string // substring of the error
	}{
		{"wildcard prefix", &Options{SubjectPrefix: "calls.*"}, ErrOptions, `"calls.*"`},
		{"empty token", &Options{SubjectPrefix: "calls..x"}, ErrOptions, `"calls..x"`},
		{"negative replicas", &Options{Replicas: -1}, ErrOptions, "replicas -1"},
		{"replicas beyond the cluster", &Options{Stream: "R3", SubjectPrefix: "r3", Replicas: 3}, nil, "open stream R3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(t.Context(), e.js, tc.o)
			if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("err = %v, want %v containing %q", err, tc.is, tc.text)
			}
		})
	}
	reg := prometheus.NewRegistry()
	if _, err := Open(t.Context(), e.js, &Options{Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	var are prometheus.AlreadyRegisteredError
	if _, err := Open(t.Context(), e.js, &Options{Registerer: reg}); !errors.As(err, &are) {
		t.Errorf("second Open on one registry: %v, want AlreadyRegisteredError", err)
	}
}

// TestRecordQueueFull saturates the queue with no Run: every Record
// returns, the overflow is counted, and a later Run drains what was queued.
func TestRecordQueueFull(t *testing.T) {
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	tr, err := Open(t.Context(), e.js, &Options{QueueSize: 64, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	const n = 100_000
	for i := range n {
		tr.Record(sample(i))
	}
	s := tr.Stats()
	if s.Dropped != n-64 || s.Queued != 64 {
		t.Fatalf("stats %+v, want %d dropped and 64 queued", s, n-64)
	}
	if c := counter(t, reg, "fleetgate_calltrail_dropped_total", ReasonQueueFull); c != n-64 {
		t.Errorf("dropped_total{queue_full} = %v", c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Run drains at once
	if err := tr.Run(ctx); err != nil {
		t.Fatal(err)
	}
	got, _ := e.read(t, DefaultStream, 64)
	for i, en := range got {
		if en.Generation != uint64(40+i) {
			t.Fatalf("entry %d has generation %d: not the first 64 in order", i, en.Generation)
		}
	}
	if s := tr.Stats(); s.Published != 64 || s.Queued != 0 {
		t.Errorf("after drain: %+v", s)
	}
}

// TestServerStopped records while the NATS server is down: Record stays
// non-blocking, Run gives up at the drain deadline, and every entry is
// accounted for.
func TestServerStopped(t *testing.T) {
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	tr, err := Open(t.Context(), e.js, &Options{QueueSize: 64, AckTimeout: time.Hour, DrainTimeout: 100 * time.Millisecond, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	stop := runTrail(t, tr)
	e.node.Shutdown()
	const n = 100_000
	for i := range n {
		tr.Record(sample(i))
	}
	if s := tr.Stats(); s.Dropped == 0 {
		t.Errorf("no entry dropped with the server down: %+v", s)
	}
	if err := stop(); err != nil && !errors.Is(err, ErrDrainIncomplete) {
		t.Fatalf("Run: %v", err)
	}
	s := tr.Stats()
	if s.Published+s.Dropped+s.Failed+s.Abandoned != n || s.Queued != 0 {
		t.Errorf("stats %+v do not account for %d entries", s, n)
	}
	lost := counter(t, reg, "fleetgate_calltrail_dropped_total", ReasonQueueFull) +
		counter(t, reg, "fleetgate_calltrail_dropped_total", ReasonPublishError) +
		counter(t, reg, "fleetgate_calltrail_dropped_total", ReasonShutdown)
	if uint64(lost) != s.Dropped+s.Failed+s.Abandoned {
		t.Errorf("dropped_total sums to %v, stats %+v", lost, s)
	}
}

func TestRunTwice(t *testing.T) {
	e := newEnv(t)
	tr, err := Open(t.Context(), e.js, nil)
	if err != nil {
		t.Fatal(err)
	}
	stop := runTrail(t, tr)
	for !tr.running.Load() {
		runtime.Gosched()
	}
	if err := tr.Run(t.Context()); !errors.Is(err, ErrRunning) {
		t.Errorf("second Run: %v, want ErrRunning", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestArgumentLimit(t *testing.T) {
	e := newEnv(t)
	tr, err := Open(t.Context(), e.js, &Options{IncludeArguments: true, MaxArgumentBytes: 20})
	if err != nil {
		t.Fatal(err)
	}
	small, big := sample(0), sample(1)
	big.Arguments = json.RawMessage(`{"text":"` + strings.Repeat("x", 100) + `"}`)
	tr.Record(small)
	tr.Record(big)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := tr.Run(ctx); err != nil {
		t.Fatal(err)
	}
	got, _ := e.read(t, DefaultStream, 2)
	if string(got[0].Arguments) != string(small.Arguments) || got[0].ArgumentsOmitted {
		t.Errorf("small arguments: %s omitted=%v", got[0].Arguments, got[0].ArgumentsOmitted)
	}
	if got[1].Arguments != nil || !got[1].ArgumentsOmitted {
		t.Errorf("big arguments: %s omitted=%v", got[1].Arguments, got[1].ArgumentsOmitted)
	}
}

func TestSubject(t *testing.T) {
	for _, tc := range []struct{ group, want string }{
		{"default", "fleetgate.calls.default"},
		{"", "fleetgate.calls._"},
		{"a.b", "fleetgate.calls.a_b"},
		{"x*>y z", "fleetgate.calls.x__y_z"},
	} {
		if got := subject(DefaultSubjectPrefix, tc.group); got != tc.want {
			t.Errorf("subject(%q) = %q, want %q", tc.group, got, tc.want)
		}
	}
	for p, want := range map[string]bool{"a": true, "a.b-c": true, "": false, "a.": false, ".a": false, "a.>": false, "a b": false} {
		if validPrefix(p) != want {
			t.Errorf("validPrefix(%q) = %v", p, !want)
		}
	}
}

// An entry recorded while Run lingers after a publish waits for the
// linger to end, and is then published; the first is not held back.
func TestLinger(t *testing.T) {
	e := newEnv(t)
	const linger = 300 * time.Millisecond
	tr, err := Open(t.Context(), e.js, &Options{Linger: linger})
	if err != nil {
		t.Fatal(err)
	}
	stop := runTrail(t, tr)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	published := func(n uint64) bool { return tr.Stats().Published == n }
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: stats %+v", what, tr.Stats())
			}
		}
	}
	start := time.Now()
	tr.Record(sample(0))
	waitFor("first entry published", func() bool { return published(1) })
	if d := time.Since(start); d >= linger {
		t.Fatalf("the first entry was published after %v: held back by the linger (%v)", d, linger)
	}
	tr.Record(sample(1))
	tr.Record(sample(2))
	waitFor("the others published", func() bool { return published(3) })
	if d := time.Since(start); d < linger {
		t.Fatalf("entries recorded while lingering published after %v, before the linger (%v) ended", d, linger)
	}
	got, _ := e.read(t, DefaultStream, 3)
	for i, en := range got {
		if want := sample(i); en.Tool != want.Tool || !en.Time.Equal(want.Time) {
			t.Fatalf("entry %d: %+v, want %+v", i, en, want)
		}
	}
}
