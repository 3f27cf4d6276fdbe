package signin

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/fleetgate/fleetgate/pkg/logtest"
)

// watchedKV is a bucket whose watches fail (the calls in fail, counted
// from 1) or deliver an empty content and stay open until ended; its
// Updates succeed (stallingKV).
type watchedKV struct {
	*stallingKV
	fail map[int]bool

	mu      sync.Mutex
	watches []time.Duration // when each WatchAll was called, since start
	start   time.Time
	open    chan jetstream.KeyValueEntry
}

func (w *watchedKV) WatchAll(context.Context, ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.watches = append(w.watches, time.Since(w.start))
	if w.fail[len(w.watches)] {
		return nil, errors.New("nats: timeout")
	}
	w.open = make(chan jetstream.KeyValueEntry, 1)
	w.open <- nil // the end of the (empty) initial content
	return watcher{w.open}, nil
}

// Get finds every record the manager holds (the writer's writes landed):
// a watch made again keeps them.
func (w *watchedKV) Get(_ context.Context, key string) (jetstream.KeyValueEntry, error) {
	return kvUpdate{key: key, rev: 4, op: jetstream.KeyValuePut}, nil
}

// end ends the open watch (as a consumer deleted under it).
func (w *watchedKV) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	close(w.open)
}

func (w *watchedKV) calls() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.watches...)
}

type watcher struct{ ch chan jetstream.KeyValueEntry }

func (w watcher) Updates() <-chan jetstream.KeyValueEntry { return w.ch }
func (watcher) Stop() error                               { return nil }

// bucketJS is a JetStream holding one bucket.
type bucketJS struct {
	jetstream.JetStream
	kv jetstream.KeyValue
}

func (b bucketJS) KeyValue(context.Context, string) (jetstream.KeyValue, error) { return b.kv, nil }

// A watch of the bucket that fails, or ends, is made again after a pause
// of 1 s doubling (up to 30 s), from 1 s again once one worked; each
// streak of failures is logged once; meanwhile the held tokens are still
// written, and Run returns only when its context ends.
func TestRunWatchesAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kv := &watchedKV{stallingKV: &stallingKV{}, fail: map[int]bool{1: true, 2: true, 3: true, 4: true}, start: time.Now()}
		logs := &logtest.Buffer{}
		m := heldManager(t, kv, 3, Options{JetStream: bucketJS{kv: kv}, Log: zerolog.New(logs)})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		time.Sleep(DefaultSaveRetry) // the writer's tick, the watch failing still
		synctest.Wait()
		m.mu.Lock()
		held := len(m.held)
		m.mu.Unlock()
		if kv.state() != 1 || held != 0 {
			t.Fatalf("while the watch fails: writes %d, held %d", kv.state(), held)
		}
		time.Sleep(5 * time.Second) // 15 s: the fifth watch works
		synctest.Wait()
		select {
		case <-m.Ready():
		default:
			t.Fatal("not ready once a watch worked")
		}
		kv.end()
		time.Sleep(time.Second)
		synctest.Wait()
		want := []time.Duration{0, time.Second, 3 * time.Second, 7 * time.Second, 15 * time.Second, 16 * time.Second}
		if got := kv.calls(); !slices.Equal(got, want) {
			t.Fatalf("watches at %v, want %v", got, want)
		}
		if n := strings.Count(logs.String(), "sign-in bucket not followed"); n != 2 {
			t.Fatalf("%d failure logs, want one per streak:\n%s", n, logs.String())
		}
		select {
		case err := <-done:
			t.Fatalf("Run returned before its context ended: %v", err)
		default:
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// The longest pause between two failed watches is watchRetryMax.
func TestRunWatchRetryBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fail := map[int]bool{}
		for i := range 9 {
			fail[i+1] = true
		}
		kv := &watchedKV{stallingKV: &stallingKV{}, fail: fail, start: time.Now()}
		m := Open(Options{JetStream: bucketJS{kv: kv}})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		s := time.Second
		want := []time.Duration{0, s, 3 * s, 7 * s, 15 * s, 31 * s, 61 * s, 91 * s, 121 * s, 151 * s}
		if got := kv.calls(); !slices.Equal(got, want) {
			t.Fatalf("watches at %v, want %v", got, want)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// endableKV is a real bucket whose watch the test ends (as a consumer
// lost under it), and whose watches after the first wait for gate.
type endableKV struct {
	jetstream.KeyValue
	gate chan struct{}

	mu      sync.Mutex
	n       int
	end     func()
	forward sync.WaitGroup
}

func (e *endableKV) WatchAll(ctx context.Context, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	e.mu.Lock()
	e.n++
	again := e.n > 1
	e.mu.Unlock()
	if again {
		<-e.gate
	}
	w, err := e.KeyValue.WatchAll(ctx, opts...)
	if err != nil {
		return nil, err
	}
	out, stop := make(chan jetstream.KeyValueEntry), make(chan struct{})
	end := sync.OnceFunc(func() { close(stop) })
	e.mu.Lock()
	e.end = end
	e.mu.Unlock()
	e.forward.Go(func() {
		defer close(out)
		defer func() { _ = w.Stop() }()
		for {
			select {
			case <-stop:
				return
			case u, ok := <-w.Updates():
				if !ok {
					return
				}
				select {
				case out <- u:
				case <-stop:
					return
				}
			}
		}
	})
	return endableWatcher{out, end}, nil
}

type endableWatcher struct {
	ch  chan jetstream.KeyValueEntry
	end func()
}

func (w endableWatcher) Updates() <-chan jetstream.KeyValueEntry { return w.ch }
func (w endableWatcher) Stop() error                             { w.end(); return nil }

// endWatch ends the open watch.
func (e *endableKV) endWatch() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.end()
}

// A sign-out made while the bucket's watch was down reaches the edge
// (its entry dropped, OnChange told) by the watch made again.
func TestRunWatchAgainBringsMissedChanges(t *testing.T) {
	f := newFleet(t, nil)
	real, err := f.a.bucket()
	if err != nil {
		t.Fatal(err)
	}
	kv := &endableKV{KeyValue: real, gate: make(chan struct{})}
	t.Cleanup(func() { f.cancel(); f.done.Wait(); kv.forward.Wait() })
	changed := make(chan string, 4)
	m := Open(Options{Key: f.key, JetStream: bucketJS{JetStream: f.js, kv: kv},
		OnChange: func(id, b string) { changed <- id + " " + b }})
	f.done.Add(1)
	go func() { defer f.done.Done(); _ = m.Run(f.ctx) }()
	<-m.Ready()
	ctx, k := context.Background(), KeyOf(alice, "docs")
	sealed, err := f.key.SealRecord(Record{Identity: alice, Backend: "docs", Refresh: "rt", ClientID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := real.Put(ctx, k, sealed); err != nil {
		t.Fatal(err)
	}
	if got := <-changed; got != alice+" docs" || !m.SignedIn(alice, "docs") {
		t.Fatalf("sign-in not followed: %q", got)
	}
	kv.endWatch()
	if err := real.Delete(ctx, k); err != nil { // while no watch runs
		t.Fatal(err)
	}
	close(kv.gate)
	select {
	case got := <-changed:
		if got != alice+" docs" || m.SignedIn(alice, "docs") {
			t.Fatalf("sign-out missed: %q, signed in %v", got, m.SignedIn(alice, "docs"))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the sign-out made while the watch was down not followed")
	}
}
