package signin

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// Wait returns once the identity's sign-in is held (a sign-in of another
// user or backend does not end it), and false when its context ends
// first. Resumed takes only a state sealed for the same identity and
// backend.
func TestWaitAndResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := Open(Options{Unbound: true})
		hold := func(identity, backend string) {
			m.mu.Lock()
			m.entries[KeyOf(identity, backend)] = &entry{identity: identity, backend: backend, sealed: []byte("x")}
			m.signal()
			m.mu.Unlock()
		}
		done := make(chan bool, 1)
		go func() { done <- m.Wait(context.Background(), "alice", "docs") }()
		synctest.Wait()
		hold("bob", "docs")
		hold("alice", "tickets")
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("Wait ended for another sign-in")
		default:
		}
		hold("alice", "docs")
		if !<-done {
			t.Fatal("Wait did not see the sign-in")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if m.Wait(ctx, "carol", "docs") {
			t.Fatal("Wait without a sign-in")
		}

		state, err := m.ResumeState("alice", "docs", "signin-1")
		if err != nil {
			t.Fatal(err)
		}
		if !m.Resumed(state, "alice", "docs") || m.Resumed(state, "bob", "docs") || m.Resumed(state, "alice", "tickets") ||
			m.Resumed(state+"x", "alice", "docs") {
			t.Fatal("Resumed")
		}
		time.Sleep(StateLifetime + time.Second) // the fake clock of the bubble
		if m.Resumed(state, "alice", "docs") {
			t.Fatal("an expired state resumed")
		}
	})
}
