package edgestatus

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fleetgate/fleetgate/pkg/natsnode"
	"github.com/fleetgate/fleetgate/pkg/stdio"
)

func TestDecodeRecord(t *testing.T) {
	at := time.Date(2026, 12, 5, 18, 0, 0, 0, time.UTC)
	good := FromStdio("edge-a", at, []stdio.Status{{Backend: "notes", Command: "notes", State: "running", PID: 42, Since: at}})
	b, err := good.Encode()
	if err != nil {
		t.Fatal(err)
	}
	r, err := DecodeRecord("edge-a", b)
	if err != nil || r.Edge != "edge-a" || len(r.Stdio) != 1 || r.Stdio[0] != good.Stdio[0] {
		t.Fatalf("round trip: %+v %v", r, err)
	}
	dotted := FromStdio("edge.a b", at, nil)
	db, _ := dotted.Encode()
	if _, err := DecodeRecord(Key("edge.a b"), db); err != nil || strings.ContainsAny(Key("edge.a b"), ". ") {
		t.Fatalf("an id that is no key token: key %q, %v", Key("edge.a b"), err)
	}
	many := `{"edge":"e","updated_at":"2026-12-05T18:00:00Z","stdio":[` + strings.Repeat(`{"backend":"b","command":"c","state":"running","restarts":0,"since":"2026-12-05T18:00:00Z"},`, MaxInstances) +
		`{"backend":"b","command":"c","state":"running","restarts":0,"since":"2026-12-05T18:00:00Z"}]}`
	for name, tc := range map[string]struct{ key, value string }{
		"another edge's key": {"edge-b", string(b)},
		"unknown member":     {"e", `{"edge":"e","updated_at":"2026-12-05T18:00:00Z","stdio":[],"env":"x"}`},
		"trailing data":      {"e", `{"edge":"e","updated_at":"2026-12-05T18:00:00Z","stdio":[]} {}`},
		"too many":           {"e", many},
		"too deep":           {"e", `{"edge":"e","stdio":[{"backend":[[[[1]]]]}]}`},
		"long string":        {"e", `{"edge":"e","updated_at":"2026-12-05T18:00:00Z","stdio":[{"backend":"` + strings.Repeat("x", MaxString+1) + `"}]}`},
		"negative pid":       {"e", `{"edge":"e","updated_at":"2026-12-05T18:00:00Z","stdio":[{"backend":"b","pid":-1}]}`},
		"too big":            {"e", `{"edge":"e","pad":"` + strings.Repeat("x", MaxRecord) + `"}`},
		"not json":           {"e", `{"edge":`},
	} {
		if _, err := DecodeRecord(tc.key, []byte(tc.value)); !errors.Is(err, ErrRecord) {
			t.Errorf("%s: %v, want ErrRecord", name, err)
		}
	}
}

func FuzzDecodeRecord(f *testing.F) {
	b, _ := FromStdio("e", time.Unix(0, 0), []stdio.Status{{Backend: "notes", State: "running"}}).Encode()
	f.Add("e", b)
	f.Add("e", []byte(`{"edge":"e","stdio":[{}]}`))
	f.Fuzz(func(t *testing.T, key string, value []byte) {
		r, err := DecodeRecord(key, value)
		if err != nil {
			return
		}
		if len(r.Stdio) > MaxInstances || len(r.Edge) > MaxString || Key(r.Edge) != key {
			t.Fatalf("accepted out of bounds: %+v", r)
		}
		if _, err := r.Encode(); err != nil {
			t.Fatalf("a decoded record does not encode: %v", err)
		}
	})
}

// memStore is a Store in memory: the values put, in order.
type memStore struct {
	mu   sync.Mutex
	puts []Record
	fail bool
}

func (m *memStore) Put(_ context.Context, key string, value []byte) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail {
		return 0, errors.New("store down")
	}
	r, err := DecodeRecord(key, value)
	if err != nil {
		return 0, err
	}
	m.puts = append(m.puts, r)
	return uint64(len(m.puts)), nil
}

func (m *memStore) written() []Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Record(nil), m.puts...)
}

// The publisher writes at once, again as soon as a poll sees the status
// change, again after Refresh when nothing changed, and again at the next
// poll after a failed write; it returns when its context ends.
func TestPublisher(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &memStore{}
		var mu sync.Mutex
		status := []stdio.Status{{Backend: "notes", Command: "notes", State: "running", PID: 7}}
		p := &Publisher{Store: st, Edge: "edge-a", Poll: time.Second, Refresh: 30 * time.Second,
			Status: func() []stdio.Status { mu.Lock(); defer mu.Unlock(); return append([]stdio.Status(nil), status...) }}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- p.Run(ctx) }()
		synctest.Wait()
		if w := st.written(); len(w) != 1 || w[0].Stdio[0].PID != 7 {
			t.Fatalf("first write: %+v", w)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if n := len(st.written()); n != 1 {
			t.Fatalf("%d writes with nothing changed, want 1", n)
		}
		mu.Lock()
		status[0].State, status[0].PID, status[0].Restarts = "backoff", 0, 1
		mu.Unlock()
		time.Sleep(time.Second)
		synctest.Wait()
		if w := st.written(); len(w) != 2 || w[1].Stdio[0].State != "backoff" || w[1].Stdio[0].Restarts != 1 {
			t.Fatalf("after the change: %+v", w)
		}
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if n := len(st.written()); n != 3 {
			t.Fatalf("%d writes after the refresh period, want 3", n)
		}
		st.mu.Lock()
		st.fail = true
		st.mu.Unlock()
		mu.Lock()
		status[0].State = "running"
		mu.Unlock()
		time.Sleep(time.Second)
		synctest.Wait()
		st.mu.Lock()
		st.fail = false
		st.mu.Unlock()
		time.Sleep(time.Second)
		synctest.Wait()
		if w := st.written(); len(w) != 4 || w[3].Stdio[0].State != "running" {
			t.Fatalf("after a failed write: %+v", w)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// The bucket's name is the one the NATS permissions grant edges.
func TestBucketPermitted(t *testing.T) {
	if Bucket != natsnode.EdgeStatusBucket {
		t.Fatalf("bucket %q, permissions for %q", Bucket, natsnode.EdgeStatusBucket)
	}
}
