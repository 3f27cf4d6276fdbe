package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/events"
)

type view struct {
	Generation uint64 `json:"generation"`
	Digest     string `json:"digest"`
	Tools      []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

func (v view) names() []string {
	var out []string
	for _, t := range v.Tools {
		out = append(out, t.Name)
	}
	slices.Sort(out)
	return out
}

// waitView polls the leader's view until it has at least n tools.
func waitView(ctx context.Context, leader func() *proc, n int, d time.Duration) (view, bool) {
	var v view
	ok := poll(ctx, d, func() bool {
		l := leader()
		return l != nil && getJSON(l.admin+"/v1/groups/default/view", &v) == nil && len(v.Tools) >= n
	})
	return v, ok
}

// auditExport runs `controller audit export` against the cluster.
func auditExport(t *testing.T, bin, urls string) []events.EventJSON {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "audit", "export", "--nats-url", urls).Output()
	if err != nil {
		t.Fatalf("controller audit export: %v", err)
	}
	if dir := os.Getenv("FLEETGATE_CHAOS_LOGS"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "audit.jsonl"), out, 0o644); err != nil {
			t.Errorf("keep the audit: %v", err)
		}
	}
	var evs []events.EventJSON
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e events.EventJSON
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		evs = append(evs, e)
	}
	return evs
}

// reporter is the part of testing.T the audit check uses.
type reporter interface {
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
}

type auditReport struct {
	injected, matched, lost, duplicated, extra int
	generations, reused, gaps                  int
	// delays are the scripted health transitions' times to their events.
	delays []time.Duration
}

// clockSlack is how much earlier than the script's record of a
// transition its event may be stamped. The record is read before the
// transition is caused and the controllers share the test's clock, so
// this is only a margin for reading the clock.
const clockSlack = time.Millisecond

// checkAudit compares the audit log with the ground truth. Per backend, the
// health events' advertisable flips must be the scripted downs and ups, in
// order (after the initial advertisement); an event repeating the previous
// one's status is a duplicate; a flip nobody scripted is extra. Every
// scripted tool change must have a catalog event of that backend with the
// tool present (added) or absent (removed). Generations must run 1, 2, 3
// ... with none reused.
//
// Each scripted transition is looked for in its own window: from when the
// test began to cause it to when it began to cause the backend's next one
// (every scripted state holds minHold, longer than detection plus a
// failover, so its event must land inside). A missed transition is
// reported as itself, and the ones after it are still matched against
// their own events, not shifted onto the next flip of the same value.
func checkAudit(t reporter, gt *groundTruth, evs []events.EventJSON) auditReport {
	var r auditReport
	r.generations = len(evs)
	seen := map[uint64]bool{}
	for i, e := range evs {
		if seen[e.Generation] {
			r.reused++
			t.Errorf("generation %d used twice", e.Generation)
		}
		seen[e.Generation] = true
		if i > 0 && e.Generation != evs[i-1].Generation+1 {
			r.gaps++
			t.Errorf("generation %d follows %d", e.Generation, evs[i-1].Generation)
		}
	}
	byBackend := map[string][]transition{}
	for _, tr := range gt.trans {
		byBackend[tr.backend] = append(byBackend[tr.backend], tr)
		r.injected++
	}
	for _, b := range []string{"b0", "b1", "b2"} {
		flips, cats := r.split(t, b, evs)
		if len(flips) == 0 || !flips[0].Health.Advertisable {
			t.Errorf("%s: no initial advertisement in the audit", b)
		} else {
			flips = flips[1:]
		}
		used := make([]bool, len(flips))
		trs := byBackend[b]
		for i, tr := range trs {
			lo, hi := tr.at.Add(-clockSlack), time.Time{} // zero hi: no later transition
			if i+1 < len(trs) {
				hi = trs[i+1].at.Add(-clockSlack)
			}
			in := func(at time.Time) bool { return !at.Before(lo) && (hi.IsZero() || at.Before(hi)) }
			switch tr.kind {
			case "down", "up":
				want := tr.kind == "up"
				k := slices.IndexFunc(flips, func(e events.EventJSON) bool { return e.Health.Advertisable == want && in(e.Time) })
				if k >= 0 && !used[k] {
					used[k] = true
					r.matched++
					r.delays = append(r.delays, flips[k].Time.Sub(tr.at))
				} else {
					r.lost++
					t.Errorf("%s: %s at %s (%s) is not in the audit", b, tr.kind, tr.at.Format(time.StampMilli), tr.how)
				}
			case "tools":
				if slices.ContainsFunc(cats, func(e events.EventJSON) bool { return hasTool(e.Catalog.Tools, tr.tool) == tr.added && in(e.Time) }) {
					r.matched++
				} else {
					r.lost++
					t.Errorf("%s: tool %s %s at %s is not in the audit", b, tr.tool, tr.how, tr.at.Format(time.StampMilli))
				}
			}
		}
		for k, e := range flips {
			if !used[k] {
				r.extra++
				t.Logf("%s: unscripted flip at generation %d: %s -> %s (%s)", b, e.Generation, e.Health.From, e.Health.To, e.Health.Reason)
			}
		}
	}
	return r
}

