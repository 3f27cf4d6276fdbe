// Command demo starts a working fleet on this machine: three demo MCP
// backends (alpha on :9101, beta on :9102, each its own process, and
// notes, a stdio command the controller and the edge each run), a
// controller with embedded NATS, and one edge; it prints the MCP URL and
// stops everything on Ctrl-C (or SIGTERM), waiting for every child.
// It refuses to start when any port it listens on is taken, and stops
// the fleet with an error when the controller or the edge exits early.
// Every address can be set by a flag, or all ports moved at once by
// --port-offset; --help lists them.
//
//	go run ./test/demo            # what `make run` does (after building bin/)
//	go run ./test/demo --port-offset 100   # 9201, 9202, 4322, 8181, 8180, 8182
//	go run ./test/demo backend --name alpha --listen 127.0.0.1:9101
//	go run ./test/demo backend --name files --stdio   # a stdio backend
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "backend" {
		if err := backend(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "demo backend:", err)
			os.Exit(1)
		}
		return
	}
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(2)
	}
	if err := fleet(o); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// options are the demo's flags: where each process listens, the
// binaries and the config.
type options struct {
	alpha, beta, nats, controllerAdmin, edge, edgeAdmin string
	bin, config, pidFile                                string
}

// defaultConfig is the demo's own fleet config, whose backend URLs the
// demo rewrites when the backends listen elsewhere.
var defaultConfig = filepath.Join("test", "demo", "fleet.yaml")

// Default addresses (fleet.yaml names the backends').
const (
	defaultAlpha = "127.0.0.1:9101"
	defaultBeta  = "127.0.0.1:9102"
)

// parseFlags reads the flags; --help (or -h) prints the usage to usage
// and returns flag.ErrHelp.
func parseFlags(args []string, usage io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(usage)
	fs.Usage = func() {
		fmt.Fprintf(usage, `Usage: demo [flags]
       demo backend --name NAME --listen ADDR

Starts a fleet on this machine: demo backends alpha and beta, a controller
with embedded NATS, and an edge; prints the MCP URL; Ctrl-C stops it all.
The binaries are taken from -bin (make run builds them into bin/).

Flags:
`)
		fs.PrintDefaults()
	}
	offset := fs.Int("port-offset", 0, "add this to every default port (e.g. 100: alpha on :9201, the MCP endpoint on :8180); flags given explicitly are taken as they are")
	fs.StringVar(&o.alpha, "alpha-listen", defaultAlpha, "demo backend alpha")
	fs.StringVar(&o.beta, "beta-listen", defaultBeta, "demo backend beta")
	fs.StringVar(&o.nats, "nats-listen", "127.0.0.1:4222", "the controller's embedded NATS")
	fs.StringVar(&o.controllerAdmin, "controller-admin-listen", "127.0.0.1:8081", "the controller's admin API and dashboard")
	fs.StringVar(&o.edge, "edge-listen", "127.0.0.1:8080", "the edge's MCP endpoint (clients connect to http://ADDR/mcp)")
	fs.StringVar(&o.edgeAdmin, "edge-admin-listen", "127.0.0.1:8082", "the edge's admin API")
	fs.StringVar(&o.bin, "bin", envOr("FLEETGATE_DEMO_BIN", "bin"), "directory of the controller and edge binaries (env FLEETGATE_DEMO_BIN)")
	fs.StringVar(&o.config, "config", envOr("FLEETGATE_DEMO_CONFIG", defaultConfig), "fleet config; the demo's own has its backend URLs set to -alpha-listen and -beta-listen (env FLEETGATE_DEMO_CONFIG)")
	fs.StringVar(&o.pidFile, "pid-file", os.Getenv("FLEETGATE_DEMO_PIDFILE"), "write \"name pid\" lines of the children here once they run (env FLEETGATE_DEMO_PIDFILE)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (see --help)", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for name, addr := range map[string]*string{"alpha-listen": &o.alpha, "beta-listen": &o.beta, "nats-listen": &o.nats,
		"controller-admin-listen": &o.controllerAdmin, "edge-listen": &o.edge, "edge-admin-listen": &o.edgeAdmin} {
		host, port, err := net.SplitHostPort(*addr)
		n, perr := strconv.Atoi(port)
		if err != nil || perr != nil {
			return nil, fmt.Errorf("invalid value %q for flag -%s: want HOST:PORT", *addr, name)
		}
		if !given[name] && *offset != 0 {
			n += *offset
		}
		if n < 1 || n > 65535 {
			return nil, fmt.Errorf("flag -%s: port %d out of range (check -port-offset)", name, n)
		}
		*addr = net.JoinHostPort(host, strconv.Itoa(n))
	}
	return o, nil
}

func backend(args []string) error {
	fs := flag.NewFlagSet("backend", flag.ContinueOnError)
	name := fs.String("name", "alpha", "backend name")
	listen := fs.String("listen", "127.0.0.1:9101", "listen address")
	overStdio := fs.Bool("stdio", false, "speak MCP on stdin and stdout (a stdio backend) instead of listening")
	if err := fs.Parse(args); err != nil {
		return err
	}
	b := demobackend.New(*name, nil)
	if *overStdio {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := b.Server().Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
			return err
		}
		return nil
	}
	if err := b.Start(*listen); err != nil {
		return err
	}
	defer b.Stop()
	addr, _ := b.Addr()
	fmt.Println("listening", addr) // a supervisor may wait for this line
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return nil
}

