package deploytest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"k8s.io/apimachinery/pkg/labels"
)

// With the official NATS chart in charts/ (helm dependency build), the
// bundled server is the one the rest of the chart assumes: its Service is
// the controllers' and edges' NATS URL, its pods carry the labels the
// NetworkPolicies select, it includes and mounts this chart's
// authorization file, and it runs JetStream hardened.
func TestRealNATSChart(t *testing.T) {
	if !realNATS(t) {
		t.Skip("charts/ has no nats chart (helm dependency build deploy/helm/fleetgate); the stand-in tests cover the values")
	}
	o := mustRender(t, renderOpts{values: newCreds(t).values()})
	if o.service("fg-nats") == nil {
		t.Fatalf("no Service fg-nats (the URL nats://fg-nats.mcp.svc:4222)")
	}
	ss := o.statefulSet(t, "fg-nats")
	pods := labels.Set(ss.Spec.Template.Labels)
	found := false
	for _, np := range o.netpols {
		if np.Name == "fg-fleetgate-nats" {
			found = selector(t, &np.Spec.PodSelector).Matches(pods)
		}
	}
	if !found {
		t.Errorf("the NATS NetworkPolicy does not select the NATS pods %v", pods)
	}
	v := volume(&ss.Spec.Template, "fleetgate-nats-auth")
	if v == nil || v.ConfigMap == nil || v.ConfigMap.Name != "fg-fleetgate-nats-auth" {
		t.Errorf("NATS pod volume %+v, want the ConfigMap fg-fleetgate-nats-auth", v)
	}
	for _, c := range ss.Spec.Template.Spec.Containers {
		if c.Name == "nats" && !hasMount(c, "fleetgate-nats-auth", "/etc/fleetgate-nats-auth") {
			t.Errorf("nats container mounts %+v", c.VolumeMounts)
		}
		if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("NATS container %s: root filesystem writable", c.Name)
		}
	}
	if ps := ss.Spec.Template.Spec.SecurityContext; ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot {
		t.Error("NATS pods may run as root")
	}
	cm := o.configMap("fg-nats-config")
	if cm == nil {
		t.Fatal("no fg-nats-config")
	}
	conf := cm.Data["nats.conf"]
	for _, want := range []string{"include ../fleetgate-nats-auth/auth.conf;", `"jetstream"`} {
		if !strings.Contains(conf, want) {
			t.Errorf("nats.conf lacks %s:\n%s", want, conf)
		}
	}
	// nats-server reads it as laid out in the pod: its users are ours.
	dir := t.TempDir()
	for _, d := range []string{"nats-config", "fleetgate-nats-auth"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, dir, "fleetgate-nats-auth/auth.conf", []byte(o.configMap("fg-fleetgate-nats-auth").Data["auth.conf"]))
	t.Setenv("SERVER_NAME", "fg-nats-0")
	opts, err := server.ProcessConfigFile(writeFile(t, dir, "nats-config/nats.conf", []byte(conf)))
	if err != nil {
		t.Fatalf("nats-server refuses the rendered nats.conf: %v", err)
	}
	if len(opts.Nkeys) != 2 || !opts.JetStream {
		t.Errorf("rendered server: %d nkey users, JetStream %v", len(opts.Nkeys), opts.JetStream)
	}
}