// split returns backend b's advertisable flips (the first is its initial
// advertisement) and catalog events, in log order, counting as duplicates
// the health events that repeat the previous status.
func (r *auditReport) split(t reporter, b string, evs []events.EventJSON) (flips, cats []events.EventJSON) {
	var prev *events.HealthChangeJSON
	for _, e := range evs {
		if e.Backend != b {
			continue
		}
		if e.Catalog != nil {
			cats = append(cats, e)
		}
		if e.Health == nil {
			continue
		}
		if prev != nil && prev.To == e.Health.To && prev.Advertisable == e.Health.Advertisable {
			r.duplicated++
			t.Errorf("%s: generation %d repeats status %s", b, e.Generation, e.Health.To)
		}
		if prev == nil || prev.Advertisable != e.Health.Advertisable {
			flips = append(flips, e)
		}
		prev = e.Health
	}
	return flips, cats
}

func hasTool(tools []string, name string) bool {
	for _, t := range tools {
		if t == name || strings.HasSuffix(t, "_"+name) {
			return true
		}
	}
	return false
}

type sessionJSON struct {
	ID                string `json:"id"`
	AppliedGeneration uint64 `json:"applied_generation"`
	Digest            string `json:"digest"`
	Verdict           string `json:"verdict"`
}

type convergence struct {
	converged int
	slowest   time.Duration
}

// checkConvergence polls until every client's tool list equals the
// controller's view and every session each live edge lists is converged
// on the view's digest, or bound passes after the schedule's end.
func checkConvergence(t *testing.T, ctx context.Context, leader func() *proc, edges []*proc, clients []*client, end time.Time, bound time.Duration) convergence {
	var c convergence
	done := make([]bool, len(clients))
	var v view
	var bad []string
	poll(ctx, bound, func() bool {
		l := leader()
		if l == nil || getJSON(l.admin+"/v1/groups/default/view", &v) != nil {
			return false
		}
		want := v.names()
		listed := map[string]sessionJSON{}
		bad = bad[:0]
		for _, e := range edges {
			var ss []sessionJSON
			if err := getJSON(e.admin+"/v1/sessions", &ss); err != nil {
				bad = append(bad, e.name+": "+err.Error())
				continue
			}
			for _, s := range ss {
				if s.Verdict != "converged" || s.Digest != v.Digest {
					bad = append(bad, e.name+" session "+s.ID+" "+s.Verdict+" "+s.Digest)
					continue
				}
				listed[s.ID] = s
			}
		}
		for i, cl := range clients {
			if done[i] {
				continue
			}
			names, err := cl.tools(ctx)
			if err != nil || !slices.Equal(names, want) {
				continue
			}
			if id := cl.cs.ID(); id != "" {
				if _, ok := listed[id]; !ok {
					continue
				}
			}
			done[i] = true
			c.converged++
			c.slowest = max(c.slowest, time.Since(end))
		}
		return c.converged == len(clients) && len(bad) == 0
	})
	if len(bad) > 0 {
		t.Errorf("sessions not converged on the edges (view generation %d %s): %v", v.Generation, v.Digest, bad[:min(len(bad), 10)])
	}
	if c.converged < len(clients) {
		t.Errorf("%d of %d sessions did not converge within %s", len(clients)-c.converged, len(clients), bound)
	}
	return c
}
