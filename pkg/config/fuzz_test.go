package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// yamlFleet is a *Fleet as the config file writes it, for rendering an
// accepted config back to YAML.
type yamlFleet struct {
	Groups []struct {
		Name     string `yaml:"name"`
		Backends []struct {
			Name      string `yaml:"name"`
			URL       string `yaml:"url"`
			Transport string `yaml:"transport"`
		} `yaml:"backends,omitempty"`
		PinnedTools []string `yaml:"pinned_tools,omitempty"`
	} `yaml:"groups,omitempty"`
	Health struct {
		Interval       string `yaml:"interval"`
		Timeout        string `yaml:"timeout"`
		UnhealthyAfter int    `yaml:"unhealthy_after"`
		Debounce       string `yaml:"debounce"`
	} `yaml:"health"`
	Aggregation struct {
		Separator string `yaml:"separator"`
	} `yaml:"aggregation"`
}

// render writes f as a config file.
func render(t *testing.T, f *Fleet) []byte {
	t.Helper()
	var y yamlFleet
	for _, g := range f.Groups {
		yg := struct {
			Name     string `yaml:"name"`
			Backends []struct {
				Name      string `yaml:"name"`
				URL       string `yaml:"url"`
				Transport string `yaml:"transport"`
			} `yaml:"backends,omitempty"`
			PinnedTools []string `yaml:"pinned_tools,omitempty"`
		}{Name: g.Name, PinnedTools: g.PinnedTools}
		for _, b := range g.Backends {
			yg.Backends = append(yg.Backends, struct {
				Name      string `yaml:"name"`
				URL       string `yaml:"url"`
				Transport string `yaml:"transport"`
			}{b.Name, b.URL, b.Transport})
		}
		y.Groups = append(y.Groups, yg)
	}
	y.Health.Interval, y.Health.Timeout = f.Health.Interval.String(), f.Health.Timeout.String()
	y.Health.UnhealthyAfter, y.Health.Debounce = f.Health.UnhealthyAfter, f.Health.Debounce.String()
	y.Aggregation.Separator = f.Aggregation.Separator
	out, err := yaml.Marshal(&y)
	if err != nil {
		t.Fatalf("render %+v: %v", f, err)
	}
	return out
}

// FuzzParse: Parse never panics, refuses with a *FieldError matching
// ErrInvalidConfig, and a config it accepts re-validates: rendered back to
// YAML it parses to the same fleet, each backend passes Put (the admin
// API's checks) into an empty fleet, and its health policy resolves to
// itself.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	bad, _ := filepath.Glob(filepath.Join("testdata", "bad", "*.yaml"))
	for _, name := range append(files, bad...) {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"groups:\n  - name: \"true\"\n    backends:\n      - {name: \"1e3\", url: \"https://h:1/p?q\", transport: sse}\n    pinned_tools: [a.b-c_d]\n",
		"groups: &g\n  - name: a\n    backends: &b\n      - &x {name: b, url: http://h/}\n  - name: c\n    backends: [*x]\n",
		"health: {interval: 1ns, timeout: 2562047h47m16.854775807s, unhealthy_after: 9223372036854775807}\naggregation: {separator: ..}\n",
		"health: {unhealthy_after: 0x10, interval: 0s}\n",
		"groups: !!seq\n- !!map {name: a}\n",
		"aggregation: {separator: ~}\nhealth: ~\ngroups: []\n",
		// Billion laughs: aliases of aliases, left unexpanded.
		"a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n" +
			"d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\ngroups: [*e, *e]\n",
		"groups:\n  - &g {name: a, pinned_tools: &p [x, y]}\n  - {name: b, pinned_tools: *p}\n",
		// Deep nesting, flow and block.
		"groups: " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "\n",
		"groups:\n" + strings.Repeat(" - ", 5000) + "x\n",
		"groups:\n  - name: a\n  pinned_tools: [\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, err := Parse("fuzz.yaml", data)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || !errors.Is(err, ErrInvalidConfig) || fl != nil {
				t.Fatalf("refused with %T %v (fleet %v)", err, err, fl)
			}
			return
		}
		again, err := Parse("rendered.yaml", render(t, fl))
		if err != nil {
			t.Fatalf("accepted %q; rendered\n%s\nrefused: %v", data, render(t, fl), err)
		}
		if !reflect.DeepEqual(again, fl) {
			t.Fatalf("parsed %+v\nrendered and parsed %+v", fl, again)
		}
		if d := Diff(fl, again); !d.Empty() {
			t.Fatalf("diff of a config and its rendering: %+v", d)
		}
		put := &Fleet{}
		for _, g := range fl.Groups {
			for _, b := range g.Backends {
				if err := put.Put(g.Name, b); err != nil {
					t.Fatalf("accepted backend %+v of group %q: Put refuses: %v", b, g.Name, err)
				}
				if got, ok := put.Backend(g.Name, b.Name); !ok || got != b {
					t.Fatalf("Put %+v: got %+v", b, got)
				}
			}
		}
		if d := Diff(fl, put); !d.Empty() {
			t.Fatalf("diff of a config and its backends put one by one: %+v", d)
		}
		if p, err := fl.Health.Resolve(); err != nil || p != fl.Health {
			t.Fatalf("health %+v resolves to %+v, %v", fl.Health, p, err)
		}
		if msg := checkSeparator(fl.Aggregation.Separator); msg != "" {
			t.Fatalf("separator %q: %s", fl.Aggregation.Separator, msg)
		}
	})
}
