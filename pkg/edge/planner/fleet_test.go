package planner

import (
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/policy"
)

const fleetGroup = "default"

// fleet is a scenario's fleet: the state it publishes, moved on by ops.
type fleet struct {
	state    *events.State
	backends map[string]*events.Backend
	gen      uint64
}

func newFleet() *fleet { return &fleet{backends: map[string]*events.Backend{}} }

func emptyView() *view.Served { return view.Empty() }

func emptyOptimizerView(pinned []string) *view.Served {
	e := view.Empty()
	e.Index = view.NewIndex(e, pinned, nil)
	return e
}

// do applies one op to f and to the step's input.
func (f *fleet) do(op []string, in *Input) error {
	args := map[string]string{}
	for _, kv := range op[1:] {
		if k, v, ok := strings.Cut(kv, "="); ok {
			args[k] = v
		}
	}
	switch op[0] {
	case "up", "down", "remove":
		if len(op) < 2 {
			return fmt.Errorf("%s: want a backend", op[0])
		}
		f.backend(op[0], op[1], args)
		f.publish(true)
	case "policy":
		if len(op) != 3 || op[1] != "allow" && op[1] != "deny" {
			return fmt.Errorf("policy: want allow|deny <glob>")
		}
		def := map[string]string{"allow": "deny", "deny": "allow"}[op[1]]
		sec, err := policy.ParseJSON(fmt.Appendf(nil, `{"default":%q,"rules":[{"name":"r","effect":%q,"tools":[%q]}]}`, def, op[1], op[2]))
		if err != nil {
			return err
		}
		f.publish(false)
		f.state.Authorization = &events.Authorization{Section: sec, Generation: f.gen}
	case "region":
		n, err := strconv.ParseUint(args["gen"], 10, 64)
		if len(op) < 3 || err != nil {
			return fmt.Errorf("region: want <name> gen=<n>")
		}
		f.publish(false)
		f.state.Regions = maps.Clone(f.state.Regions)
		if f.state.Regions == nil {
			f.state.Regions = map[string]uint64{}
		}
		f.state.Regions[op[1]] = n
	case "event":
		n, err := strconv.ParseUint(args["gen"], 10, 64)
		at, err2 := time.ParseDuration(args["at"])
		if err != nil || err2 != nil {
			return fmt.Errorf("event: want gen=<n> at=<d>")
		}
		ev := Event{Region: args["region"], Generation: n, At: scenarioEpoch.Add(at)}
		if id := args["trace"]; id != "" {
			k, err := strconv.ParseUint(id, 10, 8)
			if err != nil || k == 0 {
				return fmt.Errorf("event: trace=<1..255>")
			}
			ev.Trace = traceOf(byte(k))
		}
		in.Events = append(in.Events, ev)
	case "caughtup":
		in.CaughtUp = true
	case "applied":
		in.Applied = true
	case "tick":
	default:
		return fmt.Errorf("unknown op %q", op[0])
	}
	return nil
}

// traceOf is the trace context of scenario trace id k (its trace and
// span ids end in k).
func traceOf(k byte) trace.SpanContext {
	var tid trace.TraceID
	var sid trace.SpanID
	tid[15], sid[7] = k, k
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
}

// traceIDs are the scenario trace ids of evs, in order.
func traceIDs(evs []Event) string {
	ids := make([]string, len(evs))
	for i, ev := range evs {
		ids[i] = strconv.Itoa(int(ev.Trace.SpanID()[7]))
	}
	return strings.Join(ids, ",")
}

// backend changes one backend as op says.
func (f *fleet) backend(op, name string, args map[string]string) {
	if op == "remove" {
		delete(f.backends, name)
		return
	}
	b := &events.Backend{Name: name, Group: fleetGroup, Status: "healthy", Advertisable: op == "up",
		Config: events.BackendConfig{URL: "http://" + name + ".test/mcp"}}
	if old := f.backends[name]; old != nil {
		b.Catalog = old.Catalog
	}
	if tools, ok := args["tools"]; ok || b.Catalog == nil {
		b.Catalog = catalogOf(name, tools, args["prompts"])
	}
	if tools, ok := args["tools26"]; ok { // the stateless generation's own tools
		c := *b.Catalog
		st := catalogOf(name, tools, "")
		c.Stateless, c.ProtocolVersion = &catalog.EraLists{Tools: st.Tools, Prompts: c.Prompts, Digest: st.Digest}, view.FirstStateless
		b.Catalog = &c
	}
	if op == "down" {
		b.Status = "unhealthy"
	}
	f.backends[name] = b
}

// publish makes the next state: a new group when group is set, the
// previous one's otherwise (as events.State shares untouched groups).
func (f *fleet) publish(group bool) {
	f.gen++
	next := &events.State{Generation: f.gen, Groups: map[string]*events.Group{}}
	if f.state != nil {
		next.Groups, next.Authorization, next.Regions = f.state.Groups, f.state.Authorization, f.state.Regions
	}
	if group {
		next.Groups = map[string]*events.Group{}
		if len(f.backends) > 0 {
			next.Groups[fleetGroup] = &events.Group{Name: fleetGroup, Backends: maps.Clone(f.backends)}
		}
	}
	f.state = next
}

// catalogOf is a catalog of the comma-separated tools and prompts.
func catalogOf(backend, tools, prompts string) *events.Catalog {
	c := &events.Catalog{Digest: backend + ":" + tools + ":" + prompts}
	for t := range strings.SplitSeq(tools, ",") {
		if t != "" {
			raw, _ := json.Marshal(map[string]any{"name": t, "inputSchema": map[string]string{"type": "object"}})
			c.Tools = append(c.Tools, raw)
		}
	}
	for p := range strings.SplitSeq(prompts, ",") {
		if p != "" {
			raw, _ := json.Marshal(map[string]string{"name": p})
			c.Prompts = append(c.Prompts, raw)
		}
	}
	return c
}

func keys[M ~map[string]V, V any](m M) func(func(string) bool) { return maps.Keys(m) }
