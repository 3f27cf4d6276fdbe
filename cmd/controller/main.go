// Command controller owns the fleet config, probes every backend over MCP
// and publishes every change to the event log.
//
//	controller --config fleet.yaml [--nats-url nats://...] [--admin-listen 127.0.0.1:8081]
//	controller audit state --generation G | history --backend NAME | export --from G1 --to G2
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

	"github.com/fleetgate/fleetgate/pkg/cmdline"
	"github.com/fleetgate/fleetgate/pkg/config"
	"github.com/fleetgate/fleetgate/pkg/controller"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/natsnode"
)

type options struct {
	configPath, dataDir, natsURL, natsListen, adminListen, id, logFormat string
	replicas                                                             int
	leaseTTL                                                             time.Duration
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "audit" {
		os.Exit(audit(os.Args[2:], os.Stdout, os.Stderr))
	}
	o, err := parse(os.Args[1:], os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(2)
	}
	fleet, err := config.Load(o.configPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(2)
	}
	if err := run(o, fleet); err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(1)
	}
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
	fs.StringVar(&o.logFormat, "log-format", "", "console or json (default console on a terminal, else json)")
	fs.IntVar(&o.replicas, "replicas", 1, "replicas of the event stream and buckets: 1 on one node, 3 on a cluster (extension)")
	fs.DurationVar(&o.leaseTTL, "lease-ttl", 6*time.Second, "leader lease TTL; a standby takes over within twice this (extension)")
	if err := cmdline.Parse(fs, args, getenv); err != nil {
		return nil, err
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
	return o, cmdline.CheckLogFormat(o.logFormat)
}

// connectNATS connects to --nats-url, or starts the embedded node.
func connectNATS(o *options, zl zerolog.Logger) (*nats.Conn, func(), error) {
	url := o.natsURL
	stop := func() {}
	if url == "" {
		node, err := natsnode.Start(&natsnode.Options{DataDir: filepath.Join(o.dataDir, "nats"), Listen: o.natsListen})
		if err != nil {
			return nil, nil, fmt.Errorf("embedded NATS on %s: %w", o.natsListen, err)
		}
		url = node.ClientURL()
		stop = node.Shutdown
		zl.Info().Str("url", url).Msg("embedded NATS started")
	}
	nc, err := nats.Connect(url, nats.Name("fleetgate-controller-"+o.id), nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(true), nats.ReconnectWait(250*time.Millisecond))
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("connect NATS %s: %w", url, err)
	}
	return nc, func() { nc.Close(); stop() }, nil
}

func run(o *options, fleet *config.Fleet) error {
	zl := cmdline.Logger(o.logFormat, os.Stderr).With().Str("controller", o.id).Logger()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := os.MkdirAll(o.dataDir, 0o755); err != nil {
		return fmt.Errorf("data dir %s: %w", o.dataDir, err)
	}
	nc, closeNATS, err := connectNATS(o, zl)
	if err != nil {
		return err
	}
	defer closeNATS()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	log, err := events.OpenLog(lctx, js, &events.LogOptions{Replicas: o.replicas})
	cancel()
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	ctl, err := controller.New(controller.Options{ID: o.id, Fleet: fleet, ConfigPath: o.configPath, JetStream: js, Log: log,
		OutboxDir: filepath.Join(o.dataDir, "outbox"), Replicas: o.replicas, LeaseTTL: o.leaseTTL, Registerer: reg, Logger: &zl})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.adminListen)
	if err != nil {
		return fmt.Errorf("admin listen %s: %w", o.adminListen, err)
	}
	srv := &http.Server{Handler: ctl.Handler(reg), ReadHeaderTimeout: 5 * time.Second}
	zl.Info().Str("admin", "http://"+ln.Addr().String()).Msg("controller started")

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return ctl.Run(gctx) })
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
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
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
