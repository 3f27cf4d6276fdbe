package records

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
)

// The bucket watch delivers puts, deletes and purges in order from its
// start; when its consumer disappears (the server removed it) it starts a
// new one where the last left off, losing nothing; and it stops without
// deleting its consumer (an edge may not), which the server removes.
func TestBucketWatch(t *testing.T) {
	node := natstest.Start(t)
	js := natstest.JetStream(t, node.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "watched"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "before", []byte("not delivered")); err != nil {
		t.Fatal(err)
	}
	w := newBucketWatch(js, "watched", zerolog.Nop())
	w.heartbeat, w.retry = 100*time.Millisecond, 10*time.Millisecond
	var mu sync.Mutex
	var got []bucketUpdate
	wctx, stop := context.WithCancel(ctx)
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- w.run(wctx, started, func(u bucketUpdate) { mu.Lock(); got = append(got, u); mu.Unlock() })
	}()
	<-started
	seen := func(n int) []bucketUpdate {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			mu.Lock()
			out := append([]bucketUpdate(nil), got...)
			mu.Unlock()
			if len(out) >= n {
				return out
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d updates, want %d: %+v", len(out), n, out)
			}
		}
	}
	consumer := func() string {
		t.Helper()
		st, err := js.Stream(ctx, "KV_watched")
		if err != nil {
			t.Fatal(err)
		}
		names := st.ConsumerNames(ctx)
		var out []string
		for n := range names.Name() {
			out = append(out, n)
		}
		if len(out) > 1 {
			t.Fatalf("consumers %v, want at most one", out)
		}
		if len(out) == 0 {
			return ""
		}
		return out[0]
	}
	rev1, _ := kv.Put(ctx, "a", []byte("1"))
	if err := kv.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	seen(2)
	if err := kv.Purge(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	seen(3)

	// The consumer goes: the updates written meanwhile still arrive.
	first := consumer()
	if err := js.DeleteConsumer(ctx, "KV_watched", first); err != nil {
		t.Fatal(err)
	}
	rev3, _ := kv.Put(ctx, "b", []byte("2"))
	if _, err := kv.Put(ctx, "c", []byte("3")); err != nil {
		t.Fatal(err)
	}
	out := seen(5)
	want := []struct {
		key string
		op  jetstream.KeyValueOp
	}{{"a", jetstream.KeyValuePut}, {"a", jetstream.KeyValueDelete}, {"a", jetstream.KeyValuePurge},
		{"b", jetstream.KeyValuePut}, {"c", jetstream.KeyValuePut}}
	if len(out) != len(want) {
		t.Fatalf("updates %+v", out)
	}
	for i, u := range out {
		if u.key != want[i].key || u.op != want[i].op {
			t.Errorf("update %d = %s %v, want %s %v", i, u.key, u.op, want[i].key, want[i].op)
		}
	}
	if out[0].rev != rev1 || out[3].rev != rev3 || string(out[3].value) != "2" {
		t.Errorf("revisions %d, %d (want %d, %d), value %q", out[0].rev, out[3].rev, rev1, rev3, out[3].value)
	}
	if second := consumer(); second == "" || second == first {
		t.Fatalf("consumer after the restart: %q (first %q)", second, first)
	}

	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if consumer() == "" {
		t.Fatal("the watch deleted its consumer on stop")
	}
}
