package health

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Tracker scenario files (testdata/tracker/*.scn) are line based:
//
//	# comment; blank lines are ignored
//	scenario <name>                 starts a scenario with a fresh Tracker
//	policy interval=5s timeout=2s unhealthy_after=2
//	                                optional, before the first step; omitted
//	                                keys take their defaults
//	<at> <result> [lat=<d>] [why=<text>] => <status> <flags> [reason~<text>]
//
// <at> is a Go duration since the scenario epoch; <result> is ok, fail, auth
// or bad (an invalid Result value); why= runs to the "=>". <flags> is "-",
// "changed" or "changed,adv" and must match Transition.Changed and
// Transition.AdvertisabilityChanged exactly. reason~ (rest of the line) must
// be a substring of the transition's reason.

// scenarioEpoch is the time that step offsets are added to.
var scenarioEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

type scenario struct {
	name   string
	file   string
	policy Policy
	steps  []scenarioStep
}

type scenarioStep struct {
	line       int
	obs        Observation
	want       Status
	changed    bool
	advChanged bool
	reason     string
}

func loadScenarios(t *testing.T, dir string) []scenario {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.scn"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no scenario files in %s", dir)
	}
	var all []scenario
	for _, f := range files {
		scs, err := parseScenarioFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, scs...)
	}
	return all
}

func parseScenarioFile(path string) ([]scenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []scenario
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		where := fmt.Sprintf("%s:%d", filepath.Base(path), n)
		switch {
		case strings.HasPrefix(line, "scenario "):
			out = append(out, scenario{name: strings.TrimSpace(strings.TrimPrefix(line, "scenario ")), file: filepath.Base(path)})
		case len(out) == 0:
			return nil, fmt.Errorf("%s: step or policy before the first scenario line", where)
		case strings.HasPrefix(line, "policy "):
			cur := &out[len(out)-1]
			if len(cur.steps) > 0 {
				return nil, fmt.Errorf("%s: policy after the first step", where)
			}
			p, err := parsePolicyLine(strings.TrimPrefix(line, "policy "))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			cur.policy = p
		default:
			st, err := parseStep(line)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			st.line = n
			out[len(out)-1].steps = append(out[len(out)-1].steps, st)
		}
	}
	return out, sc.Err()
}

func parsePolicyLine(s string) (Policy, error) {
	var p Policy
	for _, kv := range strings.Fields(s) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return p, fmt.Errorf("policy: %q is not key=value", kv)
		}
		var err error
		switch k {
		case "interval":
			p.Interval, err = time.ParseDuration(v)
		case "timeout":
			p.Timeout, err = time.ParseDuration(v)
		case "unhealthy_after":
			p.UnhealthyAfter, err = strconv.Atoi(v)
		default:
			return p, fmt.Errorf("policy: unknown key %q", k)
		}
		if err != nil {
			return p, fmt.Errorf("policy: %s: %w", k, err)
		}
	}
	return p, nil
}

func parseStep(line string) (scenarioStep, error) {
	var st scenarioStep
	left, right, ok := strings.Cut(line, "=>")
	if !ok {
		return st, fmt.Errorf("step %q: missing =>", line)
	}
	left, why, hasWhy := strings.Cut(left, "why=")
	if hasWhy {
		st.obs.Reason = strings.TrimSpace(why)
	}
	in := strings.Fields(left)
	if len(in) < 2 {
		return st, fmt.Errorf("step %q: want <at> <result>", line)
	}
	at, err := time.ParseDuration(in[0])
	if err != nil {
		return st, fmt.Errorf("step %q: at: %w", line, err)
	}
	st.obs.At = scenarioEpoch.Add(at)
	switch in[1] {
	case "ok":
		st.obs.Result = OK
	case "fail":
		st.obs.Result = Failure
	case "auth":
		st.obs.Result = AuthFailure
	case "bad":
		st.obs.Result = Result(99)
	default:
		return st, fmt.Errorf("step %q: unknown result %q", line, in[1])
	}
	for _, kv := range in[2:] {
		v, ok := strings.CutPrefix(kv, "lat=")
		if !ok {
			return st, fmt.Errorf("step %q: unknown input %q", line, kv)
		}
		if st.obs.Latency, err = time.ParseDuration(v); err != nil {
			return st, fmt.Errorf("step %q: lat: %w", line, err)
		}
	}
	right, reason, hasReason := strings.Cut(right, "reason~")
	if hasReason {
		st.reason = strings.TrimSpace(reason)
	}
	out := strings.Fields(right)
	if len(out) != 2 {
		return st, fmt.Errorf("step %q: want => <status> <flags>", line)
	}
	if st.want, err = ParseStatus(out[0]); err != nil {
		return st, fmt.Errorf("step %q: %w", line, err)
	}
	switch out[1] {
	case "-":
	case "changed":
		st.changed = true
	case "changed,adv":
		st.changed, st.advChanged = true, true
	default:
		return st, fmt.Errorf("step %q: flags %q: want -, changed or changed,adv", line, out[1])
	}
	return st, nil
}
