package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fleetgate/fleetgate/test/conformance/suite"
)

// report prints the measurement.
type report struct {
	names        []string
	direct, edge map[string]*suite.Result
	base         suite.Baseline
	verdict      *suite.Verdict
	naming       string
	require      bool
	took         time.Duration
	details      bool
	lenient      bool // a scenario the server fails directly is reported, not failed
}

func passWord(r *suite.Result) string {
	switch {
	case r == nil:
		return "-"
	case r.Passed():
		return "pass"
	case r.TimedOut:
		return "HANG"
	}
	return "FAIL"
}

func (r *report) passed(m map[string]*suite.Result) int {
	n := 0
	for _, s := range r.names {
		if m[s] != nil && m[s].Passed() {
			n++
		}
	}
	return n
}

// reason is why s fails through the edge (empty when it does not).
func (r *report) reason(s string) string {
	e := r.edge[s]
	if e == nil {
		return "not run"
	}
	return e.Reason()
}

func (r *report) text(w io.Writer) {
	width := len("scenario")
	for _, s := range r.names {
		width = max(width, len(s))
	}
	fmt.Fprintf(w, "\n%-*s  %-6s  %-6s  %s\n", width, "scenario", "direct", "edge", "why it fails through the edge")
	for _, s := range r.names {
		note := r.reason(s)
		if d := r.direct[s]; d != nil && !d.Passed() {
			note = "DIRECT: " + d.Reason()
		}
		fmt.Fprintf(w, "%-*s  %-6s  %-6s  %s\n", width, s, passWord(r.direct[s]), passWord(r.edge[s]), note)
		if e := r.edge[s]; r.details && e != nil && !e.Passed() {
			for _, c := range e.Checks {
				if c.Status == suite.StatusFailure && c.Details != "" {
					fmt.Fprintf(w, "%-*s    details: %s\n", width, "", c.Details)
				}
			}
		}
	}
	fmt.Fprintf(w, "\nTotals (naming %s): direct %d/%d, through the edge %d/%d; %s\n",
		r.naming, r.passed(r.direct), len(r.names), r.passed(r.edge), len(r.names), r.took.Round(time.Second))
	v := r.verdict
	if len(v.DirectFailures) > 0 && r.lenient {
		fmt.Fprintf(w, "the server itself fails (not held against the edge): %s\n", strings.Join(v.DirectFailures, ", "))
	} else if len(v.DirectFailures) > 0 {
		fmt.Fprintf(w, "FAIL: the conformance backend fails directly: %s\n", strings.Join(v.DirectFailures, ", "))
	}
	if len(v.Unexpected) > 0 {
		what := "not in the expected-failures list"
		if r.require {
			what = "required to pass (CONFORMANCE_REQUIRE)"
		}
		fmt.Fprintf(w, "FAIL: pass directly but fail through the edge, %s: %s\n", what, strings.Join(v.Unexpected, ", "))
	}
	if len(v.Expected) > 0 {
		fmt.Fprintf(w, "expected failures through the edge (listed): %d\n", len(v.Expected))
	}
	if len(v.NowPassing) > 0 {
		fmt.Fprintf(w, "NOW PASSING through the edge, take them off the expected-failures list: %s\n", strings.Join(v.NowPassing, ", "))
	}
	if len(v.Unknown) > 0 {
		fmt.Fprintf(w, "listed as expected failures but not run: %s\n", strings.Join(v.Unknown, ", "))
	}
	if v.OK() || r.lenient && v.GatewayOK() {
		fmt.Fprintln(w, "OK")
	}
}

// markdownTable writes the totals and the per-scenario table.
func (r *report) markdownTable(w io.Writer) {
	fmt.Fprintf(w, "| | direct | through the edge (naming %s) |\n|---|---|---|\n", r.naming)
	fmt.Fprintf(w, "| scenarios passed | %d / %d | %d / %d |\n\n", r.passed(r.direct), len(r.names), r.passed(r.edge), len(r.names))
	fmt.Fprintln(w, "| scenario | direct | edge | why it fails through the edge (the suite's message) |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, s := range r.names {
		fmt.Fprintf(w, "| `%s` | %s | %s | %s |\n", s, passWord(r.direct[s]), passWord(r.edge[s]),
			strings.ReplaceAll(r.reason(s), "|", `\|`))
	}
}
