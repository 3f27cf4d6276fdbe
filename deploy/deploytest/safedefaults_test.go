package deploytest

import (
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
)

// An edge that would serve /mcp without authentication does not render
// unless the values say so; then NOTES warn. With an issuer or an
// identity header it renders without a warning.
func TestEdgeNeedsAuthentication(t *testing.T) {
	c := newCreds(t)
	if _, err := render(t, renderOpts{values: c.credsOnly(), stubNATS: true}); err == nil || !strings.Contains(err.Error(), "edge.allowUnauthenticated") {
		t.Fatalf("render without authentication: %v, want a refusal naming edge.allowUnauthenticated", err)
	}
	if notes := renderNotes(t, renderOpts{values: c.values(), stubNATS: true}); !strings.Contains(notes, "WARNING: edge.allowUnauthenticated=true") {
		t.Fatalf("NOTES of an unauthenticated edge lack the warning:\n%s", notes)
	}
	for name, v := range map[string]map[string]any{
		"identity header": merge(c.credsOnly(), set("edge.identityHeader", "X-Fleetgate-User")),
		"issuer": merge(c.credsOnly(), set("edge.auth.issuer", "https://id.example"),
			set("edge.resourceURL", "https://mcp.example/mcp")),
	} {
		if notes := renderNotes(t, renderOpts{values: v, stubNATS: true}); strings.Contains(notes, "WARNING") {
			t.Errorf("%s: NOTES warn:\n%s", name, notes)
		}
	}
}

// Controllers and edges reach backends in the release's namespace by
// default, the namespaces of networkPolicy.backendNamespaces when set, and
// nowhere else but NATS and DNS unless backendEgress adds rules.
func TestBackendEgressDefaults(t *testing.T) {
	c := newCreds(t)
	peers := func(values map[string]any) (namespaces []string, other int) {
		o := mustRender(t, renderOpts{values: values, stubNATS: true})
		for _, np := range o.netpols {
			if np.Name != "fg-fleetgate-edge" {
				continue
			}
			for _, r := range np.Spec.Egress {
				if len(r.To) == 0 && !dnsRule(r) {
					t.Errorf("an egress rule to anywhere: %+v", r)
				}
				for _, p := range r.To {
					switch {
					case p.IPBlock != nil:
						other++
					case p.NamespaceSelector != nil:
						ns := p.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"]
						if ns == "" {
							t.Errorf("egress to namespaces %v: not one namespace by name", p.NamespaceSelector)
						}
						namespaces = append(namespaces, ns)
					}
				}
			}
		}
		return namespaces, other
	}
	if ns, other := peers(c.values()); len(ns) != 1 || ns[0] != namespace || other != 0 {
		t.Fatalf("default backend egress: namespaces %v, %d IP blocks; want only %s", ns, other, namespace)
	}
	if ns, _ := peers(merge(c.values(), set("networkPolicy.backendNamespaces", []any{"tools", "search"}))); strings.Join(ns, ",") != "tools,search" {
		t.Fatalf("backendNamespaces tools,search: egress to %v", ns)
	}
	extra := []any{map[string]any{"to": []any{map[string]any{"ipBlock": map[string]any{"cidr": "203.0.113.0/24"}}}}}
	if _, other := peers(merge(c.values(), set("networkPolicy.backendEgress", extra))); other != 1 {
		t.Fatalf("backendEgress with one IP block: %d", other)
	}
}

// dnsRule reports a rule to port 53 only.
func dnsRule(r networkingv1.NetworkPolicyEgressRule) bool {
	for _, p := range r.Ports {
		if p.Port == nil || p.Port.IntValue() != 53 {
			return false
		}
	}
	return len(r.Ports) > 0
}

// The edge's memory budget is its container's memory limit, so its
// default session cap fits in the pod.
func TestEdgeMemoryBudget(t *testing.T) {
	o := mustRender(t, renderOpts{values: newCreds(t).values(), stubNATS: true})
	ec := o.deployment(t, edgeName).Spec.Template.Spec.Containers[0]
	e := env(ec, "FLEETGATE_MEMORY_BUDGET")
	if e == nil || e.ValueFrom == nil || e.ValueFrom.ResourceFieldRef == nil || e.ValueFrom.ResourceFieldRef.Resource != "limits.memory" ||
		e.ValueFrom.ResourceFieldRef.ContainerName != "edge" {
		t.Fatalf("FLEETGATE_MEMORY_BUDGET = %+v, want the edge container's limits.memory", e)
	}
	o = mustRender(t, renderOpts{values: merge(newCreds(t).values(), set("edge.resources.limits", nil)), stubNATS: true})
	if e := env(o.deployment(t, edgeName).Spec.Template.Spec.Containers[0], "FLEETGATE_MEMORY_BUDGET"); e != nil {
		t.Fatalf("a memory budget without a memory limit: %+v", e)
	}
}
