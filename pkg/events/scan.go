package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// scanFunc handles one stored message; returning false stops the scan.
type scanFunc func(seq uint64, data []byte, md *jetstream.MsgMetadata) (bool, error)

// scan delivers the stream's messages from generation from onwards, in
// order, through an ordered consumer (which survives server restarts and
// leader changes by re-creating itself at the next sequence). It returns
// when fn stops it or returns an error, or ctx ends.
func (l *Log) scan(ctx context.Context, from uint64, fn scanFunc) error {
	if l.opts.BySequence {
		return l.scanBySequence(ctx, from, fn)
	}
	cons, err := l.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{l.opts.SubjectPrefix + ".>"},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    from,
	})
	if err != nil {
		return fmt.Errorf("event log %s: subscribe from %d: %w", l.opts.Stream, from, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("event log %s: subscribe from %d: %w", l.opts.Stream, from, err)
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	for {
		m, err := it.Next()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return ctx.Err()
			}
			return fmt.Errorf("event log %s: next message: %w", l.opts.Stream, err)
		}
		md, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("event log %s: message metadata: %w", l.opts.Stream, err)
		}
		more, err := fn(md.Sequence.Stream, m.Data(), md)
		if err != nil || !more {
			return err
		}
	}
}

// scanBySequence is scan without a consumer: each generation is read by
// its sequence. Past the head it waits for a wake-up (a message on the
// event subjects, whose content is ignored) or the poll interval. A purged
// range shows as a jump in the sequences handed to fn, as with a consumer.
func (l *Log) scanBySequence(ctx context.Context, from uint64, fn scanFunc) error {
	wake := make(chan struct{}, 1)
	if nc := l.js.Conn(); nc != nil {
		// Subscribed before the head is read, so that no event stored in
		// between goes unnoticed. A refused subscription leaves polling.
		sub, err := nc.Subscribe(l.opts.SubjectPrefix+".>", func(*nats.Msg) {
			select {
			case wake <- struct{}{}:
			default:
			}
		})
		if err == nil {
			sub.SetPendingLimits(4096, 64<<20)
			defer sub.Unsubscribe()
		}
	}
	tick := time.NewTicker(l.opts.PollInterval)
	defer tick.Stop()
	first, last, err := l.Bounds(ctx)
	if err != nil {
		return err
	}
	next := from
	for {
		if next < first {
			next = first
		}
		if next > last {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-wake:
				// A wake-up can arrive before the stream has committed
				// the event (a replicated stream stores it after a
				// round of consensus): look again a few times, shortly.
				for delay := time.Millisecond; ; delay *= 2 {
					if first, last, err = l.Bounds(ctx); err != nil || next <= last || delay > 256*time.Millisecond {
						break
					}
					select {
					case <-ctx.Done():
						return ctx.Err()
					case <-time.After(delay):
					}
				}
				if err != nil {
					return err
				}
				continue
			case <-tick.C:
			}
			if first, last, err = l.Bounds(ctx); err != nil {
				return err
			}
			continue
		}
		m, err := l.stream.GetMsg(ctx, next)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			// Removed by retention (the bounds moved), or a deleted
			// message inside them: either way fn sees the jump.
			if first, last, err = l.Bounds(ctx); err != nil {
				return err
			}
			if next >= first && next <= last {
				next++
			}
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("event log %s: read generation %d: %w", l.opts.Stream, next, err)
		}
		if m.Sequence > last {
			last = m.Sequence
		}
		md := &jetstream.MsgMetadata{Sequence: jetstream.SequencePair{Stream: m.Sequence}, Timestamp: m.Time,
			NumPending: last - m.Sequence}
		more, err := fn(m.Sequence, m.Data, md)
		if err != nil || !more {
			return err
		}
		next = m.Sequence + 1
	}
}

