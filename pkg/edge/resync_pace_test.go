package edge

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fleetgate/fleetgate/pkg/health"
)

// pacer drives paceBatches with a window of 250 ms in a synctest bubble:
// signal raises a change (urgent or not), and the times of the batches
// applied are recorded since the bubble's start.
type pacer struct {
	start   time.Time
	watch   chan struct{}
	urgent  atomic.Bool
	mu      sync.Mutex
	applied []time.Duration
}

func runPacer(t *testing.T, first <-chan struct{}) (*pacer, func()) {
	p := &pacer{start: time.Now(), watch: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		paceBatches(ctx, p.watch, first, health.NewBurst(250*time.Millisecond), p.urgent.Load, func() bool {
			p.urgent.Store(false) // the batch applied the withdrawal
			p.mu.Lock()
			p.applied = append(p.applied, time.Since(p.start))
			p.mu.Unlock()
			return true
		})
	}()
	return p, func() { cancel(); <-done }
}

func (p *pacer) signal(urgent bool) {
	if urgent {
		p.urgent.Store(true)
	}
	select {
	case p.watch <- struct{}{}:
	default:
	}
	synctest.Wait()
}

// at sleeps until d since the start.
func (p *pacer) at(d time.Duration) {
	time.Sleep(d - time.Since(p.start))
	synctest.Wait()
}

func (p *pacer) batches() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.applied)
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestPaceBatches(t *testing.T) {
	type step struct {
		at     int // ms since the start
		urgent bool
	}
	tests := []struct {
		name  string
		steps []step
		want  []time.Duration // when each batch was applied
	}{
		{"the leading edge at once, a change inside the window at its end", []step{{0, false}, {10, false}, {20, false}},
			[]time.Duration{0, ms(250)}},
		{"after the trailing batch, at once again", []step{{0, false}, {10, false}, {300, false}},
			[]time.Duration{0, ms(250), ms(300)}},
		{"a withdrawal while a batch is held goes at once; the window stays", []step{{0, false}, {10, false}, {100, true}, {150, false}},
			[]time.Duration{0, ms(100), ms(250)}},
		{"a recovery right after a withdrawal after a quiet period: both at once", []step{{0, true}, {20, false}},
			[]time.Duration{0, ms(20)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p, stop := runPacer(t, nil)
				defer stop()
				for _, s := range tc.steps {
					p.at(ms(s.at))
					p.signal(s.urgent)
				}
				p.at(ms(1000))
				if got := p.batches(); !slices.Equal(got, tc.want) {
					t.Fatalf("batches at %v, want %v", got, tc.want)
				}
			})
		})
	}
}

// The first batch also comes when first closes (the reader caught up),
// without a signal on watch.
func TestPaceBatchesFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		first := make(chan struct{})
		p, stop := runPacer(t, first)
		defer stop()
		p.at(ms(40))
		close(first)
		synctest.Wait()
		if got := p.batches(); !slices.Equal(got, []time.Duration{ms(40)}) {
			t.Fatalf("batches at %v, want [40ms]", got)
		}
	})
}
