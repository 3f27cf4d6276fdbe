// Command edge serves the MCP tools of one backend group to clients,
// following the controller's event log over NATS.
//
//	edge --nats-url nats://127.0.0.1:4222 --listen 127.0.0.1:8080 --group default
//
// --mode optimizer advertises only find_tool and call_tool (plus the tools
// of --pinned-tools, which mirrors the group's pinned_tools in the fleet
// config); see package edge.
//
// Every flag can also be set by the environment variable FLEETGATE_<FLAG>
// (upper case, dashes as underscores); a flag on the command line wins.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"github.com/fleetgate/fleetgate/pkg/cmdline"
	"github.com/fleetgate/fleetgate/pkg/edge"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/health"
	"github.com/fleetgate/fleetgate/pkg/natsnode"
	"github.com/fleetgate/fleetgate/pkg/region"
	"github.com/fleetgate/fleetgate/pkg/stdio"
	"github.com/fleetgate/fleetgate/pkg/tracing"
	"github.com/fleetgate/fleetgate/pkg/verify"
)

type config struct {
	// stdio are --stdio-commands, --stdio-max-processes, --stdio-grace.
	stdio                                                    stdio.Flags
	natsURL, listen, adminListen, group, mode, id, separator string
	coalesce, callTimeout, shutdownTimeout, sessionTimeout   time.Duration
	pinned                                                   []string
	log                                                      cmdline.LogFlags
	// logTo receives the log; nil: standard error.
	logTo    io.Writer
	sessions sessionConfig
	limits   limitConfig
	access   accessConfig
	nats     natsAccess
	// region is --region: the edge follows FLEETGATE_EVENTS_<REGION>;
	// "" the single-region log.
	region string
	// regions is --regions: the edge merges these regions' logs (its own
	// and the local mirrors of the others'); nil: one log.
	regions []string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "verify" {
		os.Exit(verifyMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	cfg, err := parse(os.Args[1:], os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "edge:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "edge:", err)
		os.Exit(1)
	}
}

// verifyMain is `edge verify`: it checks that an MCP endpoint converged
// on the expected catalog (see package verify).
var verifyMain = verify.Main

// parse reads the flags, then FLEETGATE_* variables for flags not given.
func parse(args []string, getenv func(string) string) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("edge", flag.ContinueOnError)
	c.stdio.Register(fs)
	fs.StringVar(&c.natsURL, "nats-url", "nats://127.0.0.1:4222", "NATS to subscribe to")
	fs.StringVar(&c.listen, "listen", "127.0.0.1:8080", "MCP endpoint address, served at http://ADDR/mcp")
	fs.StringVar(&c.adminListen, "admin-listen", "127.0.0.1:8082", "admin HTTP API address")
	fs.StringVar(&c.group, "group", "default", "backend group whose tools this edge serves")
	fs.StringVar(&c.mode, "mode", "passthrough", "passthrough or optimizer")
	fs.StringVar(&c.id, "id", "", "edge instance id (default hostname plus a random suffix)")
	c.log.Define(fs)
	fs.StringVar(&c.region, "region", "", "the edge's region: it follows that region's event log (FLEETGATE_EVENTS_<REGION>) in its own region's NATS; empty: a single-region fleet (extension)")
	fs.StringVar(&c.separator, "separator", "_", "exposed-name separator used only for a group whose naming the event log does not carry yet (a log older than naming_changed events); otherwise the log's aggregation.separator wins (extension)")
	fs.DurationVar(&c.coalesce, "coalesce", 250*time.Millisecond, "resync coalescing window: the first change after a quiet period is applied at once, later ones within the window together at its end; a withdrawal at once (extension)")
	fs.DurationVar(&c.callTimeout, "call-timeout", 60*time.Second, "deadline of each call forwarded to a backend (extension)")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long shutdown waits for in-flight calls (extension)")
	fs.DurationVar(&c.sessionTimeout, "session-timeout", 0, "close sessions without a request for this long; 0 never (extension)")
	c.sessions.flags(fs)
	c.limits.flags(fs)
	c.access.flags(fs)
	c.nats.flags(fs)
	var pinned, regions string
	fs.StringVar(&regions, "regions", "", "comma-separated regions whose event logs the edge merges, for groups that span regions: its own region's log and the local mirrors of the others' (docs/regions.md); exclusive with -region (extension)")
	fs.StringVar(&pinned, "pinned-tools", "", "comma-separated exposed tool names an optimizer edge always advertises; mirrors the group's pinned_tools in the fleet config (extension)")
	if err := cmdline.Parse(fs, args, getenv); err != nil {
		return nil, err
	}
	for _, name := range strings.Split(pinned, ",") {
		if name = strings.TrimSpace(name); name != "" {
			c.pinned = append(c.pinned, name)
		}
	}
	if regions != "" {
		var err error
		if c.regions, err = region.ParseList(regions); err != nil {
			return nil, fmt.Errorf("flag -regions: %w", err)
		}
	}
	switch {
	case c.region != "" && c.regions != nil:
		return nil, errors.New("flags -region and -regions: give one (-regions names the edge's own region too)")
	case c.mode != edge.ModePassthrough && c.mode != edge.ModeOptimizer:
		return nil, fmt.Errorf("invalid value %q for flag -mode: want passthrough or optimizer", c.mode)
	case c.log.Check() != nil:
		return nil, c.log.Check()
	case len(c.pinned) > 0 && c.mode != edge.ModeOptimizer:
		return nil, fmt.Errorf("invalid value %q for flag -pinned-tools: pinned tools need -mode optimizer", pinned)
	case c.region != "" && region.CheckName(c.region) != nil:
		return nil, fmt.Errorf("flag -region: %w", region.CheckName(c.region))
	case c.group == "":
		return nil, errors.New("invalid value \"\" for flag -group: must not be empty")
	case c.separator == "" || strings.Trim(c.separator, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != "":
		return nil, fmt.Errorf("invalid value %q for flag -separator: want characters of [A-Za-z0-9_.-]", c.separator)
	case c.sessions.check() != nil:
		return nil, c.sessions.check()
	case c.limits.check() != nil:
		return nil, c.limits.check()
	case c.access.check(c.sessions.identityHeader) != nil:
		return nil, c.access.check(c.sessions.identityHeader)
	case c.nats.check() != nil:
		return nil, c.nats.check()
	case c.coalesce <= 0 || c.callTimeout <= 0 || c.shutdownTimeout <= 0 || c.sessionTimeout < 0:
		return nil, errors.New("invalid duration: -coalesce, -call-timeout and -shutdown-timeout must be positive, -session-timeout not negative")
	}
	for name, addr := range map[string]string{"listen": c.listen, "admin-listen": c.adminListen} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("invalid value %q for flag -%s: want HOST:PORT", addr, name)
		}
	}
	if c.id == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "edge"
		}
		c.id = host + "-" + strings.ToLower(rand.Text()[:6])
	}
	return c, nil
}

