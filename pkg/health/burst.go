package health

import "time"

// Burst paces batches of changes that carry no value of their own, such as
// an edge's resyncs to a changed event log (the state is read when the
// batch is applied, so whatever came before makes one batch). It applies
// the Coalescer's rule to batches: the first change after a quiet period
// is applied at once and opens a window of length W; changes signalled
// inside the window wait for its end and make one trailing batch, which
// closes the window, so the first change after it is applied at once
// again. Any span of length W thus holds at most two batches however often
// changes are signalled.
//
// A batch the driver marks urgent (an edge: one that withdraws a backend
// the served view advertises) is applied at once even inside a window and
// opens a window of its own, so every span of length W holds at most two
// batches plus the urgent ones.
//
// It is pure: the driver passes the time in. A window of zero or less
// applies every change at once. A Burst is not safe for concurrent use.
type Burst struct {
	window time.Duration
	open   bool      // a leading batch opened a window ending at end
	end    time.Time // end of the open window
	held   bool      // the batch being prepared waits for the window's end
}

// NewBurst returns a Burst with the given window and no window open.
func NewBurst(window time.Duration) *Burst { return &Burst{window: max(window, 0)} }

// Due returns when the batch for a change signalled at now is to be
// applied: now outside a window or for an urgent batch, else the window's
// end (the batch is then the window's trailing one).
func (b *Burst) Due(now time.Time, urgent bool) time.Time {
	if b.open && now.Before(b.end) && !urgent {
		b.held = true
		return b.end
	}
	b.open, b.held = false, false
	return now
}

// Applied records that a batch was applied at now and whether it changed
// anything. A trailing batch (one Due held) closes the window whatever it
// changed; a leading batch that changed something opens one [now, now+W).
// A batch that should not open a window (a start-up load nobody is told
// of) is recorded with changed false.
func (b *Burst) Applied(now time.Time, changed bool) {
	if b.held {
		b.open, b.held = false, false
		return
	}
	if changed && b.window > 0 {
		b.open, b.end = true, now.Add(b.window)
	}
}
