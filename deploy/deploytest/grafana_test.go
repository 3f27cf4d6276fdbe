package deploytest

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The Grafana dashboard is JSON Grafana imports (unique panel ids, panels
// on its 24-column grid), queries the data source and namespace variables,
// and names only metrics the binaries register.
func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile("../grafana/fleetgate.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID, Title string
		Panels     []struct {
			ID      int
			Type    string
			Title   string
			GridPos struct{ H, W, X, Y int }
			Targets []struct {
				Expr       string
				Datasource struct{ UID string }
			}
		}
		Templating struct{ List []struct{ Name string } }
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("fleetgate.json: %v", err)
	}
	if d.UID == "" || d.Title == "" || len(d.Panels) < 10 {
		t.Fatalf("dashboard uid %q title %q with %d panels", d.UID, d.Title, len(d.Panels))
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	if !vars["datasource"] || !vars["namespace"] {
		t.Errorf("variables %v, want datasource and namespace", vars)
	}
	registered := registeredMetrics(t)
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if g := p.GridPos; g.W < 1 || g.X < 0 || g.X+g.W > 24 || g.H < 1 {
			t.Errorf("panel %q: gridPos %+v off the 24-column grid", p.Title, g)
		}
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Datasource.UID != "${datasource}" || !strings.Contains(tg.Expr, `namespace=~"$namespace"`) {
				t.Errorf("panel %q: query %q not on the dashboard's data source and namespace", p.Title, tg.Expr)
			}
			for _, m := range regexp.MustCompile(`fleetgate_[a-z_]+`).FindAllString(tg.Expr, -1) {
				base := regexp.MustCompile(`_(bucket|count|sum)$`).ReplaceAllString(m, "")
				if !registered[m] && !registered[base] {
					t.Errorf("panel %q: metric %s is registered nowhere in pkg/ or cmd/", p.Title, m)
				}
			}
		}
	}
}

// registeredMetrics are the fleetgate_* names the code defines (string
// literals of non-test Go files).
func registeredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	re := regexp.MustCompile(`"(fleetgate_[a-z_]+)"`)
	for _, dir := range []string{repoRoot + "/pkg", repoRoot + "/cmd"} {
		err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			b, err := os.ReadFile(p)
			for _, m := range re.FindAllStringSubmatch(string(b), -1) {
				out[m[1]] = true
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(out) < 20 {
		t.Fatalf("found %d metric names in the code", len(out))
	}
	return out
}