// run serves until ctx ends.
func run(ctx context.Context, c *config) error {
	var out io.Writer = os.Stderr
	if c.logTo != nil {
		out = c.logTo
	}
	log := c.log.Logger(out)
	for _, n := range c.limits.notes {
		if strings.HasPrefix(n, "-max-sessions") {
			log.Warn().Msg(n)
		} else {
			log.Info().Msg(n)
		}
	}
	copts, err := c.nats.options(log, nats.Name("fleetgate-edge-"+c.id), nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(true), nats.ReconnectWait(250*time.Millisecond))
	if err != nil {
		return err
	}
	nc, err := nats.Connect(c.natsURL, copts...)
	if err != nil {
		return fmt.Errorf("connect NATS %s: %w", c.natsURL, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream on %s: %w", c.natsURL, err)
	}
	// The event log is read in the fleet account through its read
	// services when the server splits the accounts (the edge's user may
	// do nothing else there), else in the edge's own account.
	lopts := region.LogOptions(c.region, 0)
	if lopts == nil {
		lopts = &events.LogOptions{}
	}
	stream := lopts.Stream
	if c.regions != nil {
		stream = region.StreamName(c.regions[0])
	}
	fjs, split, err := natsnode.FleetJetStream(ctx, nc, stream)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	lopts.BySequence = split
	log.Info().Bool("edge_account", split).Msg("NATS accounts")
	var elog *events.Log
	if c.regions == nil {
		log.Info().Str("nats", c.natsURL).Msg("waiting for the event log")
		if elog, err = events.AttachLog(ctx, fjs, lopts); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	trail, err := c.sessions.openTrail(ctx, js, reg, &log)
	if err != nil {
		return err
	}
	opts := &edge.Options{ID: c.id, Group: c.group, Separator: c.separator, Listen: c.listen,
		AdminListen: c.adminListen, Coalesce: c.coalesce, CallTimeout: c.callTimeout,
		ShutdownTimeout: c.shutdownTimeout, SessionTimeout: c.sessionTimeout, Logger: &log,
		LogBySequence: split, Mode: c.mode, PinnedTools: c.pinned, SessionIdleTimeout: c.sessions.idleTimeout,
		IdentityHeader: c.sessions.identityHeader, Records: c.sessions.records(js), CallTrail: trail, Registry: reg,
		HeldRelay: nc}
	c.limits.apply(opts)
	c.access.apply(opts)
	if opts.InputState, err = c.sessions.sealer(); err != nil {
		return err
	}
	if opts.OwnerKey, err = c.sessions.owners(); err != nil {
		return err
	}
	if opts.SignIns, err = c.sessions.signIns(js); err != nil {
		return err
	}
	c.sessions.warnSignIns(&log, c.access.issuer)
	// The restart backoff of the edge's instances is capped at the
	// controller's default probe interval.
	if opts.Stdio, err = c.stdio.Host(&log, reg, health.DefaultInterval); err != nil {
		return err
	}
	tp, err := tracing.New(ctx, &tracing.Options{ServiceName: "fleetgate-edge"}) // OTEL_* variables; off when none
	if err != nil {
		return err
	}
	opts.TracerProvider = tp.TracerProvider()
	var e *edge.Edge
	if c.regions != nil {
		log.Info().Str("nats", c.natsURL).Strs("regions", c.regions).Msg("following the regional event logs")
		e, err = edge.NewRegional(fjs, c.regions, opts)
	} else {
		e, err = edge.New(elog, opts)
	}
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return e.Run(gctx) })
	err = g.Wait()
	// The spans of the drain are flushed after it.
	if serr := tp.Shutdown(context.Background()); serr != nil {
		log.Warn().Err(serr).Msg("tracing shutdown")
	}
	log.Info().Msg("edge stopped")
	return err
}
