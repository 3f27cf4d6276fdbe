package edge

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/fleetgate/fleetgate/pkg/policy"
)

// Ten flaps inside a burst reach a session as at most two notifications:
// the leading edge at once, the rest together at the window's end.
func TestFlappingCoalesces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const window = time.Second
		e := startMemoryEdge(t, &Options{Coalesce: window})
		e.up("alpha", "echo")
		e.settle()
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
		e.settle()
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
		e.settle()
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

// A policy change reaches live sessions as list_changed, and what they
// may see follows it; a session whose visible set did not change is not
// told.
func TestPolicyChangeNotifies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := startMemoryEdge(t, &Options{Coalesce: time.Millisecond})
		e.up("alpha", "echo")
		e.up("beta", "echo")
		e.settle()
		alice, bob := e.listen(t, "alice"), e.listen(t, "bob")
		alice.s.SetSubject(new(policy.TokenSubject("https://issuer.test", "alice", "default", map[string]any{"roles": []any{}})))
		bob.s.SetSubject(new(policy.TokenSubject("https://issuer.test", "bob", "default", map[string]any{"roles": []any{"ops"}})))
		if !e.sees(alice, "beta_echo") || !e.sees(bob, "beta_echo") {
			t.Fatal("without a policy, everyone sees beta")
		}
		time.Sleep(time.Second)
		e.publish(withPolicy(t, e.next(), `{"rules":[{"name":"ops-only-beta","effect":"deny","tools":["beta_*"],"when":"!(\"ops\" in claims.roles)"}]}`))
		synctest.Wait()
		if n := alice.tools.Load(); n != 1 || e.sees(alice, "beta_echo") {
			t.Fatalf("alice told %d times, sees beta %v; want told once, beta hidden", n, e.sees(alice, "beta_echo"))
		}
		if n := bob.tools.Load(); n != 0 || !e.sees(bob, "beta_echo") {
			t.Fatalf("bob told %d times, sees beta %v; want not told, beta seen", n, e.sees(bob, "beta_echo"))
		}
		// Lifting the policy gives alice beta back.
		time.Sleep(time.Second)
		e.publish(withPolicy(t, e.next(), `{}`))
		synctest.Wait()
		if n := alice.tools.Load(); n != 2 || !e.sees(alice, "beta_echo") {
			t.Fatalf("alice told %d times, sees beta %v; want 2, beta seen", n, e.sees(alice, "beta_echo"))
		}
		if n := bob.tools.Load(); n != 0 {
			t.Fatalf("bob told %d times; want 0", n)
		}
	})
}

// In optimizer mode a session is told of tools only when a pinned tool
// changed; every view change re-indexes.
func TestOptimizerPinnedToolsNotify(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := startMemoryEdge(t, &Options{Mode: ModeOptimizer, Coalesce: 100 * time.Millisecond, PinnedTools: []string{"alpha_echo"}})
		e.up("alpha", "echo", "add")
		e.up("beta", "echo")
		e.settle()
		c := e.listen(t, "s1")
		time.Sleep(time.Second)
		// Unpinned: a backend leaves, another tool of alpha changes.
		e.down("beta")
		time.Sleep(time.Second)
		e.up("alpha", "echo", "add", "sub")
		synctest.Wait()
		time.Sleep(time.Second)
		if n := c.tools.Load(); n != 0 {
			t.Fatalf("%d tools/list_changed for unpinned changes; want 0", n)
		}
		if ix := e.current().Index; ix == nil || len(ix.Tools) != 3 {
			t.Fatalf("index after the unpinned changes: %+v; want alpha's 3 tools", ix)
		}
		// Pinned: its definition changes, then its backend leaves.
		e.up("alpha", "echo:Echo loudly.", "add", "sub")
		synctest.Wait()
		if n := c.tools.Load(); n != 1 {
			t.Fatalf("%d tools/list_changed once the pinned tool changed; want 1", n)
		}
		if d := c.s.Served().Tools["alpha_echo"].Description; d != "Echo loudly." {
			t.Fatalf("pinned tool served as %q after its change", d)
		}
		time.Sleep(time.Second)
		e.down("alpha")
		synctest.Wait()
		if n := c.tools.Load(); n != 2 {
			t.Fatalf("%d tools/list_changed once the pinned tool left; want 2", n)
		}
		if ix := e.current().Index; len(ix.Tools) != 0 {
			t.Fatalf("index once alpha left: %d tools; want 0", len(ix.Tools))
		}
	})
}

// On merged regional logs, a region's mirror going quiet and coming
// back: the edge confirms the vector as it moves, and the list_changed a
// session is written records in its evidence the vector of the state
// that caused it (the session records it itself, from the registry).
func TestRegionQuietAndBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := startMemoryEdge(t, &Options{Coalesce: 10 * time.Millisecond})
		st := e.withBackend(e.next(), "alpha", true, []string{"echo"})
		st.Regions = map[string]uint64{"east": 1, "west": 1}
		e.publish(st)
		e.settle()
		l := e.listen(t, "s1")
		time.Sleep(time.Second)

		st = e.withBackend(e.next(), "alpha", true, []string{"echo", "add"})
		st.Regions = map[string]uint64{"east": 2, "west": 1}
		e.publish(st)
		synctest.Wait()
		if n, got := l.tools.Load(), l.s.Record().Convergence().CurrentRegions; n != 1 || got["east"] != 2 || got["west"] != 1 {
			t.Fatalf("after east's change: %d notifications, evidence vector %v; want 1, east:2 west:1", n, got)
		}

		// West's mirror is quiet; east moves on without changing the view.
		for g := uint64(3); g <= 5; g++ {
			time.Sleep(time.Second)
			st = e.next()
			st.Regions = map[string]uint64{"east": g, "west": 1}
			e.publish(st)
		}
		synctest.Wait()
		if v := e.confirmed.vector(); v["east"] != 5 || v["west"] != 1 {
			t.Fatalf("confirmed vector %v; want east:5 west:1", v)
		}
		if n := l.tools.Load(); n != 1 {
			t.Fatalf("%d notifications while the view did not change; want 1", n)
		}

		// The mirror comes back with west's change.
		time.Sleep(time.Second)
		st = e.withBackend(e.next(), "beta", true, []string{"echo"})
		st.Regions = map[string]uint64{"east": 5, "west": 4}
		e.publish(st)
		synctest.Wait()
		got := l.s.Record().Convergence().CurrentRegions
		if n := l.tools.Load(); n != 2 || got["east"] != 5 || got["west"] != 4 {
			t.Fatalf("after west came back: %d notifications, evidence vector %v; want 2, east:5 west:4", n, got)
		}
		if sig := l.s.Record().Convergence().LastSignal; sig.Generation != st.Generation {
			t.Fatalf("last signal recorded at generation %d; want %d", sig.Generation, st.Generation)
		}
		if !l.toolNames()["beta_echo"] {
			t.Fatalf("west's backend not served: %v", l.toolNames())
		}
	})
}
