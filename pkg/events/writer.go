package events

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// Writer is the single, fenced writer of the event log.
//
// Each publish expects the stream's last sequence to be the last generation
// this writer knows and carries a caller-chosen Nats-Msg-Id. A second or
// stale writer therefore fails with ErrFenced instead of publishing, and a
// retry of a publish whose acknowledgement was lost never stores a
// duplicate.
type Writer struct {
	log *Log
	id  string

	mu   sync.Mutex
	last uint64
}

// NewWriter returns a writer positioned at the stream's current head.
// controllerID is stamped on every event.
func NewWriter(ctx context.Context, log *Log, controllerID string) (*Writer, error) {
	last, err := log.LastGeneration(ctx)
	if err != nil {
		return nil, fmt.Errorf("new writer %s: %w", controllerID, err)
	}
	return &Writer{log: log, id: controllerID, last: last}, nil
}

// Last returns the last generation this writer has seen stored.
func (w *Writer) Last() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// Resync repositions the writer at the stream's current head. A controller
// that has just won leadership calls it before publishing.
func (w *Writer) Resync(ctx context.Context) error {
	last, err := w.log.LastGeneration(ctx)
	if err != nil {
		return fmt.Errorf("writer %s: resync: %w", w.id, err)
	}
	w.mu.Lock()
	w.last = last
	w.mu.Unlock()
	return nil
}

// Publish stores ev as the next generation and returns that generation.
// ev.Generation and ev.ControllerId are set by Publish. msgID must be unique
// to this event and identical across retries of it.
//
// Errors: ErrFenced when another writer has published since this one last
// did (the writer must stop or Resync); ErrTooLarge when the event exceeds
// the server's payload limit; anything else is transient and the same
// publish (same event, same msgID) may be retried.
func (w *Writer) Publish(ctx context.Context, ev *eventspb.Event, msgID string) (uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	expect := w.last
	ev.Generation = expect + 1
	ev.ControllerId = w.id
	data, err := Encode(ev)
	if err != nil {
		return 0, err
	}
	if limit := w.MaxEventBytes(); limit > 0 && len(data) > limit {
		return 0, errorf(CodeTooLarge, ev.Generation, nats.ErrMaxPayload, "publish %s %s/%s: %d bytes exceed the event limit of %d", Kind(ev), ev.Group, ev.Backend, len(data), limit)
	}
	msg := &nats.Msg{Subject: w.log.Subject(ev.Group, ev.Backend), Data: data, Header: nats.Header{}}
	ack, err := w.log.js.PublishMsg(ctx, msg, jetstream.WithMsgID(msgID), jetstream.WithExpectLastSequence(expect))
	if err == nil {
		// A duplicate ack reports the sequence the original was stored at.
		w.last = max(w.last, ack.Sequence)
		return ack.Sequence, nil
	}
	if isAPICode(err, jetstream.JSErrCodeStreamWrongLastSequence, jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		return w.readBack(ctx, expect, msgID, err)
	}
	if isAPICode(err, 10054 /* message size exceeds maximum allowed */) || errors.Is(err, nats.ErrMaxPayload) {
		return 0, errorf(CodeTooLarge, ev.Generation, err, "publish %s %s/%s (%d bytes)", Kind(ev), ev.Group, ev.Backend, len(data))
	}
	return 0, fmt.Errorf("publish %s %s/%s generation %d: %w", Kind(ev), ev.Group, ev.Backend, ev.Generation, err)
}

// MaxEventBytes is the largest encoded event this writer publishes: the
// server's max_payload, learnt from the connection (it is announced at
// connect and may change on a reconnect), less room for the headers. 0
// when unknown (not connected yet).
func (w *Writer) MaxEventBytes() int {
	nc := w.log.js.Conn()
	if nc == nil {
		return 0
	}
	mp := int(nc.MaxPayload())
	if mp <= 0 {
		return 0
	}
	return max(mp-headerAllowance, 1)
}

// readBack settles a wrong-last-sequence answer. Every attempt of this
// publish expected the same last generation, so if any attempt was stored it
// sits at exactly expect+1: when that message carries our msgID the publish
// is done; otherwise another writer got there first and this one is fenced.
func (w *Writer) readBack(ctx context.Context, expect uint64, msgID string, cause error) (uint64, error) {
	m, err := w.log.stream.GetMsg(ctx, expect+1)
	if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, fmt.Errorf("publish %s: read back generation %d after %v: %w", msgID, expect+1, cause, err)
	}
	if err == nil && m.Header.Get(jetstream.MsgIDHeader) == msgID {
		w.last = max(w.last, m.Sequence)
		return m.Sequence, nil
	}
	head, herr := w.log.LastGeneration(ctx)
	if herr != nil {
		head = 0
	}
	return 0, errorf(CodeFenced, expect+1, cause, "publish %s: writer %s expected last generation %d, stream is at %d", msgID, w.id, expect, head)
}