// Load returns the fleet state at the stream head: the latest snapshot plus
// every event after it.
func (l *Log) Load(ctx context.Context) (*State, error) {
	s, err := l.LoadSnapshot(ctx)
	if err != nil {
		return nil, err
	}
	if s == nil {
		s = NewState()
	}
	first, last, err := l.Bounds(ctx)
	if err != nil {
		return nil, err
	}
	if s.Generation+1 < first {
		return nil, errorf(CodePurged, s.Generation+1, nil, "load: events %d..%d were purged and no snapshot covers them", s.Generation+1, first-1)
	}
	return l.foldTo(ctx, s, last, nil)
}

// Replay rebuilds the fleet state at generation gen from the log, for
// audits. It starts from nothing, or, when retention has removed the first
// events, from the newest kept snapshot at or below gen; it fails with
// ErrPurged when neither covers gen. Events that cannot be decoded are
// passed to onErr (may be nil) and skipped.
func (l *Log) Replay(ctx context.Context, gen uint64, onErr func(error)) (*State, error) {
	first, last, err := l.Bounds(ctx)
	if err != nil {
		return nil, err
	}
	if gen > last {
		return nil, fmt.Errorf("replay to generation %d: the log ends at %d", gen, last)
	}
	s := NewState()
	if first > 1 {
		snap, err := l.snapshotAtOrBelow(ctx, gen)
		if err != nil {
			return nil, fmt.Errorf("replay to generation %d: %w", gen, err)
		}
		if snap == nil || snap.Generation+1 < first {
			return nil, errorf(CodePurged, gen, nil, "replay: events before %d were purged and no kept snapshot covers generation %d", first, gen)
		}
		s = snap
	}
	return l.foldTo(ctx, s, gen, onErr)
}

// foldTo applies the stream's events after s up to generation to.
func (l *Log) foldTo(ctx context.Context, s *State, to uint64, onErr func(error)) (*State, error) {
	if s.Generation >= to {
		return s, nil
	}
	err := l.scan(ctx, s.Generation+1, func(seq uint64, data []byte, _ *jetstream.MsgMetadata) (bool, error) {
		next, _, err := fold(s, seq, data, nil, onErr)
		if err != nil {
			var gap *gapError
			if errors.As(err, &gap) {
				return false, errorf(CodePurged, gap.from, nil, "events %d..%d were purged", gap.from, gap.to)
			}
			return false, err
		}
		s = next
		return s.Generation < to, nil
	})
	if err != nil {
		return nil, fmt.Errorf("fold events %d..%d: %w", s.Generation+1, to, err)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return s, nil
}

// Events returns up to limit events from generation from, in order, as
// JSON views. Undecodable events are included with their error. Asking
// for generations retention removed fails with ErrPurged.
func (l *Log) Events(ctx context.Context, from uint64, limit int) ([]EventJSON, error) {
	first, last, err := l.Bounds(ctx)
	if err != nil {
		return nil, err
	}
	if from == 0 {
		from = 1
	}
	if from < first {
		return nil, errorf(CodePurged, from, nil, "events from %d: the log starts at %d", from, first)
	}
	var out []EventJSON
	if from > last || limit <= 0 {
		return out, nil
	}
	err = l.scan(ctx, from, func(seq uint64, data []byte, _ *jetstream.MsgMetadata) (bool, error) {
		ev, derr := Decode(seq, data)
		if derr != nil {
			out = append(out, EventJSON{Generation: seq, Error: derr.Error()})
		} else {
			out = append(out, ToJSON(ev))
		}
		return len(out) < limit && seq < last, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Tail delivers every event from generation from onwards (0: the ones
// after the current head), in order, as the log's JSON view, until fn
// returns an error or ctx ends (then it returns nil). It follows the
// stream live, through the same ordered consumer as the readers.
func (l *Log) Tail(ctx context.Context, from uint64, fn func(EventJSON) error) error {
	if from == 0 {
		_, last, err := l.Bounds(ctx)
		if err != nil {
			return err
		}
		from = last + 1
	}
	err := l.scan(ctx, from, func(seq uint64, data []byte, _ *jetstream.MsgMetadata) (bool, error) {
		ev, derr := Decode(seq, data)
		e := EventJSON{Generation: seq}
		if derr != nil {
			e.Error = derr.Error()
		} else {
			e = ToJSON(ev)
		}
		return true, fn(e)
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}
