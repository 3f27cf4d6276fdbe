package deploytest

import (
	"encoding/base64"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

const (
	controllerName = "fg-fleetgate-controller"
	edgeName       = "fg-fleetgate-edge"
	serviceMonAPI  = "monitoring.coreos.com/v1/ServiceMonitor"
)

// variants are the renders most checks run on: the defaults (bundled
// NATS), an existing NATS cluster, the ServiceMonitor on, and the HPA off.
func variants(t *testing.T, c creds) map[string]renderOpts {
	base := c.values()
	return map[string]renderOpts{
		"defaults": {values: base, stubNATS: true},
		"external-nats": {values: merge(base, set("nats.enabled", false),
			set("externalNats.url", "nats://nats.messaging.svc:4222"))},
		"service-monitor": {values: merge(base, set("serviceMonitor.enabled", true)),
			apiVersions: []string{serviceMonAPI}, stubNATS: true},
		"no-hpa": {values: merge(base, set("edge.autoscaling.enabled", false), set("edge.replicas", 3)), stubNATS: true},
		"nats-tls-auth": {values: merge(base, set("nats.enabled", false),
			set("externalNats.url", "tls://nats.example:4222"),
			set("natsTLS", map[string]any{"enabled": true, "secretName": "nats-tls", "clientCert": true}),
			set("edge.auth", map[string]any{"issuer": "https://id.example", "scopes": []any{"mcp"}}),
			set("edge.resourceURL", "https://mcp.example/mcp"),
			set("controller.sessionMaxBytes", "512MiB"))},
	}
}

func TestChartDefaults(t *testing.T) {
	o := mustRender(t, renderOpts{values: newCreds(t).values(), stubNATS: true})

	ctl := o.statefulSet(t, controllerName)
	if ctl.Spec.Replicas == nil || *ctl.Spec.Replicas != 2 {
		t.Errorf("controller replicas = %v, want exactly 2", ctl.Spec.Replicas)
	}
	if len(ctl.Spec.VolumeClaimTemplates) != 1 || ctl.Spec.VolumeClaimTemplates[0].Name != "data" {
		t.Errorf("controller volumeClaimTemplates = %+v, want one per-pod data volume", ctl.Spec.VolumeClaimTemplates)
	}
	cc := ctl.Spec.Template.Spec.Containers[0]
	if !hasMount(cc, "data", "/data") || !hasArg(cc, "--data-dir=/data") {
		t.Errorf("controller data dir is not the per-pod volume: args %v", cc.Args)
	}
	if e := env(cc, "FLEETGATE_ID"); e == nil || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil ||
		e.ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("controller --id is not the stable pod name: %+v", e)
	}
	if e := env(cc, "FLEETGATE_NATS_URL"); e == nil || e.Value != "nats://fg-nats.mcp.svc:4222" {
		t.Errorf("controller NATS URL = %+v, want the bundled nats Service", e)
	}

	edge := o.deployment(t, edgeName)
	if edge.Spec.Replicas != nil {
		t.Errorf("edge Deployment sets replicas %d with the HPA on; the HPA owns them", *edge.Spec.Replicas)
	}
	if len(o.hpas) != 1 {
		t.Fatalf("%d HPAs, want 1", len(o.hpas))
	}
	h := o.hpas[0]
	if ref := h.Spec.ScaleTargetRef; ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.Name != edge.Name {
		t.Errorf("HPA targets %+v, want the edge Deployment %s", ref, edge.Name)
	}
	if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 2 || h.Spec.MaxReplicas < *h.Spec.MinReplicas {
		t.Errorf("HPA replicas %v..%d", h.Spec.MinReplicas, h.Spec.MaxReplicas)
	}

	edgePods := labels.Set(edge.Spec.Template.Labels)
	ctlPods := labels.Set(ctl.Spec.Template.Labels)
	var edgePDB, ctlPDB bool
	for _, p := range o.pdbs {
		sel := selector(t, p.Spec.Selector)
		switch {
		case sel.Matches(edgePods) && !sel.Matches(ctlPods):
			edgePDB = true
			if p.Spec.MinAvailable == nil || p.Spec.MinAvailable.IntValue() < 1 {
				t.Errorf("edge PDB minAvailable = %v", p.Spec.MinAvailable)
			}
		case sel.Matches(ctlPods) && !sel.Matches(edgePods):
			ctlPDB = true
		default:
			t.Errorf("PDB %s selects %v: neither the edges alone nor the controllers alone", p.Name, p.Spec.Selector)
		}
	}
	if !edgePDB || !ctlPDB {
		t.Errorf("PDBs: edge %v, controller %v; want both", edgePDB, ctlPDB)
	}

	// Services select the pods that serve their target ports.
	for _, tc := range []struct {
		svc  string
		pods *corev1.PodTemplateSpec
		port string
	}{
		{edgeName, &edge.Spec.Template, "mcp"},
		{edgeName + "-admin", &edge.Spec.Template, "admin"},
		{controllerName, &ctl.Spec.Template, "admin"},
		{controllerName + "-headless", &ctl.Spec.Template, "admin"},
	} {
		s := o.service(tc.svc)
		if s == nil {
			t.Errorf("no Service %s", tc.svc)
			continue
		}
		if !labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(tc.pods.Labels)) {
			t.Errorf("Service %s selects %v, not the pods %v", s.Name, s.Spec.Selector, tc.pods.Labels)
		}
		if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].TargetPort.String() != tc.port || !hasPort(tc.pods.Spec.Containers[0], tc.port) {
			t.Errorf("Service %s ports %+v, want target port %s of the container", s.Name, s.Spec.Ports, tc.port)
		}
	}
	if s := o.service(edgeName); s != nil && len(s.Spec.Ports) == 1 && s.Spec.Ports[0].Name != "mcp" {
		t.Errorf("the MCP Service exposes %s", s.Spec.Ports[0].Name)
	}
	if len(o.monitors) != 0 {
		t.Errorf("a ServiceMonitor by default")
	}
	if o.configMap("fg-fleetgate-nats-auth") == nil {
		t.Errorf("no NATS authorization ConfigMap for the bundled NATS")
	}
}

