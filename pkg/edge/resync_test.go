package edge

import (
	"strings"
	"testing"
	"time"
)

// A session initialized while a backend is unadvertisable is told when it
// becomes advertisable and calls the recovered tool on the same session.
func TestRecoveredBackendReachesLiveSession(t *testing.T) {
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			f := newFleet(t)
			b := startBackend(t, "alpha", nil)
			f.add("default", b)
			f.catalog("default", "alpha", listCatalog(t, b))
			f.health("default", "alpha", false)
			e := startEdge(t, f, nil)
			c := connect(t, e.MCPURL(), v.version)
			if names := c.toolNames(t); len(names) != 0 {
				t.Fatalf("tools before recovery: %v", names)
			}
			f.health("default", "alpha", true)
			c.waitChanged(t, 1, 20*time.Second)
			names := c.toolNames(t)
			if !names["alpha_echo"] || !names["alpha_add"] {
				t.Fatalf("tools after recovery: %v", names)
			}
			if got := text(c.call(t, "alpha_echo", map[string]any{"text": "hi"})); got != "alpha: hi" {
				t.Fatalf("alpha_echo = %q", got)
			}
			if got := text(c.call(t, "alpha_add", map[string]any{"a": 2, "b": 3})); got != "5" {
				t.Fatalf("alpha_add = %q", got)
			}
		})
	}
}

// A backend that becomes unadvertisable (and is dead) leaves the sessions'
// lists, and calling its tool gives an error naming it.
func TestUnadvertisableBackendLeaves(t *testing.T) {
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			f := newFleet(t)
			a := startBackend(t, "alpha", nil)
			bb := startBackend(t, "beta", nil)
			f.healthyBackend("default", a)
			f.healthyBackend("default", bb)
			e := startEdge(t, f, nil)
			c := connect(t, e.MCPURL(), v.version)
			if names := c.toolNames(t); !names["alpha_echo"] || !names["beta_echo"] {
				t.Fatalf("tools: %v", names)
			}
			if got := text(c.call(t, "alpha_echo", map[string]any{"text": "x"})); got != "alpha: x" {
				t.Fatalf("alpha_echo = %q", got)
			}
			a.Stop()
			f.health("default", "alpha", false)
			c.waitChanged(t, 1, 20*time.Second)
			names := c.toolNames(t)
			if names["alpha_echo"] || names["alpha_add"] || !names["beta_echo"] {
				t.Fatalf("tools after alpha left: %v", names)
			}
			res := c.call(t, "alpha_echo", map[string]any{"text": "x"})
			if !res.IsError || !strings.Contains(text(res), `"alpha_echo"`) {
				t.Fatalf("call to removed tool: isError=%v %q", res.IsError, text(res))
			}
			if got := text(c.call(t, "beta_echo", map[string]any{"text": "y"})); got != "beta: y" {
				t.Fatalf("beta_echo = %q", got)
			}
		})
	}
}

// Backends added and removed through the log reach live sessions.
func TestBackendAddedAndRemoved(t *testing.T) {
	f := newFleet(t)
	e := startEdge(t, f, nil)
	old := connect(t, e.MCPURL(), "2025-11-25")
	modern := connect(t, e.MCPURL(), "")
	b := startBackend(t, "gamma", nil)
	f.healthyBackend("default", b)
	for _, c := range []*client{old, modern} {
		c.waitChanged(t, 1, 20*time.Second)
		if names := c.toolNames(t); !names["gamma_echo"] {
			t.Fatalf("tools after add: %v", names)
		}
		if got := text(c.call(t, "gamma_echo", map[string]any{"text": "z"})); got != "gamma: z" {
			t.Fatalf("gamma_echo = %q", got)
		}
	}
	n1, n2 := old.changed.Load(), modern.changed.Load()
	f.remove("default", b)
	old.waitChanged(t, n1+1, 20*time.Second)
	modern.waitChanged(t, n2+1, 20*time.Second)
	for _, c := range []*client{old, modern} {
		if names := c.toolNames(t); len(names) != 0 {
			t.Fatalf("tools after remove: %v", names)
		}
	}
}
