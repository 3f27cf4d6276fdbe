package ledger

import (
	"bytes"
	"encoding/json"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/convergence"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
)

// toolDefs are the tools of one served value as it serves them (the
// definitions the view holds), and their catalog digest
// (view.Served.ToolDefs).
type toolDefs struct {
	digest string
	raws   []json.RawMessage // in served order
}

// defsOf are the toolDefs of sv.
func defsOf(sv *view.Served) *toolDefs {
	digest, raws := sv.ToolDefs()
	return &toolDefs{digest: digest, raws: raws}
}

// digestOf is the digest function of a traversal's evidence: a traversal
// that returned exactly the served tools (the common case) reuses the
// served value's digest instead of canonicalising every tool again.
func (d *toolDefs) digestOf(tools []json.RawMessage) (string, error) {
	if len(tools) == len(d.raws) {
		same := true
		for i := range tools {
			if !bytes.Equal(tools[i], d.raws[i]) {
				same = false
				break
			}
		}
		if same {
			return d.digest, nil
		}
	}
	return catalog.Digest(tools)
}

// verdictCollector counts the live sessions by verdict at scrape time.
type verdictCollector struct {
	reg  *session.Registry
	desc *prometheus.Desc
}

func (c *verdictCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *verdictCollector) Collect(ch chan<- prometheus.Metric) {
	counts := map[convergence.Status]int{convergence.Converged: 0, convergence.Stale: 0,
		convergence.Incomplete: 0, convergence.Unverifiable: 0}
	for _, s := range c.reg.All() {
		counts[convergence.Verdict(s.Record().Convergence())]++
	}
	for v, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), string(v))
	}
}
