package deploytest

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/lint/support"
)

// helm lint, as `helm lint --strict` with the smallest values: no error
// and no warning except that the NATS dependency is not downloaded.
func TestHelmLint(t *testing.T) {
	for name, vals := range map[string]map[string]any{
		"bundled NATS":  newCreds(t).values(),
		"external NATS": merge(newCreds(t).values(), set("nats.enabled", false), set("externalNats.url", "nats://n:4222")),
	} {
		t.Run(name, func(t *testing.T) {
			l := action.NewLint()
			l.Strict = true
			l.Namespace = namespace
			l.KubeVersion = kubeVersion
			res := l.Run([]string{chartDir}, vals)
			if res.TotalChartsLinted != 1 {
				t.Fatalf("linted %d charts", res.TotalChartsLinted)
			}
			for _, m := range res.Messages {
				if m.Severity < support.WarningSev {
					continue
				}
				if m.Severity == support.WarningSev && strings.Contains(m.Err.Error(), "missing these dependencies: nats") {
					continue
				}
				t.Errorf("lint: %s", m)
			}
		})
	}
}

// The NATS dependency is pinned to one version of the official chart's
// repository and switched by nats.enabled, which values.yaml sets.
func TestChartDependency(t *testing.T) {
	c, err := loader.LoadDir(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Metadata.Dependencies) != 1 {
		t.Fatalf("dependencies %+v", c.Metadata.Dependencies)
	}
	d := c.Metadata.Dependencies[0]
	want := chart.Dependency{Name: "nats", Repository: "https://nats-io.github.io/k8s/helm/charts/", Condition: "nats.enabled"}
	if d.Name != want.Name || d.Repository != want.Repository || d.Condition != want.Condition {
		t.Errorf("dependency %+v, want %+v", d, want)
	}
	if !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`).MatchString(d.Version) {
		t.Errorf("dependency version %q is not pinned to one release", d.Version)
	}
	if nats, _ := c.Values["nats"].(map[string]any); nats["enabled"] != true {
		t.Errorf("values.yaml nats.enabled = %v, want true", nats["enabled"])
	}
	if _, err := os.Stat(chartDir + "/charts"); err == nil {
		t.Logf("charts/ is present (helm dependency build); it is not committed")
	}
}
