// Command controller owns the fleet config, probes every backend over MCP
// and publishes every change to the event log.
//
//	controller --config fleet.yaml [--nats-url nats://...] [--admin-listen 127.0.0.1:8081]
//	           [--admin-token-file PATH] [--admin-allowed-hosts a,b]
//	controller audit state --generation G | history --backend NAME | export --from G1 --to G2
//	controller events tail [--from G]
//
// With no --nats-url it embeds a NATS server with JetStream in
// --data-dir. Every flag can also be set by FLEETGATE_<FLAG>.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/fleetgate/fleetgate/pkg/adminauth"
	"github.com/fleetgate/fleetgate/pkg/cmdline"
	"github.com/fleetgate/fleetgate/pkg/config"
	"github.com/fleetgate/fleetgate/pkg/controller"
	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/dashboard"
	"github.com/fleetgate/fleetgate/pkg/edgestatus"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/natsnode"
	"github.com/fleetgate/fleetgate/pkg/region"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
	"github.com/fleetgate/fleetgate/pkg/stdio"
	"github.com/fleetgate/fleetgate/pkg/tracing"
)

type options struct {
	configPath, dataDir, natsURL, natsListen, adminListen, id string
	replicas                                                  int
	log                                                       cmdline.LogFlags
	leaseTTL                                                  time.Duration
	// adminToken is the content of --admin-token-file (nil: no token);
	// adminHosts the entries of --admin-allowed-hosts.
	adminToken []byte
	adminHosts []string
	nats       natsAccess
	region     regionFlags
	// store is what the embedded node's store reserves (zero with
	// --nats-url): the mirrors of the other regions are sized by it.
	store storePlan
	stdio stdio.Flags
	// refLimits bound the files and variables the config's header
	// references may name (--credential-dir, --credential-env-prefix).
	refLimits credential.Limits
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "audit" {
		os.Exit(audit(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "events" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := eventsCmd(ctx, os.Args[2:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	o, err := parse(os.Args[1:], os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(2)
	}
	fleet, err := loadFleet(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(2)
	}
	if err := run(o, fleet); err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(1)
	}
}

// loadFleet loads --config and checks its header references against
// --credential-dir and --credential-env-prefix.
func loadFleet(o *options) (*config.Fleet, error) {
	fleet, err := config.Load(o.configPath)
	if err != nil {
		return nil, err
	}
	if err := config.CheckRefs(o.configPath, fleet, o.refLimits); err != nil {
		return nil, fmt.Errorf("%w (see --credential-dir and --credential-env-prefix)", err)
	}
	return fleet, nil
}

func parse(args []string, getenv func(string) string) (*options, error) {
	o := &options{}
	host, _ := os.Hostname()
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	fs.StringVar(&o.configPath, "config", "", "fleet config, YAML (required)")
	fs.StringVar(&o.dataDir, "data-dir", "./data/controller", "local durable state (Pebble outbox) and the embedded NATS store")
	fs.StringVar(&o.natsURL, "nats-url", "", "external NATS (cluster) URL; empty starts an embedded NATS server with JetStream")
	fs.StringVar(&o.natsListen, "nats-listen", "127.0.0.1:4222", "client address of the embedded NATS server")
	fs.StringVar(&o.adminListen, "admin-listen", "127.0.0.1:8081", "admin HTTP API")
	fs.StringVar(&o.id, "id", host, "instance id, used for leader election between controllers")
	o.log.Define(fs)
	fs.IntVar(&o.replicas, "replicas", 1, "replicas of the event stream and buckets: 1 on one node, 3 on a cluster (extension)")
	fs.DurationVar(&o.leaseTTL, "lease-ttl", 6*time.Second, "leader lease TTL; a standby takes over within twice this (extension)")
	o.nats.flags(fs)
	o.region.flags(fs)
	o.stdio.Register(fs)
	tokenFile := fs.String("admin-token-file", "", "when set, every admin request but /healthz and /readyz needs Authorization: Bearer <the file's content>")
	fs.StringVar(&o.refLimits.Dir, "credential-dir", credential.DefaultDir, "directory every {file: PATH} header reference of the config must lie under (\"/\": anywhere)")
	fs.StringVar(&o.refLimits.EnvPrefix, "credential-env-prefix", "", "prefix every {env: NAME} header reference of the config must begin with (empty: any but FLEETGATE_*)")
	allowedHosts := fs.String("admin-allowed-hosts", "", "more Host values the admin API answers (name or name:port, comma-separated); loopback names with the listen port always pass")
	if err := cmdline.Parse(fs, args, getenv); err != nil {
		return nil, err
	}
	var err error
	if *tokenFile != "" {
		if o.adminToken, err = adminauth.ReadTokenFile(*tokenFile); err != nil {
			return nil, fmt.Errorf("flag -admin-token-file: %w", err)
		}
	}
	if err := o.refLimits.Validate(); err != nil {
		return nil, fmt.Errorf("flag -credential-dir or -credential-env-prefix: %w", err)
	}
	if o.adminHosts, err = adminauth.ParseAllowedHosts(*allowedHosts); err != nil {
		return nil, fmt.Errorf("flag -admin-allowed-hosts: %w", err)
	}
	switch {
	case o.configPath == "":
		return nil, errors.New("flag -config is required")
	case o.id == "":
		return nil, errors.New("invalid value \"\" for flag -id: must not be empty")
	case o.replicas < 1 || o.replicas > 5:
		return nil, fmt.Errorf("invalid value %d for flag -replicas: want 1..5", o.replicas)
	case o.leaseTTL < 100*time.Millisecond:
		return nil, fmt.Errorf("invalid value %s for flag -lease-ttl: want at least 100ms", o.leaseTTL)
	}
	if err := o.nats.check(); err != nil {
		return nil, err
	}
	if err := o.region.check(); err != nil {
		return nil, err
	}
	if o.natsURL == "" {
		plan, err := o.nats.checkStore(max(len(o.region.regions)-1, 0))
		if err != nil {
			return nil, err
		}
		o.store = plan
	}
	return o, o.log.Check()
}

// connectNATS connects to --nats-url, or starts the embedded node. It
// returns the connection to the fleet account and the one to the edge
// account (the session bucket, the call trail): the embedded node's
// controller user there, or --nats-edges-nkey-seed/--nats-edges-creds on
// an external cluster, or the first connection itself (a one-account
// server).
func connectNATS(o *options, zl zerolog.Logger) (nc, ncEdges *nats.Conn, closeAll func(), err error) {
	url := o.natsURL
	stop := func() {}
	access, edgesAccess := o.nats.access, o.nats.edgesAccess()
	if url == "" {
		nopts := &natsnode.Options{DataDir: filepath.Join(o.dataDir, "nats"), Listen: o.natsListen,
			Auth: true, MaxStore: int64(o.nats.maxStore), EdgeUsers: o.nats.edgeUsers}
		o.region.node(nopts)
		node, err := natsnode.Start(nopts)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("embedded NATS on %s: %w", o.natsListen, err)
		}
		url = node.ClientURL()
		stop = node.Shutdown
		access, edgesAccess = node.ControllerAccess(), node.ControllerEdgeAccess()
		ev := zl.Info().Str("url", url).Str("edge_seed", node.EdgeSeed())
		for _, name := range o.nats.edgeUsers {
			ev = ev.Str("edge_seed_"+name, node.EdgeSeedFor(name))
		}
		ev.Msg("embedded NATS started; each edge authenticates with its own edge seed (account " + natsnode.EdgeAccount + ")")
		if node.LeafURL() != "" {
			zl.Info().Str("leaf_url", node.LeafURL()).Str("leaf_seed", node.LeafSeed()).Msg("embedded NATS accepts leaf connections from other regions presenting the leaf seed")
		}
	}
	connect := func(a natsnode.Access, name string) (*nats.Conn, error) {
		copts, err := connectOptions(a, zl, nats.Name(name), nats.MaxReconnects(-1),
			nats.RetryOnFailedConnect(true), nats.ReconnectWait(250*time.Millisecond))
		if err != nil {
			return nil, err
		}
		nc, err := nats.Connect(url, copts...)
		if err != nil {
			return nil, fmt.Errorf("connect NATS %s: %w", url, err)
		}
		return nc, nil
	}
	if nc, err = connect(access, "fleetgate-controller-"+o.id); err != nil {
		stop()
		return nil, nil, nil, err
	}
	ncEdges = nc
	if edgesAccess.NkeySeed != "" || edgesAccess.Creds != "" {
		if ncEdges, err = connect(edgesAccess, "fleetgate-controller-edges-"+o.id); err != nil {
			nc.Close()
			stop()
			return nil, nil, nil, err
		}
	}
	return nc, ncEdges, func() { ncEdges.Close(); nc.Close(); stop() }, nil
}

// edgesBucket is a bucket of the edges' account the dashboard reads (the
// session records, the edges' status records), or nil (the dashboard then
// shows none of it) when it cannot be opened.
func edgesBucket(ctx context.Context, js jetstream.JetStream, zl zerolog.Logger, bucket string) jetstream.KeyValue {
	kctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	kv, err := js.KeyValue(kctx, bucket)
	if err != nil {
		zl.Warn().Err(err).Str("bucket", bucket).Msg("the dashboard shows no sessions or edges from this bucket: unreadable")
		return nil
	}
	return kv
}

func run(o *options, fleet *config.Fleet) error {
	zl := o.log.Logger(os.Stderr).With().Str("controller", o.id).Logger()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// SIGHUP reloads the config; taken from the start, so that one sent
	// while the controller starts (whose default action is to exit) is
	// kept and applied once the reload loop runs.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	if err := ensureDataDir(o.dataDir); err != nil {
		return err
	}
	nc, ncEdges, closeNATS, err := connectNATS(o, zl)
	if err != nil {
		return err
	}
	defer closeNATS()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	jsEdges, err := jetstream.New(ncEdges)
	if err != nil {
		return fmt.Errorf("jetstream of the edge account: %w", err)
	}
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	log, err := events.OpenLog(lctx, js, o.region.logOptions(o.replicas))
	if err == nil {
		err = o.nats.provision(lctx, jsEdges, o.replicas)
	}
	if err == nil {
		err = o.region.mirror(lctx, js, o.replicas, o.store.mirrorBytes)
	}
	cancel()
	if err != nil {
		return err
	}
	if o.store.mirrorBytes > 0 {
		zl.Info().Int64("mirror_max_bytes", o.store.mirrorBytes).Int("mirrors", o.store.mirrors).Int64("own_bytes", o.store.own).
			Int64("nats_max_store", int64(o.nats.maxStore)).
			Msg("the mirrors of the other regions' event streams and snapshot buckets are sized to what -nats-max-store leaves after this region's own streams (at most 256MiB each)")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	tp, err := tracing.New(ctx, &tracing.Options{ServiceName: "fleetgate-controller"}) // OTEL_* variables; off when none
	if err != nil {
		return err
	}
	defer func() { // after the errgroup: the spans of the shutdown too
		if err := tp.Shutdown(context.Background()); err != nil {
			zl.Warn().Err(err).Msg("tracing shutdown")
		}
	}()
	stdioHost, err := o.stdio.Host(&zl, reg, fleet.Health.Interval)
	if err != nil {
		return err
	}
	ctl, err := controller.New(controller.Options{ID: o.id, Fleet: fleet, ConfigPath: o.configPath, JetStream: js, Log: log,
		OutboxDir: filepath.Join(o.dataDir, "outbox"), Replicas: o.replicas, LeaseTTL: o.leaseTTL, Registerer: reg, Logger: &zl,
		TracerProvider: tp.TracerProvider(), Regions: o.region.regions, Stdio: stdioHost, RefLimits: &o.refLimits})
	if err != nil {
		return err
	}
	buckets, err := o.nats.bucketKeeper(jsEdges, o.replicas, ctl.Leading, reg, &zl)
	if err != nil {
		return err
	}
	var regions func(context.Context) []region.Status // the dashboard's regions panel
	if o.region.name != "" {
		regions = func(ctx context.Context) []region.Status {
			return region.Statuses(ctx, js, o.region.name, o.region.regions)
		}
	}
	dash, err := dashboard.New(&dashboard.Options{Reader: ctl.Reader(), Log: log, Sessions: edgesBucket(ctx, jsEdges, zl, sessionstore.DefaultBucket), Edges: edgesBucket(ctx, jsEdges, zl, edgestatus.Bucket), Registerer: reg, Statuses: ctl.StatusHistory(),
		Regions: regions, OnError: func(err error) { zl.Warn().Err(err).Msg("dashboard") }})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.adminListen)
	if err != nil {
		return fmt.Errorf("admin listen %s: %w", o.adminListen, err)
	}
	admin := adminauth.Guard(dash.Handler(ctl.Handler(reg)), adminauth.Options{Role: "controller", Token: o.adminToken, AllowedHosts: o.adminHosts,
		ListenAddr: ln.Addr().String(), Open: dashboard.OpenPaths()})
	srv := &http.Server{Handler: admin, ReadHeaderTimeout: 5 * time.Second}
	zl.Info().Str("admin", "http://"+ln.Addr().String()).Str("dashboard", "http://"+ln.Addr().String()+"/ui/").Msg("controller started")

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return ctl.Run(gctx) })
	if len(o.region.regions) > 1 {
		keeper, err := o.region.keeper(js, o.replicas, o.store.mirrorBytes, ctl.Leading, zl)
		if err != nil {
			return err
		}
		g.Go(func() error { return keeper.Run(gctx) })
	}
	g.Go(func() error { return buckets.Run(gctx) })
	g.Go(func() error { return dash.Run(gctx) })
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("admin server: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		<-gctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	})
	g.Go(func() error {
		for {
			select {
			case <-gctx.Done():
				return nil
			case <-hup:
				if err := ctl.Reload(gctx); err != nil {
					zl.Error().Err(err).Msg("config reload refused; the running config stays")
				} else {
					zl.Info().Str("config", o.configPath).Msg("config reloaded")
				}
			}
		}
	})
	err = g.Wait()
	zl.Info().Msg("controller stopped")
	return err
}

// ensureDataDir makes the controller's data dir, owner-only (0700): it
// holds the NATS seeds, the outbox and the JetStream store. An existing dir
// is narrowed to 0700 too.
func ensureDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data dir %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("data dir %s: %w", dir, err)
	}
	return nil
}
