package auth_test

import (
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// clock is a settable clock shared by a verifier and its test issuer.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

// newClock starts at the wall clock's second: a verifier or issuer a test
// makes without it (on the wall clock) agrees with it for the test's run.
func newClock() *clock { return &clock{t: time.Now().UTC().Truncate(time.Second)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