// listenAddrs are every address the demo fleet listens on, checked
// before anything starts: the two backends, the embedded NATS, the
// controller's admin API, the edge's MCP endpoint and its admin API.
func (o *options) listenAddrs() []struct{ addr, who string } {
	return []struct{ addr, who string }{
		{o.alpha, "demo backend alpha (-alpha-listen)"},
		{o.beta, "demo backend beta (-beta-listen)"},
		{o.nats, "controller embedded NATS (-nats-listen)"},
		{o.controllerAdmin, "controller admin API (-controller-admin-listen)"},
		{o.edge, "edge MCP endpoint (-edge-listen)"},
		{o.edgeAdmin, "edge admin API (-edge-admin-listen)"},
	}
}

// errPortTaken reports a listen address another process holds.
var errPortTaken = errors.New("port already in use")

// checkPorts binds and releases every listen address, so a second
// `make run` fails before it starts anything.
func (o *options) checkPorts() error {
	var errs []error
	for _, l := range o.listenAddrs() {
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s for the %s: %w (%v)", l.addr, l.who, errPortTaken, err))
			continue
		}
		ln.Close()
	}
	return errors.Join(errs...)
}

// child is one process of the fleet; done closes when it has exited.
type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func fleet(o *options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := o.checkPorts(); err != nil {
		return fmt.Errorf("cannot start, stop whatever holds these ports (a demo already running?):\n%w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	bin := o.bin
	dataDir, err := os.MkdirTemp("", "fleetgate-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dataDir)
	config, err := o.fleetConfig(dataDir)
	if err != nil {
		return err
	}
	stdioCommands, err := writeStdioCommands(dataDir, self)
	if err != nil {
		return err
	}

	var procs []*child
	exited := make(chan *child, 8)
	start := func(name string, path string, args ...string) (*exec.Cmd, error) {
		cmd := exec.Command(path, args...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		// Its own process group: a terminal's Ctrl-C reaches the demo
		// only, which stops the children in order and waits for them.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("start %s: %w", name, err)
		}
		c := &child{name: name, cmd: cmd, done: make(chan struct{})}
		procs = append(procs, c)
		go func() {
			c.err = cmd.Wait()
			close(c.done)
			exited <- c
		}()
		return cmd, nil
	}
	defer func() { stopAll(procs) }()
	// early returns an error when a child has exited or ctx is done.
	early := func() error {
		select {
		case c := <-exited:
			return fmt.Errorf("%s (pid %d) exited early: %v", c.name, c.cmd.Process.Pid, exitText(c.err))
		default:
			return ctx.Err()
		}
	}
	alpha, err := start("alpha", self, "backend", "--name", "alpha", "--listen", o.alpha)
	if err != nil {
		return err
	}
	beta, err := start("beta", self, "backend", "--name", "beta", "--listen", o.beta)
	if err != nil {
		return err
	}
	if _, err := start("controller", filepath.Join(bin, "controller"), "--config", config, "--data-dir", filepath.Join(dataDir, "controller"),
		"--log-format", "console", "--nats-listen", o.nats, "--admin-listen", o.controllerAdmin, "--stdio-commands", stdioCommands); err != nil {
		return err
	}
	// The embedded NATS refuses unauthenticated clients: the edge uses
	// the seed the controller writes on its first start.
	seed := filepath.Join(dataDir, "controller", "nats", "edge.seed")
	if err := waitFor(ctx, early, 30*time.Second, func() bool { _, err := os.Stat(seed); return err == nil }); err != nil {
		return fmt.Errorf("controller wrote no edge seed %s: %w", seed, err)
	}
	if _, err := start("edge", filepath.Join(bin, "edge"), "--log-format", "console", "--nats-nkey-seed", seed,
		"--nats-url", "nats://"+o.nats, "--listen", o.edge, "--admin-listen", o.edgeAdmin, "--stdio-commands", stdioCommands); err != nil {
		return err
	}
	if err := waitFor(ctx, early, 30*time.Second, func() bool { return ready("http://" + o.edgeAdmin + "/readyz") }); err != nil {
		return fmt.Errorf("edge not ready: %w", err)
	}
	if f := o.pidFile; f != "" {
		var b strings.Builder
		for _, c := range procs {
			fmt.Fprintf(&b, "%s %d\n", c.name, c.cmd.Process.Pid)
		}
		if err := os.WriteFile(f, []byte(b.String()), 0o600); err != nil {
			return fmt.Errorf("write pid file: %w", err)
		}
	}
	fmt.Printf(`
fleetgate demo is running.

  MCP URL:          http://%s/mcp
  controller admin: http://%s/v1/state
  dashboard:        http://%s/ui/
  edge admin:       http://%s/v1/sessions

  Demo backends: alpha (pid %d, %s), beta (pid %d, %s),
  and notes, a stdio command the controller and the edge each run
  (their instances: http://%s/v1/sessions/stdio).
  Kill one (kill %d) and watch its tools disappear from a connected client;
  restart it with: go run ./test/demo backend --name alpha --listen %s
  (the demo itself stops only if the controller or the edge exits).

Ctrl-C stops everything.
`, o.edge, o.controllerAdmin, o.controllerAdmin, o.edgeAdmin, alpha.Process.Pid, o.alpha, beta.Process.Pid, o.beta, o.edgeAdmin,
		alpha.Process.Pid, o.alpha)
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(os.Stderr, "demo: stopping")
			return nil
		case c := <-exited:
			if c.name == "alpha" || c.name == "beta" {
				// The point of the demo: a backend going away is shown
				// to clients, the fleet keeps running.
				fmt.Fprintf(os.Stderr, "demo: backend %s (pid %d) exited: %v\n", c.name, c.cmd.Process.Pid, exitText(c.err))
				continue
			}
			return fmt.Errorf("%s (pid %d) exited: %v; stopping everything", c.name, c.cmd.Process.Pid, exitText(c.err))
		}
	}
}

// fleetConfig is the config the controller reads: -config, or, when the
// backends listen elsewhere and it is the demo's own (it names their
// default URLs), a copy in dir with the URLs at -alpha-listen and
// -beta-listen.
func (o *options) fleetConfig(dir string) (string, error) {
	if o.alpha == defaultAlpha && o.beta == defaultBeta {
		return o.config, nil
	}
	b, err := os.ReadFile(o.config)
	if err != nil {
		return "", fmt.Errorf("demo config: %w", err)
	}
	if !bytes.Contains(b, []byte("http://"+defaultAlpha+"/mcp")) || !bytes.Contains(b, []byte("http://"+defaultBeta+"/mcp")) {
		return o.config, nil // not the demo's own: taken as it is
	}
	b = bytes.ReplaceAll(b, []byte("http://"+defaultAlpha+"/mcp"), []byte("http://"+o.alpha+"/mcp"))
	b = bytes.ReplaceAll(b, []byte("http://"+defaultBeta+"/mcp"), []byte("http://"+o.beta+"/mcp"))
	path := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return "", fmt.Errorf("demo config: %w", err)
	}
	return path, nil
}

