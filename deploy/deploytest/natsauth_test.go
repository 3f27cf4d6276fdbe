package deploytest

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/fleetgate/fleetgate/pkg/config"
	"github.com/fleetgate/fleetgate/pkg/natsnode"
)

// The bundled NATS's authorization file is valid NATS config and exactly
// the accounts section natsnode.Accounts makes (the embedded node's and the
// docs/limits.md's) for the chart's three users; a server running it admits the
// three seeds and nobody without one.
func TestNATSAuthorization(t *testing.T) {
	c := newCreds(t)
	o := mustRender(t, renderOpts{values: c.values(), stubNATS: true})
	cm := o.configMap("fg-fleetgate-nats-auth")
	if cm == nil {
		t.Fatal("no NATS authorization ConfigMap")
	}
	want, err := natsnode.Accounts{Controllers: []string{c.controller.public}, ControllerEdges: []string{c.controllerEdges.public},
		Edges: []string{c.edge.public}}.Config()
	if err != nil {
		t.Fatal(err)
	}
	if got := cm.Data["auth.conf"]; strings.TrimSpace(got) != strings.TrimSpace(want) {
		t.Fatalf("the chart's accounts\n%s\nnatsnode.Accounts makes\n%s", got, want)
	}
	dir := t.TempDir()
	writeFile(t, dir, "auth.conf", []byte(cm.Data["auth.conf"]))
	conf := writeFile(t, dir, "nats.conf", []byte("listen: 127.0.0.1:-1\njetstream: {store_dir: \""+filepath.ToSlash(filepath.Join(dir, "js"))+"\"}\ninclude ./auth.conf\n"))
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("NATS config: %v\n%s", err, cm.Data["auth.conf"])
	}
	if len(opts.Nkeys) != 3 || len(opts.Users) != 0 {
		t.Fatalf("users %d nkeys %d, want the 3 nkey users only", len(opts.Users), len(opts.Nkeys))
	}
	opts.NoLog, opts.NoSigs = true, true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	defer s.Shutdown()
	if !s.ReadyForConnections(5 * time.Second) {
		t.Fatal("NATS not ready")
	}
	for role, kp := range map[string]keyPair{"controller": c.controller, "controller-edges": c.controllerEdges, "edge": c.edge} {
		seedFile := writeFile(t, dir, role+".seed", []byte(kp.seed))
		opt, err := nats.NkeyOptionFromSeed(seedFile)
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(s.ClientURL(), opt)
		if err != nil {
			t.Errorf("%s seed: %v", role, err)
			continue
		}
		nc.Close()
	}
	if nc, err := nats.Connect(s.ClientURL()); err == nil {
		nc.Close()
		t.Error("a client without credentials was admitted")
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// The fleet config the chart renders is one the controller accepts, with
// the default values and with backends and credentials references.
func TestFleetConfigParses(t *testing.T) {
	c := newCreds(t)
	fleet := map[string]any{
		"groups": []any{map[string]any{"name": "tools", "backends": []any{
			map[string]any{"name": "alpha", "url": "http://alpha.mcp.svc:8080/mcp",
				"headers": map[string]any{"Authorization": map[string]any{"env": "ALPHA_AUTHORIZATION"}}},
		}, "pinned_tools": []any{"alpha_echo"}}},
		"aggregation": map[string]any{"separator": "."},
		"authorization": map[string]any{"default": "allow", "rules": []any{
			map[string]any{"name": "no-beta", "effect": "deny", "tools": []any{"beta_*"}}}},
	}
	for name, vals := range map[string]map[string]any{
		"defaults": c.values(),
		"backends": merge(c.values(), set("fleet.config", fleet), set("edge.group", "tools"), set("edge.mode", "optimizer")),
	} {
		t.Run(name, func(t *testing.T) {
			o := mustRender(t, renderOpts{values: vals, stubNATS: true})
			cm := o.configMap("fg-fleetgate-fleet")
			if cm == nil {
				t.Fatal("no fleet ConfigMap")
			}
			f, err := config.Parse("fleet.yaml", []byte(cm.Data["fleet.yaml"]))
			if err != nil {
				t.Fatalf("controller refuses the rendered config: %v\n%s", err, cm.Data["fleet.yaml"])
			}
			edge := o.deployment(t, edgeName).Spec.Template.Spec.Containers[0]
			if name == "backends" {
				if _, ok := f.Backend("tools", "alpha"); !ok {
					t.Error("backend alpha lost")
				}
				for _, a := range []string{"--separator=.", "--pinned-tools=alpha_echo", "--group=tools", "--mode=optimizer"} {
					if !hasArg(edge, a) {
						t.Errorf("edge args %v lack %s (mirrored from the fleet config)", edge.Args, a)
					}
				}
			}
			if strings.Contains(cm.Data["fleet.yaml"], "\t") {
				t.Error("tabs in the rendered YAML")
			}
		})
	}
}
