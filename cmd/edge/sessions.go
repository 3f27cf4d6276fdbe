package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/fleetgate/fleetgate/pkg/calltrail"
	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/edge"
	"github.com/fleetgate/fleetgate/pkg/edge/inputstate"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
	"github.com/fleetgate/fleetgate/pkg/signin"
)

// sessionConfig holds the flags of shared session records, identity
// binding and the call trail.
type sessionConfig struct {
	idleTimeout    time.Duration
	identityHeader string
	local          bool
	auditArguments bool
	noAudit        bool
	inputStateKey  string // a file
	ownerKey       string // a file
	signInKey      string // a file
	publicURL      string
	noSignIns      bool
	signInClient   string // the edge's client id at -auth-issuer
	signInSecret   string // a file
	signInUnbound  bool
}

func (c *sessionConfig) flags(fs *flag.FlagSet) {
	fs.DurationVar(&c.idleTimeout, "session-idle-timeout", sessionstore.DefaultIdleTimeout,
		"a session without a request (and no open stream) for this long ends on every edge, and its shared record expires (at least 1s)")
	fs.StringVar(&c.identityHeader, "identity-header", "",
		"request header carrying the caller's identity, set by a trusted proxy (e.g. X-Fleetgate-User); sessions are bound to it and requests without it refused; empty: no identity (extension)")
	fs.BoolVar(&c.local, "local-sessions", false, "keep sessions on this edge only: no shared session records (extension)")
	fs.BoolVar(&c.auditArguments, "audit-arguments", false, "keep tool-call arguments in the call trail")
	fs.BoolVar(&c.noAudit, "no-call-trail", false, "do not record tool calls in the call trail (extension)")
	fs.StringVar(&c.inputStateKey, "input-state-key-file", "",
		"file holding the key (at least 32 bytes) that seals the requestState of input-required results; every edge of a group must be given the same one, so that a client's retry completes on any of them; empty: a key of this process alone (extension)")
	fs.StringVar(&c.signInKey, "signin-key-file", "",
		"file holding the key (at least 32 bytes) that seals the sign-in states and the refresh tokens of user_oauth backends (in the NATS KV bucket "+signin.DefaultBucket+"); every edge of the fleet must be given the same one, so that a sign-in completes and stays valid on any of them; empty: a key of this process alone (extension)")
	fs.StringVar(&c.publicURL, "public-url", "",
		"the edge's base URL as users' browsers reach it (e.g. https://mcp.example.com): user_oauth sign-ins redirect to it + "+signin.CallbackPath+"; empty: http://<-listen> (extension)")
	fs.BoolVar(&c.noSignIns, "no-signins", false, "keep no per-user sign-ins: user_oauth backends' calls fail and no sign-in tool is shown (extension)")
	fs.StringVar(&c.signInClient, "signin-client-id", "",
		"the edge's OAuth client id at -auth-issuer (authorization code with PKCE, redirect URI <-public-url>"+signin.LoginPath+"): a user's browser signs in there before a user_oauth sign-in, which is completed only when its user (iss, sub) is the MCP caller who asked for it; empty: user_oauth sign-ins are refused unless -signin-unbound (extension)")
	fs.StringVar(&c.signInSecret, "signin-client-secret-file", "",
		"file holding the client secret of -signin-client-id, for a confidential client; empty: a public client (extension)")
	fs.BoolVar(&c.signInUnbound, "signin-unbound", false,
		"accept user_oauth sign-ins without -signin-client-id: whoever opens a sign-in URL completes it for the MCP caller who asked for it (a user lured into opening another's URL links their backend account to that caller); for demos and tests only (extension)")
	fs.StringVar(&c.ownerKey, "session-owner-key-file", "",
		"file holding the secret (at least 32 bytes) that keys the owner hash of session records and the call trail; every edge of the fleet must be given the same one; records an edge without it wrote stay their owner's and are rewritten keyed when another edge takes them over; empty: the unkeyed hash, which anyone who knows an identity can compute (extension)")
}

// maxKeyFile bounds a key file read.
const maxKeyFile = 4096

// readKeyFile reads the key in the file of flag name (surrounding blanks
// trimmed); nil when path is "".
func readKeyFile(name, path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("flag -%s: %w", name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("flag -%s: read %s: %w", name, path, err)
	}
	if len(data) > maxKeyFile {
		return nil, fmt.Errorf("flag -%s: %s is over %d bytes", name, path, maxKeyFile)
	}
	return bytes.TrimSpace(data), nil
}

