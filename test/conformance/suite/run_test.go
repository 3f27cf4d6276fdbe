package suite

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fake is the suite's CLI played by testdata/fakesuite.sh.
func fake(t *testing.T, env ...string) *CLI {
	t.Helper()
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	return &CLI{Node: "/bin/sh", Script: "testdata/fakesuite.sh", Env: env}
}

func TestScenarios(t *testing.T) {
	got, err := fake(t, "FAKE_SCENARIOS=ping tools-list").Scenarios(context.Background(), "active")
	if err != nil || !slices.Equal(got, []string{"ping", "tools-list"}) {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := (&CLI{Node: "/nonexistent/node", Script: "x"}).Scenarios(context.Background(), "active"); err == nil {
		t.Fatal("no error without a node binary")
	}
}

func TestRunSuite(t *testing.T) {
	for _, tc := range []struct {
		name   string
		suite  string
		env    []string
		passed []string
		failed []string
		hung   []string
	}{
		{name: "all pass in one process", suite: "active", passed: []string{"alpha", "beta", "gamma"}},
		{name: "a failure", suite: "active", env: []string{"FAKE_FAIL=beta"}, passed: []string{"alpha", "gamma"}, failed: []string{"beta"}},
		// The suite process stalls on beta: beta times out, gamma runs on its own.
		{name: "a hang", suite: "active", env: []string{"FAKE_HANG=beta"}, passed: []string{"alpha", "gamma"}, hung: []string{"beta"}},
		{name: "each on its own", suite: "", env: []string{"FAKE_HANG=gamma"}, passed: []string{"alpha", "beta"}, hung: []string{"gamma"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen []string
			res := fake(t, tc.env...).RunSuite(context.Background(), tc.suite, []string{"alpha", "beta", "gamma"}, "http://127.0.0.1:1/mcp",
				&SuiteOptions{Timeout: time.Second, Parallel: 2, Progress: func(r *Result) { seen = append(seen, r.Scenario) }})
			if len(res) != 3 || len(seen) != 3 {
				t.Fatalf("%d results, %d reported: %v", len(res), len(seen), seen)
			}
			for _, n := range tc.passed {
				if !res[n].Passed() {
					t.Errorf("%s: not passed: %s", n, res[n].Reason())
				}
			}
			for _, n := range tc.failed {
				if r := res[n]; r.Passed() || r.TimedOut || r.Reason() != "Check: boom" {
					t.Errorf("%s: want a failed check, got %+v (%s)", n, r, r.Reason())
				}
			}
			for _, n := range tc.hung {
				if r := res[n]; !r.TimedOut || !strings.HasPrefix(r.Reason(), "timed out") {
					t.Errorf("%s: want a timeout, got %+v", n, r)
				}
			}
		})
	}
}

func TestRunErrors(t *testing.T) {
	r := (&CLI{Node: "/nonexistent/node", Script: "x"}).Run(context.Background(), "ping", "http://127.0.0.1:1/mcp", nil)
	if r.Err == nil || r.Passed() {
		t.Fatalf("missing node: %+v", r)
	}
	if r := fake(t).Run(context.Background(), "../etc", "u", nil); r.Err == nil {
		t.Fatal("a bad scenario name ran")
	}
}

func TestResult(t *testing.T) {
	for _, tc := range []struct {
		name   string
		r      Result
		passed bool
		reason string
	}{
		{"no checks", Result{}, false, "no checks reported"},
		{"success and warning", Result{Checks: []Check{{Status: StatusSuccess}, {Status: StatusWarning}}}, true, ""},
		{"only info", Result{Checks: []Check{{Status: StatusInfo}}}, true, ""},
		{"two failures", Result{Checks: []Check{{Name: "A", Status: StatusFailure, ErrorMessage: "x"}, {Name: "B", Status: StatusFailure}}}, false, "A: x; B"},
		{"timeout", Result{TimedOut: true, Duration: 15 * time.Second}, false, "timed out after 15s (a request got no answer)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.r.Passed() != tc.passed || tc.r.Reason() != tc.reason {
				t.Fatalf("passed %v reason %q; want %v %q", tc.r.Passed(), tc.r.Reason(), tc.passed, tc.reason)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	pass := &Result{Checks: []Check{{Status: StatusSuccess}}}
	fail := &Result{Checks: []Check{{Status: StatusFailure}}}
	names := []string{"a", "b", "c", "d"}
	direct := map[string]*Result{"a": pass, "b": pass, "c": pass, "d": fail}
	edge := map[string]*Result{"a": pass, "b": fail, "c": fail, "d": fail}
	base := Baseline{"a": "was broken", "b": "known", "z": "renamed"}
	for _, tc := range []struct {
		name    string
		require bool
		want    Verdict
	}{
		{"baseline", false, Verdict{DirectFailures: []string{"d"}, Unexpected: []string{"c"}, Expected: []string{"b"},
			NowPassing: []string{"a"}, Unknown: []string{"z"}}},
		{"require", true, Verdict{DirectFailures: []string{"d"}, Unexpected: []string{"b", "c"},
			NowPassing: []string{"a"}, Unknown: []string{"z"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(names, direct, edge, base, tc.require)
			if !slices.Equal(v.DirectFailures, tc.want.DirectFailures) || !slices.Equal(v.Unexpected, tc.want.Unexpected) ||
				!slices.Equal(v.Expected, tc.want.Expected) || !slices.Equal(v.NowPassing, tc.want.NowPassing) ||
				!slices.Equal(v.Unknown, tc.want.Unknown) || v.OK() {
				t.Fatalf("got %+v, want %+v", v, tc.want)
			}
		})
	}
	if v := Judge([]string{"a"}, direct, edge, nil, true); !v.OK() {
		t.Fatalf("all passing: %+v", v)
	}
	if v := Judge([]string{"a"}, direct, map[string]*Result{}, nil, false); v.OK() {
		t.Fatal("a scenario missing from the gateway run counts as passed")
	}
}
