package natsnode

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// FleetJetStream returns the JetStream client through which nc reads the
// event log named stream: on a split server (a client of EdgeAccount) the
// fleet account's read services under FleetAPIPrefix, and split true (read
// the log by sequence: events.LogOptions.BySequence); on a one-account
// server (no service answers there) the account's own JetStream.
func FleetJetStream(ctx context.Context, nc *nats.Conn, stream string) (js jetstream.JetStream, split bool, err error) {
	if stream == "" {
		stream = EventStream
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, perr := nc.RequestWithContext(pctx, FleetAPIPrefix+".STREAM.INFO."+stream, nil)
	split = perr == nil
	switch {
	case split:
		js, err = jetstream.NewWithAPIPrefix(nc, FleetAPIPrefix)
	case errors.Is(perr, nats.ErrNoResponders), errors.Is(perr, context.DeadlineExceeded), errors.Is(perr, nats.ErrTimeout):
		// No import answers (or the user may not ask): one account.
		if ctx.Err() != nil {
			return nil, false, fmt.Errorf("natsnode: probe the fleet account: %w", ctx.Err())
		}
		js, err = jetstream.New(nc)
	default:
		return nil, false, fmt.Errorf("natsnode: probe the fleet account: %w", perr)
	}
	if err != nil {
		return nil, false, fmt.Errorf("natsnode: fleet JetStream: %w", err)
	}
	return js, split, nil
}
