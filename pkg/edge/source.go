package edge

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/pkg/edge/planner"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/edge/spans"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/region"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// source is what the edge follows: the fleet state, folded from one event
// log (events.Reader) or merged from the regional logs of a multi-region
// fleet (region.Follower, whose state names the generation of each region
// it reflects in State.Regions). Its planner.Loop follows it.
type source interface {
	Run(ctx context.Context) error
	planner.Source
}

var (
	_ source = (*events.Reader)(nil)
	_ source = (*region.Follower)(nil)
)

// NewRegional returns an edge serving the view merged from the event logs
// of regions in js (its own region's NATS): the local region's log and
// the mirrors of the others' (docs/regions.md). A group spanning regions
// holds the backends of each; the session evidence and the admin API name
// the generation vector the served view reflects.
func NewRegional(js jetstream.JetStream, regions []string, o *Options) (*Edge, error) {
	var e *Edge // set before Run starts the follower's readers
	f, err := region.NewFollower(js, regions, &region.FollowerOptions{
		Reader:     &events.ReaderOptions{OnError: func(err error) { e.log.Warn().Err(err).Msg("event log") }},
		OnEvent:    func(r string, ev *eventspb.Event) { e.onEvent(r, ev) },
		BySequence: o != nil && o.LogBySequence,
	})
	if err != nil {
		return nil, fmt.Errorf("edge: follow regions %v: %w", regions, err)
	}
	e, err = newEdge(o, func(*Edge) source { return f })
	return e, err
}

// onEvent notes the stream timestamp of events of the group (in the log of
// region r; "" on a single log), for the event-to-notification latency,
// and their trace contexts.
func (e *Edge) onEvent(r string, ev *eventspb.Event) {
	if ev.GetGroup() != e.opts.Group {
		return
	}
	note := planner.Event{Region: r, Generation: ev.GetGeneration(), At: ev.GetTime().AsTime()}
	if e.spans.On() {
		note.Trace = spans.EventTrace(ev)
	}
	e.loop.Note(note)
}

// confirmation is the state at which the served view was last found
// current: its generation and, on merged regional logs, its vector, held
// by the session registry (Registry.Confirm), whose sessions' evidence
// names it.
type confirmation struct{ reg *session.Registry }

// store records st as the state at which the served view was found
// current; applied is the gauge of its generation.
func (c confirmation) store(st *events.State, applied prometheus.Gauge) {
	c.reg.Confirm(st.Generation, st.Regions)
	applied.Set(float64(st.Generation))
}

// Load is the confirmed generation.
func (c confirmation) Load() uint64 {
	gen, _ := c.reg.Confirmed()
	return gen
}

// vector is the regional vector of the confirmed state (nil on one log).
func (c confirmation) vector() region.Vector {
	_, regions := c.reg.Confirmed()
	if regions == nil {
		return nil
	}
	return regions
}
