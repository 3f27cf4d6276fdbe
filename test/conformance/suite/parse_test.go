package suite

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestParseChecks(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []Check
		err      bool
	}{
		{name: "empty array", in: `[]`, want: nil},
		{name: "one check", in: `[{"id":"ping","name":"Ping","description":"d","status":"SUCCESS","details":{"result":{}}}]`,
			want: []Check{{ID: "ping", Name: "Ping", Description: "d", Status: "SUCCESS", Details: `{"result":{}}`}}},
		{name: "newlines flattened", in: `[{"id":"x","status":"FAILURE","errorMessage":"a\n  b"}]`,
			want: []Check{{ID: "x", Status: "FAILURE", ErrorMessage: "a b"}}},
		{name: "object", in: `{"id":"x"}`, err: true},
		{name: "trailing data", in: `[] []`, err: true},
		{name: "truncated", in: `[{"id":"x"`, err: true},
		{name: "not json", in: `oops`, err: true},
		{name: "wrong type", in: `[{"id":1}]`, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseChecks([]byte(tc.in))
			if tc.err {
				if !errors.Is(err, ErrBadChecks) {
					t.Fatalf("err %v, want ErrBadChecks", err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestParseChecksBounds(t *testing.T) {
	many := "[" + strings.Repeat(`{"id":"x"},`, MaxChecks) + `{"id":"x"}]`
	if _, err := ParseChecks([]byte(many)); !errors.Is(err, ErrBadChecks) {
		t.Fatalf("%d checks: %v", MaxChecks+1, err)
	}
	if _, err := ParseChecks(make([]byte, MaxChecksBytes+1)); !errors.Is(err, ErrBadChecks) {
		t.Fatalf("too large: %v", err)
	}
	long := strings.Repeat("é", MaxText)
	got, err := ParseChecks([]byte(`[{"errorMessage":"` + long + `"}]`))
	if err != nil || len(got[0].ErrorMessage) > MaxText+len("…") || !strings.HasSuffix(got[0].ErrorMessage, "…") {
		t.Fatalf("long text: %d bytes, %v", len(got[0].ErrorMessage), err)
	}
}

const listOut = `Running active suite (3 scenarios) against http://127.0.0.1:1/mcp

=== Running scenario: server-initialize ===
Running client scenario 'server-initialize' against server: http://127.0.0.1:1/mcp
=== Running scenario: ping ===
=== Running scenario: tools-call-with-logging ===
`

func TestParseScenarioList(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
		err      bool
	}{
		{name: "suite run", in: listOut, want: []string{"server-initialize", "ping", "tools-call-with-logging"}},
		{name: "crlf", in: strings.ReplaceAll(listOut, "\n", "\r\n"), want: []string{"server-initialize", "ping", "tools-call-with-logging"}},
		{name: "no header", in: "=== Running scenario: ping ===\n", err: true},
		{name: "count mismatch", in: "Running active suite (2 scenarios) against u\n=== Running scenario: ping ===\n", err: true},
		{name: "duplicate", in: "Running all suite (2 scenarios) against u\n=== Running scenario: ping ===\n=== Running scenario: ping ===\n", err: true},
		{name: "bad name", in: "Running all suite (1 scenario) against u\n=== Running scenario: ../x ===\n", err: true},
		{name: "huge count", in: "Running all suite (99999999999999999999 scenarios) against u\n", err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseScenarioList([]byte(tc.in))
			if tc.err {
				if !errors.Is(err, ErrBadList) {
					t.Fatalf("err %v, want ErrBadList", err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestParseBaseline(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Baseline
		err      bool
	}{
		{name: "comments and blanks", in: "# c\n\nping  the edge   drops it\n", want: Baseline{"ping": "the edge drops it"}},
		{name: "no reason", in: "ping\n", err: true},
		{name: "twice", in: "ping a\nping b\n", err: true},
		{name: "bad name", in: "Ping! a\n", err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseBaseline([]byte(tc.in))
			if tc.err {
				if !errors.Is(err, ErrBadBaseline) {
					t.Fatalf("err %v, want ErrBadBaseline", err)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) || got["ping"] != tc.want["ping"] {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	if _, err := ParseBaseline([]byte(strings.Repeat("\n", MaxBaselineLines+1))); !errors.Is(err, ErrBadBaseline) {
		t.Fatalf("too many lines: %v", err)
	}
}

func FuzzParseChecks(f *testing.F) {
	f.Add([]byte(`[{"id":"ping","status":"SUCCESS","details":{"a":[1,2]}}]`))
	f.Add([]byte(`[{"errorMessage":"x\n"}] `))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, b []byte) {
		checks, err := ParseChecks(b)
		if err != nil && !errors.Is(err, ErrBadChecks) {
			t.Fatalf("unwrapped error %v", err)
		}
		if len(checks) > MaxChecks {
			t.Fatalf("%d checks", len(checks))
		}
		for _, c := range checks {
			if len(c.ErrorMessage) > MaxText+len("…") || len(c.Details) > MaxText+len("…") {
				t.Fatalf("text not bounded: %d", len(c.ErrorMessage))
			}
		}
	})
}

func FuzzParseScenarioList(f *testing.F) {
	f.Add([]byte(listOut))
	f.Add([]byte("Running x suite (0 scenarios) against \n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		names, err := ParseScenarioList(b)
		if err != nil && !errors.Is(err, ErrBadList) {
			t.Fatalf("unwrapped error %v", err)
		}
		for _, n := range names {
			if !scenarioName.MatchString(n) {
				t.Fatalf("bad name %q accepted", n)
			}
		}
	})
}

func FuzzParseBaseline(f *testing.F) {
	f.Add([]byte("# c\nping reason\n"))
	f.Add([]byte("a b\na c\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		base, err := ParseBaseline(b)
		if err != nil && !errors.Is(err, ErrBadBaseline) {
			t.Fatalf("unwrapped error %v", err)
		}
		for n, r := range base {
			if !scenarioName.MatchString(n) || r == "" {
				t.Fatalf("accepted %q %q", n, r)
			}
		}
	})
}

const requirementsOut = `Running requirements 2025-11-25 (3 scenarios) against http://127.0.0.1:1/mcp

=== Running scenario: ping ===
=== Running scenario: server-session-lifecycle ===
=== Running scenario: json-schema-2020-12 ===
Total: 1 passed, 2 failed
Not scored for 2025-11-25: 2 scenario(s) run, 2 failing. These do not affect conformance.
  ✗ server-session-lifecycle (added-after-release)
  ✓ json-schema-2020-12 (pending)
`

// A requirement set's run lists its scenarios under another header and
// names the ones it does not score after them.
func TestParseRequirementsList(t *testing.T) {
	names, err := ParseScenarioList([]byte(requirementsOut))
	if err != nil || !slices.Equal(names, []string{"ping", "server-session-lifecycle", "json-schema-2020-12"}) {
		t.Fatalf("names %v, %v", names, err)
	}
	got := ParseUnscored([]byte(requirementsOut))
	want := map[string]string{"server-session-lifecycle": "added-after-release", "json-schema-2020-12": "pending"}
	if !maps.Equal(got, want) {
		t.Fatalf("unscored %v, want %v", got, want)
	}
	if ParseUnscored([]byte(listOut)) != nil {
		t.Fatal("a suite run has unscored scenarios")
	}
	if !IsRequirements("2026-07-28") || IsRequirements("active") {
		t.Fatal("IsRequirements")
	}
}

func TestParseBaselines(t *testing.T) {
	in := "# head\nping old reason\n[2026-07-28 go-sdk]\ncaching no ttl\n\n[2025-11-25 fleetgate]\n"
	got, err := ParseBaselines([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if got[""]["ping"] != "old reason" || got[SectionKey("2026-07-28", "go-sdk")]["caching"] != "no ttl" ||
		len(got[SectionKey("2025-11-25", "fleetgate")]) != 0 || len(got) != 3 {
		t.Fatalf("got %v", got)
	}
	for _, bad := range []string{"[x]\n", "[a b]\n[a b]\n", "[a b]\nping\n", "[A b]\n"} {
		if _, err := ParseBaselines([]byte(bad)); !errors.Is(err, ErrBadBaseline) {
			t.Errorf("%q: err %v, want ErrBadBaseline", bad, err)
		}
	}
}

func FuzzParseBaselines(f *testing.F) {
	f.Add([]byte("ping r\n[2026-07-28 go-sdk]\ncaching r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseBaselines(b)
		if err == nil && got[""] == nil {
			t.Fatal("no default section")
		}
	})
}

func FuzzParseUnscored(f *testing.F) {
	f.Add([]byte(requirementsOut))
	f.Fuzz(func(t *testing.T, b []byte) {
		m := ParseUnscored(b)
		if len(m) > MaxScenarios {
			t.Fatalf("%d unscored scenarios, limit %d", len(m), MaxScenarios)
		}
		for name := range m {
			if !scenarioName.MatchString(name) {
				t.Fatalf("unscored name %q", name)
			}
		}
	})
}