// stdioCommand is the allow-list entry the demo's fleet config names for
// its stdio backend notes.
const stdioCommand = "demo-notes"

// writeStdioCommands writes, in dir, the allow-list of stdio commands
// that the controller and the edge are given: one entry, this very
// program as a stdio backend named notes.
func writeStdioCommands(dir, self string) (string, error) {
	argv, err := json.Marshal([]string{self, "backend", "--name", "notes", "--stdio"})
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "stdio-commands.yaml")
	// A JSON array is a YAML flow sequence: the path needs no quoting rules of its own.
	if err := os.WriteFile(path, fmt.Appendf(nil, "%s: %s\n", stdioCommand, argv), 0o600); err != nil {
		return "", fmt.Errorf("demo stdio commands: %w", err)
	}
	return path, nil
}

// stopAll sends SIGTERM to every running child, newest first, waits up
// to 15 s for each, then kills its process group.
func stopAll(procs []*child) {
	for i := len(procs) - 1; i >= 0; i-- {
		c := procs[i]
		select {
		case <-c.done:
			continue
		default:
		}
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(15 * time.Second):
			fmt.Fprintf(os.Stderr, "demo: %s (pid %d) did not stop in 15s, killing it\n", c.name, c.cmd.Process.Pid)
			_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			<-c.done
		}
	}
	// Anything a child left in its group goes too.
	for _, c := range procs {
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	}
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

func ready(url string) bool {
	cl := http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// waitFor polls cond until it holds, d passes, or early reports a child
// gone or ctx done.
func waitFor(ctx context.Context, early func() error, d time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return nil
		}
		if err := early(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return errors.New("timed out")
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
