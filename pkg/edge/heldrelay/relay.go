package heldrelay

import (
	"context"
	"crypto/cipher"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
)

// Errors of Continue, matched with errors.Is.
var (
	// ErrHolderGone: no edge takes the holder's subject (it stopped, or
	// is not reachable from here).
	ErrHolderGone = errors.New("the edge holding the call does not answer")
	// ErrHolderTimeout: the holder did not answer within the wait.
	ErrHolderTimeout = errors.New("the edge holding the call did not answer in time")
	// ErrTooLarge: a message over the bounds or the connection's limit.
	ErrTooLarge = errors.New("heldrelay: message too large")
)

// DefaultMaxInflight is Options.MaxInflight's default: an edge holds at
// most 256 calls, so as many retries can be pending for it.
const DefaultMaxInflight = 256

// Options configure a Relay. Conn, Edge, Key and Handle are required.
type Options struct {
	Conn *nats.Conn
	// Key seals the messages between the edges of the group: the relay
	// key of the group's input-state key file
	// (inputstate.Sealer.RelayKey), the same on every edge (envelope.go).
	Key cipher.AEAD
	// Edge is this edge's id: it takes retries on Subject(Edge).
	Edge string
	// Answer answers a retry forwarded to this edge within ctx (its
	// deadline is the retry's wait).
	Answer func(ctx context.Context, r *Retry) *Outcome
	// MaxInflight bounds the retries handled at once; one more is refused
	// at once. Default DefaultMaxInflight.
	MaxInflight int
	Log         zerolog.Logger
}

// Relay forwards retries to the edges that hold their calls, and takes
// the retries other edges forward to this one.
type Relay struct {
	o   Options
	sem chan struct{}
}

// New returns a relay with options o.
func New(o Options) *Relay {
	if o.MaxInflight <= 0 {
		o.MaxInflight = DefaultMaxInflight
	}
	return &Relay{o: o, sem: make(chan struct{}, o.MaxInflight)}
}

// Continue forwards r to edge, the call's holder, and returns its answer:
// ErrHolderGone when no edge takes the holder's subject, ErrHolderTimeout
// when it did not answer by ctx's deadline or r's wait. An answer that is
// not the holder's (not sealed with the group's key for this retry) is
// ignored: the holder's may still come.
func (rl *Relay) Continue(ctx context.Context, edge string, r *Retry) (*Outcome, error) {
	plain, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("heldrelay: encode retry for edge %q: %w", edge, err)
	}
	if len(plain) > MaxRetry || rl.overPayload(len(plain)+envelopeOverhead) {
		return nil, fmt.Errorf("%w: retry of %d bytes for edge %q", ErrTooLarge, len(plain), edge)
	}
	data, nonce := seal(rl.o.Key, retryAAD(Subject(edge)), plain)
	ctx, cancel := context.WithTimeout(ctx, r.Wait())
	defer cancel()
	inbox := rl.o.Conn.NewInbox()
	sub, err := rl.o.Conn.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("heldrelay: forward retry to edge %q: subscribe the answer: %w", edge, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := rl.o.Conn.PublishRequest(Subject(edge), inbox, data); err != nil {
		return nil, fmt.Errorf("heldrelay: forward retry to edge %q: %w", edge, err)
	}
	var ignored error // the last answer not taken, for the timeout's error
	for {
		msg, err := sub.NextMsgWithContext(ctx)
		switch {
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
			if ignored != nil {
				return nil, fmt.Errorf("%w: edge %q (an answer ignored: %w)", ErrHolderTimeout, edge, ignored)
			}
			return nil, fmt.Errorf("%w: edge %q", ErrHolderTimeout, edge)
		case errors.Is(err, nats.ErrNoResponders):
			return nil, fmt.Errorf("%w: edge %q", ErrHolderGone, edge)
		case err != nil:
			return nil, fmt.Errorf("heldrelay: forward retry to edge %q: %w", edge, err)
		}
		plain, _, err := open(rl.o.Key, outcomeAAD(nonce), msg.Data)
		if err != nil {
			ignored = err
			rl.o.Log.Debug().Err(err).Str("holder", edge).Msg("forwarded retry: an answer not the holder's ignored")
			continue
		}
		out, err := DecodeOutcome(plain)
		if err != nil {
			return nil, fmt.Errorf("answer of edge %q: %w", edge, err)
		}
		return out, nil
	}
}

