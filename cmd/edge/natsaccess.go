package main

import (
	"flag"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/fleetgate/fleetgate/pkg/natsnode"
)

// natsAccess holds the flags of NATS credentials and TLS.
type natsAccess struct {
	access natsnode.Access
}

func (a *natsAccess) flags(fs *flag.FlagSet) {
	fs.StringVar(&a.access.NkeySeed, "nats-nkey-seed", "", "authenticate to NATS with the user nkey seed in this file (with the controller's embedded NATS: <controller data-dir>/nats/edge.seed)")
	fs.StringVar(&a.access.Creds, "nats-creds", "", "authenticate to NATS with this .creds file (operator/JWT deployments)")
	fs.StringVar(&a.access.TLSCA, "nats-tls-ca", "", "PEM file of the CAs that sign the NATS server's certificate")
	fs.StringVar(&a.access.TLSCert, "nats-tls-cert", "", "PEM client certificate for NATS (with -nats-tls-key)")
	fs.StringVar(&a.access.TLSKey, "nats-tls-key", "", "PEM key of -nats-tls-cert")
	fs.StringVar(&a.access.InboxPrefix, "nats-inbox-prefix", "", "prefix of this edge's NATS reply subjects; must match the user's subscribe permission (extension); default _INBOX_<the credential's public key>, the prefix natsnode.Accounts gives each edge user")
}

func (a *natsAccess) check() error {
	if err := a.access.Check(); err != nil {
		return fmt.Errorf("NATS access flags: %w", err)
	}
	return nil
}

// options are the connection options, with async errors (a permission
// refusal among them) logged.
func (a *natsAccess) options(log zerolog.Logger, base ...nats.Option) ([]nats.Option, error) {
	opts, err := a.access.Options()
	if err != nil {
		return nil, err
	}
	return append(append(base, opts...), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		log.Warn().Err(err).Msg("NATS asynchronous error")
	})), nil
}
