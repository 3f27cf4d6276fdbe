package region

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/natsnode"
)

// TestKeeperOnlyWhileLeading: a Keeper whose controller does not lead
// its region looks at no mirror (and so re-creates none); once it leads,
// it looks (here over a closed connection: an error reported).
func TestKeeperOnlyWhileLeading(t *testing.T) {
	n, err := natsnode.Start(&natsnode.Options{Name: "a", DataDir: t.TempDir(), Listen: "127.0.0.1:0", Auth: true,
		Domain: Domain("a"), EdgeLogs: EdgeLogs([]string{"a", "b"})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Shutdown)
	nc, js := connect(t, n.ClientURL(), n.ControllerAccess())
	nc.Close() // every look fails at once, with an error reported: what shows a look happened
	var leading atomic.Bool
	looked := make(chan error, 64)
	k, err := NewKeeper(js, "a", []string{"a", "b"}, &KeeperOptions{
		Interval: 10 * time.Millisecond,
		Leading:  leading.Load,
		OnError: func(err error) {
			select {
			case looked <- err:
			default:
			}
		},
		OnNudge: func(string, Asset, string) { t.Error("a mirror re-created") },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	select {
	case err := <-looked:
		t.Fatalf("a keeper that does not lead looked at a mirror: %v", err)
	case <-time.After(300 * time.Millisecond): // 30 intervals
	}
	leading.Store(true)
	select {
	case err := <-looked:
		t.Logf("leading, it looks: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("a leading keeper never looked at its mirrors")
	}
}

// While no regional state changes, the follower's view is the same state:
// a driver that tells a new state from the last by identity (the edge's
// planner) would otherwise plan again and again.
func TestFollowerViewStable(t *testing.T) {
	f, err := NewFollower(nil, []string{"a", "b"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st1, v1, _ := f.View()
	st2, v2, _ := f.View()
	if st1 == nil || st1 != st2 {
		t.Fatalf("two views of unchanged logs: %p and %p", st1, st2)
	}
	v1["a"] = 99 // a caller's copy
	if v2["a"] == 99 {
		t.Fatal("the vectors given share a map")
	}
}