// Run takes the retries forwarded to this edge until ctx ends, then
// returns after the ones being handled ended (their contexts end with
// ctx).
func (rl *Relay) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sub, err := rl.o.Conn.Subscribe(Subject(rl.o.Edge), func(m *nats.Msg) {
		if m.Reply == "" {
			return // nobody to answer
		}
		plain, nonce, err := rl.unseal(m.Data)
		if err != nil { // not an edge of the group's: not answered
			rl.o.Log.Debug().Err(err).Msg("forwarded retry refused")
			return
		}
		select {
		case rl.sem <- struct{}{}:
		default:
			rl.respond(m, nonce, &Outcome{Code: codeInternal, Message: fmt.Sprintf("edge %q is handling %d forwarded retries: try again", rl.o.Edge, cap(rl.sem))})
			return
		}
		wg.Go(func() {
			defer func() { <-rl.sem }()
			rl.respond(m, nonce, rl.handle(hctx, plain))
		})
	})
	if err != nil {
		return fmt.Errorf("heldrelay: subscribe %s: %w", Subject(rl.o.Edge), err)
	}
	// Each retry is small and answered on its own goroutine: the pending
	// bound only has to cover a burst.
	if err := sub.SetPendingLimits(4*DefaultMaxInflight, 8*MaxRetry); err != nil {
		_ = sub.Unsubscribe()
		return fmt.Errorf("heldrelay: subscribe %s: %w", Subject(rl.o.Edge), err)
	}
	// The server knows the subscription before a held call's first state
	// is handed out (best effort: a connection down now resubscribes).
	_ = rl.o.Conn.FlushWithContext(ctx)
	<-ctx.Done()
	err = sub.Unsubscribe()
	cancel()
	wg.Wait()
	if err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		return fmt.Errorf("heldrelay: unsubscribe %s: %w", Subject(rl.o.Edge), err)
	}
	return nil
}

// codeInternal and codeInvalidParams are the JSON-RPC codes of the
// relay's own refusals.
const (
	codeInternal      = -32603
	codeInvalidParams = -32602
)

// unseal opens a retry forwarded to this edge: sealed with the group's
// key for this edge's subject.
func (rl *Relay) unseal(data []byte) (plain, nonce []byte, err error) {
	if len(data) > MaxRetry+envelopeOverhead {
		return nil, nil, fmt.Errorf("%w: retry of %d bytes (max %d)", ErrMalformed, len(data), MaxRetry)
	}
	return open(rl.o.Key, retryAAD(Subject(rl.o.Edge)), data)
}

// handle decodes and answers one forwarded retry.
func (rl *Relay) handle(ctx context.Context, data []byte) *Outcome {
	r, err := DecodeRetry(data)
	if err != nil {
		rl.o.Log.Debug().Err(err).Msg("forwarded retry refused")
		return &Outcome{Code: codeInvalidParams, Message: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, r.Wait())
	defer cancel()
	return rl.o.Answer(ctx, r)
}

// respond answers m, the retry sealed with nonce, with out; an answer over the limits is replaced by an
// error saying so (the call's result is lost: the holder recorded it).
func (rl *Relay) respond(m *nats.Msg, nonce []byte, out *Outcome) {
	data, err := json.Marshal(out)
	if err == nil && (len(data) > MaxOutcome || rl.overPayload(len(data)+envelopeOverhead)) {
		err = fmt.Errorf("%w: answer of %d bytes, over what edges relay to each other (%d bytes, NATS max_payload %d)",
			ErrTooLarge, len(data), MaxOutcome, rl.o.Conn.MaxPayload())
	}
	if err != nil {
		data, _ = json.Marshal(&Outcome{Code: codeInternal, Message: fmt.Sprintf("edge %q: %v", rl.o.Edge, err)})
	}
	sealed, _ := seal(rl.o.Key, outcomeAAD(nonce), data)
	if err := m.Respond(sealed); err != nil {
		rl.o.Log.Warn().Err(err).Msg("forwarded retry: answer not sent")
	}
}

// overPayload reports whether n bytes exceed what the server takes in a
// message (unknown while not connected: the publish then fails itself).
func (rl *Relay) overPayload(n int) bool {
	mp := rl.o.Conn.MaxPayload()
	return mp > 0 && int64(n) > mp
}
