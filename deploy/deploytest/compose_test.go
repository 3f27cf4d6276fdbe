package deploytest

import (
	"context"
	"net"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/fleetgate/fleetgate/pkg/config"
)

// listenFlags are the flags of either binary that take an address to
// listen on.
var listenFlags = []string{"listen", "admin-listen", "nats-listen"}

// flagValues splits a command's --name=value arguments.
func flagValues(t *testing.T, svc string, args []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, a := range args {
		name, val, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || !ok {
			t.Errorf("%s: argument %q: want --flag=value", svc, a)
			continue
		}
		out[name] = val
	}
	return out
}

// The guide's compose file (deploy/compose/compose.yaml) as compose reads
// it: NATS with JetStream, a controller, two edges and the two demo
// backends; the fleetgate services run the image this repository builds,
// with flags the binaries parse, every listener on 0.0.0.0 (the
// binaries' default, 127.0.0.1, is unreachable from outside a container)
// and every published port one they listen on; an edge published on
// another host port lets that Host through; the controller's fleet
// config loads and names the demo backends by service and port.
func TestComposeFile(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join(repoRoot, "deploy", "compose"))
	if err != nil {
		t.Fatal(err)
	}
	opts, err := cli.NewProjectOptions([]string{filepath.Join(dir, "compose.yaml")}, cli.WithWorkingDirectory(dir),
		cli.WithInterpolation(true), cli.WithResolvedPaths(true))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("compose: %v", err)
	}
	for _, name := range []string{"nats", "controller", "edge-1", "edge-2", "alpha", "beta"} {
		if _, ok := p.Services[name]; !ok {
			t.Errorf("no service %s", name)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	nats := p.Services["nats"]
	if !slices.Contains(nats.Command, "--jetstream") && !slices.Contains(nats.Command, "-js") {
		t.Errorf("nats runs %v, without JetStream", nats.Command)
	}
	root, _ := filepath.Abs(repoRoot)
	bins := binaries(t)
	flags := map[string]map[string]bool{}
	for _, bin := range []string{"controller", "edge"} {
		flags[bin] = flagNames(t, filepath.Join(bins, bin))
	}
	backendPorts := map[string]string{} // demo backend service -> port it listens on
	for _, name := range []string{"alpha", "beta"} {
		cmd := p.Services[name].Command
		i := slices.Index(cmd, "--listen")
		if len(cmd) < 4 || cmd[0] != "go" || cmd[1] != "run" || cmd[2] != "./test/demo" || cmd[3] != "backend" || i < 0 || i+1 >= len(cmd) {
			t.Errorf("%s runs %v, want go run ./test/demo backend ... --listen ADDR", name, cmd)
			continue
		}
		host, port, err := net.SplitHostPort(cmd[i+1])
		if err != nil || host != "0.0.0.0" {
			t.Errorf("%s listens on %q, want 0.0.0.0:PORT", name, cmd[i+1])
		}
		backendPorts[name] = port
	}

	var fleetFile string
	for _, name := range []string{"controller", "edge-1", "edge-2"} {
		s := p.Services[name]
		if s.Build == nil || filepath.Clean(s.Build.Context) != root {
			t.Errorf("%s: built from %+v, want this repository's Dockerfile", name, s.Build)
		}
		if len(s.Command) == 0 {
			t.Errorf("%s: no command", name)
			continue
		}
		bin, args := s.Command[0], s.Command[1:]
		known, ok := flags[bin]
		if !ok {
			t.Errorf("%s runs %q, which the image lacks", name, bin)
			continue
		}
		vals := flagValues(t, name, args)
		for f := range vals {
			if !known[f] {
				t.Errorf("%s: %s has no flag -%s", name, bin, f)
			}
		}
		if out, err := exec.Command(filepath.Join(bins, bin), append(slices.Clone(args), "--help")...).CombinedOutput(); err != nil {
			t.Errorf("%s: %s %s --help: %v\n%s", name, bin, strings.Join(args, " "), err, firstLines(string(out), 3))
		}
		if u, err := url.Parse(vals["nats-url"]); err != nil || u.Hostname() != "nats" {
			t.Errorf("%s: --nats-url %q, want the nats service", name, vals["nats-url"])
		}
		listening := map[string]bool{}
		for _, f := range listenFlags {
			v, ok := vals[f]
			if !ok {
				if known[f] && f != "nats-listen" { // no embedded NATS: --nats-url is given
					t.Errorf("%s: no --%s: the default, 127.0.0.1, is unreachable from outside the container", name, f)
				}
				continue
			}
			host, port, err := net.SplitHostPort(v)
			if err != nil || host != "0.0.0.0" {
				t.Errorf("%s: --%s=%s, want 0.0.0.0:PORT", name, f, v)
			}
			listening[port] = true
			if f == "admin-listen" {
				checkAdminHosts(t, name, port, vals["admin-allowed-hosts"], s.Ports)
			}
		}
		for _, pc := range s.Ports {
			if !listening[strconv.Itoa(int(pc.Target))] {
				t.Errorf("%s publishes container port %d, on which nothing listens", name, pc.Target)
			}
		}
		if bin == "controller" {
			fleetFile = mountedSource(t, s, vals["config"])
			if vals["data-dir"] == "" || !strings.HasPrefix(vals["data-dir"], "/tmp/") || !slices.Contains([]string(s.Tmpfs), "/tmp") {
				t.Errorf("controller: --data-dir %q: want a directory of a tmpfs /tmp (the image's user, 65532, can write nothing else)", vals["data-dir"])
			}
		}
	}
	if fleetFile == "" {
		t.Fatal("the controller's --config is not a file mounted from this directory")
	}
	fleet, err := config.Load(fleetFile)
	if err != nil {
		t.Fatalf("the controller's fleet config: %v", err)
	}
	seen := map[string]bool{}
	for _, g := range fleet.Groups {
		for _, b := range g.Backends {
			u, err := url.Parse(b.URL)
			if err != nil {
				t.Errorf("backend %s: %v", b.Name, err)
				continue
			}
			port, ok := backendPorts[u.Hostname()]
			if !ok || u.Port() != port {
				t.Errorf("backend %s at %s: no demo backend service listens there (%v)", b.Name, b.URL, backendPorts)
			}
			seen[u.Hostname()] = true
		}
	}
	if len(seen) != len(backendPorts) {
		t.Errorf("the fleet config names %v of the demo backends %v", seen, backendPorts)
	}
}

// checkAdminHosts: an admin API published on a host port other than the
// one it listens on gets Host values with that port, which its Host check
// refuses unless --admin-allowed-hosts lists them.
func checkAdminHosts(t *testing.T, svc, port, allowed string, ports []types.ServicePortConfig) {
	t.Helper()
	for _, pc := range ports {
		if strconv.Itoa(int(pc.Target)) != port || pc.Published == port {
			continue
		}
		for _, h := range []string{"127.0.0.1:" + pc.Published, "localhost:" + pc.Published} {
			if !slices.Contains(strings.Split(allowed, ","), h) {
				t.Errorf("%s: admin API published on %s, --admin-allowed-hosts %q lacks %s", svc, pc.Published, allowed, h)
			}
		}
	}
}

// mountedSource is the file on this machine that the service sees at
// path, through a bind mount.
func mountedSource(t *testing.T, s types.ServiceConfig, path string) string {
	t.Helper()
	for _, v := range s.Volumes {
		if v.Type == types.VolumeTypeBind && v.Target == path {
			return v.Source
		}
	}
	return ""
}
