package edge

import (
	"testing"
	"testing/synctest"
	"time"
)

// Ten flaps inside a burst reach a session as at most two notifications:
// the leading edge at once, the rest together at the window's end.
func TestFlappingCoalesces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const window = time.Second
		e := startMemoryEdge(t, &Options{Coalesce: window})
		e.up("alpha", "echo")
		synctest.Wait()
		l := e.listen(t, "s1")
		// Let the window the first change opened pass, so the burst's
		// first flap is applied at once (the leading edge).
		time.Sleep(window)
		synctest.Wait()
		var last uint64
		for range 10 { // the first down is the leading edge, at once
			e.down("alpha")
			time.Sleep(10 * time.Millisecond)
			last = e.up("alpha") // ends up: the trailing batch changes the view again
			time.Sleep(10 * time.Millisecond)
		}
		synctest.Wait()
		if n := l.tools.Load(); n != 1 {
			t.Fatalf("%d notifications inside the window; want the leading edge's only", n)
		}
		if names := l.toolNames(); len(names) != 0 {
			t.Fatalf("tools inside the window: %v; want the leading edge's (none)", names)
		}
		time.Sleep(window)
		synctest.Wait()
		if n := l.tools.Load(); n != 2 {
			t.Fatalf("%d notifications for a burst of 10 flaps; want 2", n)
		}
		if g := e.confirmed.Load(); g != last {
			t.Fatalf("edge at generation %d; want %d", g, last)
		}
		if names := l.toolNames(); !names["alpha_echo"] {
			t.Fatalf("tools after the burst: %v; want alpha_echo", names)
		}
	})
}

// Events of other groups, and events that leave the view unchanged, send
// nothing.
func TestUnchangedViewSendsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := startMemoryEdge(t, &Options{Coalesce: 10 * time.Millisecond})
		e.up("alpha", "echo")
		synctest.Wait()
		l := e.listen(t, "s1")
		time.Sleep(time.Second)
		e.otherGroup()
		last := e.up("alpha") // the same tools: the same view
		synctest.Wait()
		if g := e.confirmed.Load(); g != last {
			t.Fatalf("edge at generation %d; want %d", g, last)
		}
		if n := l.tools.Load(); n != 0 {
			t.Fatalf("%d notifications for unchanged views; want none", n)
		}
		// A change proves the client would have seen earlier ones.
		e.down("alpha")
		synctest.Wait()
		if n := l.tools.Load(); n != 1 {
			t.Fatalf("%d notifications, want only the change's", n)
		}
	})
}

// A state that changes the view and the policy together is one batch: a
// session whose visible tools both change is told once, and the policy
// is in force when the view is served.
func TestPolicyAndViewInOneBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := startMemoryEdge(t, &Options{Coalesce: 10 * time.Millisecond})
		e.up("alpha", "echo")
		synctest.Wait()
		l := e.listen(t, "s1")
		time.Sleep(time.Second)
		// One state: a tool added, and a policy hiding it.
		gen := e.publish(withPolicy(t, e.withBackend(e.next(), "alpha", true, []string{"echo", "secret"}),
			`{"default":"allow","rules":[{"name":"hide","effect":"deny","tools":["alpha_secret"]}]}`))
		synctest.Wait()
		if n := l.tools.Load(); n != 1 {
			t.Fatalf("%d tools list_changed for one state; want 1", n)
		}
		if names := l.toolNames(); !names["alpha_secret"] || !names["alpha_echo"] {
			t.Fatalf("served view %v; want alpha_echo and alpha_secret (the policy hides one from lists)", names)
		}
		if p := e.calls.Policy(); p == nil || p.Generation() != gen {
			t.Fatalf("policy in force %v; want the state's", p)
		}
	})
}
