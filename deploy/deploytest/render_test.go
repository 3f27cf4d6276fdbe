package deploytest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/nats-io/nkeys"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// chartDir is the chart under test, relative to this package.
const chartDir = "../helm/fleetgate"

const (
	release   = "fg"
	namespace = "mcp"
)

// kubeVersion is the Kubernetes version renders assume.
var kubeVersion = &chartutil.KubeVersion{Version: "v1.33.0", Major: "1", Minor: "33"}

// keyPair is a NATS user key pair made for one test render.
type keyPair struct{ seed, public string }

func newUser(t testing.TB) keyPair {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatalf("nkeys.CreateUser: %v", err)
	}
	seed, err := kp.Seed()
	if err != nil {
		t.Fatalf("seed: %v", err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		t.Fatalf("public key: %v", err)
	}
	return keyPair{seed: string(seed), public: pub}
}

// creds are the NATS credentials of one render; requiredValues the
// smallest values the chart installs with (it makes no key of its own).
type creds struct{ controller, controllerEdges, edge keyPair }

func newCreds(t testing.TB) creds {
	return creds{controller: newUser(t), controllerEdges: newUser(t), edge: newUser(t)}
}

// The edge of these values serves /mcp without authentication (it is
// started on loopback only): edge.allowUnauthenticated says so, as the
// chart requires (TestEdgeNeedsAuthentication).
func (c creds) values() map[string]any {
	v := c.credsOnly()
	v["edge"] = map[string]any{"allowUnauthenticated": true}
	return v
}

// credsOnly are the NATS credentials of c and no other value.
func (c creds) credsOnly() map[string]any {
	return map[string]any{"natsAuth": map[string]any{
		"controller":      map[string]any{"seed": c.controller.seed, "publicKey": c.controller.public},
		"controllerEdges": map[string]any{"seed": c.controllerEdges.seed, "publicKey": c.controllerEdges.public},
		"edge":            map[string]any{"seed": c.edge.seed, "publicKey": c.edge.public},
	}}
}

// loadChart loads the chart directory; with stubNATS the NATS dependency
// is a stand-in (see stubNATSChart), whether or not charts/ has the real one.
func loadChart(t testing.TB, stubNATS bool) *chart.Chart {
	t.Helper()
	c, err := loader.LoadDir(chartDir)
	if err != nil {
		t.Fatalf("load chart %s: %v", chartDir, err)
	}
	if stubNATS {
		deps := []*chart.Chart{stubNATSChart()}
		for _, d := range c.Dependencies() {
			if d.Name() != "nats" {
				deps = append(deps, d)
			}
		}
		c.SetDependencies(deps...)
	}
	return c
}

