package edge

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/search"
)

// Modes of an edge (Options.Mode).
const (
	// ModePassthrough serves every tool of the group's view.
	ModePassthrough = "passthrough"
	// ModeOptimizer serves find_tool and call_tool (plus the pinned tools)
	// and answers find_tool from a search index of the view.
	ModeOptimizer = "optimizer"
)

// Names of the optimizer mode's meta-tools.
const (
	FindToolName = view.FindToolName
	CallToolName = view.CallToolName
)

// Limits of find_tool's "limit" argument.
const (
	FindToolDefaultLimit = search.DefaultLimit // 8, when "limit" is absent
	FindToolMaxLimit     = search.MaxLimit     // 50; larger values are clamped
)

// indexView gives next its tool index in optimizer mode and returns the
// change optimizer sessions are notified of: ch without tools, unless the
// pinned tools changed. In passthrough mode it returns ch.
func (e *Edge) indexView(prev, next *view.Served, ch view.Change) view.Change {
	if e.opts.Mode != ModeOptimizer {
		return ch
	}
	next.Index = view.NewIndex(next, e.opts.PinnedTools, prev.Index)
	e.opt.indexSeconds.Set(next.Index.Built.Seconds())
	e.log.Debug().Int("tools", len(next.Index.Tools)).Dur("build", next.Index.Built).Msg("tool index built")
	ch.Tools = view.PinnedChanged(prev, next)
	return ch
}

// optimizerMetrics are the optimizer mode's collectors (find_tool's are
// the call plane's).
type optimizerMetrics struct {
	indexSeconds prometheus.Gauge
}

// newOptimizerMetrics registers the optimizer's collectors on reg.
func newOptimizerMetrics(reg *prometheus.Registry) *optimizerMetrics {
	m := &optimizerMetrics{
		indexSeconds: prometheus.NewGauge(prometheus.GaugeOpts{Name: "fleetgate_edge_tool_index_build_seconds",
			Help: "Time the last tool index build took (once per view change, optimizer mode)."}),
	}
	reg.MustRegister(m.indexSeconds)
	return m
}
