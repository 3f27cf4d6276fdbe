package ratelimit_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/fleetgate/fleetgate/pkg/ratelimit"
)

func TestValidateNamesField(t *testing.T) {
	rule := func(mod func(*ratelimit.ToolRule)) ratelimit.Limits {
		r := ratelimit.ToolRule{Tools: []string{"a_*"}, RequestsPerSecond: 1}
		mod(&r)
		return ratelimit.Limits{Tools: []ratelimit.ToolRule{r}}
	}
	many := make([]ratelimit.ToolRule, ratelimit.MaxToolRules+1)
	for i := range many {
		many[i] = ratelimit.ToolRule{Tools: []string{"x"}, RequestsPerSecond: 1}
	}
	tests := []struct {
		name  string
		l     ratelimit.Limits
		field string // "" = valid
	}{
		{"zero", ratelimit.Limits{}, ""},
		{"full", ratelimit.Limits{
			Identity:   &ratelimit.IdentityLimits{RequestsPerSecond: 2.5, Burst: 5, ConcurrentCalls: 3},
			Tools:      []ratelimit.ToolRule{{Name: "s", Tools: []string{"s_*"}, RequestsPerSecond: 1, PerIdentity: true}},
			FailedAuth: &ratelimit.FailedAuthLimits{PerAddressPerMinute: 10},
		}, ""},
		{"only concurrency", ratelimit.Limits{Identity: &ratelimit.IdentityLimits{ConcurrentCalls: 1}}, ""},
		{"negative rps", ratelimit.Limits{Identity: &ratelimit.IdentityLimits{RequestsPerSecond: -1}}, "identity.requests_per_second"},
		{"nan rps", ratelimit.Limits{Identity: &ratelimit.IdentityLimits{RequestsPerSecond: math.NaN()}}, "identity.requests_per_second"},
		{"inf rps", ratelimit.Limits{Identity: &ratelimit.IdentityLimits{RequestsPerSecond: math.Inf(1)}}, "identity.requests_per_second"},
		{"tiny rps", ratelimit.Limits{Identity: &ratelimit.IdentityLimits{RequestsPerSecond: 1e-9}}, "identity.requests_per_second"},
		{"burst without rate", ratelimit.Limits{Identity: &ratelimit.IdentityLimits{Burst: 3}}, "identity.burst"},
		{"huge burst", ratelimit.Limits{Identity: &ratelimit.IdentityLimits{RequestsPerSecond: 1, Burst: 2_000_000}}, "identity.burst"},
		{"negative concurrency", ratelimit.Limits{Identity: &ratelimit.IdentityLimits{ConcurrentCalls: -1}}, "identity.concurrent_calls"},
		{"too many rules", ratelimit.Limits{Tools: many}, "tools"},
		{"no globs", rule(func(r *ratelimit.ToolRule) { r.Tools = nil }), "tools[0].tools"},
		{"empty glob", rule(func(r *ratelimit.ToolRule) { r.Tools = []string{"ok", ""} }), "tools[0].tools[1]"},
		{"long glob", rule(func(r *ratelimit.ToolRule) { r.Tools = []string{strings.Repeat("a", 257)} }), "tools[0].tools[0]"},
		{"bad glob", rule(func(r *ratelimit.ToolRule) { r.Tools = []string{"[a"} }), "tools[0].tools[0]"},
		{"rule without rate", rule(func(r *ratelimit.ToolRule) { r.RequestsPerSecond = 0 }), "tools[0].requests_per_second"},
		{"rule burst", rule(func(r *ratelimit.ToolRule) { r.Burst = -2 }), "tools[0].burst"},
		{"rule name", rule(func(r *ratelimit.ToolRule) { r.Name = "Bad Name" }), "tools[0].name"},
		{"dup name", ratelimit.Limits{Tools: []ratelimit.ToolRule{
			{Name: "a", Tools: []string{"x"}, RequestsPerSecond: 1},
			{Name: "a", Tools: []string{"y"}, RequestsPerSecond: 1},
		}}, "tools[1].name"},
		{"failed auth zero", ratelimit.Limits{FailedAuth: &ratelimit.FailedAuthLimits{}}, "failed_auth.per_address_per_minute"},
		{"failed auth burst", ratelimit.Limits{FailedAuth: &ratelimit.FailedAuthLimits{PerAddressPerMinute: 1, Burst: -1}}, "failed_auth.burst"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.l.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				if _, err := ratelimit.New(tt.l, nil); err != nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			var fe *ratelimit.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("Validate = %v, want a FieldError of %s", err, tt.field)
			}
			if !errors.Is(err, ratelimit.ErrInvalidLimits) || !strings.Contains(err.Error(), tt.field+":") {
				t.Fatalf("error %q does not name %s or match ErrInvalidLimits", err, tt.field)
			}
			if _, err := ratelimit.New(tt.l, nil); !errors.Is(err, ratelimit.ErrInvalidLimits) {
				t.Fatalf("New = %v, want ErrInvalidLimits", err)
			}
		})
	}
}

func TestParseJSON(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{`{}`, true},
		{`{"identity":{"requests_per_second":3,"concurrent_calls":2},"tools":[{"tools":["a*"],"requests_per_second":1,"per_identity":true}],"failed_auth":{"per_address_per_minute":6}}`, true},
		{`{"identity":{"rps":3}}`, false},                // unknown field
		{`{} {}`, false},                                 // data after the object
		{`{"tools":[{"tools":["a"]}]}`, false},           // invalid: no rate
		{`[`, false},                                     // malformed
		{`{"identity":{"burst":1.5}}`, false},            // wrong type
		{`{"failed_auth":{"burst":3}}`, false},           // no rate
		{`"` + strings.Repeat("a", 70<<10) + `"`, false}, // too large
	}
	for _, tt := range tests {
		_, err := ratelimit.ParseJSON([]byte(tt.in))
		if (err == nil) != tt.ok {
			t.Errorf("ParseJSON(%.40q) = %v, want ok %v", tt.in, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ratelimit.ErrInvalidLimits) {
			t.Errorf("ParseJSON(%.40q) = %v, not ErrInvalidLimits", tt.in, err)
		}
	}
}

// The YAML form of the fleet config decodes with the same field names.
func TestYAMLShape(t *testing.T) {
	const doc = `
identity:
  requests_per_second: 20
  burst: 40
  concurrent_calls: 8
tools:
  - name: search
    tools: ["search_*", "find_*"]
    requests_per_second: 5
    burst: 10
    per_identity: true
failed_auth:
  per_address_per_minute: 10
  burst: 5
`
	var l ratelimit.Limits
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(&l); err != nil {
		t.Fatal(err)
	}
	if err := l.Validate(); err != nil {
		t.Fatal(err)
	}
	if l.Identity.ConcurrentCalls != 8 || l.Tools[0].Tools[1] != "find_*" || !l.Tools[0].PerIdentity || l.FailedAuth.Burst != 5 {
		t.Fatalf("decoded %+v", l)
	}
}
