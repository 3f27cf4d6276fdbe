package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/policy"
)

func TestParseAuthorization(t *testing.T) {
	f, err := Parse("c.yaml", []byte(`
authorization:
  default: deny
  rules:
    - name: ops-only-beta
      effect: deny
      tools: ["beta_*"]
      when: '!("ops" in claims.roles)'
    - name: readers
      effect: allow
      prompts: ["*"]
      resources: ["file:///docs/*"]
`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"default":"deny","rules":[{"name":"ops-only-beta","effect":"deny","tools":["beta_*"],"when":"!(\"ops\" in claims.roles)"},` +
		`{"name":"readers","effect":"allow","prompts":["*"],"resources":["file:///docs/*"]}]}`
	if got := string(f.Authorization.Canonical()); got != want {
		t.Fatalf("section %s\nwant %s", got, want)
	}
	if c := f.Clone(); c.Authorization == f.Authorization || c.Authorization.Digest() != f.Authorization.Digest() {
		t.Fatal("Clone does not deep-copy the section")
	}
	for _, absent := range []string{"groups: []\n", "authorization:\n", "authorization: ~\n"} {
		f, err := Parse("c.yaml", []byte(absent))
		if err != nil || f.Authorization != nil {
			t.Fatalf("%q: section %+v, %v; want none", absent, f.Authorization, err)
		}
	}
}

func TestAuthorizationErrorsNameTheRule(t *testing.T) {
	_, err := Parse("c.yaml", []byte("authorization:\n  rules:\n    - {name: ok, effect: deny}\n    - {name: broken-rule, effect: deny, when: 'claims.roles =='}\n"))
	var re *policy.RuleError
	if !errors.As(err, &re) || re.Name != "broken-rule" || !strings.Contains(err.Error(), `rule "broken-rule"`) {
		t.Fatalf("err = %v, want one naming rule broken-rule", err)
	}
	if !strings.HasPrefix(err.Error(), "c.yaml:4: authorization.rules[1].when: ") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %q", err)
	}
	fl := &Fleet{}
	err = fl.SetAuthorization(&policy.Section{Rules: []policy.Rule{{Name: "bad-one", Effect: policy.Deny, When: "1"}}})
	if !errors.Is(err, ErrInvalidConfig) || !errors.As(err, &re) || re.Name != "bad-one" || fl.Authorization != nil {
		t.Fatalf("SetAuthorization err = %v", err)
	}
}

// The rate limits travel in the authorization section; a bad one is an
// error naming its field.
func TestParseRateLimits(t *testing.T) {
	f, err := Parse("c.yaml", []byte(`
authorization:
  rate_limits:
    identity: {requests_per_second: 20, burst: 40, concurrent_calls: 8}
    tools:
      - {name: search, tools: ["search_*"], requests_per_second: 5, per_identity: true}
    failed_auth: {per_address_per_minute: 10}
`))
	if err != nil {
		t.Fatal(err)
	}
	rl := f.Authorization.RateLimits
	if rl == nil || rl.Identity.RequestsPerSecond != 20 || rl.Identity.ConcurrentCalls != 8 || len(rl.Tools) != 1 ||
		!rl.Tools[0].PerIdentity || rl.FailedAuth.PerAddressPerMinute != 10 {
		t.Fatalf("rate limits %+v", rl)
	}
	if !strings.Contains(string(f.Authorization.Canonical()), `"rate_limits":{"identity":{"requests_per_second":20`) {
		t.Fatalf("canonical form %s", f.Authorization.Canonical())
	}
	for _, bad := range []string{
		"authorization:\n  rate_limits:\n    identity: {requests_per_second: -1}\n",
		"authorization:\n  rate_limits:\n    bogus: 1\n",
		"authorization:\n  rate_limits:\n    tools: [{tools: ['[']}]\n",
	} {
		_, err := Parse("c.yaml", []byte(bad))
		if err == nil || !strings.Contains(err.Error(), "authorization.rate_limits") {
			t.Errorf("%q: %v, want an error naming authorization.rate_limits", bad, err)
		}
	}
}