// Every container of every variant: non-root, read-only root, no
// capabilities, probes on /healthz and /readyz, requests and limits.
func TestPodHardening(t *testing.T) {
	for name, v := range variants(t, newCreds(t)) {
		t.Run(name, func(t *testing.T) {
			o := mustRender(t, v)
			pods := o.podSpecs()
			if len(pods) != 2 {
				t.Fatalf("workloads %v, want the controller StatefulSet and the edge Deployment", keys(pods))
			}
			for wl, p := range pods {
				ps := p.Spec.SecurityContext
				if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot {
					t.Errorf("%s: pod runAsNonRoot not set", wl)
				}
				if p.Spec.AutomountServiceAccountToken == nil || *p.Spec.AutomountServiceAccountToken {
					t.Errorf("%s: a service account token is mounted", wl)
				}
				for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
					checkContainer(t, wl+"/"+c.Name, c)
				}
			}
		})
	}
}

func checkContainer(t *testing.T, where string, c corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Errorf("%s: no securityContext", where)
		return
	case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot:
		t.Errorf("%s: runAsNonRoot not set", where)
	case sc.RunAsUser == nil || *sc.RunAsUser == 0:
		t.Errorf("%s: runAsUser %v, want a non-root uid", where, sc.RunAsUser)
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Errorf("%s: root filesystem writable", where)
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Errorf("%s: privilege escalation allowed", where)
	case sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) != 0:
		t.Errorf("%s: capabilities %+v, want drop ALL", where, sc.Capabilities)
	}
	for probe, want := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if want == nil || want.HTTPGet == nil || want.HTTPGet.Path != probe || !hasPort(c, want.HTTPGet.Port.String()) {
			t.Errorf("%s: probe %s missing or on a port the container lacks: %+v", where, probe, want)
		}
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("%s: resources %+v, want cpu and memory requests and a memory limit", where, c.Resources)
	}
	if strings.HasSuffix(c.Image, ":latest") || !strings.Contains(c.Image, ":") {
		t.Errorf("%s: image %q is not pinned", where, c.Image)
	}
}

