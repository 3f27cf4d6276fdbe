package health

import "time"

// Coalescer rate-limits the publication of a changing value, typically one
// backend's advertisability, so that a flapping backend cannot flood the
// event log. It is pure: no timers, no goroutines; the driver passes the
// current time in and wakes itself up at Deadline to call Tick.
//
// Semantics, with W the window:
//
//   - The Coalescer holds a published value (initially the value given to
//     NewCoalescer, which is considered already published).
//   - Leading edge: when no window is open, an Offer of a value different
//     from the published one is published at once (Offer returns it) and
//     opens a window [now, now+W).
//   - Inside an open window Offer publishes nothing; it records the value as
//     pending, the latest value winning.
//   - Trailing edge: a Tick at or after the window's end publishes the
//     pending value if, and only if, it differs from the published value
//     (no event without a net change). Either way the window closes: the
//     trailing publication ends the burst, so the first change after it is
//     a leading edge again and is published at once.
//   - Deadline reports the window's end only while a pending net change
//     exists: that is the one moment the driver must call Tick.
//
// Consequently only a leading publication opens a window, and every
// window holds at most its leading and its trailing publication: any span
// of length W holds at most two events however the input flaps (a burst of
// any number of flips inside one window gives at most two), while a change
// that comes after a burst's trailing publication, or after a quiet
// period, waits for nothing. Once the input settles the published value
// equals the last offered value no later than W after the settling Offer
// (given a driver that ticks at Deadline).
//
// A driver that misses a Deadline loses nothing but intermediate values: an
// Offer after the end of a window treats the window as closed (dropping the
// stale pending value) and applies the leading-edge rule to the new value.
//
// Optionally one value is urgent (Urgent; for advertisability, false: a
// backend withdrawn). An Offer of the urgent value that differs from the
// published one is published at once even inside a window, dropping any
// pending value, and opens a window [now, now+W): a dead backend is never
// kept advertised by the coalescing, while its coming back is coalesced
// as before. The bound holds: every other value is published only when no
// window is open or at a window's end, so at least W after the previous
// publication, and any span of length W still holds at most two events.
//
// A window of zero or less disables coalescing: every change is published
// at once.
//
// A Coalescer is not safe for concurrent use.
type Coalescer[T comparable] struct {
	window    time.Duration
	published T
	open      bool      // a window has been opened (it may have ended)
	end       time.Time // end of the last opened window
	pending   T
	dirty     bool // pending holds a value offered inside the open window
	stopped   bool
	urgent    T
	hasUrgent bool
}

// Urgent makes v the urgent value (see Coalescer) and returns c.
func (c *Coalescer[T]) Urgent(v T) *Coalescer[T] {
	c.urgent, c.hasUrgent = v, true
	return c
}

// NewCoalescer returns a Coalescer with the given window whose published
// value is initial (no event is emitted for it).
func NewCoalescer[T comparable](window time.Duration, initial T) *Coalescer[T] {
	if window < 0 {
		window = 0
	}
	return &Coalescer[T]{window: window, published: initial}
}

// Window returns the coalescing window.
func (c *Coalescer[T]) Window() time.Duration { return c.window }

// Published returns the last published value (the initial value until the
// first emission).
func (c *Coalescer[T]) Published() T { return c.published }

// Offer reports the input's current value at time now. It returns emit true
// and the value to publish when v is published at once (leading edge);
// otherwise emit is false and value is the zero T. Offering the published
// value outside a window does nothing. After Stop, Offer does nothing.
func (c *Coalescer[T]) Offer(now time.Time, v T) (emit bool, value T) {
	if c.stopped {
		return false, value
	}
	if c.inWindow(now) && (!c.hasUrgent || v != c.urgent || v == c.published) {
		c.pending, c.dirty = v, true
		return false, value
	}
	// Quiet period (or a window whose end the driver did not Tick).
	c.clearPending()
	if v == c.published {
		return false, value
	}
	return true, c.publish(now, v)
}

// Tick tells the Coalescer that time now has come; the driver calls it at
// (or after) Deadline. It returns emit true and the value to publish when a
// window has ended with a pending net change (trailing edge); otherwise
// emit is false and value is the zero T. Calling Tick at other times is
// harmless. After Stop, Tick does nothing.
func (c *Coalescer[T]) Tick(now time.Time) (emit bool, value T) {
	if c.stopped || !c.open || c.inWindow(now) {
		return false, value
	}
	v, change := c.pending, c.dirty && c.pending != c.published
	c.clearPending()
	c.open = false
	if !change {
		return false, value
	}
	c.published = v // a trailing publication opens no window
	return true, v
}

// Deadline returns the time at which the driver must call Tick, and true, if
// a trailing event is pending: the end of the open window, while the
// pending value differs from the published one. Otherwise it returns false.
func (c *Coalescer[T]) Deadline() (time.Time, bool) {
	if c.stopped || !c.open || !c.dirty || c.pending == c.published {
		return time.Time{}, false
	}
	return c.end, true
}

// Stop cancels a pending trailing event and makes the Coalescer inert: later
// Offer and Tick calls emit nothing and Deadline reports false. It returns
// true if a trailing event (a pending net change) was cancelled. Stop is
// idempotent.
func (c *Coalescer[T]) Stop() bool {
	_, pending := c.Deadline()
	c.stopped = true
	c.clearPending()
	return pending
}

func (c *Coalescer[T]) inWindow(now time.Time) bool {
	return c.open && now.Before(c.end)
}

func (c *Coalescer[T]) publish(now time.Time, v T) T {
	c.published = v
	c.open = true
	c.end = now.Add(c.window)
	return v
}

func (c *Coalescer[T]) clearPending() {
	var zero T
	c.pending, c.dirty = zero, false
}