// sealer is the edge's requestState sealer: from -input-state-key-file,
// or nil (a key of the process alone).
func (c *sessionConfig) sealer() (*inputstate.Sealer, error) {
	key, err := readKeyFile("input-state-key-file", c.inputStateKey)
	if key == nil || err != nil {
		return nil, err
	}
	s, err := inputstate.New(key)
	if err != nil {
		return nil, fmt.Errorf("flag -input-state-key-file: %s: %w", c.inputStateKey, err)
	}
	return s, nil
}

// owners is the key of the session owners: from -session-owner-key-file,
// or nil (unkeyed).
func (c *sessionConfig) owners() (*sessionstore.OwnerKey, error) {
	secret, err := readKeyFile("session-owner-key-file", c.ownerKey)
	if secret == nil || err != nil {
		return nil, err
	}
	k, err := sessionstore.NewOwnerKey(secret)
	if err != nil {
		return nil, fmt.Errorf("flag -session-owner-key-file: %s: %w", c.ownerKey, err)
	}
	return k, nil
}

// signIns are the edge's SignInOptions; nil with -no-signins.
func (c *sessionConfig) signIns(js jetstream.JetStream) (*edge.SignInOptions, error) {
	if c.noSignIns {
		return nil, nil
	}
	o := &edge.SignInOptions{JetStream: js, PublicURL: strings.TrimSuffix(c.publicURL, "/"), LoginClientID: c.signInClient,
		Unbound: c.signInUnbound && c.signInClient == ""}
	if c.signInSecret != "" {
		o.LoginClientSecret = credential.Ref{File: c.signInSecret}
	}
	secret, err := readKeyFile("signin-key-file", c.signInKey)
	if err != nil {
		return nil, err
	}
	if secret != nil {
		if o.Key, err = signin.NewKey(secret); err != nil {
			return nil, fmt.Errorf("flag -signin-key-file: %s: %w", c.signInKey, err)
		}
	}
	return o, nil
}

// warnSignIns tells the log how user_oauth sign-ins are bound: loudly
// when they are not.
func (c *sessionConfig) warnSignIns(log *zerolog.Logger, issuer string) {
	switch {
	case c.noSignIns, issuer == "": // no sign-in can begin: a caller without a verified token is told why
	case c.signInClient != "":
		log.Info().Str("issuer", issuer).Msg("user_oauth sign-ins are bound to their users' browsers (-signin-client-id)")
	case c.signInUnbound:
		log.Error().Msg("UNBOUND user_oauth sign-ins accepted (-signin-unbound): whoever opens a sign-in URL completes it for the caller who asked for it; " +
			"give the edge -signin-client-id (a client at -auth-issuer) in production")
	default:
		log.Warn().Msg("user_oauth sign-ins are refused: the edge has no -signin-client-id to check who completes a sign-in (or -signin-unbound to accept unchecked ones)")
	}
}

func (c *sessionConfig) check() error {
	if c.publicURL != "" {
		u, err := url.Parse(c.publicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("invalid value %q for flag -public-url: want an absolute http(s) URL without user info, query or fragment", c.publicURL)
		}
	}
	switch {
	case c.idleTimeout < time.Second:
		return fmt.Errorf("invalid value %s for flag -session-idle-timeout: want at least 1s", c.idleTimeout)
	case strings.ContainsAny(c.identityHeader, " :\t\r\n"):
		return fmt.Errorf("invalid value %q for flag -identity-header: want a header name", c.identityHeader)
	case c.auditArguments && c.noAudit:
		return errors.New("invalid flags: -audit-arguments with -no-call-trail")
	case c.signInSecret != "" && c.signInClient == "":
		return errors.New("invalid flags: -signin-client-secret-file needs -signin-client-id")
	case c.signInClient != "" && (c.signInUnbound || c.noSignIns):
		return errors.New("invalid flags: -signin-client-id with -signin-unbound or -no-signins")
	case len(c.signInClient) > 256 || strings.ContainsFunc(c.signInClient, func(r rune) bool { return r < 0x21 || r > 0x7e }):
		return fmt.Errorf("invalid value for flag -signin-client-id: want at most 256 visible ASCII characters")
	}
	return nil
}

// records are the edge's RecordOptions; nil with -local-sessions.
func (c *sessionConfig) records(js jetstream.JetStream) *edge.RecordOptions {
	if c.local {
		return nil
	}
	return &edge.RecordOptions{JetStream: js, Store: &sessionstore.Options{IdleTimeout: c.idleTimeout}}
}

// openTrail opens the call trail; nil with -no-call-trail.
func (c *sessionConfig) openTrail(ctx context.Context, js jetstream.JetStream, reg *prometheus.Registry, log *zerolog.Logger) (*calltrail.Trail, error) {
	if c.noAudit {
		return nil, nil
	}
	t, err := calltrail.Open(ctx, js, &calltrail.Options{IncludeArguments: c.auditArguments, Registerer: reg, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("open call trail: %w", err)
	}
	return t, nil
}