// The NATS credentials exist only in a Secret; each pod mounts its own
// role's key from it, and no env value or ConfigMap carries a seed.
func TestSeedsOnlyInSecrets(t *testing.T) {
	c := newCreds(t)
	for name, v := range variants(t, c) {
		t.Run(name, func(t *testing.T) {
			o := mustRender(t, v)
			for _, seed := range []string{c.controller.seed, c.controllerEdges.seed, c.edge.seed} {
				b64 := base64.StdEncoding.EncodeToString([]byte(seed))
				for _, d := range o.docs {
					isSecret := strings.Contains(d, "\nkind: Secret\n")
					if strings.Contains(d, seed) || (!isSecret && strings.Contains(d, b64)) {
						t.Errorf("a seed is inlined in %s", firstLine(d))
					}
				}
			}
			sec := o.secret("fg-fleetgate-nats-credentials")
			if sec == nil {
				t.Fatal("no NATS credentials Secret")
			}
			if string(sec.Data["controller.seed"]) != c.controller.seed || string(sec.Data["edge.seed"]) != c.edge.seed ||
				string(sec.Data["controller-edges.seed"]) != c.controllerEdges.seed {
				t.Errorf("Secret keys %v do not hold the seeds", keys(sec.Data))
			}
			for wl, role := range map[string]string{"StatefulSet/" + controllerName: "controller", "Deployment/" + edgeName: "edge"} {
				p := o.podSpecs()[wl]
				checkSeedMount(t, wl, p, sec.Name, role+".seed")
			}
			for _, cm := range o.configMaps {
				for k, v := range cm.Data {
					if userSeed.MatchString(v) { // "SU" and 56 base32 characters (a public key or an inbox may hold "SUA")
						t.Errorf("ConfigMap %s key %s holds something like a seed", cm.Name, k)
					}
				}
			}
		})
	}
}

func checkSeedMount(t *testing.T, wl string, p *corev1.PodTemplateSpec, secret, key string) {
	t.Helper()
	c := p.Spec.Containers[0]
	for _, e := range c.Env {
		if strings.HasPrefix(e.Value, "SU") || (e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil) {
			t.Errorf("%s: env %s carries a secret value; seeds are mounted files", wl, e.Name)
		}
	}
	e := env(c, "FLEETGATE_NATS_NKEY_SEED")
	if e == nil {
		t.Fatalf("%s: no FLEETGATE_NATS_NKEY_SEED", wl)
	}
	m := mountOf(c, e.Value)
	if m == nil {
		t.Fatalf("%s: seed path %s is on no volume mount", wl, e.Value)
	}
	vol := volume(p, m.Name)
	if vol == nil || vol.Secret == nil || vol.Secret.SecretName != secret {
		t.Fatalf("%s: seed volume %s is not the Secret %s: %+v", wl, m.Name, secret, vol)
	}
	// The controller mounts its user in the edge account too.
	want := 1
	if strings.HasPrefix(key, "controller.") {
		want = 2
		edges := "controller-edges." + strings.TrimPrefix(key, "controller.")
		ee := env(c, "FLEETGATE_NATS_EDGES_NKEY_SEED")
		if len(vol.Secret.Items) != 2 || vol.Secret.Items[1].Key != edges || ee == nil || path.Join(m.MountPath, vol.Secret.Items[1].Path) != ee.Value {
			t.Errorf("%s: mounts %+v, env %v: want the edge account key %s too", wl, vol.Secret.Items, ee, edges)
		}
	}
	if len(vol.Secret.Items) != want || vol.Secret.Items[0].Key != key || path.Join(m.MountPath, vol.Secret.Items[0].Path) != e.Value {
		t.Errorf("%s: mounts %+v, want only its own keys (%s) at %s", wl, vol.Secret.Items, key, e.Value)
	}
	if vol.Secret.DefaultMode == nil || *vol.Secret.DefaultMode&0o077 != 0 {
		t.Errorf("%s: seed file mode %v readable by others", wl, vol.Secret.DefaultMode)
	}
}

