package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/fleetgate/fleetgate/pkg/naming"
	"github.com/fleetgate/fleetgate/pkg/policy"
)

// yamlBackend is a Backend as the config file writes it.
type yamlBackend struct {
	Name           string                       `yaml:"name"`
	URL            string                       `yaml:"url"`
	Transport      string                       `yaml:"transport"`
	Headers        map[string]map[string]string `yaml:"headers,omitempty"`
	AllowLinkLocal bool                         `yaml:"allow_link_local,omitempty"`
	Tools          *yamlRules                   `yaml:"tools,omitempty"`
	Prompts        *yamlRules                   `yaml:"prompts,omitempty"`
	Resources      *yamlRules                   `yaml:"resources,omitempty"`
}

type yamlRules struct {
	Include []string          `yaml:"include,omitempty"`
	Exclude []string          `yaml:"exclude,omitempty"`
	Rename  map[string]string `yaml:"rename,omitempty"`
}

func renderRules(r naming.Rules) *yamlRules {
	if r.IsZero() {
		return nil
	}
	return &yamlRules{Include: r.Include, Exclude: r.Exclude, Rename: r.Rename}
}

type yamlGroup struct {
	Name        string        `yaml:"name"`
	Backends    []yamlBackend `yaml:"backends,omitempty"`
	PinnedTools []string      `yaml:"pinned_tools,omitempty"`
}

// yamlFleet is a *Fleet as the config file writes it, for rendering an
// accepted config back to YAML.
type yamlFleet struct {
	Groups []yamlGroup `yaml:"groups,omitempty"`
	Health struct {
		Interval       string `yaml:"interval"`
		Timeout        string `yaml:"timeout"`
		UnhealthyAfter int    `yaml:"unhealthy_after"`
		Debounce       string `yaml:"debounce"`
	} `yaml:"health"`
	Aggregation struct {
		Separator string `yaml:"separator"`
		Conflicts string `yaml:"conflicts"`
	} `yaml:"aggregation"`
	Authorization *policy.Section `yaml:"authorization,omitempty"`
}

// render writes f as a config file.
func render(t *testing.T, f *Fleet) []byte {
	t.Helper()
	var y yamlFleet
	for _, g := range f.Groups {
		yg := yamlGroup{Name: g.Name, PinnedTools: g.PinnedTools}
		for _, b := range g.Backends {
			yb := yamlBackend{Name: b.Name, URL: b.URL, Transport: b.Transport, AllowLinkLocal: b.AllowLinkLocal,
				Tools: renderRules(b.Tools), Prompts: renderRules(b.Prompts), Resources: renderRules(b.Resources)}
			for name, ref := range b.Headers {
				if yb.Headers == nil {
					yb.Headers = map[string]map[string]string{}
				}
				if ref.Env != "" {
					yb.Headers[name] = map[string]string{"env": ref.Env}
				} else {
					yb.Headers[name] = map[string]string{"file": ref.File}
				}
			}
			yg.Backends = append(yg.Backends, yb)
		}
		y.Groups = append(y.Groups, yg)
	}
	y.Health.Interval, y.Health.Timeout = f.Health.Interval.String(), f.Health.Timeout.String()
	y.Health.UnhealthyAfter, y.Health.Debounce = f.Health.UnhealthyAfter, f.Health.Debounce.String()
	y.Aggregation.Separator = f.Aggregation.Separator
	y.Aggregation.Conflicts = string(f.Aggregation.Conflicts)
	y.Authorization = f.Authorization
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
		"authorization:\n  default: deny\n  rules:\n    - {name: ops, effect: allow, when: '\"ops\" in claims.roles'}\n" +
			"    - {name: no-beta, effect: deny, tools: ['beta_*'], prompts: [\"*\"], resources: ['file:///*']}\n",
		"authorization:\n  rules:\n    - {name: x, effect: deny, when: 'claims.roles.all(a, claims.roles.exists(b, a == b))'}\n",
		"authorization:\n  rules:\n    - {name: x, effect: deny, when: '" + strings.Repeat("(", 40) + "true" + strings.Repeat(")", 40) + "'}\n",
		"authorization:\n  rate_limits:\n    identity: {requests_per_second: 2, burst: 4, concurrent_calls: 1}\n    tools: [{name: s, tools: [\"a_*\"], requests_per_second: 1, per_identity: true}]\n    failed_auth: {per_address_per_minute: 3}\n",
		"authorization:\n  rate_limits: &r {identity: {requests_per_second: 1e999}, tools: *r}\n",
		// Backend credentials and destinations.
		"groups:\n  - name: a\n    backends:\n      - name: b\n        url: https://h/mcp\n        headers:\n          Authorization: {env: ALPHA_AUTHORIZATION}\n          x-tenant: {file: /run/secrets/t}\n",
		"groups:\n  - name: a\n    backends:\n      - {name: b, url: \"http://169.254.169.254/\", allow_link_local: true, headers: {X-K: {env: K}}}\n",
		"groups:\n  - name: a\n    backends:\n      - {name: b, url: \"http://h/\", headers: {Authorization: Bearer hunter2}}\n",
		"groups:\n  - name: a\n    backends:\n      - {name: b, url: \"http://h/\", headers: {A: {env: X}, a: {env: Y}}}\n",
		"groups:\n  - name: a\n    backends:\n      - {name: b, url: \"http://u:p@h/\"}\n",
		"groups:\n  - name: a\n    backends:\n      - {name: b, url: \"http://[fe80::1]/\", allow_link_local: yes}\n",
		"groups:\n  - name: a\n    backends:\n      - {name: b, url: \"http://h/\", headers: {Host: {env: X}, K: {env: X, file: /y}}}\n",
		// Naming rules.
		"aggregation: {conflicts: priority}\ngroups:\n  - name: a\n    backends:\n      - {name: b, url: \"http://h/\", tools: {include: [\"read_*\", \"[a-c]?\"], exclude: [\"*_x\"], rename: {search: find}}}\n" +
			"      - {name: c, url: \"http://h/\", prompts: {rename: {p: q}}, resources: {exclude: [\"file:///s/*\"], rename: {\"file:///a\": \"docs://a\"}}}\n",
		"aggregation: {conflicts: manual}\ngroups:\n  - name: a\n    backends:\n      - {name: b, url: \"http://h/\", tools: {include: [], exclude: ~, rename: {}}}\n",
		"groups:\n  - name: a\n    backends:\n      - {name: b, url: \"http://h/\", tools: {include: [\"[\\\\\"]}}\n",
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
		for _, g := range fl.Groups {
			for _, b := range g.Backends {
				if err := b.Headers.Validate(); err != nil {
					t.Fatalf("accepted headers of %s: %v", b.Name, err)
				}
			}
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
				if got, ok := put.Backend(g.Name, b.Name); !ok || !got.Equal(b) {
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
		if _, err := policy.Compile(fl.Authorization); err != nil {
			t.Fatalf("accepted authorization does not compile: %v", err)
		}
		if err := (&Fleet{}).SetAuthorization(fl.Authorization); err != nil {
			t.Fatalf("accepted authorization: SetAuthorization refuses: %v", err)
		}
		for _, g := range fl.Groups {
			if err := fl.Naming(g.Name).Check(); err != nil {
				t.Fatalf("accepted naming of group %q: %v", g.Name, err)
			}
		}
		if msg := checkSeparator(fl.Aggregation.Separator); msg != "" {
			t.Fatalf("separator %q: %s", fl.Aggregation.Separator, msg)
		}
	})
}
