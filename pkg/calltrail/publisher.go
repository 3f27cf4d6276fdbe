package calltrail

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrAckTimeout counts a publish whose acknowledgement did not arrive within
// Options.AckTimeout as failed.
var ErrAckTimeout = errors.New("calltrail: no acknowledgement in time")

// publisher is Run's state: the window of publishes awaiting their
// acknowledgement, oldest first. Entries are published in queue order on
// one connection, so they are stored in that order.
type publisher struct {
	t       *Trail
	window  []inflight
	timer   *time.Timer // armed for the head of the window
	armed   uint64      // seq the timer is armed for; 0 for none
	seq     uint64
	failing bool // the last publish failed (logs once per failure streak)
	// linger fires when the entries gathered since the last publish are
	// to be taken; lingering while it is armed.
	linger    *time.Timer
	lingering bool
}

type inflight struct {
	seq      uint64
	ok       <-chan *jetstream.PubAck
	err      <-chan error
	deadline time.Time
}

func newPublisher(t *Trail) *publisher {
	timer, linger := time.NewTimer(time.Hour), time.NewTimer(time.Hour)
	timer.Stop()
	linger.Stop()
	return &publisher{t: t, timer: timer, linger: linger}
}

func (p *publisher) stop() {
	p.timer.Stop()
	p.linger.Stop()
}

// loop publishes queued entries and collects acknowledgements until stop is
// closed (it then returns false) or, when draining, until the queue and the
// window are empty (it then returns true).
func (p *publisher) loop(stop <-chan struct{}, draining bool) bool {
	for {
		if draining && len(p.window) == 0 && len(p.t.queue) == 0 {
			return true
		}
		var (
			okC     <-chan *jetstream.PubAck
			errC    <-chan error
			timeout <-chan time.Time
		)
		if len(p.window) > 0 {
			head := p.window[0]
			okC, errC, timeout = head.ok, head.err, p.timer.C
			if p.armed != head.seq {
				p.timer.Reset(time.Until(head.deadline))
				p.armed = head.seq
			}
		}
		queue := p.t.queue
		var linger <-chan time.Time
		switch {
		case len(p.window) >= p.t.o.Window:
			queue = nil // window full: wait for the oldest acknowledgement
		case p.lingering && draining:
			p.linger.Stop()
			p.lingering = false
		case p.lingering:
			queue, linger = nil, p.linger.C // entries gather in the queue meanwhile
		}
		select {
		case <-stop:
			return false
		case <-linger:
			p.lingering = false
		case e := <-queue:
			p.publish(e)
			// What else is queued goes now; later entries gather for
			// Linger (not when draining: then nothing waits).
			for more := true; more && len(p.window) < p.t.o.Window; {
				select {
				case e := <-p.t.queue:
					p.publish(e)
				default:
					more = false
				}
			}
			if p.t.o.Linger > 0 && !draining {
				p.linger.Reset(p.t.o.Linger)
				p.lingering = true
			}
		case <-okC:
			p.pop()
			p.t.published.Add(1)
			p.t.m.published.Inc()
			p.failing = false
		case err := <-errC:
			p.pop()
			p.fail(err)
		case <-timeout:
			p.pop()
			p.fail(fmt.Errorf("%w (%s)", ErrAckTimeout, p.t.o.AckTimeout))
		}
	}
}

// publish sends one entry without waiting for its acknowledgement.
func (p *publisher) publish(e Entry) {
	if len(e.Arguments) > p.t.o.MaxArgumentBytes {
		e.Arguments, e.ArgumentsOmitted = nil, true
	}
	data, err := json.Marshal(e)
	if err != nil {
		p.fail(fmt.Errorf("encode entry of tool %q: %w", e.Tool, err))
		return
	}
	subj := subject(p.t.o.SubjectPrefix, e.Group)
	fut, err := p.t.js.PublishAsync(subj, data)
	if err != nil {
		p.fail(fmt.Errorf("publish to %s: %w", subj, err))
		return
	}
	p.seq++
	p.window = append(p.window, inflight{seq: p.seq, ok: fut.Ok(), err: fut.Err(), deadline: time.Now().Add(p.t.o.AckTimeout)})
}

func (p *publisher) pop() {
	p.window[0] = inflight{}
	p.window = p.window[1:]
}

// fail counts a lost entry. The first failure of a streak is logged as a
// warning, the others at debug level, so an outage does not flood the log.
func (p *publisher) fail(err error) {
	p.t.failed.Add(1)
	p.t.m.droppedPublish.Inc()
	if p.failing {
		p.t.log.Debug().Err(err).Msg("call trail entry lost")
		return
	}
	p.failing = true
	p.t.log.Warn().Err(err).Msg("call trail entries are being lost")
}

// drainContext bounds the drain that follows Run's cancellation.
func drainContext(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
