//go:build benchprofile

package callstages

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// call is the record of the call being timed.
type call struct{ at [stages]time.Time }

var (
	path    = os.Getenv("FLEETGATE_BENCH_STAGES")
	current atomic.Pointer[call]
	mu      sync.Mutex
	sums    [stages]time.Duration
	timed   int
)

// Begin starts timing a call.
func Begin() {
	if path == "" {
		return
	}
	c := &call{}
	c.at[begun] = time.Now()
	current.Store(c)
}

// Mark notes that the timed call reached s; a stage reached twice keeps
// its first time.
func Mark(s Stage) {
	if c := current.Load(); c != nil && c.at[s].IsZero() {
		c.at[s] = time.Now()
	}
}

// End ends the timed call and adds its stages to the window's sums.
func End() {
	c := current.Swap(nil)
	if c == nil {
		return
	}
	c.at[written] = time.Now()
	mu.Lock()
	defer mu.Unlock()
	prev := c.at[begun]
	for s := begun + 1; s < stages; s++ {
		if !c.at[s].IsZero() {
			sums[s] += c.at[s].Sub(prev)
			prev = c.at[s]
		}
	}
	if timed++; timed < Window {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "calls=%d", timed)
	var total time.Duration
	for s := begun + 1; s < stages; s++ {
		fmt.Fprintf(&b, " %s=%.1f", names[s], float64(sums[s])/float64(timed)/1e3)
		total += sums[s]
	}
	fmt.Fprintf(&b, " total=%.1f\n", float64(total)/float64(timed)/1e3)
	sums, timed = [stages]time.Duration{}, 0
	if f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		_, _ = f.WriteString(b.String())
		_ = f.Close()
	}
}
