package planner

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Planner scenario files (testdata/*.scn) are line based:
//
//	# comment; blank lines are ignored
//	scenario <name>                starts a scenario with a fresh Planner
//	options coalesce=100ms [optimizer] [pinned=a_x,b_y]
//	                               optional, before the first step
//	<at> <op>[; <op>]... => <want>
//
// <at> is a Go duration since the scenario epoch. Each step line is one
// Step, its ops applied to the scenario's fleet first (fleet.go):
//
//	up <backend> [tools=a,b] [prompts=p]   the backend advertisable
//	down <backend>                         the backend not advertisable
//	remove <backend>                       the backend gone
//	policy allow|deny <glob>               a new tool policy
//	region <name> gen=<n>                  the regional vector's entry
//	                                       (a merged state from then on)
//	event gen=<n> [region=<r>] at=<d>      a group event read
//	caughtup                               the source caught up
//	applied                                the last Ready was applied
//	tick                                   nothing new (a wake-up)
//
// Ops that change the fleet publish a new state of the next generation
// (up, down and remove change the group; policy and region keep it). <want>
// is "-" (nothing to do), "wake=<d>" (step again at that offset), or
// "apply gen=<n>" followed by the Ready's fields that are set, all of
// them and only them: tools=<exposed,...> (the view served), notify=<
// kinds> (tools,prompts,resources or none), backends=<names>, policy,
// event=<d>, regions=<r:n,...>, ready. "ready" alone: ready without a
// batch.

var scenarioEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type scenario struct {
	name, file string
	opts       Options
	steps      []step
}

type step struct {
	line int
	at   time.Duration
	ops  [][]string
	want string
}

func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/*.scn")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario files: %v", err)
	}
	for _, f := range files {
		scs, err := parseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, sc := range scs {
			t.Run(sc.file+"/"+sc.name, func(t *testing.T) { runScenario(t, sc) })
		}
	}
}

func runScenario(t *testing.T, sc scenario) {
	p := New(&sc.opts)
	fl := newFleet()
	for _, st := range sc.steps {
		now := scenarioEpoch.Add(st.at)
		in := Input{}
		for _, op := range st.ops {
			if err := fl.do(op, &in); err != nil {
				t.Fatalf("%s:%d: %v", sc.file, st.line, err)
			}
		}
		in.State = fl.state
		if got := describe(p.Step(now, in)); got != st.want {
			t.Fatalf("%s:%d: got %q, want %q", sc.file, st.line, got, st.want)
		}
	}
}

// describe is the want syntax of r.
func describe(r Ready) string {
	if !r.Apply {
		out := "-"
		switch {
		case r.Ready:
			out = "ready"
		case !r.Wake.IsZero():
			out = "wake=" + r.Wake.Sub(scenarioEpoch).String()
		}
		if len(r.Late) > 0 {
			out += " late=" + traceIDs(r.Late)
		}
		return out
	}
	out := []string{"apply", fmt.Sprintf("gen=%d", r.Generation)}
	if r.View != nil {
		out = append(out, "tools="+strings.Join(slices.Sorted(keys(r.View.Tools)), ","), "notify="+kinds(r.Notify.Bits()))
		if r.Notify.Eras { // the stateless generation's clients are told apart
			out = append(out, "notify26="+kinds(r.Notify.Era(true).Bits()))
		}
	}
	if r.Backends != nil {
		out = append(out, "backends="+strings.Join(slices.Sorted(keys(r.Backends)), ","))
	}
	if r.PolicyChanged {
		out = append(out, "policy")
	}
	if !r.EventTime.IsZero() {
		out = append(out, "event="+r.EventTime.Sub(scenarioEpoch).String())
	}
	if len(r.Traced) > 0 {
		out = append(out, "traced="+traceIDs(r.Traced))
	}
	if len(r.Late) > 0 {
		out = append(out, "late="+traceIDs(r.Late))
	}
	if r.Regions != nil {
		var rs []string
		for _, k := range slices.Sorted(keys(r.Regions)) {
			rs = append(rs, fmt.Sprintf("%s:%d", k, r.Regions[k]))
		}
		out = append(out, "regions="+strings.Join(rs, ","))
	}
	if r.Ready {
		out = append(out, "ready")
	}
	return strings.Join(out, " ")
}

func kinds(bits uint8) string {
	var ks []string
	for i, k := range []string{"tools", "prompts", "resources"} {
		if bits&(1<<i) != 0 {
			ks = append(ks, k)
		}
	}
	if len(ks) == 0 {
		return "none"
	}
	return strings.Join(ks, ",")
}

func parseFile(path string) ([]scenario, error) {
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
			out = append(out, scenario{name: strings.TrimPrefix(line, "scenario "), file: filepath.Base(path),
				opts: Options{Group: fleetGroup, Separator: "_", Initial: emptyView()}})
		case len(out) == 0:
			return nil, fmt.Errorf("%s: step before the first scenario line", where)
		case strings.HasPrefix(line, "options "):
			if err := parseOptions(&out[len(out)-1].opts, strings.Fields(line)[1:]); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
		default:
			left, want, ok := strings.Cut(line, "=>")
			if !ok {
				return nil, fmt.Errorf("%s: missing =>", where)
			}
			at, rest, _ := strings.Cut(strings.TrimSpace(left), " ")
			d, err := time.ParseDuration(at)
			if err != nil {
				return nil, fmt.Errorf("%s: at: %w", where, err)
			}
			st := step{line: n, at: d, want: strings.Join(strings.Fields(want), " ")}
			for op := range strings.SplitSeq(rest, ";") {
				if fs := strings.Fields(op); len(fs) > 0 {
					st.ops = append(st.ops, fs)
				}
			}
			out[len(out)-1].steps = append(out[len(out)-1].steps, st)
		}
	}
	return out, sc.Err()
}

func parseOptions(o *Options, kvs []string) error {
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "coalesce":
			d, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("options: coalesce: %w", err)
			}
			o.Coalesce = d
		case "optimizer":
			o.Optimizer = true
			o.Initial = emptyOptimizerView(o.Pinned)
		case "pinned":
			o.Pinned = strings.Split(v, ",")
			if o.Optimizer {
				o.Initial = emptyOptimizerView(o.Pinned)
			}
		default:
			return fmt.Errorf("options: unknown %q", k)
		}
	}
	return nil
}