// realNATS reports whether charts/ holds the NATS dependency (after
// `helm dependency build`).
func realNATS(t testing.TB) bool {
	t.Helper()
	c, err := loader.LoadDir(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range c.Dependencies() {
		if d.Name() == "nats" {
			return true
		}
	}
	return false
}

// stubNATSChart stands in for the official NATS chart, which tests do not
// download: it reports the values it is given (after its own $tplYaml
// rendering of the volume name, as the real chart does) in a ConfigMap.
func stubNATSChart() *chart.Chart {
	return &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: "v2", Name: "nats", Version: "2.14.2"},
		Templates: []*chart.File{{Name: "templates/values.yaml", Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: nats-stub-values
data:
  values.json: {{ toJson .Values | quote }}
  authVolume: {{ tpl (index (index .Values.podTemplate.patch 0) "value" "configMap" "name" "$tplYaml") . | trim | quote }}
`)}},
	}
}

// renderOpts vary one render.
type renderOpts struct {
	values      map[string]any
	apiVersions []string // more API versions the "cluster" has
	stubNATS    bool
}

// render renders the chart as `helm template` does and returns the
// manifests by source file name.
func render(t testing.TB, o renderOpts) (map[string]string, error) {
	t.Helper()
	c := loadChart(t, o.stubNATS)
	inst := action.NewInstall(&action.Configuration{})
	inst.DryRun = true
	inst.ClientOnly = true
	inst.Replace = true
	inst.ReleaseName = release
	inst.Namespace = namespace
	inst.IncludeCRDs = true
	inst.DisableHooks = true
	inst.APIVersions = chartutil.VersionSet(o.apiVersions)
	inst.KubeVersion = kubeVersion
	rel, err := inst.Run(c, o.values)
	if err != nil {
		return nil, err
	}
	return releaseutil.SplitManifests(rel.Manifest), nil
}

// renderNotes renders o and returns its NOTES.txt.
func renderNotes(t testing.TB, o renderOpts) string {
	t.Helper()
	inst := action.NewInstall(&action.Configuration{})
	inst.DryRun, inst.ClientOnly, inst.Replace, inst.DisableHooks = true, true, true, true
	inst.ReleaseName, inst.Namespace, inst.KubeVersion = release, namespace, kubeVersion
	rel, err := inst.Run(loadChart(t, o.stubNATS), o.values)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return rel.Info.Notes
}

// merge deep-merges maps: later ones win.
func merge(ms ...map[string]any) map[string]any {
	out := map[string]any{}
	for _, m := range ms {
		for k, v := range m {
			if sub, ok := v.(map[string]any); ok {
				if old, ok := out[k].(map[string]any); ok {
					out[k] = merge(old, sub)
					continue
				}
				out[k] = merge(sub)
				continue
			}
			out[k] = v
		}
	}
	return out
}

// set builds a nested map from a dotted path.
func set(path string, v any) map[string]any {
	parts := strings.Split(path, ".")
	m := map[string]any{parts[len(parts)-1]: v}
	for i := len(parts) - 2; i >= 0; i-- {
		m = map[string]any{parts[i]: m}
	}
	return m
}

// objects are the decoded manifests of one render.
type objects struct {
	docs         []string // raw YAML, one per object
	configMaps   []corev1.ConfigMap
	secrets      []corev1.Secret
	services     []corev1.Service
	accounts     []corev1.ServiceAccount
	statefulSets []appsv1.StatefulSet
	deployments  []appsv1.Deployment
	hpas         []autoscalingv2.HorizontalPodAutoscaler
	pdbs         []policyv1.PodDisruptionBudget
	netpols      []networkingv1.NetworkPolicy
	monitors     []monitoringv1.ServiceMonitor
}

// decode decodes every manifest strictly (an unknown field is an error)
// into its Kubernetes API type; a kind without a case here fails.
func decode(t testing.TB, manifests map[string]string) *objects {
	t.Helper()
	names := make([]string, 0, len(manifests))
	for k := range manifests {
		names = append(names, k)
	}
	sort.Strings(names)
	o := &objects{}
	for _, name := range names {
		doc := manifests[name]
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, doc)
		}
		o.docs = append(o.docs, doc)
		var err error
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 ConfigMap":
			err = strictAppend(doc, &o.configMaps)
		case "v1 Secret":
			err = strictAppend(doc, &o.secrets)
		case "v1 Service":
			err = strictAppend(doc, &o.services)
		case "v1 ServiceAccount":
			err = strictAppend(doc, &o.accounts)
		case "apps/v1 StatefulSet":
			err = strictAppend(doc, &o.statefulSets)
		case "apps/v1 Deployment":
			err = strictAppend(doc, &o.deployments)
		case "autoscaling/v2 HorizontalPodAutoscaler":
			err = strictAppend(doc, &o.hpas)
		case "policy/v1 PodDisruptionBudget":
			err = strictAppend(doc, &o.pdbs)
		case "networking.k8s.io/v1 NetworkPolicy":
			err = strictAppend(doc, &o.netpols)
		case "monitoring.coreos.com/v1 ServiceMonitor":
			err = strictAppend(doc, &o.monitors)
		default:
			t.Fatalf("%s: no typed decoding for %s %s", name, tm.APIVersion, tm.Kind)
		}
		if err != nil {
			t.Fatalf("%s: strict decoding: %v\n%s", name, err, doc)
		}
	}
	return o
}

func strictAppend[T any](doc string, list *[]T) error {
	var v T
	if err := yaml.UnmarshalStrict([]byte(doc), &v); err != nil {
		return err
	}
	*list = append(*list, v)
	return nil
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// mustRender renders and decodes, failing the test on a render error.
func mustRender(t testing.TB, o renderOpts) *objects {
	t.Helper()
	m, err := render(t, o)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return decode(t, m)
}

func (o *objects) statefulSet(t testing.TB, name string) *appsv1.StatefulSet {
	t.Helper()
	for i := range o.statefulSets {
		if o.statefulSets[i].Name == name {
			return &o.statefulSets[i]
		}
	}
	t.Fatalf("no StatefulSet %s", name)
	return nil
}

func (o *objects) deployment(t testing.TB, name string) *appsv1.Deployment {
	t.Helper()
	for i := range o.deployments {
		if o.deployments[i].Name == name {
			return &o.deployments[i]
		}
	}
	t.Fatalf("no Deployment %s", name)
	return nil
}

func (o *objects) configMap(name string) *corev1.ConfigMap {
	for i := range o.configMaps {
		if o.configMaps[i].Name == name {
			return &o.configMaps[i]
		}
	}
	return nil
}

func (o *objects) service(name string) *corev1.Service {
	for i := range o.services {
		if o.services[i].Name == name {
			return &o.services[i]
		}
	}
	return nil
}

func (o *objects) secret(name string) *corev1.Secret {
	for i := range o.secrets {
		if o.secrets[i].Name == name {
			return &o.secrets[i]
		}
	}
	return nil
}

// podSpecs are the pod templates of the workloads, by workload name.
func (o *objects) podSpecs() map[string]*corev1.PodTemplateSpec {
	out := map[string]*corev1.PodTemplateSpec{}
	for i := range o.statefulSets {
		out["StatefulSet/"+o.statefulSets[i].Name] = &o.statefulSets[i].Spec.Template
	}
	for i := range o.deployments {
		out["Deployment/"+o.deployments[i].Name] = &o.deployments[i].Spec.Template
	}
	return out
}

// writeFile writes data to a new file in dir and returns its path.
func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// contains reports whether any rendered document contains s.
func (o *objects) contains(s string) string {
	for _, d := range o.docs {
		if bytes.Contains([]byte(d), []byte(s)) {
			return firstLine(d)
		}
	}
	return ""
}

func firstLine(doc string) string {
	for _, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(l, "# Source:") {
			return l
		}
	}
	return fmt.Sprintf("%.60q", doc)
}
