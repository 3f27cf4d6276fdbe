package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/region"
)

// regionTarget is what audit state of a multi-region fleet is asked at:
// the fleet's regions and the generation vector (docs/regions.md,
// "Evidence and verdicts"). regions is nil for the single-region audit.
type regionTarget struct {
	list, vectorText string
	regions          []string
	vector           region.Vector
}

func (rt *regionTarget) flags(fs *flag.FlagSet) {
	fs.StringVar(&rt.list, "regions", "", "state: every region of a multi-region fleet, comma-separated; each regional log (the region's own and the mirrors, in the NATS audited) is replayed and the states merged (extension)")
	fs.StringVar(&rt.vectorText, "vector", "", `state with -regions: the generation vector to replay to, "a=12,b=7"; a region left out is at its log's head (extension)`)
}

// check parses the flags; it leaves regions nil when neither is given.
func (rt *regionTarget) check(sub string, generation uint64) error {
	if rt.list == "" && rt.vectorText == "" {
		return nil
	}
	switch {
	case sub != "state":
		return errors.New("flags -regions and -vector apply to audit state only")
	case rt.list == "":
		return errors.New("flag -vector needs -regions")
	case generation != 0:
		return errors.New("flag -generation names a position in one log; with -regions give -vector")
	}
	regions, err := region.ParseList(rt.list)
	if err != nil {
		return fmt.Errorf("flag -regions: %w", err)
	}
	vec, err := region.ParseVector(rt.vectorText)
	if err != nil {
		return fmt.Errorf("flag -vector: %w", err)
	}
	for r := range vec {
		if !slices.Contains(regions, r) {
			return fmt.Errorf("flag -vector names region %q, which -regions %q does not list", r, strings.Join(regions, ","))
		}
	}
	rt.regions, rt.vector = regions, vec
	return nil
}

// regionAudit is the output of audit state for a multi-region fleet: the
// merged state (its generation is the vector's sum, no log position), the
// vector it reflects and the conflicts the merge resolved.
type regionAudit struct {
	*events.State                      // its regions: the vector it reflects
	Conflicts     []region.Conflict    `json:"conflicts"`
	Views         map[string]auditView `json:"views"`
	Skipped       []string             `json:"skipped_events,omitempty"`
}

// auditRegionState replays each region's log in js to its component of
// want (a region absent from want: its head), merges the states with
// region.Merge and prints the merged state with the vector it reflects.
// A component beyond its log's head is an error naming the region and
// the head.
func auditRegionState(ctx context.Context, js jetstream.JetStream, regions []string, want region.Vector, out io.Writer) error {
	states := make(map[string]*events.State, len(regions))
	var skipped []string
	for _, r := range regions {
		s, err := replayRegion(ctx, js, r, want, func(err error) { skipped = append(skipped, "region "+r+": "+err.Error()) })
		if err != nil {
			return err
		}
		states[r] = s
	}
	merged, vec, conflicts := region.Merge(states)
	for r, g := range want {
		if vec[r] != g {
			return fmt.Errorf("region %s: replayed to generation %d, asked %d", r, vec[r], g)
		}
	}
	if conflicts == nil {
		conflicts = []region.Conflict{}
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(regionAudit{State: merged, Conflicts: conflicts, Views: auditViews(merged), Skipped: skipped})
}

// replayRegion returns region r's state at want[r] (its head when absent)
// from its log in js: the region's own stream, or the local mirror of it.
func replayRegion(ctx context.Context, js jetstream.JetStream, r string, want region.Vector, onErr func(error)) (*events.State, error) {
	log, err := attachAuditLog(ctx, js, region.LogOptions(r, 0))
	if err != nil {
		return nil, fmt.Errorf("region %s: %w", r, err)
	}
	_, head, err := log.Bounds(ctx)
	if err != nil {
		return nil, fmt.Errorf("region %s: %w", r, err)
	}
	gen, given := want[r]
	if !given {
		gen = head
	}
	if gen > head {
		return nil, fmt.Errorf("region %s: generation %d is beyond the head of its log %s: the head is %d", r, gen, region.StreamName(r), head)
	}
	if gen == 0 {
		return events.NewState(), nil
	}
	s, err := log.Replay(ctx, gen, onErr)
	if err != nil {
		return nil, fmt.Errorf("region %s: %w", r, err)
	}
	return s, nil
}
