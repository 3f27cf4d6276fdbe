package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/fleetgate/fleetgate/pkg/cmdline"
	"github.com/fleetgate/fleetgate/pkg/events"
)

const eventsUsage = `usage:
  controller events tail [--from G]   follow the event log as JSON lines (from generation G; default: the events
                                      after the current head) until interrupted
flags: --nats-url URL, --nats-nkey-seed FILE (an embedded node's <data-dir>/nats/edge.seed is enough), --nats-creds FILE,
  --nats-tls-ca, --nats-tls-cert, --nats-tls-key FILE`

// eventsCmd runs an events subcommand until ctx ends (main's: at SIGINT
// or SIGTERM) and returns the exit status.
func eventsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "tail" {
		fmt.Fprintln(stderr, eventsUsage)
		return 2
	}
	fs := flag.NewFlagSet("events tail", flag.ContinueOnError)
	fs.SetOutput(stderr)
	natsURL := fs.String("nats-url", "", "NATS of a running fleet (default nats://127.0.0.1:4222)")
	from := fs.Uint64("from", 0, "first generation (default: the events after the current head)")
	var na natsAccess
	na.accessFlags(fs, "")
	if err := cmdline.Parse(fs, args[1:], os.Getenv); err != nil {
		fmt.Fprintf(stderr, "controller events tail: %v\n%s\n", err, eventsUsage)
		return 2
	}
	if err := na.access.Check(); err != nil {
		fmt.Fprintf(stderr, "controller events tail: %v\n", err)
		return 2
	}
	log, closeLog, err := openAuditLog(ctx, *natsURL, "", na.access)
	if err != nil {
		fmt.Fprintf(stderr, "controller events tail: %v\n", err)
		return 1
	}
	defer closeLog()
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	if err := log.Tail(ctx, *from, func(e events.EventJSON) error { return enc.Encode(e) }); err != nil {
		fmt.Fprintf(stderr, "controller events tail: %v\n", err)
		return 1
	}
	return 0
}