func TestExternalNATS(t *testing.T) {
	c := newCreds(t)
	url := "nats://nats.messaging.svc:4222"
	o := mustRender(t, renderOpts{values: merge(c.values(), set("nats.enabled", false), set("externalNats.url", url),
		set("networkPolicy.externalNats.to", []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.20.0.0/16"}}}))})
	for wl, p := range o.podSpecs() {
		if e := env(p.Spec.Containers[0], "FLEETGATE_NATS_URL"); e == nil || e.Value != url {
			t.Errorf("%s: NATS URL %+v, want %s", wl, e, url)
		}
	}
	if o.configMap("fg-fleetgate-nats-auth") != nil {
		t.Error("the bundled NATS's authorization rendered with nats.enabled=false")
	}
	if len(o.netpols) != 2 {
		t.Errorf("%d NetworkPolicies, want the controllers' and the edges'", len(o.netpols))
	}
	for _, np := range o.netpols {
		if !egressAllows(np, "10.20.0.0/16", 4222) {
			t.Errorf("%s: no egress to the external NATS: %+v", np.Name, np.Spec.Egress)
		}
	}

	// Without the URL the chart refuses, naming the value.
	_, err := render(t, renderOpts{values: merge(c.values(), set("nats.enabled", false))})
	if err == nil || !strings.Contains(err.Error(), "externalNats.url") {
		t.Errorf("render without externalNats.url: %v", err)
	}
	// With a Secret of one's own, no seed and no public key are needed.
	o = mustRender(t, renderOpts{values: merge(set("nats.enabled", false), set("externalNats.url", url),
		set("natsAuth.existingSecret", "my-nats"), set("edge.allowUnauthenticated", true))})
	if o.secret("fg-fleetgate-nats-credentials") != nil {
		t.Error("a credentials Secret rendered with natsAuth.existingSecret")
	}
	checkSeedMount(t, "edge", &o.deployment(t, edgeName).Spec.Template, "my-nats", "edge.seed")
	// creds files (operator/JWT NATS).
	o = mustRender(t, renderOpts{values: merge(set("nats.enabled", false), set("externalNats.url", url),
		set("natsAuth", map[string]any{"type": "creds", "existingSecret": "my-creds"}), set("edge.allowUnauthenticated", true))})
	for wl, p := range o.podSpecs() {
		c := p.Spec.Containers[0]
		if env(c, "FLEETGATE_NATS_NKEY_SEED") != nil || env(c, "FLEETGATE_NATS_CREDS") == nil {
			t.Errorf("%s: with natsAuth.type=creds, env %v", wl, c.Env)
		}
	}
}

func TestServiceMonitor(t *testing.T) {
	c := newCreds(t)
	on := merge(c.values(), set("serviceMonitor.enabled", true))
	if _, err := render(t, renderOpts{values: on, stubNATS: true}); err == nil || !strings.Contains(err.Error(), "monitoring.coreos.com") {
		t.Errorf("ServiceMonitor without its CRD: %v, want a refusal naming the CRD", err)
	}
	o := mustRender(t, renderOpts{values: on, apiVersions: []string{serviceMonAPI}, stubNATS: true})
	if len(o.monitors) != 2 {
		t.Fatalf("%d ServiceMonitors, want 2 (one per role)", len(o.monitors))
	}
	// Each role's admin Service is scraped with that role's own token.
	want := map[string]string{controllerName: "fg-fleetgate-admin-token", edgeName + "-admin": "fg-fleetgate-edge-admin-token"}
	got := map[string]string{}
	for _, sm := range o.monitors {
		sel := selector(t, &sm.Spec.Selector)
		if len(sm.Spec.Endpoints) != 1 {
			t.Fatalf("%s: endpoints %+v", sm.Name, sm.Spec.Endpoints)
		}
		ep := sm.Spec.Endpoints[0]
		if ep.Port != "admin" || ep.Path != "/metrics" || ep.Authorization == nil || ep.Authorization.Credentials == nil {
			t.Errorf("%s: endpoint %+v, want /metrics on admin with an admin token", sm.Name, ep)
			continue
		}
		for _, s := range o.services {
			if sel.Matches(labels.Set(s.Labels)) {
				if _, dup := got[s.Name]; dup {
					t.Errorf("Service %s is selected twice", s.Name)
				}
				got[s.Name] = ep.Authorization.Credentials.Name
			}
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ServiceMonitors scrape %v, want the admin Services with their role's token %v", got, want)
	}
	for _, name := range want {
		if o.secret(name) == nil {
			t.Errorf("no admin token Secret %s", name)
		}
	}
}

// Controllers and edges mount different admin token Secrets, with
// different tokens; the same token (or Secret) for both is refused.
func TestAdminTokenPerRole(t *testing.T) {
	c := newCreds(t)
	o := mustRender(t, renderOpts{values: c.values(), stubNATS: true})
	mounted := map[string]string{}
	for wl, p := range o.podSpecs() {
		for _, v := range p.Spec.Volumes {
			if v.Name == "admin-token" && v.Secret != nil {
				mounted[wl] = v.Secret.SecretName
			}
		}
	}
	ctlSecret, edgeSecret := mounted["StatefulSet/"+controllerName], mounted["Deployment/"+edgeName]
	if ctlSecret == "" || edgeSecret == "" || ctlSecret == edgeSecret {
		t.Fatalf("admin token Secrets mounted %v: want one per role", mounted)
	}
	ct, et := o.secret(ctlSecret), o.secret(edgeSecret)
	if ct == nil || et == nil {
		t.Fatalf("Secrets %s, %s not rendered", ctlSecret, edgeSecret)
	}
	if a, b := ct.Data["token"], et.Data["token"]; len(a) < 32 || len(b) < 32 || string(a) == string(b) {
		t.Errorf("controller and edge tokens: want two different random tokens")
	}
	o = mustRender(t, renderOpts{values: merge(c.values(), set("adminToken.value", "c0ntroller-t0ken-0123456789abcdef"),
		set("adminToken.edge.value", "edge-t0ken-0123456789abcdef")), stubNATS: true})
	if string(o.secret("fg-fleetgate-edge-admin-token").Data["token"]) != "edge-t0ken-0123456789abcdef" {
		t.Error("adminToken.edge.value is not the edges' token")
	}
	for _, c := range []struct {
		vals map[string]any
		want string
	}{
		{merge(c.values(), set("adminToken.value", "same-t0ken"), set("adminToken.edge.value", "same-t0ken")), "adminToken.edge.value"},
		{merge(c.values(), set("adminToken.existingSecret", "mine"), set("adminToken.edge.existingSecret", "mine")), "adminToken.edge.existingSecret"},
	} {
		if _, err := render(t, renderOpts{values: c.vals, stubNATS: true}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("one token for both roles: %v, want a refusal naming %s", err, c.want)
		}
	}
}

func TestHPAValues(t *testing.T) {
	c := newCreds(t)
	o := mustRender(t, renderOpts{values: merge(c.values(), set("edge.autoscaling.enabled", false), set("edge.replicas", 3)), stubNATS: true})
	if len(o.hpas) != 0 {
		t.Error("an HPA with edge.autoscaling.enabled=false")
	}
	if r := o.deployment(t, edgeName).Spec.Replicas; r == nil || *r != 3 {
		t.Errorf("edge replicas %v, want 3", r)
	}
	o = mustRender(t, renderOpts{values: merge(c.values(), set("edge.autoscaling", map[string]any{
		"minReplicas": 3, "maxReplicas": 30, "targetCPUUtilizationPercentage": 60, "targetMemoryUtilizationPercentage": 80})), stubNATS: true})
	h := o.hpas[0].Spec
	if *h.MinReplicas != 3 || h.MaxReplicas != 30 || len(h.Metrics) != 2 ||
		*h.Metrics[0].Resource.Target.AverageUtilization != 60 || *h.Metrics[1].Resource.Target.AverageUtilization != 80 {
		t.Errorf("HPA spec %+v", h)
	}
}

// The NetworkPolicies select the pods they are for; only controllers and
// edges reach NATS; the admin ports are open to adminFrom and metricsFrom
// only, MCP to everyone by default.
func TestNetworkPolicies(t *testing.T) {
	o := mustRender(t, renderOpts{values: newCreds(t).values(), stubNATS: true})
	ctl := labels.Set(o.statefulSet(t, controllerName).Spec.Template.Labels)
	edge := labels.Set(o.deployment(t, edgeName).Spec.Template.Labels)
	// The labels of the official chart's NATS pods (nats.selectorLabels).
	natsPods := labels.Set{"app.kubernetes.io/name": "nats", "app.kubernetes.io/instance": release, "app.kubernetes.io/component": "nats"}
	byName := map[string]networkingv1.NetworkPolicy{}
	for _, np := range o.netpols {
		byName[np.Name] = np
	}
	for name, pods := range map[string]labels.Set{"fg-fleetgate-controller": ctl, "fg-fleetgate-edge": edge, "fg-fleetgate-nats": natsPods} {
		np, ok := byName[name]
		if !ok {
			t.Errorf("no NetworkPolicy %s", name)
			continue
		}
		sel := selector(t, &np.Spec.PodSelector)
		for other, op := range map[string]labels.Set{"controller": ctl, "edge": edge, "nats": natsPods} {
			if got, want := sel.Matches(op), labels.Equals(op, pods); got != want {
				t.Errorf("%s selects the %s pods: %v, want %v", name, other, got, want)
			}
		}
	}
	// NATS clients: the controllers and the edges, nobody else.
	np := byName["fg-fleetgate-nats"]
	for _, r := range np.Spec.Ingress {
		if !rulePort(r.Ports, 4222) {
			continue
		}
		if len(r.From) != 2 {
			t.Fatalf("NATS client port open to %+v", r.From)
		}
		for _, peer := range r.From {
			if peer.PodSelector == nil || peer.NamespaceSelector != nil || peer.IPBlock != nil {
				t.Errorf("NATS client peer %+v is not a pod selector of this namespace", peer)
				continue
			}
			s := selector(t, peer.PodSelector)
			if !s.Matches(ctl) && !s.Matches(edge) || s.Matches(natsPods) {
				t.Errorf("NATS client peer %v is neither the controllers nor the edges", peer.PodSelector)
			}
		}
	}
	// Admin ports: only from peers, never open.
	for _, name := range []string{"fg-fleetgate-controller", "fg-fleetgate-edge"} {
		for _, r := range byName[name].Spec.Ingress {
			if rulePortName(r.Ports, "admin") && len(r.From) == 0 {
				t.Errorf("%s: the admin port is open to everyone", name)
			}
		}
		if !egressToPods(byName[name], natsPods, 4222) {
			t.Errorf("%s: no egress to the NATS pods on 4222", name)
		}
	}
	// MCP: open by default, narrowed by networkPolicy.mcpFrom.
	mcpOpen := false
	for _, r := range byName["fg-fleetgate-edge"].Spec.Ingress {
		mcpOpen = mcpOpen || rulePortName(r.Ports, "mcp") && len(r.From) == 0
	}
	if !mcpOpen {
		t.Error("the edges' MCP port is not reachable by default")
	}
	// No admin peers: no ingress at all to the controllers.
	o = mustRender(t, renderOpts{values: merge(newCreds(t).values(), set("networkPolicy.adminFrom", []any{}),
		set("networkPolicy.metricsFrom", []any{})), stubNATS: true})
	for _, np := range o.netpols {
		if np.Name == "fg-fleetgate-controller" && len(np.Spec.Ingress) != 0 {
			t.Errorf("controller ingress %+v without admin peers", np.Spec.Ingress)
		}
	}
	o = mustRender(t, renderOpts{values: merge(newCreds(t).values(), set("networkPolicy.enabled", false)), stubNATS: true})
	if len(o.netpols) != 0 {
		t.Error("NetworkPolicies with networkPolicy.enabled=false")
	}
}

// The values the chart hands the official NATS chart: JetStream on, the
// authorization file included from the ConfigMap this chart renders,
// mounted where the include points.
func TestBundledNATSValues(t *testing.T) {
	o := mustRender(t, renderOpts{values: newCreds(t).values(), stubNATS: true})
	cm := o.configMap("nats-stub-values")
	if cm == nil {
		t.Fatal("the NATS dependency was not rendered")
	}
	var v struct {
		Config struct {
			JetStream struct{ Enabled bool } `json:"jetstream"`
			Merge     map[string]any         `json:"merge"`
		} `json:"config"`
		Container struct {
			Patch []struct {
				Op, Path string
				Value    corev1.VolumeMount
			} `json:"patch"`
		} `json:"container"`
		NatsBox struct{ Enabled bool } `json:"natsBox"`
	}
	if err := yaml.Unmarshal([]byte(cm.Data["values.json"]), &v); err != nil {
		t.Fatal(err)
	}
	if !v.Config.JetStream.Enabled {
		t.Error("JetStream is off in the bundled NATS")
	}
	if v.NatsBox.Enabled {
		t.Error("the NATS box (no credentials) is on")
	}
	inc, _ := v.Config.Merge["$include"].(string)
	file := path.Clean(path.Join("/etc/nats-config", inc)) // nats.conf's directory
	if len(v.Container.Patch) != 1 || v.Container.Patch[0].Value.MountPath != path.Dir(file) {
		t.Fatalf("NATS includes %s, mounts %+v", file, v.Container.Patch)
	}
	var vol string
	if err := yaml.Unmarshal([]byte(cm.Data["authVolume"]), &vol); err != nil {
		t.Fatal(err)
	}
	auth := o.configMap(vol)
	if auth == nil {
		t.Fatalf("the NATS pods mount ConfigMap %q, which is not rendered", vol)
	}
	if _, ok := auth.Data[path.Base(file)]; !ok {
		t.Errorf("ConfigMap %s has no %s", vol, path.Base(file))
	}
}

func TestRenderRefusals(t *testing.T) {
	c := newCreds(t)
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"no seeds", map[string]any{}, "natsAuth."},
		{"no controller seed", merge(c.values(), set("natsAuth.controller.seed", "")), "natsAuth.controller.seed"},
		{"bad public key", merge(c.values(), set("natsAuth.edge.publicKey", `U" } ] } authorization { x`)), "natsAuth.edge.publicKey"},
		{"latest", merge(c.values(), set("image.tag", "latest")), "image.tag"},
		{"mode", merge(c.values(), set("edge.mode", "proxy")), "/edge/mode"},
		{"typo", merge(c.values(), set("edge.mdoe", "optimizer")), "mdoe"},
		{"stream replicas", merge(c.values(), set("controller.streamReplicas", 7)), "/controller/streamReplicas"},
		{"hpa range", merge(c.values(), set("edge.autoscaling.minReplicas", 5), set("edge.autoscaling.maxReplicas", 2)), "minReplicas"},
		{"issuer without resource URL", merge(c.values(), set("edge.auth.issuer", "https://id.example")), "edge.resourceURL"},
		{"issuer and identity header", merge(c.values(), set("edge.auth.issuer", "https://id.example"),
			set("edge.resourceURL", "https://x/mcp"), set("edge.identityHeader", "X-User")), "exclude"},
		{"creds with bundled NATS", merge(c.values(), set("natsAuth.type", "creds")), "natsAuth.type"},
		{"inbox prefix", merge(c.values(), set("edge.inboxPrefix", "a b")), "edge.inboxPrefix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render(t, renderOpts{values: tc.values, stubNATS: true})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("render: %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

// helpers over the typed objects

func selector(t *testing.T, s *metav1.LabelSelector) labels.Selector {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		t.Fatalf("selector %+v: %v", s, err)
	}
	if sel.Empty() {
		t.Fatalf("selector %+v selects everything", s)
	}
	return sel
}

func env(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

func hasArg(c corev1.Container, a string) bool {
	for _, x := range c.Args {
		if x == a {
			return true
		}
	}
	return false
}

func hasPort(c corev1.Container, name string) bool {
	for _, p := range c.Ports {
		if p.Name == name {
			return true
		}
	}
	return false
}

func hasMount(c corev1.Container, name, at string) bool {
	for _, m := range c.VolumeMounts {
		if m.Name == name && m.MountPath == at {
			return true
		}
	}
	return false
}

func mountOf(c corev1.Container, file string) *corev1.VolumeMount {
	for i := range c.VolumeMounts {
		if path.Dir(file) == c.VolumeMounts[i].MountPath {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

func volume(p *corev1.PodTemplateSpec, name string) *corev1.Volume {
	for i := range p.Spec.Volumes {
		if p.Spec.Volumes[i].Name == name {
			return &p.Spec.Volumes[i]
		}
	}
	return nil
}

func rulePort(ports []networkingv1.NetworkPolicyPort, n int) bool {
	for _, p := range ports {
		if p.Port != nil && p.Port.IntValue() == n {
			return true
		}
	}
	return false
}

func rulePortName(ports []networkingv1.NetworkPolicyPort, name string) bool {
	for _, p := range ports {
		if p.Port != nil && p.Port.String() == name {
			return true
		}
	}
	return false
}

func egressToPods(np networkingv1.NetworkPolicy, pods labels.Set, port int) bool {
	for _, r := range np.Spec.Egress {
		if !rulePort(r.Ports, port) {
			continue
		}
		for _, peer := range r.To {
			if peer.PodSelector != nil && peer.NamespaceSelector == nil {
				if s, err := metav1.LabelSelectorAsSelector(peer.PodSelector); err == nil && !s.Empty() && s.Matches(pods) {
					return true
				}
			}
		}
	}
	return false
}

func egressAllows(np networkingv1.NetworkPolicy, cidr string, port int) bool {
	for _, r := range np.Spec.Egress {
		if !rulePort(r.Ports, port) {
			continue
		}
		for _, peer := range r.To {
			if peer.IPBlock != nil && peer.IPBlock.CIDR == cidr {
				return true
			}
		}
	}
	return false
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestInputStateKeyShared: every edge is given one requestState key
// (--input-state-key-file) from a Secret only edges mount, random and
// long enough when the values name none, and a Secret of the user's
// when they do.
func TestInputStateKeyShared(t *testing.T) {
	c := newCreds(t)
	o := mustRender(t, renderOpts{values: c.values(), stubNATS: true})
	var secretName string
	for wl, p := range o.podSpecs() {
		for _, v := range p.Spec.Volumes {
			if v.Name == "input-state-key" && v.Secret != nil {
				if wl != "Deployment/"+edgeName {
					t.Errorf("%s mounts the input state key: only edges may", wl)
				}
				secretName = v.Secret.SecretName
			}
		}
		if wl != "Deployment/"+edgeName {
			continue
		}
		var flag bool
		for _, a := range p.Spec.Containers[0].Args {
			flag = flag || a == "--input-state-key-file=/etc/fleetgate/input-state/key"
		}
		if !flag {
			t.Errorf("edge args %v: no --input-state-key-file", p.Spec.Containers[0].Args)
		}
	}
	s := o.secret(secretName)
	if secretName != "fg-fleetgate-edge-input-state" || s == nil || len(s.Data["key"]) < 32 {
		t.Fatalf("input state Secret %q: want a random key of at least 32 bytes", secretName)
	}
	o = mustRender(t, renderOpts{values: merge(c.values(), set("edge.inputStateKey.existingSecret", "my-key")), stubNATS: true})
	for wl, p := range o.podSpecs() {
		for _, v := range p.Spec.Volumes {
			if v.Name == "input-state-key" && v.Secret != nil && v.Secret.SecretName != "my-key" {
				t.Errorf("%s mounts %s, want the user's Secret my-key", wl, v.Secret.SecretName)
			}
		}
	}
	if o.secret("fg-fleetgate-edge-input-state") != nil {
		t.Error("a Secret rendered although edge.inputStateKey.existingSecret names one")
	}
}

// TestSessionOwnerKeyAndProxies: every edge keys the owner hash with one
// secret (--session-owner-key-file) from a Secret only edges mount, random
// when the values name none; --trusted-proxies only when proxies are
// given, with their header.
func TestSessionOwnerKeyAndProxies(t *testing.T) {
	c := newCreds(t)
	args := func(o *objects) []string {
		for wl, p := range o.podSpecs() {
			if wl == "Deployment/"+edgeName {
				return p.Spec.Containers[0].Args
			}
		}
		t.Fatal("no edge Deployment")
		return nil
	}
	o := mustRender(t, renderOpts{values: c.values(), stubNATS: true})
	a := args(o)
	if !slices.Contains(a, "--session-owner-key-file=/etc/fleetgate/session-owner/key") {
		t.Errorf("edge args %v: no --session-owner-key-file", a)
	}
	if slices.ContainsFunc(a, func(s string) bool { return strings.HasPrefix(s, "--trusted-proxies") }) {
		t.Errorf("edge args %v: --trusted-proxies without proxies in the values", a)
	}
	if s := o.secret("fg-fleetgate-edge-session-owner"); s == nil || len(s.Data["key"]) < 32 {
		t.Fatal("session owner Secret: want a random key of at least 32 bytes")
	}
	if string(o.secret("fg-fleetgate-edge-session-owner").Data["key"]) == string(o.secret("fg-fleetgate-edge-input-state").Data["key"]) {
		t.Error("the owner key and the input state key are the same")
	}
	o = mustRender(t, renderOpts{values: merge(c.values(), set("edge.trustedProxies", []any{"10.0.0.0/8", "192.168.1.1"}),
		set("edge.trustedProxyHeader", "Forwarded")), stubNATS: true})
	a = args(o)
	if !slices.Contains(a, "--trusted-proxies=10.0.0.0/8,192.168.1.1") || !slices.Contains(a, "--trusted-proxy-header=Forwarded") {
		t.Errorf("edge args %v: want the trusted proxies and their header", a)
	}
}

// TestSignInKeyShared: every edge is given one sign-in key
// (--signin-key-file) from a Secret only edges mount, random and long
// enough when the values name none; --public-url and --signin-client-id
// only when given.
func TestSignInKeyShared(t *testing.T) {
	c := newCreds(t)
	o := mustRender(t, renderOpts{values: merge(c.values(), set("edge.publicURL", "https://mcp.example.com"),
		set("edge.signInClientID", "fleet-edge")), stubNATS: true})
	var secretName string
	for wl, p := range o.podSpecs() {
		for _, v := range p.Spec.Volumes {
			if v.Name == "signin-key" && v.Secret != nil {
				if wl != "Deployment/"+edgeName {
					t.Errorf("%s mounts the sign-in key: only edges may", wl)
				}
				secretName = v.Secret.SecretName
			}
		}
		if wl != "Deployment/"+edgeName {
			continue
		}
		args := strings.Join(p.Spec.Containers[0].Args, " ")
		if !strings.Contains(args, "--signin-key-file=/etc/fleetgate/signin/key") || !strings.Contains(args, "--public-url=https://mcp.example.com") ||
			!strings.Contains(args, "--signin-client-id=fleet-edge") {
			t.Errorf("edge args %s: no --signin-key-file, --public-url or --signin-client-id", args)
		}
	}
	s := o.secret(secretName)
	if secretName != "fg-fleetgate-edge-signin" || s == nil || len(s.Data["key"]) < 32 {
		t.Fatalf("sign-in Secret %q: want a random key of at least 32 bytes", secretName)
	}
	o = mustRender(t, renderOpts{values: merge(c.values(), set("edge.signInKey.existingSecret", "my-signin")), stubNATS: true})
	if o.secret("fg-fleetgate-edge-signin") != nil {
		t.Error("a Secret rendered although edge.signInKey.existingSecret names one")
	}
}

// userSeed matches an nkey user seed: "SU", then 56 base32 characters.
var userSeed = regexp.MustCompile(`SU[A-Z2-7]{56}`)
